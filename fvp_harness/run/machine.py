"""What a manifest records of the machine and the sources: CPU, memory, load, OS, the harness's own
checkout, the model binary's bytes and each build's git checkout.

Why it is shaped so: docs/architecture.md, "Inside `run/`"."""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
from pathlib import Path

from fvp_harness.files import file_sha256

__all__ = [
    "GIT_TIMEOUT_S",
    "cpu_model",
    "git_describe",
    "git_head",
    "harness_checkout",
    "load_average",
    "memory_bytes",
    "os_name",
    "resolve_binary",
]

GIT_TIMEOUT_S = 5.0
"""Deadline of one ``git describe``: a checkout on a hung network file system must not hold up the
run."""


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (``os.getloadavg``), rounded to 2 decimals; None where
    unsupported."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The CPU's marketing name (``model name`` on x86, ``Hardware``/``Model`` on Arm), else
    ``platform.processor``."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for key in ("model name", "Hardware", "Model", "cpu model"):
        for line in text.splitlines():
            name, sep, value = line.partition(":")
            if sep and name.strip() == key and value.strip():
                return value.strip()
    return platform.processor() or None


def memory_bytes() -> int | None:
    """Physical memory in bytes (``SC_PHYS_PAGES`` x ``SC_PAGE_SIZE``); None where unknown."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, AttributeError):
        return None


def os_name(os_release: Path = Path("/etc/os-release")) -> str:
    """The distribution's ``PRETTY_NAME`` (``Debian GNU/Linux 12 (bookworm)``), else
    ``platform.platform()``."""
    try:
        for line in os_release.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"') or platform.platform()
    except OSError:
        pass
    return platform.platform()


def git_head(folder: Path) -> tuple[str | None, str | None]:
    """(commit, branch) of the git checkout holding ``folder``, read from ``.git`` files (no git
    process is started); (None, None) outside one."""
    for parent in (folder, *folder.parents):
        dot_git = parent / ".git"
        if dot_git.is_file():  # a worktree or submodule: "gitdir: <path>"
            text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            if not text.startswith("gitdir:"):
                return None, None
            gitdir = (parent / text.split(":", 1)[1].strip()).resolve()
        elif dot_git.is_dir():
            gitdir = dot_git
        else:
            continue
        try:
            head = (gitdir / "HEAD").read_text(encoding="utf-8").strip()
        except OSError:
            return None, None
        if not head.startswith("ref:"):
            return (head or None), None
        ref = head.split(":", 1)[1].strip()
        branch = ref.removeprefix("refs/heads/")
        common = gitdir
        if (gitdir / "commondir").is_file():  # worktrees keep refs in the main repository
            common = (gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()).resolve()
        for base in (gitdir, common):
            ref_file = base / ref
            if ref_file.is_file():
                return ref_file.read_text(encoding="utf-8").strip() or None, branch
        for base in (gitdir, common):
            packed = base / "packed-refs"
            if packed.is_file():
                for line in packed.read_text(encoding="utf-8").splitlines():
                    parts = line.split()
                    if len(parts) == 2 and parts[1] == ref:
                        return parts[0], branch
        return None, branch
    return None, None


def git_describe(folder: Path) -> str | None:
    """``git describe --always --tags --dirty`` of the checkout holding ``folder``
    (``v1.2-3-gabc1234-dirty``); None outside a checkout, without git, or when git does not answer
    within ``GIT_TIMEOUT_S``."""
    folder = folder if folder.is_dir() else folder.parent
    if git_head(folder)[0] is None:
        return None
    try:
        done = subprocess.run(["git", "-C", str(folder), "describe", "--always", "--tags",
                               "--dirty"],
                              capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    text = done.stdout.strip()
    return text if done.returncode == 0 and text else None


@functools.lru_cache(maxsize=4)
def harness_checkout(package_dir: Path | None = None) -> tuple[str | None, str | None]:
    """(commit, describe) of the git checkout the harness runs from (an editable install); (None,
    None) when it was installed from a wheel: its version says it all then. Asked once per process
    (the code that runs is the code that was imported, whatever the checkout does meanwhile)."""
    package_dir = package_dir or Path(__file__).resolve().parent.parent
    root = package_dir.parent
    if not (root / "pyproject.toml").is_file():
        return None, None
    commit, _ = git_head(root)
    return commit, git_describe(root) if commit else None


def resolve_binary(binary: str) -> tuple[str | None, str | None]:
    """(absolute path, sha256) of a model binary as a boot finds it (a bare name through ``PATH``);
    (None, None) when it is not a file here. Hashed with ``files.file_sha256`` (cached per inode and
    times)."""
    found = binary if os.sep in binary else shutil.which(binary)
    if found is None or not os.path.isfile(found):
        return None, None
    path = os.path.realpath(found)
    try:
        return path, file_sha256(Path(path))
    except OSError:
        return path, None
