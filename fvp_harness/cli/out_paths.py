"""argparse types for the options that name where a verb writes: a folder (``-o DIR``, ``--html
DIR``, ``--results DIR``) or a file (``--junit FILE``).

Not a verb module (no ``verb_`` prefix). Why at parse time: a folder option that names an existing
file (or a path under one), or a file option that names a folder, can never be written, and was
found only when the verb wrote there: ``run -o FILE`` crashed with a traceback before booting, ``run
--junit DIR`` after the whole run, ``history -o FILE`` after reading every stored run. As an
argparse type the mistake is a usage error (exit 2, the option named) before anything is read, built
or booted. Paths that do not exist yet are fine: the verbs create them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["file_arg", "folder_arg"]


def _blocking_file(path: Path) -> Path | None:
    """The existing non-folder at ``path`` or above it (which makes creating folders there
    impossible), if any."""
    for place in (path, *path.parents):
        if place.exists() or place.is_symlink():
            return None if place.is_dir() else place
    return None


def folder_arg(text: str) -> Path:
    """A folder the verb writes into: refused when ``text`` or a folder above it is an existing
    file."""
    path = Path(text)
    blocking = _blocking_file(path)
    if blocking == path:
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder (name a folder to write "
                                         "into)")
    if blocking is not None:
        raise argparse.ArgumentTypeError(f"{text}: {blocking} is a file, so no folder can be made "
                                         "under it")
    return path


def file_arg(text: str) -> Path:
    """A file the verb writes: refused when ``text`` is an existing folder or a folder above it is a
    file."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file (name the file to write, "
                                         f"e.g. {Path(text, 'junit.xml')})")
    blocking = _blocking_file(path.parent)
    if blocking is not None:
        raise argparse.ArgumentTypeError(f"{text}: {blocking} is a file, so no folder can be made "
                                         "under it")
    return path
