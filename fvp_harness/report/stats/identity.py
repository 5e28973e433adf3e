"""Identity checks: whether a metric (or ``outputs``) has one single value across every ok unit of
both builds for a model (``identity_check``: a failure lists each build's distinct values with
counts, digests shortened), and a per-call metric compared partition by partition
(``compare_partitions``: names the partition that changed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

from fvp_harness.report.stats.findings import IdentityCheck

__all__ = ["compare_partitions", "identity_check"]


def _fmt_value(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _counted(values: Sequence[object]) -> list[str]:
    counts: dict[str, int] = {}
    for value in values:
        text = _fmt_value(value)
        counts[text] = counts.get(text, 0) + 1
    return [f"{text} x{count}" for text, count in counts.items()]


_LONG_HEX = re.compile(r"\b([0-9a-f]{12})[0-9a-f]{20,}\b")


def _short_hashes(value: object) -> object:
    """Outputs digests list full sha256 values; twelve hex digits are enough to see which files
    differ."""
    return _LONG_HEX.sub(r"\1…", value) if isinstance(value, str) else value


def identity_check(model: str, name: str, per_build: dict[str, list[object]]) -> IdentityCheck:
    listing = {build: _counted([_short_hashes(v) for v in values])
               for build, values in per_build.items()}
    empty = [build for build, values in per_build.items() if not values]
    if empty:
        return IdentityCheck(model, name, "unverified", listing,
                             f"no {name} recorded for {', '.join(empty)}")
    distinct = {_fmt_value(v) for values in per_build.values() for v in values}
    if name == "outputs" and distinct == {""}:
        return IdentityCheck(model, name, "unverified", listing, "no output hashes recorded")
    if len(distinct) == 1:
        value = next(iter(distinct))
        shown = value if name != "outputs" else f"{len(value.split(';'))} file(s)"
        return IdentityCheck(model, name, "pass", listing, f"all identical ({shown})")
    detail = "; ".join(f"{build}: {', '.join(vals)}" for build, vals in listing.items())
    return IdentityCheck(model, name, "fail", listing, f"values differ: {detail}")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _counted_calls(values: Sequence[float]) -> str:
    counts: dict[str, int] = {}
    for value in values:
        counts[_number(value)] = counts.get(_number(value), 0) + 1
    return ", ".join(f"{text} x{count}" for text, count in counts.items())


def compare_partitions(per_build: Mapping[str, Sequence[Sequence[float]]]
                       ) -> tuple[Literal["pass", "fail"], str] | None:
    """``("pass"|"fail", detail)`` for each build's inferences as tuples of per-call values, or None
    when no inference of any build made more than one call (nothing beyond the sums to compare) or a
    build has none."""
    if not per_build or any(not calls for calls in per_build.values()):
        return None
    shapes = {build: sorted({len(calls) for calls in inferences})
              for build, inferences in per_build.items()}
    if max(max(counts) for counts in shapes.values()) <= 1:
        return None
    every = {count for counts in shapes.values() for count in counts}
    if len(every) > 1:
        listing = "; ".join(f"{build}: {'/'.join(map(str, counts))}"
                            for build, counts in shapes.items())
        return "fail", f"the number of delegate calls (partitions) per inference differs: {listing}"
    k = every.pop()
    differing: list[str] = []
    for index in range(k):
        column = {build: [calls[index] for calls in inferences]
                  for build, inferences in per_build.items()}
        if len({value for values in column.values() for value in values}) > 1:
            shown = "; ".join(f"{build}: {_counted_calls(values)}"
                              for build, values in column.items())
            differing.append(f"partition {index + 1} of {k} differs ({shown})")
    if differing:
        return "fail", "; ".join(differing)
    first = next(iter(per_build.values()))[0]
    parts = " + ".join(_number(value) for value in first)
    return "pass", f"all identical ({_number(sum(first))} = {parts}, {k} partitions)"
