"""The two-level bootstrap of medians and its percentile intervals."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from fvp_harness.report.stats.spec import Settings

__all__ = ["bootstrap_draws", "bootstrap_medians", "percentile_interval"]


def _rng(seed: int, *labels: str) -> np.random.Generator:
    """A generator that depends on the seed and the group's labels only, not on the order of
    groups."""
    return np.random.default_rng([seed, *(zlib.crc32(label.encode()) for label in labels)])


def bootstrap_medians(groups: Sequence[np.ndarray], resamples: int,
                      rng: np.random.Generator) -> np.ndarray:
    """Bootstrap distribution (``resamples`` values) of the median of samples that come in
    ``groups`` (units).

    Two levels: draw as many units as there are, with replacement; from each drawn unit draw ``m``
    samples with replacement, where ``m`` is the mean unit size (exactly the unit size when all
    units are equal). With one unit it is the plain bootstrap. Vectorised in chunks so memory stays
    bounded for long runs.

    The medians of the resamples are ``np.median``'s numbers, found faster (``_row_medians``;
    constant samples need none), and the generator is called exactly as it always was, so a seed
    gives the same draws as before.
    """
    groups = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if not groups:
        return np.full(resamples, np.nan)
    flat = np.concatenate(groups)
    sizes = np.array([len(g) for g in groups])
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    k = len(groups)
    m = max(1, round(len(flat) / k))
    out = np.empty(resamples)
    chunk = max(1, 4_000_000 // max(1, k * m))
    block = max(1, _BLOCK_VALUES // (k * m))
    exact = _sortable(flat)
    constant = _one_value(flat)
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        # the same calls of ``rng`` in every case, so the generator ends where it always did
        if k == 1:
            idx = rng.integers(0, len(flat), size=(b, len(flat)))
        else:
            chosen = rng.integers(0, k, size=(b, k))
            draw = rng.random((b, k, m))
        if constant:  # every resample holds only that value, so every median is it
            out[start : start + b] = flat[0]
            continue
        # row by row the same numbers; small blocks keep the temporaries cheap
        for low in range(0, b, block):
            high = min(b, low + block)
            if k == 1:
                picked = flat[idx[low:high]]
            else:
                within = (draw[low:high] * sizes[chosen[low:high]][..., None]).astype(np.int64)
                picked = flat[
                    (offsets[chosen[low:high]][..., None] + within).reshape(high - low, k * m)
                ]
            out[start + low : start + high] = (_row_medians(picked) if exact
                                               else np.median(picked, axis=1))
    return out


_BLOCK_VALUES = 8192
"""Resampled values handled at once after the draws. Why not all 2000 x 20 at once: every temporary
of that size (a third of a megabyte, above the allocator's mmap threshold) is fresh memory from the
system, and on the small VMs the harness runs on its page faults took about half of the bootstrap's
time; temporaries of 64 KiB are reused from the heap. (Larger blocks gained nothing, smaller ones
lose to per-call overhead.)"""

_HALF_MAX = float(np.finfo(np.float64).max) / 2
"""Below this the mean of two equal values is the value itself (their sum does not overflow)."""


def bootstrap_draws(groups: Sequence[np.ndarray], settings: Settings, *labels: str) -> np.ndarray:
    """``bootstrap_medians`` of ``groups`` with the generator of ``labels`` (``_rng``), as every
    statistic here draws. A sample of one single value (NPU cycle counts, mostly) gives that value
    in every resample, whatever the draws: then the generator, which nobody else sees, is not even
    made."""
    values = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if values and _one_value(flat := np.concatenate(values)):
        return np.full(settings.resamples, flat[0])
    return bootstrap_medians(groups, settings.resamples, _rng(settings.seed, *labels))


def _one_value(values: np.ndarray) -> bool:
    """Whether every median of resamples of ``values`` is ``values[0]`` exactly, as ``np.median``
    computes it: one single value (not NaN, not -0.0), small enough that the mean of two copies of
    it is itself."""
    return (_sortable(values) and bool(values.min() == values.max()) and
            abs(float(values[0])) < _HALF_MAX)


def _sortable(values: np.ndarray) -> bool:
    """Whether sorting finds exactly the middle values ``np.median`` finds: no NaN (``np.median``
    makes a row with a NaN NaN) and no negative zero (equal to 0.0, so which of the two a partition
    or a sort puts in the middle, and the sign of the median, may differ)."""
    return not bool(np.isnan(values).any() or (np.signbit(values) & (values == 0)).any())


def _row_medians(rows: np.ndarray) -> np.ndarray:
    """``np.median(rows, axis=1)``, bit for bit, for rows ``_sortable`` accepts, several times
    faster. Sorts ``rows`` in place.

    Why: ``np.median`` partitions every row (an introselect per row, plus one for its NaN check),
    which for the bootstrap's short rows (20-300 values, 2000 of them) costs five times a plain sort
    of the same rows. A sort finds the same middle values; their mean is then taken exactly as
    ``np.median`` takes it (``np.mean`` over the middle one or two), so every draw, and every
    interval built on them, stays the same number."""
    n = rows.shape[1]
    rows.sort(axis=1)
    half = n // 2
    middle = rows[:, half : half + 1] if n % 2 else rows[:, half - 1 : half + 1]
    return np.mean(middle, axis=1)


def percentile_interval(draws: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    """The ``confidence`` percentile interval of bootstrap ``draws`` (None, None when too few are
    finite)."""
    finite = draws[np.isfinite(draws)]
    if len(finite) < max(10, len(draws) // 2):
        return None, None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)
