"""Every failure the harness reports, classed the way a user acts on it.

The class decides the exit code and whether a retry can help::

    HarnessError                      base; carries failure_class, log_path, last_lines, stage
    ├── ConfigurationError            exit 2: the user's input is wrong; nothing ran
    │   ├── ScenarioError             a scenario file failed to load; .problems lists each
    │   │                             file:line:col message
    │   └── UnknownName               an option named a metric, build, model, scenario or run that
    │                                 does not exist
    ├── InfrastructureError           exit 3: the platform failed, not the code under test; a retry
    │   │                             may help
    │   ├── FvpStartError             the model exited before announcing its ports (its own words in
    │   │                             the message)
    │   ├── PortError                 no port banner in time, or a terminal could not be connected
    │   ├── BootTimeout               no login prompt in time; .stage names the last boot stage seen
    │   ├── KernelPanic               a panic / oops / firmware error pattern was seen on a console
    │   ├── ConsoleLost               a terminal closed or went silent while a command was running
    │   ├── FvpDied                   the model process exited while in use
    │   ├── SshUnavailable            the guest's sshd did not answer before the deadline
    │   ├── DeployError               an artifact did not arrive intact (hash mismatch after
    │   │                             transfer)
    │   ├── StorageError              a file on this host could not be written or read (disk full,
    │   │                             read-only, permission, I/O error): not retried, the run ends
    │   │                             at once
    │   ├── HardFault                 a bare-metal program hit a hard fault (the model would spin to
    │   │                             its time limit)
    │   └── TimeLimitExceeded         a bare-metal model stopped at its --timelimit (or the harness
    │                                 stopped it)
    ├── UnitFailure                   exit 1 (class "test"): the code under test failed; a retry
    │   │                             will not help
    │   ├── CommandFailed             a guest command exited non-zero
    │   │   └── OutputLimitExceeded   a host runner printed more than run.max_output bytes (it was
    │   │                             ended)
    │   ├── MetricMissing             a required metric was not found in a unit's output
    │   └── ProvenanceError           the runner did not identify itself as the build that was
    │                                 deployed
    └── Interrupted                   exit 130: Ctrl-C; everything measured so far is kept
        ├── Terminated                exit 143: SIGTERM / SIGHUP, handled as Ctrl-C
        │                             (docs/architecture.md)
        └── OutputClosed              exit 141: the reader of the output went away (``| head``),
                                      handled as Ctrl-C

Only ``cli`` turns these into exit codes and messages; library code raises them with context
attached and never prints.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "EXIT_INFRASTRUCTURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_OUTPUT_CLOSED",
    "EXIT_TERMINATED",
    "STORAGE_ERRNOS",
    "BootTimeout",
    "CommandFailed",
    "ConfigurationError",
    "ConsoleLost",
    "DeployError",
    "FailureClass",
    "FvpDied",
    "FvpStartError",
    "HardFault",
    "HarnessError",
    "InfrastructureError",
    "Interrupted",
    "KernelPanic",
    "MetricMissing",
    "OutputClosed",
    "OutputLimitExceeded",
    "PortError",
    "ProvenanceError",
    "ScenarioError",
    "SshUnavailable",
    "StorageError",
    "Terminated",
    "TimeLimitExceeded",
    "UnitFailure",
    "UnknownName",
    "check_names",
    "is_storage_failure",
    "storage_error",
    "storing",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INFRASTRUCTURE = 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
"""SIGTERM (or SIGHUP) ended the run: 128 + 15, what a shell reports for a process ended by
SIGTERM."""
EXIT_OUTPUT_CLOSED = 141
"""The output's reader went away (``fvp-harness run X | head -2``): 128 + 13, what a shell reports
for a process ended by SIGPIPE. Python ignores SIGPIPE, so the harness sees EPIPE and ends as after
a first Ctrl-C."""

STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO,
                            errno.EDQUOT, errno.EFBIG})
"""``OSError`` numbers that mean the host's storage refuses the harness (no retry, no instance, can
help)."""

FailureClass = Literal["infrastructure", "test", "configuration", "interrupted"]
"""How a failure is classed; ``records.Record.failure_class`` holds the same four values."""


class HarnessError(Exception):
    """Base of every harness failure.

    ``failure_class`` is one of ``configuration``, ``infrastructure``, ``test`` or ``interrupted``;
    ``log_path`` points at the log that shows the failure; ``last_lines`` holds the tail of that log
    so a report can show it without opening files; ``stage`` names where it happened (``boot``,
    ``login``, ``deploy``, a unit id, ...).
    """

    failure_class: ClassVar[FailureClass] = "infrastructure"
    exit_code = EXIT_INFRASTRUCTURE

    def __init__(
        self,
        message: str,
        *,
        log_path: Path | str | None = None,
        last_lines: Sequence[str] = (),
        stage: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.log_path = Path(log_path) if log_path is not None else None
        self.last_lines = list(last_lines)
        self.stage = stage

    def __str__(self) -> str:
        text = self.message
        if self.log_path is not None and str(self.log_path) not in text:
            text += f" (log: {self.log_path})"
        return text

    def details(self) -> str:
        """The message followed by the last log lines, for humans reading a failure."""
        if not self.last_lines:
            return str(self)
        tail = "\n".join(f"  | {line}" for line in self.last_lines)
        return f"{self}\nlast {len(self.last_lines)} lines:\n{tail}"


class ConfigurationError(HarnessError):
    """The user's input (scenario, profile, command line) is wrong; nothing was run."""

    failure_class = "configuration"
    exit_code = EXIT_BAD_INPUT


