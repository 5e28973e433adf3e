"""One pair of builds compared: per model the primary comparison, identity checks (exact, per
partition, or with a tolerance), gates and secondary metrics, then the geometric mean and the
expectations (``compare``; ``analysis`` calls ``compare_samples`` once per pair of the spec)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from fvp_harness.report.stats.changes import gate_check, limit_text, tolerance_check
from fvp_harness.report.stats.findings import (
    Comparison,
    Expectation,
    GateCheck,
    IdentityCheck,
    MetricChange,
    ModelComparison,
)
from fvp_harness.report.stats.geomean import geomean
from fvp_harness.report.stats.identity import compare_partitions, identity_check
from fvp_harness.report.stats.primary import choose_primary_of, primary_comparison
from fvp_harness.report.stats.samples import Samples
from fvp_harness.report.stats.spec import (
    CompareLike,
    Settings,
    gates_of,
    identity_entries,
    metric_name,
)
from fvp_harness.report.stats.verdicts import effect_expectation

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["compare", "compare_samples"]


def compare(
    frame: pd.DataFrame,
    spec: CompareLike,
    metrics: Sequence[object] = (),
    *,
    units: pd.DataFrame | None = None,
    settings: Settings | None = None,
    pair: tuple[str, str] | None = None,
) -> Comparison:
    """Candidate vs baseline per model on the primary metric (``choose_primary``), plus identity
    checks, gates and secondary metrics.

    ``pair`` is the ``(baseline, candidate)`` to compare (default ``(spec.baseline,
    spec.candidate)``; ``analyse`` calls this once per pair of the spec). ``metrics`` (names or
    MetricSpec-like objects) adds secondary metrics shown beside the primary (e.g. NPU cycles);
    ``expect_identical`` metrics are always included. ``units`` (from ``units_frame``) is needed for
    the ``outputs`` identity check; without it that check is unverified. Each gate of ``spec.gates``
    gives one ``GateCheck`` and one expectation per model. Every model in the frame gets a row, so a
    model the pair's builds never ran is ``not measured`` in this pair.
    """
    builds = pair or (spec.baseline, spec.candidate)
    return compare_samples(Samples.of_frames(frame, units), spec, metrics, settings or Settings(),
                           builds)


def compare_samples(samples: Samples, spec: CompareLike, metrics: Sequence[object],
                    settings: Settings,
             builds: tuple[str, str]) -> Comparison:
    baseline, candidate = builds
    choice = choose_primary_of(samples, spec, builds)
    primary = choice.metric
    entries = identity_entries(spec)
    gates = gates_of(spec)
    others = list(dict.fromkeys([*(metric_name(m) for m in metrics),
                                 *(name for name, _ in entries)]))
    others = [m for m in others if m not in ("outputs", primary)]
    unit_label = samples.metric_uom.get(primary, "")

    results: list[ModelComparison] = []
    ratio_draws: list[np.ndarray] = []
    expectations: list[Expectation] = []
    gate_checks: list[GateCheck] = []
    for model in samples.models:
        row, draws = primary_comparison(samples, model, builds, primary, unit_label,
                                        spec.min_effect, settings)
        if draws is not None:
            ratio_draws.append(draws)
        identity: list[IdentityCheck] = []
        for name, tolerance in entries:
            if tolerance is not None:
                check = tolerance_check(model, name, tolerance, samples, builds, settings)
                identity.append(check)
                expectations.append(Expectation("identity", model, name, check.status, check.detail,
                                                check.tolerance))
                continue
            per_build: dict[str, list[object]]
            if name == "outputs":
                per_build = {build: list(samples.outputs.get((model, build), []))
                             for build in builds}
            else:
                per_build = {build: samples.values_of(model, build, name).tolist()
                             for build in builds}
            check = identity_check(model, name, per_build)
            if name != "outputs" and samples.partitions and check.status != "unverified":
                by_partition = compare_partitions(
                    {build: samples.calls_of(model, build, name) for build in builds}
                )
                # a partly delegated model: judged call by call, naming the partition
                if by_partition is not None:
                    check = dataclasses.replace(check, status=by_partition[0],
                                                detail=by_partition[1])
            identity.append(check)
            expectations.append(Expectation("identity", model, name, check.status, check.detail))
        for name, gate in gates.items():
            checked = gate_check(model, name, gate, samples, builds, settings)
            gate_checks.append(checked)
            limit = limit_text(checked.allowed, checked.relative,
                               "" if checked.relative else checked.unit or (gate.unit or ""))
            expectations.append(Expectation("gate", model, name, checked.status, checked.detail,
                                            limit))
        changes = [change for name in others
                   if (change := _metric_change(samples, model, name, builds)) is not None]
        expectations.append(effect_expectation(model, row.verdict, row.reason, row.saved_pct,
                                               spec.min_effect))
        results.append(dataclasses.replace(row, identity=tuple(identity), others=tuple(changes)))
    return Comparison(
        baseline=baseline,
        candidate=candidate,
        primary=primary,
        unit=unit_label,
        min_effect=spec.min_effect,
        models=tuple(results),
        geomean=geomean(results, ratio_draws, spec.min_effect, settings),
        expectations=tuple(expectations),
        primary_choice=choice,
        gates=tuple(gate_checks),
    )


def _metric_change(samples: Samples, model: str, name: str,
                   builds: tuple[str, str]) -> MetricChange | None:
    """A secondary metric's median per build for ``model`` (None when no build of the frame measured
    it)."""
    if (model, name) not in samples.uom:
        return None
    vals = {b: samples.values_of(model, b, name) for b in builds}
    both = [v for v in vals.values() if len(v)]
    identical = bool(np.ptp(np.concatenate(both)) == 0) if len(both) == 2 else None
    baseline, candidate = builds
    return MetricChange(
        name,
        str(samples.uom[(model, name)]),
        float(np.median(vals[baseline])) if len(vals[baseline]) else None,
        float(np.median(vals[candidate])) if len(vals[candidate]) else None,
        identical,
    )
