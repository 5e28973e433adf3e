"""Judge a unit that ran: exit status -> provenance -> metrics -> outputs; the first problem makes
its record a test failure. One path for every kind of target (the kind hashes the outputs)."""

from __future__ import annotations

import hashlib
import posixpath
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fvp_harness.errors import (
    CommandFailed,
    ConfigurationError,
    MetricMissing,
    ProvenanceError,
    UnitFailure,
    storing,
)
from fvp_harness.run.memory import harness_samples
from fvp_harness.run.plan import Unit, key_part_extras
from fvp_harness.run.scrape import ScrapeResult, find_build_id, find_errors, find_etdump, scrape
from fvp_harness.run.unit_command import UnitCommand, fetch
from fvp_harness.run.unit_context import Ran, UnitContext, UnitKind
from fvp_harness.scenario.metrics import HARNESS_METRICS
from fvp_harness.store.records import Record
from fvp_harness.targets.base import CommandResult

__all__ = ["Judged", "judge"]


@dataclass(frozen=True)
class Judged:
    """A unit whose runner ran to an exit status (``result``); ``fetched``: its ``run.fetch`` files
    (and a traced build's ETDump), copied back into ``fetched/<unit>/``."""

    ctx: UnitContext
    kind: UnitKind
    unit: Unit
    instance: str
    attempt: int
    rendered: UnitCommand
    ran: Ran
    result: CommandResult
    fetched: Sequence[str]
    started: str
    began: float
    log_rel: str


@dataclass
class _Measured:
    """What the runner's output gave, and the record's extras so far."""

    scraped: ScrapeResult
    seen: str | None
    extra: dict[str, Any]
    samples: dict[str, list[float]] = field(default_factory=dict)
    partitions: dict[str, list[list[float]]] = field(default_factory=dict)
    short: list[str] = field(default_factory=list)


def judge(at: Judged) -> Record:
    """The unit's record: ok, or failed at the first problem."""
    measured = _measure(at)
    try:
        _check_exit(at)
        _check_provenance(at, measured.seen)
        _check_metrics(at, measured)
        outputs = _outputs(at, measured.extra)
    except UnitFailure as exc:
        return at.ctx.failed_record(
            at.unit, at.instance, at.attempt, exc, at.started, time.monotonic() - at.began,
            log_rel=at.log_rel, extra=measured.extra, build_id_seen=measured.seen,
            samples=measured.samples, units=measured.scraped.units,
        )
    unit, extra = at.unit, measured.extra
    return at.ctx.masked(
        Record(
            scenario=at.ctx.scenario.name,
            key=unit.key,
            unit_id=unit.id,
            instance=at.instance,
            build=unit.build,
            model=unit.model,
            repetition=unit.repetition,
            attempt=at.attempt,
            status="ok",
            log=at.log_rel,
            samples=measured.samples,
            partitions=measured.partitions,
            metric_units=dict(measured.scraped.units),
            outputs=outputs,
            build_id_seen=measured.seen,
            started=at.started,
            duration_s=round(time.monotonic() - at.began, 6),
            extra={**extra, **at.ctx.proof_extra(unit), **key_part_extras(unit.key_parts)},
        )
    )


def _measure(at: Judged) -> _Measured:
    """The samples scraped from the output and measured by the harness, and the extras that say
    what was rejected, short or printed (a bare-metal runner's ETDump, kept)."""
    scenario, result = at.ctx.scenario, at.result
    build = scenario.builds[at.unit.build]
    extra: dict[str, Any] = {
        "exit_status": result.exit_status,
        "command_s": round(result.duration_s, 6),
        **at.ran.provenance,
    }
    seen = find_build_id(result.output, build.id) if build.id else None
    measured = _Measured(scrape(result.output, scenario.metrics), seen, extra)
    _scraped_samples(at, measured)
    scraped, samples = measured.scraped, measured.samples
    harness = harness_samples(
        [spec.name for spec in scenario.metrics if not spec.regex and spec.name in HARNESS_METRICS],
        runner=Path(build.runner),
        model=Path(scenario.model_file(at.unit.build, at.unit.model)),
        peak_rss_kib=at.ran.framed.peak_rss_kib if at.ran.framed is not None else None,
    )
    samples.update(harness.samples)
    scraped.units.update(dict.fromkeys(harness.samples, "bytes"))
    extra.update({f"no_sample.{name}": why[:300] for name, why in harness.reasons.items()})
    if scraped.executions is not None:
        extra["executions"] = scraped.executions
    dumped, dump_warnings = find_etdump(result.output)
    if dumped:  # a bare-metal runner's printed ETDump (and debug buffer), kept like run.fetch
        folder = at.ctx.store.fetched_dir / at.unit.id
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in dumped.items():
            with storing(folder / name):
                (folder / name).write_bytes(data)
        extra["etdump"] = ",".join(sorted(dumped))
    warnings = [*scraped.warnings, *dump_warnings]
    if warnings:
        extra["scrape_warnings"] = "; ".join(warnings)[:1000]
    if measured.short:
        extra["short_metrics"] = "; ".join(measured.short)
    return measured