class ScenarioError(ConfigurationError):
    """A scenario failed to load. ``problems`` holds one ``file:line:col: field: message`` string
    per problem."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        count = len(self.problems)
        head = f"{count} problem{'s' if count != 1 else ''} in scenario"
        super().__init__(head + ":\n" + "\n".join(self.problems))


_SHOWN_NAMES = 24
"""How many valid names an ``UnknownName`` message lists (a batch has hundreds of units)."""


class UnknownName(ConfigurationError):
    """An option named something that matches nothing: ``--metric cpu_tim``, ``--only-build aftr``.

    Why a class of its own: a typo in a CI job's option must stop the job before any work (exit 2),
    and the message must carry what would have matched, so every verb words it the same way: the
    option, the name, the closest valid name (``difflib``), and every valid one."""

    def __init__(self, option: str, names: Sequence[str], valid: Iterable[str], *, what: str,
                 plural: str | None = None) -> None:
        """``plural`` introduces the valid names (default ``the {what}s there are``)."""
        self.option, self.names, self.valid = option, list(names), sorted(dict.fromkeys(valid))
        hints = []
        for name in self.names:
            close = difflib.get_close_matches(name, self.valid, n=1, cutoff=0.6)
            hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        shown = self.valid[:_SHOWN_NAMES]
        more = (f", ... ({len(self.valid) - len(shown)} more)" if len(self.valid) > len(shown)
                else "")
        known = ", ".join(shown) + more if shown else "none"
        super().__init__(f"{option}: no {what} named {', '.join(hints)}; "
                         f"{plural or f'the {what}s there are'}: {known}")


def check_names(option: str, names: Iterable[str], valid: Iterable[str], *, what: str,
                plural: str | None = None) -> None:
    """Raise ``UnknownName`` for the ``names`` that are not in ``valid`` (nothing when all are)."""
    known = list(valid)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise UnknownName(option, unknown, known, what=what, plural=plural)


class InfrastructureError(HarnessError):
    """The platform failed (model, console, network), not the code under test. A fresh instance may
    succeed."""

    failure_class = "infrastructure"
    exit_code = EXIT_INFRASTRUCTURE


class FvpStartError(InfrastructureError):
    """The model process exited or failed before announcing its terminal ports."""


class PortError(InfrastructureError):
    """No port banner appeared in time, or an announced terminal could not be connected."""


class BootTimeout(InfrastructureError):
    """No login prompt before the boot deadline; ``stage`` names the last boot stage recognised."""


class KernelPanic(InfrastructureError):
    """A kernel panic, oops or firmware error pattern appeared on a console."""


class ConsoleLost(InfrastructureError):
    """A terminal connection closed or stopped answering while it was in use."""


class FvpDied(InfrastructureError):
    """The model process exited while the session was still using it."""


class SshUnavailable(InfrastructureError):
    """The guest's SSH server did not answer on the forwarded port before the deadline."""


