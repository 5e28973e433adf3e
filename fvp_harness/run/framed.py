"""One guest command per unit: prepare the unit folder, run the runner, report its exit status, hash
its outputs and clean up, in a single round trip.

Why it is shaped so: docs/architecture.md, "Inside `run/`"."""

from __future__ import annotations

import secrets
import shlex
from dataclasses import dataclass, field

__all__ = ["PEAK_RSS_FILE", "FramedResult", "frame_unit", "new_token", "parse_framed"]


def new_token() -> str:
    """A marker nobody can print by accident: ``fvpunit`` and 12 random hex digits."""
    return f"fvpunit{secrets.token_hex(6)}"


PEAK_RSS_FILE = ".fvp-harness-rss"
"""The file in the unit folder ``time -o`` writes (a dot file: ``sha256sum *`` does not hash it)."""


def frame_unit(command: str, unit_dir: str, token: str, *, cleanup: bool = True,
               peak_rss: bool = False) -> str:
    """The one guest line of a unit (see the module docstring); ``cleanup`` False keeps the folder
    (``run.fetch``).

    ``peak_rss``: the command runs as ``time -f '<token>.rss %M' -o <folder>/.fvp-harness-rss sh -c
    '<command>; exit $?'`` and the file's line follows the status line. Why ``time``: it reports
    wait4's ``ru_maxrss``, the kernel's high-water mark of the runner's resident set at its exit
    (``VmHWM``), with no race; a poll of ``/proc/<pid>/status`` from ash misses what the runner
    touches after the last poll, and a zombie's status has no ``VmHWM``. Busybox's ``time`` applet
    (and GNU time on a host) take ``-f``/``-o``. ``; exit $?`` keeps the inner shell from exec'ing
    the command, so a runner killed by a signal still ends with ``128 + signal`` (busybox's ``time``
    returns the bare signal number for a child a signal ended). A guest without ``time`` (a busybox
    built without the applet) runs the command as it is: no ``peak_rss`` sample, nothing lost."""
    folder = shlex.quote(unit_dir)
    status = "$?"
    if peak_rss:
        rss = shlex.quote(f"{unit_dir.rstrip('/')}/{PEAK_RSS_FILE}")
        inner = shlex.quote(f"{command}; exit $?")
        timed = f"time -f '{token}.rss %M' -o {rss} sh -c {inner}"
        command = f"if time -f '' true 2>/dev/null; then {timed}; else {command}; fi; s=$?"
        status = f"$s; grep -h '^{token}.rss ' {rss} 2>/dev/null"
    line = (f"rm -rf {folder} && mkdir -p {folder} && printf '%s\\n' {token}.ready; {command}; "
            f"printf '\\n%s %s\\n' {token}.status {status}; cd {folder} && sha256sum *")
    return f"{line}; cd / && rm -rf {folder}" if cleanup else line


@dataclass(frozen=True)
class FramedResult:
    """What one framed line said: ``ready`` (the folder was prepared), the runner's ``output`` and
    ``status`` (None when the status line is missing: the line was cut short), the output
    ``digests`` by file name, and ``problems``: lines of the hashing part that are no digest (a
    folder among the outputs, an unreadable file)."""

    ready: bool
    output: str
    status: int | None
    digests: dict[str, str] = field(default_factory=dict)
    problems: tuple[str, ...] = ()
    peak_rss_kib: int | None = None
    """``time -f %M`` of a ``peak_rss`` line: the runner's peak resident set in KiB (None: not
    asked, or none)."""


def _is_digest(word: str) -> bool:
    return len(word) == 64 and all(c in "0123456789abcdef" for c in word.lower())


def parse_framed(text: str, token: str) -> FramedResult:
    """Split a framed line's console text into its parts (see ``FramedResult``)."""
    ready_mark = f"{token}.ready\n"
    ready = text.startswith(ready_mark) or f"\n{ready_mark}" in text
    start = text.find(ready_mark)
    body = text[start + len(ready_mark):] if start >= 0 else text
    status_mark = f"\n{token}.status "
    at = body.rfind(status_mark)
    if at < 0:
        return FramedResult(ready, body, None)
    output = body[:at]
    rest = body[at + len(status_mark):]
    first, _, tail = rest.partition("\n")
    try:
        status: int | None = int(first.strip())
    except ValueError:
        status = None
    digests: dict[str, str] = {}
    problems: list[str] = []
    peak: int | None = None
    for line in tail.splitlines():
        parts = line.strip().split(None, 1)
        if len(parts) == 2 and parts[0] == f"{token}.rss" and parts[1].isdigit():
            peak = int(parts[1])
        elif len(parts) == 2 and _is_digest(parts[0]):
            digests[parts[1].lstrip("*")] = parts[0].lower()
        # an empty folder leaves the glob as is
        elif line.strip() and "'*'" not in line and ": *:" not in line:
            problems.append(line.strip())
    return FramedResult(ready, output, status, digests, tuple(problems), peak)
