"""A unit's log (``logs/<instance>/<unit>.log``): the runner's console text under a short header,
secrets masked."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fvp_harness.errors import HarnessError, storing
from fvp_harness.run.plan import Unit
from fvp_harness.scenario.secrets import redact_text
from fvp_harness.targets.base import CommandResult

__all__ = ["LOG_TAIL", "failure_text", "name_the_users_command", "write_log"]

LOG_TAIL = 30
"""Console lines of a failed instance a unit's log keeps."""


def failure_text(exc: BaseException) -> str:
    """An exception's message for a record or the manifest, at most 2,000 characters."""
    text = exc.message if isinstance(exc, HarnessError) else str(exc)
    return text.strip()[:2000] or type(exc).__name__


def write_log(
    path: Path,
    unit: Unit,
    command: str,
    result: CommandResult | None,
    exc: BaseException | None,
    *,
    secrets: Sequence[str] = (),
) -> None:
    """The unit's console text, as the target returned it, under a short header (a store-given
    path); secret environment values (``secrets``) are masked everywhere in it."""
    lines = [f"# unit {unit.id} (key {unit.key})", f"$ {command}"]
    if result is not None:
        lines += [
            result.output,
            f"# exit status {result.exit_status} after {result.duration_s:.3f} s",
        ]
    if exc is not None:
        partial = getattr(exc, "output", "") or ""
        if partial:
            lines.append(partial)
        tail = getattr(exc, "last_lines", []) or []
        if tail:
            lines += ["# last console lines:", *tail[-LOG_TAIL:]]
        lines.append(f"# {type(exc).__name__}: {failure_text(exc)}")
    with storing(path):
        path.write_text(redact_text("\n".join(lines) + "\n", secrets), encoding="utf-8")


def name_the_users_command(exc: HarnessError, line: str, command: str) -> None:
    """A target's message names the command it ran: for a unit that is the framed line
    (``run.framed``), whose preparation hides the user's ``run.command`` and pushes it past where
    messages are cut. Name the rendered command instead (in place: the exception keeps its class and
    fields)."""
    for framed in (repr(line), line):
        if framed in exc.message:
            exc.message = exc.message.replace(framed, repr(command) if framed != line else command)
            exc.args = (exc.message,)
            return
