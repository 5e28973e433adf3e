"""Run one unit on an open target: render, run, judge, record (docs/architecture.md, "Running a
unit"). How it runs is its target's kind (``kind_of``, asked once per target)."""

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
from fvp_harness.run.guest_unit import GuestCommands, HostProcess
from fvp_harness.run.judge import Judged, judge
from fvp_harness.run.launch_unit import ModelLaunch
from fvp_harness.run.plan import Unit
from fvp_harness.run.unit_command import fetch_paths
from fvp_harness.run.unit_context import UnitContext, UnitKind, is_sha256, write_log
from fvp_harness.store.records import Record
from fvp_harness.targets.baremetal import LaunchesModel
from fvp_harness.targets.base import (
    CommandResult,
    CopiesOverSsh,
    NamesPhases,
    SharesHostFiles,
    Target,
)

__all__ = ["UnitRunner", "kind_of", "utc_now"]


def utc_now() -> str:
    """UTC ISO-8601 with milliseconds: record start times and manifest dates."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


def kind_of(target: Target) -> UnitKind:
    """A model launch per unit for a target that ``LaunchesModel`` (bare metal); host processes for
    one that ``SharesHostFiles`` (``target: host``); else guest commands over its console or ssh.
    Ask once per open target: a host target shares its files only while it is open."""
    files = target if isinstance(target, SharesHostFiles) else None
    if isinstance(target, LaunchesModel):
        return ModelLaunch(target, target, files)
    if isinstance(target, NamesPhases):
        phased = target

        def run_unit(command: str, timeout: float) -> CommandResult:
            return phased.run_in_phase(command, timeout, "unit")  # a timeout names the unit phase
    else:
        run_unit = target.run
    if files is not None:
        return HostProcess(target, files, run_unit=run_unit)
    return GuestCommands(
        target, ssh=target if isinstance(target, CopiesOverSsh) else None, run_unit=run_unit
    )


class UnitRunner:
    """Runs a session's units, one at a time, on whichever open target it is given."""

    def __init__(self, ctx: UnitContext) -> None:
        self.ctx = ctx
        self.unit_log: str | None = None
        """The log of the unit in flight (relative to the results folder): where the record of an
        attempt that failed on infrastructure points."""
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
        log_rel = self.unit_log = ctx.relative(log_path)

        def failed(exc: HarnessError, extra: Mapping[str, Any] | None = None) -> Record:
            write_log(log_path, unit, rendered.command, None, exc, secrets=ctx.secrets)
            return ctx.failed_record(
                unit, instance, attempt, exc, started, time.monotonic() - began,
                log_rel=log_rel, extra=extra,
            )

        proof = ctx.facts.runner_proof(unit.build)
        if proof is not None and not is_sha256(proof):  # the guest holds another binary
            return failed(ProvenanceError(proof))
        try:
            kind.prepare(ctx, rendered)
        except UnitFailure as exc:
            return failed(exc)
        fetched = fetch_paths(ctx.scenario, unit, rendered)
        timeout = ctx.scenario.run.timeout or ctx.scenario.fvp.timeouts.unit
        try:
            ran = kind.run(ctx, rendered, timeout, fetched, log_rel)
        except CommandFailed as exc:  # a timeout (the console recovered): a test failure
            return failed(exc, {"exit_status": exc.exit_status})
        except InfrastructureError as exc:
            write_log(log_path, unit, rendered.command, None, exc, secrets=ctx.secrets)
            raise
        if ran.result is None:
            assert ran.failure is not None
            return failed(ran.failure)
        write_log(log_path, unit, ran.result.command, ran.result, None, secrets=ctx.secrets)
        ctx.facts.count_unit_seconds(ran.result.duration_s)
        at = Judged(ctx, kind, unit, instance, attempt, rendered, ran, ran.result, fetched,
                    started, began, log_rel)
        record = judge(at)
        kind.cleanup(ctx, rendered, fetched)
        return record
