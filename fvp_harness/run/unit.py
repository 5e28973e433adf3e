"""Run one unit on an open target: render, run, judge, record (docs/architecture.md, "Running a
unit").

How the unit runs is its target's kind (``run.kinds.kind_of``, asked once per target); everything
else is one path for every kind."""

from __future__ import annotations

import datetime
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fvp_harness.errors import (
    CommandFailed,
    HarnessError,
    InfrastructureError,
    ProvenanceError,
    UnitFailure,
)
from fvp_harness.run.judge import judge
from fvp_harness.run.kinds import kind_of
from fvp_harness.run.plan import Unit
from fvp_harness.run.unit_command import fetch_paths
from fvp_harness.run.unit_context import UnitContext, is_sha256
from fvp_harness.run.unit_kind import UnitKind
from fvp_harness.run.unit_log import write_log
from fvp_harness.store.records import Record
from fvp_harness.targets.base import Target

__all__ = ["UnitRunner", "utc_now"]


def utc_now() -> str:
    """UTC ISO-8601 with milliseconds: record start times and manifest dates."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


class UnitRunner:
    """Runs a session's units, one at a time, on whichever open target it is given."""

    def __init__(self, ctx: UnitContext) -> None:
        self.ctx = ctx
        self.unit_log: str | None = None
        """The log of the unit in flight (relative to the results folder): where the record of an
        attempt that failed on infrastructure points (the log holds the console's last lines)."""
        self._kind: tuple[Target, UnitKind] | None = None

    def kind(self, target: Target) -> UnitKind:
        """The target's kind, chosen on the first unit it runs."""
        if self._kind is None or self._kind[0] is not target:
            self._kind = (target, kind_of(target))
        return self._kind[1]

    def run(
        self,
        target: Target,
        instance: str,
        unit: Unit,
        attempt: int,
        placed: Mapping[Path, str],
        guest_root: str,
    ) -> Record:
        """Run one unit on an open target and return its record (ok or a test failure). Raises
        InfrastructureError when the instance failed under it."""
        ctx = self.ctx
        self.unit_log = None
        kind = self.kind(target)
        rendered = kind.render(ctx, unit, placed, guest_root)
        started = utc_now()
        began = time.monotonic()
        log_name = f"{unit.id}.log" if attempt == 1 else f"{unit.id}.a{attempt}.log"
        log_path = ctx.store.log_path(instance, log_name)
        log_rel = ctx.relative(log_path)
        self.unit_log = log_rel

        def failed(exc: HarnessError, extra: Mapping[str, Any] | None = None) -> Record:
            write_log(log_path, unit, rendered.command, None, exc, secrets=ctx.secrets)
            return ctx.failed_record(
                unit,
                instance,
                attempt,
                exc,
                started,
                time.monotonic() - began,
                log_rel=log_rel,
                extra=extra,
            )

        proof = ctx.facts.runner_proof(unit.build)
        if proof is not None and not is_sha256(
            proof
        ):  # the guest holds another binary: do not run it
            return failed(ProvenanceError(proof))
        try:
            kind.prepare(ctx, rendered)
        except UnitFailure as exc:
            return failed(exc)
        fetched = fetch_paths(ctx.scenario, unit, rendered)
        timeout = ctx.scenario.run.timeout or ctx.scenario.fvp.timeouts.unit
        try:
            ran = kind.run(ctx, rendered, timeout, fetched, log_rel)
        except (
            CommandFailed
        ) as exc:  # a timeout (the console recovered): the runner hung, a test failure
            return failed(exc, {"exit_status": exc.exit_status})
        except InfrastructureError as exc:
            write_log(log_path, unit, rendered.command, None, exc, secrets=ctx.secrets)
            raise
        if ran.result is None:
            assert ran.failure is not None
            return failed(ran.failure)
        write_log(log_path, unit, ran.result.command, ran.result, None, secrets=ctx.secrets)
        ctx.facts.count_unit_seconds(ran.result.duration_s)
        record = judge(
            ctx,
            kind,
            instance,
            unit,
            attempt,
            rendered,
            ran,
            ran.result,
            fetched,
            started=started,
            began=began,
            log_rel=log_rel,
        )
        kind.cleanup(ctx, rendered, fetched)
        return record