def _scraped_samples(at: Judged, measured: _Measured) -> None:
    """Per-inference samples without the warmup (and their partitions), the metrics that printed
    fewer values than executions, and the rejected counts."""
    run, scraped, extra = at.ctx.scenario.run, measured.scraped, measured.extra
    samples = measured.samples
    expected = run.executions
    for name, values in scraped.samples.items():
        if scraped.per.get(name, "inference") != "inference":
            samples[name] = [float(v) for v in values]
            continue
        printed = scraped.printed(name)  # valid and rejected: how many executions reported it
        if printed < expected:
            measured.short.append(f"{name}: {printed} of {expected} values")
        # the first `warmup` printed samples are warmup, whether they were valid or rejected
        warm = run.warmup - sum(1 for i in scraped.rejected_at.get(name, ()) if i < run.warmup)
        samples[name] = [float(v) for v in values[warm:]]
        if name in scraped.calls:  # each inference's delegate calls, aligned with samples
            measured.partitions[name] = scraped.calls[name][warm:]
    rejected = scraped.rejected
    if rejected:  # a structured count next to the warnings (the analysis never sees them)
        extra["rejected_samples"] = sum(rejected.values())
        extra.update({f"rejected.{name}": count for name, count in rejected.items()})
        for name in rejected:  # nothing kept: say why in one field
            if not samples.get(name) and scraped.reasons.get(name):
                extra[f"no_sample.{name}"] = scraped.reasons[name][0][:300]


def _check_exit(at: Judged) -> None:
    result = at.result
    if result.ok:
        return
    problem = at.ctx.facts.guest_problem(result.output, result.exit_status)
    if problem is not None:  # the runner is there (hashed in the guest), its loader is not
        raise ConfigurationError(problem)
    errors = find_errors(result.output)
    why = f"; {' | '.join(errors[-3:])}" if errors else ""
    tail = next(
        (line for line in reversed(result.output.strip().splitlines()) if line.strip()), ""
    )
    raise CommandFailed(
        f"the runner exited with status {result.exit_status}{why or '; last output: ' + tail}",
        exit_status=result.exit_status,
    )


def _check_provenance(at: Judged, seen: str | None) -> None:
    build = at.ctx.scenario.builds[at.unit.build]
    if build.id and seen is None:
        raise ProvenanceError(
            f"the runner never printed the id of build {at.unit.build} ({build.id!r}): "
            f"a different binary ran, or the id changed; check builds.{at.unit.build}.id and the "
            f"runner"
        )


def _check_metrics(at: Judged, measured: _Measured) -> None:
    """Every required metric has a valid sample and, per inference, a value per execution."""
    scraped, rejected = measured.scraped, measured.scraped.rejected
    required = [spec.name for spec in at.ctx.scenario.metrics if spec.required]
    missing = [name for name in required if not measured.samples.get(name)] + [
        name for name in scraped.missing if name not in required
    ]
    truncated = [item for item in measured.short if item.split(":")[0] in required]
    if not missing and not truncated:
        return
    what = ", ".join(
        f"{name} (no valid sample: {rejected[name]} rejected, see scrape_warnings)"
        if rejected.get(name)
        else name
        for name in dict.fromkeys(missing)
    )
    if truncated:
        what = (what + "; " if what else "") + "too few values: " + ", ".join(truncated)
    raise MetricMissing(f"required metric(s) missing in the runner output: {what}")


def _outputs(at: Judged, extra: dict[str, Any]) -> dict[str, str]:
    """The outputs' digests, with the ``run.fetch`` files and ETDump files copied back (a traced
    build's checked against the digest the guest took)."""
    traced, ran = at.rendered.etdump, at.ran
    if traced is not None and ran.framed is not None:  # the digests say whether it was written
        digest = ran.framed.digests.get(posixpath.basename(traced))
        if digest is None:
            raise CommandFailed(
                f"builds.{at.unit.build}.traced: the runner wrote no ETDump at {traced} (it was "
                f"given --etdump_path); is it built with the event tracer "
                f"(ET_EVENT_TRACER_ENABLED)?",
                exit_status=1,
            )
        extra["etdump"], extra["etdump_sha256"] = posixpath.basename(traced), digest
    written = [path for path in ran.kept if path not in at.fetched]
    fetched = [*at.fetched, *written]
    if written:  # a semihosting runner's ETDump files: kept like run.fetch files, not outputs
        extra["etdump"] = ",".join(posixpath.basename(path) for path in written)
    staged = [posixpath.join(at.rendered.unit_dir, name) for name in at.rendered.staged]
    outputs = at.kind.outputs(at.ctx, at.rendered, ran, exclude=[*fetched, *staged])
    folder = at.ctx.store.fetched_dir / at.unit.id
    if fetched:
        fetch(at.kind.target, folder, fetched)
    if traced is not None:  # the copy is the file the guest hashed (unframed: its own digest)
        digest = hashlib.sha256((folder / posixpath.basename(traced)).read_bytes()).hexdigest()
        if digest != extra.setdefault("etdump_sha256", digest):
            raise CommandFailed(
                f"the ETDump fetched from {traced} differs from the file the guest hashed "
                f"(sha256 {extra['etdump_sha256']})",
                exit_status=1,
            )
        extra["etdump"] = posixpath.basename(traced)
    return outputs
