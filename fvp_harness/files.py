"""The harness's one way to hash a file and its one way to replace a whole file.

Both sit at the bottom of the package (standard library only) because every layer needs them: the
targets layer checks what arrived in a guest, the planner keys units on artifact bytes, the batch
engine decides whether a report is up to date, and the store, report and batch layers replace
manifests, reports and cached artifacts. One hasher means one cache: a batch of many scenarios
hashes each artifact once.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import threading
from pathlib import Path

__all__ = ["atomic_write", "file_sha256", "fsync_dir"]

_BLOCK = 1 << 20
_HASH_CACHE: dict[tuple[str, int, int, int, int], str] = {}
_HASH_LOCK = threading.Lock()


def file_sha256(path: Path | str) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks.

    Cached per (path, inode, size, mtime, ctime): a file that did not change is hashed once per
    process, however many scenarios or sessions name it; a file replaced by ``atomic_write`` (a new
    inode) or appended to (a new size) is hashed again. Raises ``FileNotFoundError`` like ``open``.
    """
    path = Path(path)
    stat = path.stat()
    cache_key = (str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    with _HASH_LOCK:
        cached = _HASH_CACHE.get(cache_key)
    if cached is not None:
        return cached
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            digest.update(block)
    value = digest.hexdigest()
    with _HASH_LOCK:
        _HASH_CACHE[cache_key] = value
    return value


def fsync_dir(path: Path) -> None:
    """Make a rename durable; not possible (and not needed) on every OS."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows cannot open folders
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path | str, data: bytes | str, *, mode: int | None = None) -> Path:
    """Replace ``path`` with ``data`` so a reader sees the old file or the new one, never half of
    one.

    ``str`` is written as UTF-8 with its line ends untouched. A temp file beside the target (same
    folder, so the rename cannot cross file systems) is written and fsynced, renamed over ``path``,
    then the folder is fsynced so the rename survives a crash. The file gets the permissions of a
    plain ``open(path, "w")``: ``0o666`` minus the umask (``tempfile.mkstemp`` would leave
    ``0o600``, unreadable for the rest of the team), or exactly ``mode`` when given (an executable
    cached on a worker). On failure the temp file is removed and the old ``path`` is left as it was.
    Returns ``path``.
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)  # the kernel applies the umask, as for any new file
        except FileExistsError:  # pragma: no cover - 32 random bits collided
            continue
        break
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        # a write's ENOSPC names no file: name the one the user will look for
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)
    return path
