"""When the reader of the harness's output goes away (``fvp-harness run X 2>&1 | head -2``).

Python ignores SIGPIPE, so a write to a pipe nobody reads fails with EPIPE (``BrokenPipeError``),
and keeps failing: the bytes still buffered, a log line, the exit message, the interpreter's last
flush (exit 120). Standard library only: ``main`` imports it before any verb.
"""

from __future__ import annotations

import os

__all__ = ["silence_stream"]


def silence_stream(stream: object) -> None:
    """Point the file descriptor of ``stream`` (a closed pipe) at /dev/null, so the bytes still
    buffered and every later write (a log line, the exit message, the interpreter's last flush) go
    nowhere instead of failing again."""
    try:
        fd = stream.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        os.dup2(devnull, fd)
    except OSError:
        pass
    finally:
        os.close(devnull)
