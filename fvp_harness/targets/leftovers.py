"""Who owns a temporary folder, and removing the folders whose owner is dead.

Why it is shaped so: docs/architecture.md, "Inside `targets/`"."""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["OWNER_FILE", "Collected", "Owner", "collect", "owner_of", "write_owner"]

log = logging.getLogger(__name__)

OWNER_FILE = ".fvp-owner"
"""The owner record's file name inside an owned folder (the simulator uses the same name)."""


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return ""


def _start_time(pid: int) -> int | None:
    """The start time of live process ``pid`` (clock ticks after boot), None when it is gone or a
    zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            fields = file.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in (b"Z", b"X"):
        return None
    return int(fields[19])


@dataclass(frozen=True)
class Owner:
    """A process, named so that it cannot be mistaken for a later one with the same pid."""

    pid: int
    start: int
    boot: str

    @classmethod
    def of(cls, pid: int | None = None) -> Owner | None:
        """The live process ``pid`` (this one by default); None when it is gone."""
        pid = os.getpid() if pid is None else pid
        start = _start_time(pid)
        return None if start is None else cls(pid, start, _boot_id())

    def alive(self) -> bool:
        """True while this very process runs (same boot, same pid, same start time)."""
        return self.boot == _boot_id() and _start_time(self.pid) == self.start

    def as_json(self) -> dict[str, object]:
        return {"pid": self.pid, "start": self.start, "boot": self.boot}

    @classmethod
    def from_json(cls, data: object) -> Owner | None:
        if not isinstance(data, dict):
            return None
        pid, start, boot = data.get("pid"), data.get("start"), data.get("boot")
        if not (isinstance(pid, int) and isinstance(start, int) and isinstance(boot, str)):
            return None
        return cls(pid, start, boot)


def write_owner(folder: Path, owner: Owner | None = None) -> None:
    """Record ``owner`` (this process by default) in ``folder``. Raises OSError."""
    owner = owner or Owner.of()
    if owner is None:  # pragma: no cover - this process is alive
        return
    (folder / OWNER_FILE).write_text(json.dumps(owner.as_json()) + "\n", encoding="utf-8")


def owner_of(folder: Path) -> Owner | None:
    """The owner recorded in ``folder``; None when there is no readable record (the folder is not
    provably ours)."""
    try:
        return Owner.from_json(json.loads((folder / OWNER_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class Collected:
    """What ``collect`` removed: folders and bytes."""

    folders: tuple[Path, ...] = ()
    size: int = 0

    def __add__(self, other: Collected) -> Collected:
        return Collected(self.folders + other.folders, self.size + other.size)

    def describe(self) -> str:
        """``removed 3 leftover folders (1.2 MiB) of dead runs``."""
        size = (f"{self.size / 1024:.0f} KiB" if self.size < 1 << 20
                else f"{self.size / (1 << 20):.1f} MiB")
        count = len(self.folders)
        return (f"removed {count} leftover folder{'s' if count != 1 else ''} ({size}) of processes "
                "that died")


def _size(folder: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def collect(folders: Iterable[Path], pattern: str) -> Collected:
    """Remove the folders matching ``pattern`` in each of ``folders`` whose recorded owner is dead.
    Folders without an owner record, with a live owner, or not real folders (a symbolic link) are
    left alone. A removal is logged as a warning (shown without ``-v``: something died without
    cleaning up). Never raises."""
    removed: list[Path] = []
    size = 0
    for parent in dict.fromkeys(Path(folder) for folder in folders):
        try:
            candidates = sorted(parent.glob(pattern))
        except OSError:
            continue
        for candidate in candidates:
            try:
                if candidate.is_symlink() or not candidate.is_dir():
                    continue
            except OSError:
                continue
            owner = owner_of(candidate)
            if owner is None or owner.alive():
                continue
            bytes_in = _size(candidate)
            shutil.rmtree(candidate, ignore_errors=True)
            if not candidate.exists():
                removed.append(candidate)
                size += bytes_in
    done = Collected(tuple(removed), size)
    if removed:
        log.warning("%s: %s", done.describe(), ", ".join(str(path) for path in removed))
    return done
