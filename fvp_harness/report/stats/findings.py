"""What the analysis finds, as plain frozen dataclasses: per model the comparison on the primary
metric, the identity checks, gates and secondary metrics, the geometric mean, the expectations,
drift flags, failed and not-run units and the values left out. Every part of the analysis fills
them; every renderer (markdown, CSV, JSON, JUnit, the pytest plugin) reads them. No computation
here, and no import beyond the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "VERDICTS",
    "Comparison",
    "DriftFlag",
    "DroppedSamples",
    "Expectation",
    "FailedUnit",
    "GateCheck",
    "GateVerdict",
    "GeoMean",
    "IdentityCheck",
    "MetricChange",
    "ModelComparison",
    "NotRunUnit",
    "PrimaryChoice",
    "SamplingNote",
    "Status",
    "Verdict",
]


Verdict = Literal["faster", "slower", "no change", "inconclusive", "not measured"]

VERDICTS: tuple[Verdict, ...] = ("faster", "slower", "no change", "inconclusive", "not measured")

Status = Literal["pass", "fail", "unverified"]

GateVerdict = Literal["within", "violated", "inconclusive", "not measured"]
"""A gate's verdict: ``within`` (pass) the CI lies entirely at or below the allowed regression;
``violated`` (fail) it lies entirely above; ``inconclusive`` (unverified) it straddles the limit or
there is no CI; ``not measured`` (unverified) a build has no valid samples of the metric."""


@dataclass(frozen=True)
class IdentityCheck:
    """Whether a metric (or ``outputs``) has one single value across every ok unit of both builds
    for a model.

    ``values`` maps build -> its distinct values with counts (``85092 x30``), so a failure shows
    what differed. ``unverified`` when there is nothing to compare (a build has no values).
    """

    model: str
    name: str
    status: Status
    values: dict[str, list[str]]
    detail: str
    tolerance: str = ""
    """The allowed difference (``±5%``, ``±0.1 ms``) of a check with a tolerance; empty for an exact
    one. With a tolerance the check is judged on the CI of the change, and ``values`` lists each
    build's median."""


@dataclass(frozen=True)
class GateCheck:
    """A gate on one metric for one model: the change candidate - baseline and its CI against the
    largest allowed regression. ``relative``: ``change``, its CI and ``allowed`` are in % of the
    baseline median; else in ``unit``. See ``decide_gate`` for the verdict."""

    model: str
    metric: str
    unit: str
    relative: bool
    allowed: float
    baseline_median: float | None
    candidate_median: float | None
    n_baseline: int
    n_candidate: int
    change: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: GateVerdict
    status: Status
    detail: str


@dataclass(frozen=True)
class DroppedSamples:
    """Stored values of one metric of one unit that are no measurement (NaN, infinities; negative or
    >= 2^63 for a built-in metric), left out of every number. ``kinds``: ``NaN x2, negative x1``."""

    unit_id: str
    build: str
    model: str
    metric: str
    count: int
    of: int
    kinds: str


@dataclass(frozen=True)
class NotRunUnit:
    """A planned unit with no record of its planned content key (``analyse(..., planned=...)``).
    ``build``, ``model`` and ``repetition`` come from a stored record of the unit id when there is
    one, else from the id. ``other_keys`` counts stored records of this unit id with another key
    (other settings)."""

    unit_id: str
    key: str
    build: str
    model: str
    repetition: int | None
    other_keys: int = 0


@dataclass(frozen=True)
class MetricChange:
    """Median of a secondary metric (e.g. NPU cycles) per build for one model; are all values
    equal?"""

    metric: str
    unit: str
    baseline_median: float | None
    candidate_median: float | None
    identical: bool | None


@dataclass(frozen=True)
class DriftFlag:
    """A monotonic trend of a metric over execution order inside one build (Spearman), and its
    size."""

    model: str
    build: str
    metric: str
    n: int
    rho: float
    p_value: float
    change_pct: float
    """Median of the last third minus median of the first third, in % of the first third's
    median."""
    flagged: bool


