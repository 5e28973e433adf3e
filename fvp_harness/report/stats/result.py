"""``AnalysisResult``, what ``analysis.analyse`` gives and every report renders, and the verdict for
the whole run read off it (``run_verdict``: PASS, FAIL or NOT VERIFIED with its reasons;
``expectations_violated`` for exit codes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from fvp_harness.report.stats.findings import (
    Comparison,
    DriftFlag,
    DroppedSamples,
    Expectation,
    FailedUnit,
    NotRunUnit,
    SamplingNote,
)
from fvp_harness.report.stats.spec import Settings

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["AnalysisResult", "RunVerdict", "expectations_violated", "run_verdict"]


@dataclass(frozen=True)
class RunVerdict:
    """The verdict for the whole run and why: ``FAIL`` (an expectation was violated, or a unit
    failed), ``NOT VERIFIED`` (nothing failed, but a planned unit did not run, a model's primary
    metric was not measured, a gate could not be checked, or no expectation could), else ``PASS``.
    ``reasons`` name each cause (and for PASS what could not be verified)."""

    status: Literal["PASS", "FAIL", "NOT VERIFIED"]
    reasons: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class AnalysisResult:
    """What ``report`` renders: the frames, the summary, the comparisons (one per pair of the
    ``compare`` spec, in its order; none without a spec), drift checks and failed units.
    ``comparison`` is the first one (or None), for code that knows only two builds.

    With ``analyse(..., planned=...)``: ``planned`` is how many units the plan wanted, ``not_run``
    the planned units without any record of their planned key (a planned unit whose latest record of
    that key failed is in ``failed_units``), ``excluded_records`` how many stored records were left
    out because their key is not the planned one of their unit (other settings). Without it
    ``planned`` is None and the others are empty. ``dropped``: stored values that are no
    measurement, left out of every number."""

    frame: pd.DataFrame
    units: pd.DataFrame
    summary: pd.DataFrame
    comparisons: tuple[Comparison, ...]
    drift: tuple[DriftFlag, ...]
    failed_units: tuple[FailedUnit, ...]
    settings: Settings = field(default_factory=Settings)
    dropped: tuple[DroppedSamples, ...] = ()
    not_run: tuple[NotRunUnit, ...] = ()
    excluded_records: int = 0
    planned: int | None = None
    sampling: tuple[SamplingNote, ...] = ()
    """``run.until``: one note per model (the run layer adds them; units its rule skipped are not
    planned)."""

    @property
    def comparison(self) -> Comparison | None:
        """The first comparison (the only one of a two-build scenario), or None without a
        ``compare`` spec."""
        return self.comparisons[0] if self.comparisons else None

    @property
    def expectations(self) -> tuple[Expectation, ...]:
        """Every comparison's expectations, pair after pair."""
        return tuple(e for comparison in self.comparisons for e in comparison.expectations)

    @property
    def verdict(self) -> RunVerdict:
        """``run_verdict(self)``."""
        return run_verdict(self)


def expectations_violated(result: AnalysisResult, *, strict: bool = False) -> bool:
    """True when any expectation of any pair failed (an identity check differs or lies beyond its
    tolerance, a gate is violated, or a model got slower than -min_effect).

    ``strict`` also counts ``unverified`` ones (nothing to compare, inconclusive, not measured, a
    gate whose CI straddles its limit), for CI jobs that must prove the expectation rather than
    merely not disprove it. Failed and not-run units are reported separately
    (``result.failed_units``, ``result.not_run``), so "nothing measured" and "regression" stay
    distinguishable.
    """
    bad = {"fail", "unverified"} if strict else {"fail"}
    return any(e.status in bad for e in result.expectations)


def _label(expectation: Expectation) -> str:
    limit = f" ({expectation.limit})" if expectation.limit else ""
    if expectation.kind == "gate":
        return f"gate {expectation.name}"
    if expectation.kind == "identity":
        return f"identical {expectation.name}{limit}"
    return f"min effect ({expectation.name})"


def _listed(ids: Sequence[str], most: int = 6) -> str:
    shown = ", ".join(ids[:most])
    return shown + (f", … ({len(ids) - most} more)" if len(ids) > most else "")


def run_verdict(result: AnalysisResult) -> RunVerdict:
    """PASS, FAIL or NOT VERIFIED for the whole run, with the reasons (see ``RunVerdict``).

    FAIL: an expectation of any pair failed (each one is a reason: ``gate load_time: +203% > +10%
    allowed (resnet8, ...)``) or a unit's latest attempt failed. NOT VERIFIED (when nothing failed):
    a planned unit did not run, a model's primary metric was not measured, a gate could not be
    verified, or none of the expectations could be checked. PASS otherwise; its reasons list what
    could not be verified (inconclusive, no values), if anything. With several pairs every reason
    names its pair (``resnet8, u85-256 vs u85-128``). The exit code is the callers'
    (``run.pipeline``): a FAIL is exit 1 (3 when a failure is infrastructure).
    """
    comparisons = result.comparisons
    several = len(comparisons) > 1
    expectations = [(c, e) for c in comparisons for e in c.expectations]

    def where(comparison: Comparison, model: str) -> str:
        return f"{model}, {comparison.label}" if several else model

    failed_reasons: list[str] = []
    for c, e in expectations:
        if e.status == "fail":
            if e.kind == "gate":
                head, _, rest = e.detail.partition(" (")
                failed_reasons.append(f"gate {e.name}: {head} ({where(c, e.model)}"
                                      + (f", {rest}" if rest else ")"))
            else:
                failed_reasons.append(f"{_label(e)} ({where(c, e.model)}): {e.detail}")
    if result.failed_units:
        ids = [f.unit_id for f in result.failed_units]
        failed_reasons.append(f"{len(ids)} unit(s) failed: {_listed(ids)}")
    if failed_reasons:
        return RunVerdict("FAIL", tuple(failed_reasons))
    open_reasons: list[str] = []
    if result.not_run:
        ids = [u.unit_id for u in result.not_run]
        open_reasons.append(f"{len(ids)} of {result.planned} planned unit(s) did not run: "
                            f"{_listed(ids)}")
    for comparison in comparisons:
        unmeasured = [m.model for m in comparison.models if m.verdict == "not measured"]
        if unmeasured:
            pair = f" ({comparison.label})" if several else ""
            open_reasons.append(f"{comparison.primary} not measured for "
                                f"{', '.join(unmeasured)}{pair}")
    if comparisons and not any(c.models for c in comparisons):
        open_reasons.append("nothing was measured")
    for c, e in expectations:
        if e.kind == "gate" and e.status == "unverified":
            open_reasons.append(f"gate {e.name} ({where(c, e.model)}) not verified: {e.detail}")
    if expectations and all(e.status == "unverified" for _, e in expectations):
        open_reasons.append(f"none of {len(expectations)} expectations could be checked")
    if open_reasons:
        return RunVerdict("NOT VERIFIED", tuple(open_reasons))
    caveats = [f"{_label(e)} ({where(c, e.model)}) not verified: {e.detail}"
               for c, e in expectations if e.status == "unverified"]  # fmt: skip
    return RunVerdict("PASS", tuple(caveats))