class DeployError(InfrastructureError):
    """An artifact did not arrive in the guest intact (its sha256 there differs from the host's)."""


class StorageError(InfrastructureError):
    """A file on this host could not be written (or read): the disk is full, the folder read-only,
    permission was refused, or the device failed. No fresh instance can help, so the run ends at
    once (exit 3) with the path and the error in one line; records already written stay valid.
    ``path`` and ``errno`` say which and why."""

    def __init__(self, message: str, *, path: Path | str | None = None,
                 errno_value: int | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.path = Path(path) if path is not None else None
        self.errno = errno_value


def is_storage_failure(exc: BaseException) -> bool:
    """True for an ``OSError`` whose number is one of ``STORAGE_ERRNOS`` (a full disk, a read-only
    folder, ...)."""
    return isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS


def storage_error(path: Path | str | None, exc: OSError, action: str = "write") -> StorageError:
    """A ``StorageError`` for ``exc`` while trying to ``action`` ``path``: ``cannot write PATH: No
    space left on device (ENOSPC)``. The path is the one the harness used, else the one the OS
    named."""
    where = path if path is not None else (exc.filename if exc.filename is not None else "a file")
    code = errno.errorcode.get(exc.errno or 0, "")
    reason = exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc))
    text = f"cannot {action} {where}: {reason}" + (f" ({code})" if code else "")
    return StorageError(text, path=where if isinstance(where, (str, Path)) else None,
                        errno_value=exc.errno, stage="storage")


@contextlib.contextmanager
def storing(path: Path | str) -> Iterator[None]:
    """Write ``path`` inside: a storage failure becomes a ``StorageError`` naming it (an
    ``OSError`` of a write names no file); any other ``OSError`` passes unchanged."""
    try:
        yield
    except OSError as exc:
        raise storage_error(path, exc) if is_storage_failure(exc) else exc from exc


class HardFault(InfrastructureError):
    """A bare-metal program hit a hard fault (the model prints ``Hard fault`` and the CPU spins in
    the handler until the time limit). ``output`` keeps what the program printed, for the unit
    log."""

    def __init__(self, message: str, *, output: str = "", **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.output = output


class TimeLimitExceeded(InfrastructureError):
    """A bare-metal model stopped at its ``--timelimit`` (``Info: Simulation is stopping. Reason:
    CPU time has been exceeded.``), or did not stop by itself within the harness's unit timeout and
    was stopped. ``output`` keeps what the program printed, for the unit log."""

    def __init__(self, message: str, *, output: str = "", **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.output = output


class UnitFailure(HarnessError):
    """The code under test failed in a unit (or a build step); retrying on a fresh instance will not
    change that.

    Its ``failure_class`` is ``test`` (as stored in records): the test failed, not the platform."""

    failure_class = "test"
    exit_code = EXIT_FAILED


class CommandFailed(UnitFailure):
    """A guest command exited with a non-zero status. ``exit_status`` and ``output`` say how."""

    def __init__(self, message: str, *, exit_status: int, output: str = "", **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.exit_status = exit_status
        self.output = output


class OutputLimitExceeded(CommandFailed):
    """A host runner printed more than ``run.max_output`` bytes; it was ended with every process it
    started. The output up to the limit is in the target's log (``output`` keeps only its tail)."""


class MetricMissing(UnitFailure):
    """A metric marked ``required`` was not found in a unit's output."""


class ProvenanceError(UnitFailure):
    """The runner's identity line does not match the build that was deployed: the wrong binary
    ran."""


class Interrupted(HarnessError):
    """The user pressed Ctrl-C; everything already measured is kept."""

    failure_class = "interrupted"
    exit_code = EXIT_INTERRUPTED


class Terminated(Interrupted):
    """SIGTERM or SIGHUP (a CI cancel, a closed terminal) stopped the run as a Ctrl-C would; exit
    143."""

    exit_code = EXIT_TERMINATED


class OutputClosed(Interrupted):
    """Standard output or error was a pipe whose reader went away (EPIPE): nobody reads the progress
    any more, so the run stops as after a first Ctrl-C (the units in flight are recorded, the
    manifest ends ``interrupted``, the report of what was measured is written); exit 141."""

    exit_code = EXIT_OUTPUT_CLOSED
