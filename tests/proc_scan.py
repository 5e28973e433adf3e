"""Finding processes a test started, by reading /proc: every leak check of the test suite shares this."""

from __future__ import annotations

import os
from pathlib import Path


def _live_pids() -> list[tuple[int, list[bytes]]]:
    """(pid, fields of /proc/pid/stat after the command name) of every live, non-zombie process.

    Zombies are left out: they only wait for init to reap them and hold nothing.
    """
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != b"Z":
            found.append((int(entry), fields))
    return found


def processes_with_env(name: str, value: str) -> list[int]:
    """Live processes whose environment carries ``name=value`` (children inherit it, so it marks a whole tree)."""
    needle = f"{name}={value}".encode()
    found = []
    for pid, _fields in _live_pids():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(pid)
    return found


def process_group_members(pgid: int) -> list[int]:
    """Live processes of process group ``pgid``."""
    return [pid for pid, fields in _live_pids() if int(fields[2]) == pgid]


def child_processes(parent: int) -> list[int]:
    """Live direct children of process ``parent``."""
    return [pid for pid, fields in _live_pids() if int(fields[1]) == parent]