@dataclass(frozen=True)
class ModelComparison:
    """Candidate vs baseline for one model on the primary metric. ``saved_pct = 100 * (1 -
    ratio)``."""

    model: str
    metric: str
    unit: str
    n_baseline: int
    n_candidate: int
    units_baseline: int
    units_candidate: int
    baseline_median: float | None
    candidate_median: float | None
    baseline_ci: tuple[float | None, float | None]
    candidate_ci: tuple[float | None, float | None]
    ratio: float | None
    saved_pct: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    """The headline p-value, at the level of the CI (``process_level_p``): the larger of the
    two-level bootstrap's two-sided p and ``p_units``."""
    p_units: float | None
    """Welch t-test over log unit medians (each process counted once); None if a build has < 2
    units."""
    verdict: Verdict
    reason: str
    identity: tuple[IdentityCheck, ...] = ()
    others: tuple[MetricChange, ...] = ()
    p_pooled: float | None = None
    """Mann-Whitney U, two-sided, over the pooled iterations of both builds: treats iterations of
    one runner process as independent (they are not), so it is only in the CSV, labelled so, never
    in the markdown or a verdict."""

    @property
    def exact(self) -> bool:
        """Decided without an interval: every sample of each build was one number (a size, a
        cycle count), so the saving is exact; no CI and no p-value (``primary_comparison``)."""
        decided = self.verdict in ("faster", "slower", "no change")
        return self.ci_low is None and self.p_value is None and decided


@dataclass(frozen=True)
class GeoMean:
    """Geometric mean of the per-model ratios (models with a ratio), its CI as saved %, and a
    verdict."""

    models: int
    ratio: float
    saved_pct: float
    ci_low: float | None
    ci_high: float | None
    verdict: Verdict
    reason: str

    @property
    def exact(self) -> bool:
        """Every model's ratio is exact (``ModelComparison.exact``): so is their geometric mean,
        with no CI."""
        return self.ci_low is None and self.verdict in ("faster", "slower", "no change")


@dataclass(frozen=True)
class FailedUnit:
    """A unit whose latest attempt failed: what, how (class and text) and where to look (log
    path)."""

    unit_id: str
    build: str
    model: str
    repetition: int
    attempt: int
    failure_class: str
    failure: str
    log: str


@dataclass(frozen=True)
class Expectation:
    """One checked expectation: ``identity`` (``name`` = a metric or ``outputs``), ``gate``
    (``name`` = the gated metric) or ``min_effect``. ``limit``: the tolerance of an identity check
    (``±5%``) or a gate's allowed regression (``+10%``); empty otherwise."""

    kind: Literal["identity", "gate", "min_effect"]
    model: str
    name: str
    status: Status
    detail: str
    limit: str = ""


@dataclass(frozen=True)
class PrimaryChoice:
    """Which metric headlines the comparison, and why (a scenario may list several in order of
    preference)."""

    metric: str
    candidates: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class Comparison:
    """Everything the A/B table shows. ``primary_choice`` says why ``primary`` is the headline
    metric."""

    baseline: str
    candidate: str
    primary: str
    unit: str
    min_effect: float
    models: tuple[ModelComparison, ...]
    geomean: GeoMean | None
    expectations: tuple[Expectation, ...]
    primary_choice: PrimaryChoice | None = None
    gates: tuple[GateCheck, ...] = ()
    """One row per (gated metric, model), models in run order, gates in the scenario's order."""

    @property
    def label(self) -> str:
        """How reports name the pair: ``u85-256 vs u85-128`` (candidate first, as in the titles)."""
        return f"{self.candidate} vs {self.baseline}"


@dataclass(frozen=True)
class SamplingNote:
    """``run.until`` (adaptive sampling, ``run.adaptive``): how many repetitions a model needed and
    why it stopped (``ci_width``, ``verdict settled``, ``max_repetitions``; None when it still
    needed rounds: an interrupted run), ``detail`` the numbers behind it."""

    model: str
    repetitions: int
    reason: str | None
    detail: str
