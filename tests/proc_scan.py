"""Finding processes a test started, by reading /proc: every leak check of the test suite shares
this."""

from __future__ import annotations

import os


def _live_pids() -> list[tuple[int, list[bytes]]]:
    """(pid, fields of /proc/pid/stat after the command name) of every live, non-zombie process.

    Zombies are left out: they only wait for init to reap them and hold nothing.
    """
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = _read(f"/proc/{entry}/stat").rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != b"Z":
            found.append((int(entry), fields))
    return found


def _read(path: str) -> bytes:
    """A /proc file's bytes (plain ``open``: the leak guards read two files of every process, before
    and after each test, and ``Path`` costs more than the read)."""
    with open(path, "rb") as file:
        return file.read()


def _has_env(pid: int, needle: bytes) -> bool:
    try:
        return needle in _read(f"/proc/{pid}/environ").split(b"\0")
    except OSError:
        return False


def processes_with_env(name: str, value: str) -> list[int]:
    """Live processes whose environment carries ``name=value`` (children inherit it, so it marks a
    whole tree)."""
    needle = f"{name}={value}".encode()
    return [pid for pid, _fields in _live_pids() if _has_env(pid, needle)]


def children_and_marked(parent: int, name: str, value: str) -> tuple[set[int], set[int]]:
    """(live direct children of ``parent``, live processes carrying ``name=value``) from one scan of
    /proc: what a leak guard compares before and after a test, at half the cost of
    ``child_processes`` and ``processes_with_env`` one after the other."""
    needle = f"{name}={value}".encode()
    children: set[int] = set()
    marked: set[int] = set()
    for pid, fields in _live_pids():
        if int(fields[1]) == parent:
            children.add(pid)
        if _has_env(pid, needle):
            marked.add(pid)
    return children, marked


def process_group_members(pgid: int) -> list[int]:
    """Live processes of process group ``pgid``."""
    return [pid for pid, fields in _live_pids() if int(fields[2]) == pgid]


def child_processes(parent: int) -> list[int]:
    """Live direct children of process ``parent``."""
    return [pid for pid, fields in _live_pids() if int(fields[1]) == parent]
