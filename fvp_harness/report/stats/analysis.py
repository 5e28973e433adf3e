"""Records -> tidy DataFrame -> statistics -> A/B comparison (one per pair of builds). Pure: no
files, no screen, no clock."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from fvp_harness.report.stats.comparison import compare_samples
from fvp_harness.report.stats.drift import drift_of_samples
from fvp_harness.report.stats.findings import Comparison, FailedUnit, ModelComparison, NotRunUnit
from fvp_harness.report.stats.frames import frame_columns, frame_of, units_frame
from fvp_harness.report.stats.primary import choose_primary_of, primary_comparison
from fvp_harness.report.stats.result import AnalysisResult
from fvp_harness.report.stats.samples import Samples, sample_blocks, select_latest
from fvp_harness.report.stats.spec import CompareLike, Settings, build_pairs
from fvp_harness.report.stats.summary import summarise_samples
from fvp_harness.store.records import Record

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["analyse", "primary_comparisons"]


def _failed_units(units: pd.DataFrame) -> tuple[FailedUnit, ...]:
    if not len(units) or (units["status"] == "ok").all():
        return ()
    failed = units[units["status"] != "ok"]
    return tuple(
        FailedUnit(
            str(row["unit_id"]),
            str(row["build"]),
            str(row["model"]),
            int(row["repetition"]),
            int(row["attempt"]),
            str(row["failure_class"]) or "unknown",
            str(row["failure"]),
            str(row["log"]),
        )
        for row in failed.to_dict("records")
    )


_UNIT_ID = re.compile(r"^r(\d+)-(.+)$")


def _not_run_unit(unit_id: str, key: str, others: Sequence[Record],
                  builds: Iterable[str]) -> NotRunUnit:
    """Build, model and repetition of a planned unit without a record of its key: from a stored
    record of the same unit id (other settings) when there is one, else from the id
    ``r<rep>-<build>-<model>`` (the longest known build name that fits, since names may contain
    ``-``)."""
    if others:
        last = others[-1]
        return NotRunUnit(unit_id, key, last.build, last.model, last.repetition, len(others))
    match = _UNIT_ID.match(unit_id)
    if match is None:
        return NotRunUnit(unit_id, key, "", "", None)
    rest = match.group(2)
    fitting = [b for b in builds if rest.startswith(f"{b}-") and len(rest) > len(b) + 1]
    build = max(fitting, key=len) if fitting else rest.split("-", 1)[0]
    model = rest[len(build) + 1 :]
    return NotRunUnit(unit_id, key, build, model, int(match.group(1)))


def analyse(
    records: Iterable[Record],
    spec: CompareLike | None = None,
    metrics: Sequence[object] = (),
    settings: Settings | None = None,
    planned: Mapping[str, str] | None = None,
) -> AnalysisResult:
    """The whole pipeline for ``report``: frames, summary, one comparison per pair of ``spec``
    (``build_pairs``), drift of the primary metric (each pair's; ``cpu_time`` without a spec),
    failed units and left-out values. Builds in no pair are still summarised.

    ``planned`` maps the unit id of every unit the plan wanted to its content key (``{u.id: u.key
    for u in plan.units}``; the manifest's ``plan.keys``). Then only records whose key is the
    planned key of their unit count (the others belong to other settings: counted in
    ``excluded_records``), and planned units without a record of their key are listed in ``not_run``
    (those whose latest record of their key failed are in ``failed_units`` as always). Without
    ``planned`` every record counts, as before.
    """
    settings = settings or Settings()
    records = list(records)
    not_run: list[NotRunUnit] = []
    excluded = 0
    if planned is not None:
        wanted = [r for r in records if planned.get(r.unit_id) == r.key]
        excluded = len(records) - len(wanted)
        have = {r.unit_id for r in wanted}
        stale: dict[str, list[Record]] = {}
        for r in records:
            if r.unit_id in planned and r.unit_id not in have:
                stale.setdefault(r.unit_id, []).append(r)
        known_builds = [*(b for pair in (build_pairs(spec) if spec is not None else [])
                          for b in pair),
                        *(r.build for r in records)]
        known_builds = list(dict.fromkeys(known_builds))
        not_run = [_not_run_unit(unit_id, key, stale.get(unit_id, []), known_builds)
                   for unit_id, key in planned.items() if unit_id not in have]  # fmt: skip
        records = wanted
    latest = select_latest(records)
    blocks, dropped = sample_blocks(latest)
    samples = Samples.of_records(blocks, latest)
    units = units_frame(latest, latest_only=False)
    comparisons: tuple[Comparison, ...] = ()
    if spec is not None:
        comparisons = tuple(compare_samples(samples, spec, metrics, settings, pair)
                            for pair in build_pairs(spec))
    primaries = list(dict.fromkeys(c.primary for c in comparisons)) or ["cpu_time"]
    min_effect = spec.min_effect if spec is not None else 1.0
    return AnalysisResult(
        frame=frame_of(frame_columns(blocks)),
        units=units,
        summary=summarise_samples(samples, settings),
        comparisons=comparisons,
        drift=tuple(flag for metric in primaries
                    for flag in drift_of_samples(samples, metric, min_effect, settings)),
        failed_units=_failed_units(units),
        settings=settings,
        dropped=dropped,
        not_run=tuple(not_run),
        excluded_records=excluded,
        planned=None if planned is None else len(planned),
    )


def primary_comparisons(records: Iterable[Record], spec: CompareLike,
                        settings: Settings | None = None
                        ) -> list[tuple[tuple[str, str], tuple[ModelComparison, ...]]]:
    """Each pair of ``spec`` (``build_pairs``, in order) with its models' rows on the primary
    metric: exactly the numbers of ``analyse(records, spec, settings=settings)``'s comparisons'
    ``models``, but without their identity checks and secondary metrics (``identity`` and ``others``
    are empty), and without the summary, drift checks, gates and frames ``analyse`` also builds.

    Why: ``run.adaptive`` judges every round on these rows alone, while the model waits; the rest of
    the analysis was most of what it cost. Every record counts (no ``planned``), as in ``analyse``
    without it."""
    settings = settings or Settings()
    latest = select_latest(records)
    samples = Samples.of_records(sample_blocks(latest)[0], latest)
    out: list[tuple[tuple[str, str], tuple[ModelComparison, ...]]] = []
    for pair in build_pairs(spec):
        primary = choose_primary_of(samples, spec, pair).metric
        unit_label = samples.metric_uom.get(primary, "")
        rows = tuple(primary_comparison(samples, model, pair, primary, unit_label, spec.min_effect,
                                        settings)[0]
                     for model in samples.models)  # fmt: skip
        out.append((pair, rows))
    return out
