"""Judge a unit that ran: exit status -> provenance -> metrics -> outputs; the first problem makes
its record a test failure. One path for every kind of target; what differs (how outputs are hashed)
the kind answers."""

from __future__ import annotations

import hashlib
import posixpath
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fvp_harness.errors import (
    CommandFailed,
    ConfigurationError,
    HarnessError,
    MetricMissing,
    ProvenanceError,
    UnitFailure,
    storing,
)
from fvp_harness.run.memory import harness_samples
from fvp_harness.run.plan import Unit, key_part_extras
from fvp_harness.run.scrape import find_build_id, find_errors, find_etdump, scrape
from fvp_harness.run.unit_command import UnitCommand
from fvp_harness.run.unit_context import UnitContext
from fvp_harness.run.unit_kind import Ran, UnitKind
from fvp_harness.run.unit_outputs import fetch
from fvp_harness.scenario.metrics import HARNESS_METRICS
from fvp_harness.store.records import Record
from fvp_harness.targets.base import CommandResult

__all__ = ["judge"]


def judge(
    ctx: UnitContext,
    kind: UnitKind,
    instance: str,
    unit: Unit,
    attempt: int,
    rendered: UnitCommand,
    ran: Ran,
    result: CommandResult,
    fetched: Sequence[str],
    *,
    started: str,
    began: float,
    log_rel: str,
) -> Record:
    """The record of a unit whose runner ran to an exit status (``result``); ``fetched``: its
    ``run.fetch`` files (and a traced build's ETDump), copied back into ``fetched/<unit>/``."""
    scenario = ctx.scenario
    run = scenario.run
    build = scenario.builds[unit.build]
    extra: dict[str, Any] = {
        "exit_status": result.exit_status,
        "command_s": round(result.duration_s, 6),
        **ran.provenance,
    }
    seen = find_build_id(result.output, build.id) if build.id else None
    scraped = scrape(result.output, scenario.metrics)
    samples: dict[str, list[float]] = {}
    partitions: dict[str, list[list[float]]] = {}
    expected = run.executions
    short: list[str] = []
    for name, values in scraped.samples.items():
        if scraped.per.get(name, "inference") == "inference":
            printed = scraped.printed(name)  # valid and rejected: how many executions reported it
            if printed < expected:
                short.append(f"{name}: {printed} of {expected} values")
            # the first `warmup` printed samples are warmup, whether they were valid or rejected
            warm = run.warmup - sum(
                1 for at in scraped.rejected_at.get(name, ()) if at < run.warmup
            )
            samples[name] = [float(v) for v in values[warm:]]
            if (
                name in scraped.calls
            ):  # each inference's delegate calls (partitions), aligned with samples
                partitions[name] = scraped.calls[name][warm:]
        else:
            samples[name] = [float(v) for v in values]
    rejected = scraped.rejected
    if (
        rejected
    ):  # a structured count next to the warnings (the analysis never sees the rejected values)
        extra["rejected_samples"] = sum(rejected.values())
        extra.update({f"rejected.{name}": count for name, count in rejected.items()})
        for (
            name
        ) in rejected:  # nothing kept: say why in one field (a failed measurement gives no sample)
            if not samples.get(name) and scraped.reasons.get(name):
                extra[f"no_sample.{name}"] = scraped.reasons[name][0][:300]
    measured = harness_samples(
        [spec.name for spec in scenario.metrics if not spec.regex and spec.name in HARNESS_METRICS],
        runner=Path(build.runner),
        model=Path(scenario.model_file(unit.build, unit.model)),
        peak_rss_kib=ran.framed.peak_rss_kib if ran.framed is not None else None,
    )
    samples.update(measured.samples)
    scraped.units.update(dict.fromkeys(measured.samples, "bytes"))
    extra.update({f"no_sample.{name}": why[:300] for name, why in measured.reasons.items()})
    if scraped.executions is not None:
        extra["executions"] = scraped.executions
    dumped, dump_warnings = find_etdump(result.output)
    if (
        dumped
    ):  # a bare-metal runner's printed ETDump (and debug buffer), kept like a run.fetch file
        folder = ctx.store.fetched_dir / unit.id
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in dumped.items():
            with storing(folder / name):
                (folder / name).write_bytes(data)
        extra["etdump"] = ",".join(sorted(dumped))
    warnings = [*scraped.warnings, *dump_warnings]
    if warnings:
        extra["scrape_warnings"] = "; ".join(warnings)[:1000]
    if short:
        extra["short_metrics"] = "; ".join(short)

    def failed(exc: HarnessError) -> Record:
        return ctx.failed_record(
            unit,
            instance,
            attempt,
            exc,
            started,
            time.monotonic() - began,
            log_rel=log_rel,
            extra=extra,
            build_id_seen=seen,
            samples=samples,
            units=scraped.units,
        )

    if not result.ok:
        problem = ctx.facts.guest_problem(result.output, result.exit_status)
        if (
            problem is not None
        ):  # the runner is there (hashed in the guest), its loader is not: the image's
            raise ConfigurationError(problem)
        errors = find_errors(result.output)
        why = f"; {' | '.join(errors[-3:])}" if errors else ""
        tail = next(
            (line for line in reversed(result.output.strip().splitlines()) if line.strip()), ""
        )
        return failed(
            CommandFailed(
                f"the runner exited with status {result.exit_status}"
                f"{why or '; last output: ' + tail}",
                exit_status=result.exit_status,
            )
        )
    if build.id and seen is None:
        return failed(
            ProvenanceError(
                f"the runner never printed the id of build {unit.build} ({build.id!r}): "
                f"a different binary ran, "
                f"or the id changed; check builds.{unit.build}.id and the runner"
            )
        )
    required = [spec.name for spec in scenario.metrics if spec.required]
    missing = [name for name in required if not samples.get(name)] + [
        name for name in scraped.missing if name not in required
    ]
    truncated = [item for item in short if item.split(":")[0] in required]
    if missing or truncated:
        what = (
            ", ".join(
                f"{name} (no valid sample: {rejected[name]} rejected, see scrape_warnings)"
                if rejected.get(name)
                else name
                for name in dict.fromkeys(missing)
            )
            or ""
        )
        if truncated:
            what = (what + "; " if what else "") + "too few values: " + ", ".join(truncated)
        return failed(MetricMissing(f"required metric(s) missing in the runner output: {what}"))
    traced = rendered.etdump
    if traced is not None and ran.framed is not None:  # the digests say whether the runner wrote it
        digest = ran.framed.digests.get(posixpath.basename(traced))
        if digest is None:
            return failed(
                CommandFailed(
                    f"builds.{unit.build}.traced: the runner wrote no ETDump at {traced} "
                    f"(it was given "
                    f"--etdump_path); is it built with the event tracer "
                    f"(ET_EVENT_TRACER_ENABLED)?",
                    exit_status=1,
                )
            )
        extra["etdump"], extra["etdump_sha256"] = posixpath.basename(traced), digest
    written = [path for path in ran.kept if path not in fetched]
    fetched = [*fetched, *written]
    # a semihosting runner's ETDump files: kept like run.fetch files, not outputs (they hold
    # timings)
    if written:
        extra["etdump"] = ",".join(posixpath.basename(path) for path in written)
    try:
        staged = [posixpath.join(rendered.unit_dir, name) for name in rendered.staged]
        outputs = kind.outputs(ctx, rendered, ran, exclude=[*fetched, *staged])
        if fetched:
            fetch(kind.target, ctx.store.fetched_dir / unit.id, fetched)
        if (
            traced is not None
        ):  # the copy is the file the guest hashed (unframed: the copy's own digest)
            kept = ctx.store.fetched_dir / unit.id / posixpath.basename(traced)
            digest = hashlib.sha256(kept.read_bytes()).hexdigest()
            if digest != extra.setdefault("etdump_sha256", digest):
                raise CommandFailed(
                    f"the ETDump fetched from {traced} differs from the file the guest hashed "
                    f"(sha256 {extra['etdump_sha256']})",
                    exit_status=1,
                )
            extra["etdump"] = posixpath.basename(traced)
    except UnitFailure as exc:
        return failed(exc)
    return ctx.masked(
        Record(
            scenario=scenario.name,
            key=unit.key,
            unit_id=unit.id,
            instance=instance,
            build=unit.build,
            model=unit.model,
            repetition=unit.repetition,
            attempt=attempt,
            status="ok",
            log=log_rel,
            samples=samples,
            partitions=partitions,
            metric_units=dict(scraped.units),
            outputs=outputs,
            build_id_seen=seen,
            started=started,
            duration_s=round(time.monotonic() - began, 6),
            extra={**extra, **ctx.proof_extra(unit), **key_part_extras(unit.key_parts)},
        )
    )
