"""What every step of a unit reads (the scenario, the store, what the session proved of its
instance), and the records a unit ends with: a failed one, secrets masked, the proven runner hash
and the content key's parts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from fvp_harness.errors import FailureClass, HarnessError
from fvp_harness.profiles import Profile
from fvp_harness.run.plan import Unit, key_part_extras
from fvp_harness.run.unit_log import failure_text
from fvp_harness.scenario.model import Scenario
from fvp_harness.scenario.secrets import redact_text
from fvp_harness.store.folder import ResultStore
from fvp_harness.store.records import Record
from fvp_harness.targets.base import CommandResult, Target

__all__ = ["SessionFacts", "UnitContext", "is_sha256"]


class SessionFacts(Protocol):
    """What the session running the units knows of its instance (``execute.SessionRunner`` satisfies
    it)."""

    def runner_proof(self, build: str) -> str | None:
        """The build's runner sha256 as the guest computed it, or why it could not be proven; None:
        not asked."""
        ...

    def guest_problem(self, output: str, exit_status: int) -> str | None:
        """Why a runner that failed could not start in this guest (a missing loader), or None."""
        ...

    def count_unit_seconds(self, seconds: float) -> None:
        """Add a runner command's own duration to the session's ``unit_seconds``."""
        ...


def is_sha256(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


@dataclass(frozen=True)
class UnitContext:
    """The scenario, profile and store a session's units are run against, with its facts and
    settings."""

    scenario: Scenario
    profile: Profile
    store: ResultStore
    facts: SessionFacts
    command_timeout: float | None = None
    """Timeout of the harness's own guest commands (prepare, hash); None: the target's configured
    one."""
    secrets: tuple[str, ...] = ()
    """Secret environment values: masked in unit logs, failure texts and records (the runner gets
    them)."""

    def guest(self, target: Target, command: str) -> CommandResult:
        """One of the harness's own guest commands, under ``command_timeout``."""
        return target.run(command, self.command_timeout)

    def relative(self, path: Path) -> str:
        """``path`` relative to the results folder (as records and the manifest name logs), else as
        it is."""
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
        """The record with secret environment values masked in its texts (failure, build id line,
        extras)."""
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
        """``runner_sha256``: the runner's hash as the guest computed it before the unit ran (when
        proven)."""
        proof = self.facts.runner_proof(unit.build)
        return {"runner_sha256": proof} if proof is not None and is_sha256(proof) else {}
