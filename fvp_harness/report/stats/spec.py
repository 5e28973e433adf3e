"""What the analysis is asked: the comparison spec (``CompareLike``, with its ``GateLike`` gates and
``ToleranceLike`` identity entries) and the statistical knobs (``Settings``), and how a spec is read
(its pairs of builds, its primary metrics in order of preference, its identity checks and gates).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "CompareLike",
    "GateLike",
    "Settings",
    "ToleranceLike",
    "build_pairs",
    "gates_of",
    "identity_entries",
    "metric_name",
    "primary_candidates",
]


class ToleranceLike(Protocol):
    """An ``expect_identical`` entry with a tolerance (``scenario.IdentityTolerance``): ``amount``
    is in percent of the baseline median when ``relative``, else in the metric's unit; ``exact``
    when no tolerance was given."""

    @property
    def metric(self) -> str: ...
    @property
    def exact(self) -> bool: ...
    @property
    def relative(self) -> bool: ...
    @property
    def amount(self) -> float: ...


class GateLike(Protocol):
    """A gate (``scenario.Gate``): the largest allowed regression, ``amount`` in percent of the
    baseline median when ``relative``, else in ``unit`` (None: any unit, for an amount of 0)."""

    @property
    def relative(self) -> bool: ...
    @property
    def amount(self) -> float: ...
    @property
    def unit(self) -> str | None: ...


class CompareLike(Protocol):
    """What ``compare`` needs of a comparison spec; ``scenario.Compare`` satisfies it.
    ``expect_identical`` holds names (exact) or ``ToleranceLike`` entries. Optional (read with
    ``getattr``, so older spec objects keep working): ``gates`` (metric -> ``GateLike``), and
    ``build_pairs``, every ``(baseline, candidate)`` pair to compare in order (``analyse`` compares
    each; without it the one pair ``(baseline, candidate)``)."""

    @property
    def baseline(self) -> str: ...
    @property
    def candidate(self) -> str: ...
    @property
    def primary(self) -> str | list[str]: ...
    @property
    def expect_identical(self) -> Sequence[object]: ...
    @property
    def min_effect(self) -> float: ...


@dataclass(frozen=True)
class Settings:
    """Statistical knobs. ``alpha`` is the significance level a faster/slower verdict needs from the
    process-level p-value (``process_level_p``); ``drift_alpha`` the Spearman level for a drift
    flag. The bootstrap's p cannot go below ``2 / (resamples + 1)``: with fewer than ``2 / alpha``
    resamples no verdict could be faster or slower."""

    confidence: float = 0.95
    resamples: int = 2000
    seed: int = 0
    alpha: float = 0.05
    drift_alpha: float = 0.01


def primary_candidates(spec: CompareLike) -> list[str]:
    """``spec.primary`` as a list in order of preference."""
    return [spec.primary] if isinstance(spec.primary, str) else list(spec.primary)


def build_pairs(spec: CompareLike) -> list[tuple[str, str]]:
    """Every ``(baseline, candidate)`` pair ``spec`` compares, in order: its ``build_pairs`` when it
    has them (see ``CompareLike``), else the one pair ``(spec.baseline, spec.candidate)``."""
    pairs = getattr(spec, "build_pairs", None)
    return [(str(b), str(c)) for b, c in pairs] if pairs else [(spec.baseline, spec.candidate)]


def identity_entries(spec: CompareLike) -> list[tuple[str, ToleranceLike | None]]:
    """``expect_identical`` as (name, tolerance or None for an exact check)."""
    entries: list[tuple[str, ToleranceLike | None]] = []
    for item in spec.expect_identical:
        if isinstance(item, str):
            entries.append((item, None))
        else:
            tolerance: ToleranceLike = item  # type: ignore[assignment]  # duck-typed entry
            entries.append((tolerance.metric, None if tolerance.exact else tolerance))
    return entries


def gates_of(spec: CompareLike) -> Mapping[str, GateLike]:
    return getattr(spec, "gates", None) or {}


def metric_name(metric: object) -> str:
    return metric if isinstance(metric, str) else str(getattr(metric, "name"))  # noqa: B009 - duck-typed spec
