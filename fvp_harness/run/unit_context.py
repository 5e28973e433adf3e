"""What every step of a unit reads (the scenario, the store, what the session proved of its
instance), how a kind of target runs units (``UnitKind``), the unit's log and its failed record."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from fvp_harness.errors import FailureClass, HarnessError, UnitFailure, storing
from fvp_harness.profiles import Profile
from fvp_harness.run.framed import FramedResult
from fvp_harness.run.plan import Unit, key_part_extras
from fvp_harness.run.unit_command import UnitCommand
from fvp_harness.scenario.model import Scenario
from fvp_harness.scenario.secrets import redact_text
from fvp_harness.store.folder import ResultStore
from fvp_harness.store.records import Record
from fvp_harness.targets.base import CommandResult, CopiesOverSsh, Target

__all__ = [
    "Ran",
    "SessionFacts",
    "UnitContext",
    "UnitKind",
    "Uploads",
    "failure_text",
    "is_sha256",
    "name_the_users_command",
    "write_log",
]

LOG_TAIL = 30
"""Console lines of a failed instance a unit's log keeps."""


class SessionFacts(Protocol):
    """What the session running the units knows of its instance (``execute.SessionRunner``)."""

    def runner_proof(self, build: str) -> str | None:
        """The build's runner sha256 as the guest computed it, or why it could not be proven; None:
        not asked."""
        ...

    def guest_problem(self, output: str, exit_status: int) -> str | None:
        """Why a runner that failed could not start in this guest (a missing loader), or None."""
        ...

    def count_unit_seconds(self, seconds: float) -> None: ...


def is_sha256(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


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
    """The unit's console text under a short header, secret environment values masked."""
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
    """Name the user's ``run.command`` instead of the framed line a target's message names (in
    place: the exception keeps its class and fields)."""
    for framed in (repr(line), line):
        if framed in exc.message:
            exc.message = exc.message.replace(framed, repr(command) if framed != line else command)
            exc.args = (exc.message,)
            return


@dataclass(frozen=True)
class UnitContext:
    """The scenario, profile and store a session's units are run against, with its facts and
    settings."""

    scenario: Scenario
    profile: Profile
    store: ResultStore
    facts: SessionFacts
    command_timeout: float | None = None
    """Timeout of the harness's own guest commands (prepare, hash); None: the target's own."""
    secrets: tuple[str, ...] = ()
    """Secret environment values: masked in unit logs, failure texts and records."""

    def guest(self, target: Target, command: str) -> CommandResult:
        return target.run(command, self.command_timeout)

    def relative(self, path: Path) -> str:
        """``path`` relative to the results folder, else as it is."""
        root = self.store.root
        try:
            return Path(path).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return str(path)

    def failed_record(
        self,
        unit: Unit,
        instance: str,
        attempt: int,
        exc: BaseException,
        started: str,
        duration: float,
        *,
        log_rel: str | None = None,
        extra: Mapping[str, Any] | None = None,
        build_id_seen: str | None = None,
        samples: Mapping[str, list[float]] | None = None,
        units: Mapping[str, str] | None = None,
    ) -> Record:
        """The record of a failed attempt: its class (``test`` unless the exception says otherwise),
        its text and the log that shows it."""
        failure_class: FailureClass = exc.failure_class if isinstance(exc, HarnessError) else "test"
        if log_rel is None and isinstance(exc, HarnessError) and exc.log_path is not None:
            log_rel = self.relative(exc.log_path)
        return self.masked(
            Record(
                scenario=self.scenario.name,
                key=unit.key,
                unit_id=unit.id,
                instance=instance,
                build=unit.build,
                model=unit.model,
                repetition=unit.repetition,
                attempt=attempt,
                status="failed",
                failure_class=failure_class,
                failure=f"{type(exc).__name__}: {failure_text(exc)}",
                log=log_rel,
                samples=dict(samples or {}),
                metric_units=dict(units or {}),
                build_id_seen=build_id_seen,
                started=started,
                duration_s=round(duration, 6),
                extra={
                    **(extra or {}),
                    **self.proof_extra(unit),
                    **key_part_extras(unit.key_parts),
                },
            )
        )

    def masked(self, record: Record) -> Record:
        """The record with secret environment values masked in its texts."""
        if not self.secrets:
            return record
        secrets = self.secrets
        return record.model_copy(
            update={
                "failure": None if record.failure is None else redact_text(record.failure, secrets),
                "build_id_seen": None
                if record.build_id_seen is None
                else redact_text(record.build_id_seen, secrets),
                "extra": {
                    key: redact_text(value, secrets) if isinstance(value, str) else value
                    for key, value in record.extra.items()
                },
            }
        )

    def proof_extra(self, unit: Unit) -> dict[str, str]:
        """``runner_sha256``: the runner's hash as the guest computed it before the unit ran."""
        proof = self.facts.runner_proof(unit.build)
        return {"runner_sha256": proof} if proof is not None and is_sha256(proof) else {}


@dataclass(frozen=True)
class Ran:
    """What running a unit's command gave, whatever the kind."""

    result: CommandResult | None
    """The runner's own text and exit status; None when ``failure`` says why there is none."""
    failure: UnitFailure | None = None
    framed: FramedResult | None = None
    """A guest unit's framed line: the output digests and peak resident set came with it."""
    provenance: Mapping[str, Any] = field(default_factory=dict)
    """A launch's ``model_sha256`` and ``inputs_sha256``: the files as the model got them."""
    kept: tuple[str, ...] = ()
    """ETDump files a semihosting runner wrote into its folder: kept like ``run.fetch`` files."""


class Uploads(Protocol):
    """What a guest kind copies through (``run.deploy.Deployer``)."""

    timeout: float | None

    def upload(self, local: Path, remote: str, digest: str, ssh: CopiesOverSsh | None) -> str: ...


class UnitKind(Protocol):
    """How units run on one kind of target (``run.guest_unit``, ``run.launch_unit``), bound to one
    target and chosen once from its declared abilities (``run.unit.kind_of``)."""

    target: Target
    in_place: bool
    """Nothing is deployed: the model reads every artifact where it is on this host (bare metal)."""

    def guest_dir(self) -> str | None:
        """The target's own artifact folder (a host target's working folder), or None."""
        ...

    def copy(self, uploads: Uploads, local: Path, remote: str, digest: str) -> str:
        """Put ``local`` at ``remote``, its sha256 checked; returns the method, for the manifest."""
        ...

    def render(
        self, ctx: UnitContext, unit: Unit, placed: Mapping[Path, str], guest_root: str
    ) -> UnitCommand: ...

    def prepare(self, ctx: UnitContext, rendered: UnitCommand) -> None:
        """Make the unit's folder, when running it does not (raises ``UnitFailure``)."""
        ...

    def run(
        self,
        ctx: UnitContext,
        rendered: UnitCommand,
        timeout: float,
        fetched: Sequence[str],
        log_rel: str,
    ) -> Ran:
        """Raises ``CommandFailed`` when the runner hung (a test failure), ``InfrastructureError``
        when the instance failed under it."""
        ...

    def outputs(
        self, ctx: UnitContext, rendered: UnitCommand, ran: Ran, exclude: Sequence[str]
    ) -> dict[str, str]:
        """``Record.outputs`` without the ``exclude`` guest paths."""
        ...

    def cleanup(self, ctx: UnitContext, rendered: UnitCommand, fetched: Sequence[str]) -> None: ...
