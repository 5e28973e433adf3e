"""``expect_identical`` partition by partition: which Ethos-U partition's value changed between two builds.

Why: a model split into K partitions prints K cycle counters per inference; the sample is their sum
(``run.scrape.PER_CALL_METRICS``) and the record keeps each call's value (``Record.partitions``). Comparing sums
alone would pass when one partition rose as much as another fell, and a failure would not say where to look. This
module compares the per-call values position by position (partition 1 with partition 1, ...) and names each
partition that differs. Pure: plain values in, a verdict and its text out (``report.analysis`` builds the check).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

__all__ = ["compare_partitions"]


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _counted(values: Sequence[float]) -> str:
    counts: dict[str, int] = {}
    for value in values:
        counts[_number(value)] = counts.get(_number(value), 0) + 1
    return ", ".join(f"{text} x{count}" for text, count in counts.items())


def compare_partitions(per_build: Mapping[str, Sequence[Sequence[float]]]
                       ) -> tuple[Literal["pass", "fail"], str] | None:
    """``("pass"|"fail", detail)`` for each build's inferences as tuples of per-call values, or None when no
    inference of any build made more than one call (nothing beyond the sums to compare) or a build has none."""
    if not per_build or any(not calls for calls in per_build.values()):
        return None
    shapes = {build: sorted({len(calls) for calls in inferences}) for build, inferences in per_build.items()}
    if max(max(counts) for counts in shapes.values()) <= 1:
        return None
    every = {count for counts in shapes.values() for count in counts}
    if len(every) > 1:
        listing = "; ".join(f"{build}: {'/'.join(map(str, counts))}" for build, counts in shapes.items())
        return "fail", f"the number of delegate calls (partitions) per inference differs: {listing}"
    k = every.pop()
    differing: list[str] = []
    for index in range(k):
        column = {build: [calls[index] for calls in inferences] for build, inferences in per_build.items()}
        if len({value for values in column.values() for value in values}) > 1:
            shown = "; ".join(f"{build}: {_counted(values)}" for build, values in column.items())
            differing.append(f"partition {index + 1} of {k} differs ({shown})")
    if differing:
        return "fail", "; ".join(differing)
    first = next(iter(per_build.values()))[0]
    parts = " + ".join(_number(value) for value in first)
    return "pass", f"all identical ({_number(sum(first))} = {parts}, {k} partitions)"
