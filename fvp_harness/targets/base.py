"""What every target offers, whatever it is (simulated FVP, real FVP, this host, a fake), and what
some add.

Why it is shaped so: docs/architecture.md, "Inside `targets/`"."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

__all__ = [
    "CommandResult",
    "CopiesOverSsh",
    "FvpSettings",
    "MasksSecrets",
    "NamesPhases",
    "SharesHostFiles",
    "StreamsCommands",
    "Target",
    "TimeoutSettings",
]


@dataclass(frozen=True)
class CommandResult:
    """One guest command's outcome. ``output`` is cleaned text: CRLF -> LF, ANSI codes stripped,
    stdout and stderr together as the console shows them."""

    command: str
    exit_status: int
    output: str
    duration_s: float = 0.0
    log_path: Path | None = None

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


@runtime_checkable
class Target(Protocol):
    """A place to run commands and put files. Opened once, used for many units, always closed.

    ``metadata`` collects provenance (FVP version banner, argv, ports, --stat block) for the
    manifest.
    """

    name: str
    log_dir: Path
    metadata: dict[str, object]

    def open(self) -> None:
        """Bring the target to a ready shell (launch, ports, boot, login). Raises
        InfrastructureError subclasses."""

    def close(self) -> None:
        """Stop politely, then forcefully; never raises; safe to call twice."""

    def run(self, command: str, timeout: float | None = None) -> CommandResult:
        """Run one shell command (already quoted with shlex.quote) and return its exit status and
        output."""
        ...

    def put(self, local: Path, remote: str) -> None:
        """Copy a host file to a guest path (the transport is the target's choice)."""

    def get(self, remote: str) -> bytes:
        """Read a guest file's bytes."""
        ...


@runtime_checkable
class StreamsCommands(Protocol):
    """Runs many short commands pipelined, with a bounded window of unanswered input, instead of one
    round trip each (an FVP console: deploy types base64 chunks this way)."""

    def stream(self, commands: Iterable[str], *, timeout: float | None = None,
               window_bytes: int = 16384) -> int:
        """Send every command; return how many ran. Raises CommandFailed when one fails."""
        ...


@runtime_checkable
class CopiesOverSsh(Protocol):
    """Copies files into the guest over ssh (SFTP, else ``cat``)."""

    def ssh_put(self, local: Path, remote: str, timeout: float | None = None) -> str:
        """Copy ``local`` to ``remote``; returns how (``sftp`` or ``cat``)."""
        ...


@runtime_checkable
class NamesPhases(Protocol):
    """A target whose timeout messages name the phase they guarded (``command``, ``unit``,
    ``deploy``), so a user knows which ``fvp.timeouts`` entry to raise."""

    def run_in_phase(self, command: str, timeout: float | None, phase: str) -> CommandResult:
        """``run`` under the deadline of ``phase``."""
        ...


@runtime_checkable
class SharesHostFiles(Protocol):
    """A target whose guest paths are paths on this machine (the host target)."""

    @property
    def guest_dir(self) -> str:
        """Where artifacts go on this target (deploy prefers it over the scenario's guest
        folder)."""
        ...

    def local_path(self, remote: str) -> Path:
        """The host path of a guest path."""
        ...


@runtime_checkable
class MasksSecrets(Protocol):
    """A target whose logs show secret texts (a token in an environment value) as ``***``; a batch
    instance that serves several scenarios adds each scenario's before its units run."""

    def redact_also(self, secrets: Sequence[str]) -> None:
        """Mask these texts too, from now on."""
        ...


class TimeoutSettings(Protocol):
    """Deadlines in seconds per phase (``scenario.Timeouts`` satisfies it)."""

    @property
    def boot(self) -> float: ...
    @property
    def login(self) -> float: ...
    @property
    def command(self) -> float: ...
    @property
    def deploy(self) -> float: ...
    @property
    def unit(self) -> float: ...
    @property
    def session(self) -> float: ...


class FvpSettings(Protocol):
    """What launching and driving a model needs from a scenario's ``fvp:`` section
    (``scenario.FvpConfig``)."""

    @property
    def binary(self) -> str: ...
    @property
    def params(self) -> Mapping[str, str | int | float | bool]: ...
    @property
    def args(self) -> Sequence[str]: ...
    @property
    def firmware(self) -> Mapping[str, str]: ...
    @property
    def sim(self) -> Mapping[str, str | int | float | bool]: ...
    @property
    def timeouts(self) -> TimeoutSettings: ...
    @property
    def timeout_scale(self) -> float: ...
