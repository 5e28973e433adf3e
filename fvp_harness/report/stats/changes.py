"""Changes of other metrics than the primary one: gates (the largest allowed regression) and
identity checks with a tolerance, both judged on the CI of the change candidate - baseline; a
metric that is one number in every sample of each build (a size, NPU cycles) is decided on the
exact change instead."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fvp_harness.report import format as fmt
from fvp_harness.report.stats.bootstrap import bootstrap_draws, percentile_interval
from fvp_harness.report.stats.findings import GateCheck, GateVerdict, IdentityCheck, Status
from fvp_harness.report.stats.pvalues import unit_level_difference, unit_level_interval
from fvp_harness.report.stats.samples import Samples
from fvp_harness.report.stats.spec import GateLike, Settings, ToleranceLike
from fvp_harness.report.stats.verdicts import decide_gate
from fvp_harness.scenario.metrics import MEMORY_METRICS

__all__ = ["Change", "gate_check", "limit_text", "measure_change", "tolerance_check"]


@dataclass(frozen=True)
class Change:
    """Candidate - baseline of one metric for one model: in % of the baseline median (relative) or
    in the metric's unit, with its CI; ``why`` says what is missing when ``change`` or the CI is
    None."""

    n_baseline: int
    n_candidate: int
    baseline_median: float | None
    candidate_median: float | None
    change: float | None
    low: float | None
    high: float | None
    why: str


def measure_change(
    samples: Samples, model: str, metric: str, builds: tuple[str, str], relative: bool,
    settings: Settings
) -> Change:
    """The change of ``metric`` (its ok samples for ``model``) from ``builds[0]`` to ``builds[1]``.

    The CI is built like the primary comparison's: the two-level bootstrap of the medians (ratio or
    difference), widened to the Welch t-interval over unit medians when that is wider and each build
    has >= 2 units."""
    base_groups = samples.units_of(model, builds[0], metric)
    cand_groups = samples.units_of(model, builds[1], metric)
    base = np.concatenate(base_groups) if base_groups else np.array([])
    cand = np.concatenate(cand_groups) if cand_groups else np.array([])
    bmed = float(np.median(base)) if len(base) else None
    cmed = float(np.median(cand)) if len(cand) else None
    if bmed is None or cmed is None:
        missing = [b for b, v in zip(builds, (base, cand), strict=True) if not len(v)]
        return Change(len(base), len(cand), bmed, cmed, None, None, None,
                       f"no valid {metric} samples for {', '.join(missing)}")
    if relative and bmed == 0:
        return Change(len(base), len(cand), bmed, cmed, None, None, None,
                       "the baseline median is 0: no percentage (give an absolute amount instead)")
    change = 100.0 * (cmed / bmed - 1.0) if relative else cmed - bmed
    if len(base) < 2 or len(cand) < 2:
        return Change(len(base), len(cand), bmed, cmed, change, None, None,
                       "no confidence interval: fewer than 2 samples in a build")
    bdraws = bootstrap_draws(base_groups, settings, model, metric, builds[0])
    cdraws = bootstrap_draws(cand_groups, settings, model, metric, builds[1])
    wide: tuple[float, float] | None
    if relative:
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = cdraws / bdraws
        ratios = np.where(np.isfinite(ratios) & (ratios > 0), ratios, np.nan)
        low, high = percentile_interval(100.0 * (ratios - 1.0), settings.confidence)
        cluster = unit_level_interval(base_groups, cand_groups, cmed / bmed, settings.confidence)
        # saved % -> change %
        wide = (-cluster[0][1], -cluster[0][0]) if cluster is not None else None
    else:
        low, high = percentile_interval(cdraws - bdraws, settings.confidence)
        wide = unit_level_difference(base_groups, cand_groups, settings.confidence)
    if low is not None and high is not None and wide is not None:
        low, high = min(low, wide[0]), max(high, wide[1])
    why = "" if low is not None else "no confidence interval (too few distinct draws)"
    return Change(len(base), len(cand), bmed, cmed, change, low, high, why)


def _change_words(value: float, relative: bool, unit: str) -> str:
    """A change (candidate - baseline) in words: ``57.2% lower``, ``203% higher``, ``0.85 ms
    higher``, ``unchanged``; a reader need not know which sign means worse."""
    if value == 0:
        return "unchanged"
    direction = "higher" if value > 0 else "lower"
    if relative:
        return f"{abs(value):.{0 if abs(value) >= 100 else 1}f}% {direction}"
    return fmt.number(abs(value)) + (f" {unit}" if unit else "") + f" {direction}"


def _allowed_words(amount: float, relative: bool, unit: str) -> str:
    """A gate's limit in words: ``a rise of at most 10%``, ``a rise of at most 0.2 ms``, ``no
    rise``."""
    if not amount:
        return "no rise"
    return f"a rise of at most {amount:g}" + ("%" if relative else f" {unit}" if unit else "")


def _signed_amount(value: float, relative: bool, unit: str) -> str:
    """A change as the gate and tolerance texts show it: ``+203%``, ``+2.1%``, ``+0.85 ms``."""
    if relative:
        return f"{value:+.{0 if abs(value) >= 100 else 1}f}%"
    shown = "0" if value == 0 else ("-" if value < 0 else "+") + fmt.number(abs(value))
    return shown + (f" {unit}" if unit else "")


def _interval_text(low: float, high: float, relative: bool, unit: str) -> str:
    if relative:
        return fmt.signed_percent_interval(low, high)
    return f"{_signed_amount(low, False, '')} … {_signed_amount(high, False, unit)}"


def limit_text(amount: float, relative: bool, unit: str, sign: str = "+") -> str:
    """The user's limit as written: ``+10%``, ``+0.2 ms``, ``±5%`` (``0 cycles`` for none at
    all)."""
    text = f"{sign}{amount:g}" if amount else "0"
    return f"{text}%" if relative else text + (f" {unit}" if unit else "")


_EXACT = "every run of each build measured the same size: decided without a CI"
_EXACT_COUNT = "every sample of each build the same number: decided without a CI"


def _exact_words(metric: str) -> str:
    return _EXACT if metric in MEMORY_METRICS else _EXACT_COUNT


def _deterministic(samples: Samples, model: str, metric: str, builds: tuple[str, str]) -> bool:
    """Every sample of each build is the same number: a size, not a measurement with noise (a
    program's planned buffers, a file's bytes), or a counter (NPU cycles) in at least 2 samples of
    each build. Such a change is exact: no CI of zero width, no p-value."""
    for build in builds:
        values = samples.values_of(model, build, metric)
        if not len(values) or float(np.min(values)) != float(np.max(values)):
            return False
        if metric not in MEMORY_METRICS and len(values) < 2:  # one sample of a counter: no proof
            return False
    return True


def gate_check(
    model: str, metric: str, gate: GateLike, samples: Samples, builds: tuple[str, str],
    settings: Settings
) -> GateCheck:
    unit = str(samples.uom.get((model, metric), ""))
    relative, allowed = gate.relative, float(gate.amount)
    shown_unit = (unit or gate.unit or "") if not relative else ""
    change = measure_change(samples, model, metric, builds, relative, settings)

    def check(verdict: GateVerdict, status: Status, detail: str, ci: bool = True) -> GateCheck:
        return GateCheck(model, metric, unit, relative, allowed, change.baseline_median,
                         change.candidate_median,
                         change.n_baseline, change.n_candidate, change.change,
                         change.low if ci else None, change.high if ci else None, verdict, status,
                         detail)

    if not relative and gate.unit and unit and gate.unit != unit:
        return check("inconclusive", "unverified",
                     f"the gate is in {gate.unit} but {metric} is recorded in "
                     f"{unit}: not comparable")
    if change.baseline_median is None or change.candidate_median is None:
        return check("not measured", "unverified", change.why)
    if change.change is None:
        return check("inconclusive", "unverified", change.why)
    shown = _change_words(change.change, relative, shown_unit)
    if _deterministic(samples, model, metric, builds):
        words = _allowed_words(allowed, relative, shown_unit)
        exact = _exact_words(metric)
        if change.change > allowed:
            return check("violated", "fail", f"{shown}, more than allowed ({words}; {exact})",
                         ci=False)
        return check("within", "pass", f"{shown}, within what is allowed ({words}; {exact})",
                     ci=False)
    if change.low is None or change.high is None:
        return check("inconclusive", "unverified", f"{shown}: {change.why}")
    verdict, status = decide_gate(change.low, change.high, allowed)
    ci = _interval_text(change.low, change.high, relative, shown_unit)
    words = _allowed_words(allowed, relative, shown_unit)
    if verdict == "violated":
        detail = f"{shown}, more than allowed ({words}; CI of the change {ci}, all of it above)"
    elif verdict == "within":
        detail = (f"{shown}, within what is allowed ({words}; CI of the change {ci}, all of it "
                  "within)")
    else:
        detail = (f"{shown}: the CI of the change ({ci}) reaches past what is allowed ({words}); "
                  "more repetitions would settle it")
    return check(verdict, status, detail)


def tolerance_check(
    model: str, metric: str, tolerance: ToleranceLike, samples: Samples, builds: tuple[str, str],
    settings: Settings,
) -> IdentityCheck:
    """``expect_identical`` with a tolerance t: pass when the CI of the change lies within ±t, fail
    when it lies entirely beyond it (either side), unverified when it straddles ±t or a build has no
    values."""
    unit = str(samples.uom.get((model, metric), ""))
    relative, amount = tolerance.relative, float(tolerance.amount)
    limit = limit_text(amount, relative, unit, sign="±")
    change = measure_change(samples, model, metric, builds, relative, settings)
    listing = {
        build: ([f"median {fmt.number(median)}{' ' + unit if unit else ''} (n={n})"]
                if median is not None else [])
        for build, median, n in ((builds[0], change.baseline_median, change.n_baseline),
                                 (builds[1], change.candidate_median, change.n_candidate))
    }  # fmt: skip
    if change.change is None:
        return IdentityCheck(model, metric, "unverified", listing, change.why, limit)
    shown = _signed_amount(change.change, relative, unit)
    if _deterministic(samples, model, metric, builds):  # exact: no CI of zero width
        status: Status = "pass" if abs(change.change) <= amount else "fail"
        where = "within" if status == "pass" else "beyond"
        return IdentityCheck(model, metric, status, listing,
                             f"{shown} {where} {limit} (exact, {_exact_words(metric)})", limit)
    if change.low is None or change.high is None:
        return IdentityCheck(model, metric, "unverified", listing, f"{shown}: {change.why}", limit)
    ci = _interval_text(change.low, change.high, relative, unit)
    if -amount <= change.low and change.high <= amount:
        return IdentityCheck(model, metric, "pass", listing, f"{shown} within {limit} (CI {ci})",
                             limit)
    if change.low > amount or change.high < -amount:
        return IdentityCheck(model, metric, "fail", listing, f"{shown} beyond {limit} (CI {ci})",
                             limit)
    return IdentityCheck(model, metric, "unverified", listing,
                         f"{shown}: CI {ci} straddles {limit}; more repetitions would settle it",
                         limit)
