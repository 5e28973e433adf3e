"""What every target offers, whatever it is (simulated FVP, real FVP, this host).

The rest of the harness (deploy, execute) talks only to this interface, so it never knows whether a real model or the
embedded simulator is behind it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

__all__ = ["CommandResult", "Target"]


@dataclass(frozen=True)
class CommandResult:
    """One guest command's outcome. ``output`` is cleaned text: CRLF -> LF, ANSI codes stripped, stdout and stderr
    together as the console shows them."""

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

    ``metadata`` collects provenance (FVP version banner, argv, ports, --stat block) for the manifest.
    """

    name: str
    log_dir: Path
    metadata: dict[str, object]

    def open(self) -> None:
        """Bring the target to a ready shell (launch, ports, boot, login). Raises InfrastructureError subclasses."""

    def close(self) -> None:
        """Stop politely, then forcefully; never raises; safe to call twice."""

    def run(self, command: str, timeout: float | None = None) -> CommandResult:
        """Run one shell command (already quoted with shlex.quote) and return its exit status and output."""

    def put(self, local: Path, remote: str) -> None:
        """Copy a host file to a guest path (the transport is the target's choice)."""

    def get(self, remote: str) -> bytes:
        """Read a guest file's bytes."""
