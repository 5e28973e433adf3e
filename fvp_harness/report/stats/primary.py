"""The primary metric: which one headlines a comparison (``choose_primary``), and one model's row on
it (``primary_comparison``: medians, the saving and its CI, the process-level p-value and the
verdict).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fvp_harness.report.stats.bootstrap import bootstrap_draws, percentile_interval
from fvp_harness.report.stats.findings import ModelComparison, PrimaryChoice, Verdict
from fvp_harness.report.stats.pvalues import (
    bootstrap_p,
    mann_whitney,
    process_level_p,
    unit_level_interval,
)
from fvp_harness.report.stats.samples import Samples
from fvp_harness.report.stats.spec import CompareLike, Settings, primary_candidates
from fvp_harness.report.stats.verdicts import decide_exact, decide_verdict
from fvp_harness.scenario.metrics import MEMORY_METRICS

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["choose_primary", "choose_primary_of", "primary_comparison"]


def choose_primary(frame: pd.DataFrame, spec: CompareLike,
                   pair: tuple[str, str] | None = None) -> PrimaryChoice:
    """The first metric of ``spec.primary`` that every ok unit of the two compared builds produced
    (``pair``, default ``(spec.baseline, spec.candidate)``).

    Why per unit and not per model: a metric some units lack (a stock runner prints no CPU-time
    line) would compare different sets of units; the next metric in the list that all of them
    printed is a fair headline. When none qualifies, the one most units produced is taken and the
    reason says so. Each pair chooses for its own two builds.
    """
    return choose_primary_of(Samples.of_frames(frame), spec,
                             pair or (spec.baseline, spec.candidate))


def choose_primary_of(samples: Samples, spec: CompareLike,
                      builds: tuple[str, str]) -> PrimaryChoice:
    candidates = tuple(primary_candidates(spec))
    if len(candidates) == 1:
        return PrimaryChoice(candidates[0], candidates, "the scenario's compare.primary")
    units = samples.unit_ids(builds)
    if not units:
        return PrimaryChoice(candidates[0], candidates,
                             f"first of {', '.join(candidates)}: no unit of "
                             f"{builds[0]} or {builds[1]} ran successfully")
    having = {name: samples.unit_ids(builds, name) for name in candidates}
    counts = ", ".join(f"{name}: {len(having[name])} of {len(units)} units" for name in candidates)
    for name in candidates:
        if having[name] == units:
            why = f"first of {', '.join(candidates)} that every unit produced"
            if name != candidates[0]:  # say what the preferred ones lacked
                why += f" ({counts})"
            return PrimaryChoice(name, candidates, why)
    best = max(candidates, key=lambda name: len(having[name]))
    return PrimaryChoice(best, candidates,
                         f"no metric of {', '.join(candidates)} was produced by every unit "
                         f"({counts}); the most complete one is used")


def primary_comparison(samples: Samples, model: str, builds: tuple[str, str], primary: str,
                       unit_label: str,
                        min_effect: float,
                       settings: Settings) -> tuple[ModelComparison, np.ndarray | None]:
    """One model's row on the primary metric, without identity checks and secondary metrics, and the
    bootstrap draws of its ratio for the geometric mean (None when it has no ratio)."""
    baseline, candidate = builds
    base_groups = samples.units_of(model, baseline, primary)
    cand_groups = samples.units_of(model, candidate, primary)
    base = np.concatenate(base_groups) if base_groups else np.array([])
    cand = np.concatenate(cand_groups) if cand_groups else np.array([])
    bmed = float(np.median(base)) if len(base) else None
    cmed = float(np.median(cand)) if len(cand) else None
    ratio = saved = low = high = p_value = p_units = p_pooled = None
    bci: tuple[float | None, float | None] = (None, None)
    cci: tuple[float | None, float | None] = (None, None)
    ratio_draws: np.ndarray | None = None
    if bmed is None or cmed is None:
        missing = [b for b, v in ((baseline, base), (candidate, cand)) if not len(v)]
        verdict: Verdict = "not measured"
        reason = f"no {primary} samples for {', '.join(missing)}"
    else:
        bdraws = bootstrap_draws(base_groups, settings, model, baseline)
        cdraws = bootstrap_draws(cand_groups, settings, model, candidate)
        bci, cci = (
            percentile_interval(bdraws, settings.confidence),
            percentile_interval(cdraws, settings.confidence),
        )
        p_pooled = mann_whitney(base, cand)
        if bmed == 0:
            verdict, reason = "inconclusive", "baseline median is 0: no ratio"
        else:
            ratio = cmed / bmed
            saved = 100.0 * (1.0 - ratio)
            with np.errstate(divide="ignore", invalid="ignore"):
                draws = cdraws / bdraws
            draws = np.where(np.isfinite(draws) & (draws > 0), draws, np.nan)
            low, high = percentile_interval(100.0 * (1.0 - draws), settings.confidence)
            cluster = unit_level_interval(base_groups, cand_groups, ratio, settings.confidence)
            if cluster is not None:
                (t_low, t_high), p_units = cluster
                if low is not None and high is not None:
                    low, high = min(low, t_low), max(high, t_high)
            p_value = process_level_p(bootstrap_p(draws), p_units)
            size = primary in MEMORY_METRICS
            one_number = np.ptp(base) == 0 and np.ptp(cand) == 0
            if one_number and (size or min(len(base), len(cand)) >= 2):
                # a size, or a counter one number in every sample (NPU cycles): exact, no CI or p
                low = high = p_value = p_units = None
                verdict, reason = decide_exact(saved, min_effect, size=size)
            elif len(base) < 2 or len(cand) < 2:
                verdict, reason = "inconclusive", "fewer than 2 samples in a build"
            else:
                verdict, reason = decide_verdict(low, high, p_value, min_effect, settings.alpha)
            # an exact row (no CI) gives the geometric mean no draws to pool
            if ratio > 0 and np.isfinite(draws).any() and low is not None:
                ratio_draws = draws
    row = ModelComparison(
        model=model,
        metric=primary,
        unit=unit_label,
        n_baseline=len(base),
        n_candidate=len(cand),
        units_baseline=len(base_groups),
        units_candidate=len(cand_groups),
        baseline_median=bmed,
        candidate_median=cmed,
        baseline_ci=bci,
        candidate_ci=cci,
        ratio=ratio,
        saved_pct=saved,
        ci_low=low,
        ci_high=high,
        p_value=p_value,
        p_units=p_units,
        p_pooled=p_pooled,
        verdict=verdict,
        reason=reason,
    )
    return row, ratio_draws
