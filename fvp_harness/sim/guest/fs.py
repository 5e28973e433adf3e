"""The guest's filesystem: a private temporary directory per model instance, removed when the model
exits.

A model that is SIGKILLed removes nothing, so the folder holding the guest's root records its owner
in ``OWNER_FILE`` beside the root, where the guest cannot see it (this process's pid, its start time
from ``/proc/self/stat`` and the boot it runs in, as JSON): the harness's next run removes the
folders of dead models (fvp_harness/targets/leftovers.py reads the same three fields; the simulator
imports nothing of the harness, so the writer is here).

Like the real initramfs rootfs, nothing survives the model. Guest paths are resolved lexically
against ``/`` (where ``..`` stops, as in Linux) and then checked against the real directory, so no
guest path can reach the host: not ``../..``, not an absolute path, not a symlink (the guest has no
way to create one, and the SFTP server refuses to). File modes are the host files' modes, so
``chmod`` and the execute bit behave as on Linux.
"""

from __future__ import annotations

import json
import os
import posixpath
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

__all__ = ["OWNER_FILE", "GuestFS", "PathEscape", "write_owner"]

OWNER_FILE = ".fvp-owner"
"""The owner record's name in the folder holding the guest root (the harness's
``targets.leftovers.OWNER_FILE``)."""


def write_owner(folder: Path) -> None:
    """Record this process as the owner of ``folder`` (see the module docstring); nothing where
    /proc is missing."""
    try:
        stat_fields = Path("/proc/self/stat").read_bytes().rsplit(b")", 1)[1].split()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except (OSError, IndexError):
        return
    record = {"pid": os.getpid(), "start": int(stat_fields[19]), "boot": boot}
    (folder / OWNER_FILE).write_text(json.dumps(record) + "\n", encoding="utf-8")


_DEFAULT_FILES = ("/lib/ld-linux-aarch64.so.1",)
"""The default image's glibc loader, which the guest's programs built against glibc need."""


class PathEscape(PermissionError):
    """A guest path that would leave the guest's root (refused as EACCES)."""


class GuestFS:
    """One guest root. ``host_path`` maps guest paths to host paths; everything else goes through
    it."""

    def __init__(self, hostname: str = "corstone1000-fvp", ethosu_device: bool = True, *,
                 devices: Sequence[str] | None = None, files: Sequence[str] = _DEFAULT_FILES,
                 os_version: str = "5.2") -> None:
        """``devices``: the device nodes under /dev besides /dev/null (default: /dev/ethosu0 when
        ``ethosu_device``); ``files``: the image's other files a check may look for (its dynamic
        loader, an ssh server), created empty; ``os_version``: os-release's VERSION_ID. The defaults
        are the default image's (release 2025.12: glibc); the platform passes its release's
        facts."""
        # the owner record sits beside the guest's root, not in it: the guest never sees it
        self.holder = Path(tempfile.mkdtemp(prefix="fvp-sim-")).resolve()
        os.chmod(self.holder, 0o700)
        write_owner(self.holder)
        self.root = self.holder / "root"
        self.root.mkdir()
        for d in ("root", "tmp", "dev", "etc", "bin", "sbin", "usr/bin", "usr/sbin", "var/log",
                  "proc", "lib"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        os.chmod(self.root / "tmp", 0o1777)
        (self.root / "etc" / "hostname").write_text(hostname + "\n")
        (self.root / "etc" / "os-release").write_text(
            f'ID=poky\nNAME="Poky (Yocto Project Reference Distro)"\nVERSION_ID={os_version}\n'
            f'PRETTY_NAME="Corstone1000 ({hostname}, simulated by fvp-harness sim)"\n'
        )
        if devices is None:
            devices = ["/dev/ethosu0"] if ethosu_device else []
        for path in [*devices, *files, "/dev/null"]:
            host = self.root / path.lstrip("/")
            host.parent.mkdir(parents=True, exist_ok=True)
            host.touch()

    def cleanup(self) -> None:
        """Remove the whole guest tree and its owner record; safe to call twice."""
        shutil.rmtree(self.holder, ignore_errors=True)

    @staticmethod
    def normalize(path: str, cwd: str = "/") -> str:
        """The absolute guest path for ``path`` seen from ``cwd``; ``..`` never goes above ``/``."""
        joined = posixpath.join(cwd or "/", path) if path else (cwd or "/")
        parts: list[str] = []
        for part in joined.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if parts:
                    parts.pop()
                continue
            parts.append(part)
        return "/" + "/".join(parts)

    def host_path(self, path: str, cwd: str = "/") -> Path:
        """The host path behind a guest path. Raises PathEscape if it would resolve outside the
        guest root (a symlink planted in the tree, for example)."""
        guest = self.normalize(path, cwd)
        host = self.root / guest.lstrip("/") if guest != "/" else self.root
        real = Path(os.path.realpath(host))
        if real != self.root and self.root not in real.parents:
            raise PathEscape(13, "Permission denied", guest)
        # a symlink anywhere on the way is refused even if it points inside: the guest cannot make
        # one
        probe = self.root
        for part in Path(guest.lstrip("/")).parts:
            probe = probe / part
            if probe.is_symlink():
                raise PathEscape(13, "Permission denied", guest)
        return host

    def guest_path(self, host: Path) -> str:
        """The guest path of a host path inside the root."""
        rel = Path(os.path.realpath(host)).relative_to(self.root)
        return "/" + rel.as_posix() if str(rel) != "." else "/"

    # -- convenience used by the shell and the GuestContext ----------------------------------------

    def read(self, path: str, cwd: str = "/") -> bytes:
        """Read a file's bytes (FileNotFoundError / IsADirectoryError / PermissionError like
        open())."""
        host = self.host_path(path, cwd)
        if host.is_dir():
            raise IsADirectoryError(21, "Is a directory", path)
        return host.read_bytes()

    def write(self, path: str, data: bytes, cwd: str = "/", append: bool = False) -> None:
        """Create, replace or append to a file (its directory must exist, as with open())."""
        host = self.host_path(path, cwd)
        if host.is_dir():
            raise IsADirectoryError(21, "Is a directory", path)
        with open(host, "ab" if append else "wb") as fh:
            fh.write(data)

    def open_write(self, path: str, cwd: str = "/", append: bool = False) -> BinaryIO:
        """An open binary file for a redirection target (the shell streams into it)."""
        host = self.host_path(path, cwd)
        if host.is_dir():
            raise IsADirectoryError(21, "Is a directory", path)
        return open(host, "ab" if append else "wb")

    def head(self, path: str, cwd: str = "/", size: int = 64) -> bytes:
        """The first ``size`` bytes of a file, which decide what executing it does."""
        with open(self.host_path(path, cwd), "rb") as fh:
            return fh.read(size)

    def mode(self, path: str, cwd: str = "/") -> int:
        """The file's st_mode (raises FileNotFoundError)."""
        return os.stat(self.host_path(path, cwd)).st_mode
