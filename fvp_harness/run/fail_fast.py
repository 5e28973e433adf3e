"""Fail-fast: a build whose first units all fail the same way will fail every unit, so the run stops
(docs/batch.md, "Failures"). ``-k``/``--keep-going`` turns it off."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from fvp_harness.store.records import Record

__all__ = ["FailFast", "Scope"]

SAME = 2
"""Failed units of one build, all alike, that stop the run."""


@dataclass(frozen=True)
class Scope:
    """What the rule needs of one scenario of the run: its models that run, its retries, its
    name."""

    models: int
    retries: int
    label: str = ""
    root: str = ""
    """The results folder, to name the unit log in full."""


@dataclass
class _Build:
    failures: list[Record] = field(default_factory=list)
    cleared: bool = False
    """An ok unit, or a failure unlike the first: the build's failures are not deterministic."""


class FailFast:
    """Watches the final records of each (scenario, build): when its first ``SAME`` units failed
    with one failure class and message, on two models when the run has two or more (one model's
    own crash is not the runner's), ``observe`` returns the one line saying so. An ok unit or a
    different message first
    disarms that build (a flaky failure never stops a run). Thread-safe; trips once."""

    def __init__(self, scopes: Mapping[int, Scope]) -> None:
        self._scopes = dict(scopes)
        self._lock = threading.Lock()
        self._builds: dict[tuple[int, str], _Build] = {}
        self.tripped: str | None = None
        """The stop line, once the rule tripped."""
        self.short: str | None = None
        """Why the units left did not run, in a few words."""

    def observe(self, node: int, record: Record) -> str | None:
        """The stop line when ``record`` (of scenario ``node``) trips the rule, else None."""
        scope = self._scopes.get(node)
        if scope is None:
            return None
        if (
            record.status != "ok"
            and record.failure_class == "infrastructure"
            and record.attempt <= scope.retries
        ):
            return None  # execute retries it on a fresh instance: not final
        with self._lock:
            if self.tripped is not None:
                return None
            build = self._builds.setdefault((node, record.build), _Build())
            if build.cleared:
                return None
            if record.status == "ok" or (
                build.failures and _why(build.failures[0]) != _why(record)
            ):
                build.cleared = True
                return None
            build.failures.append(record)
            models = {failed.model for failed in build.failures}
            if len(build.failures) < SAME or len(models) < min(SAME, scope.models):
                return None
            self.tripped = _line(scope, record, build.failures)
            where = f" of {scope.label}" if scope.label else ""
            self.short = (f"build {record.build}{where} failed alike on its first units "
                          "(fail-fast; -k runs them)")
            return self.tripped


def _why(record: Record) -> tuple[str | None, str | None]:
    return record.failure_class, record.failure


def _line(scope: Scope, record: Record, failures: list[Record]) -> str:
    where = f"{scope.label}: " if scope.label else ""
    units = ", ".join(failed.unit_id for failed in failures)
    log = f"{scope.root}/{record.log}" if scope.root and record.log else record.log or "no log"
    first = (record.failure or "").splitlines()[0] if record.failure else "failed"
    return (
        f"{where}stopped early: the first units of build {record.build} ({units}) all failed with "
        f"{record.failure_class}: {first} (log: {log}); the units not run are listed as not run "
        "(-k/--keep-going runs them)"
    )
