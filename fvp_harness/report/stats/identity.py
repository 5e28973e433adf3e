"""The exact identity check: whether a metric (or ``outputs``) has one single value across every ok unit of both builds
for a model; a failure lists what differed (each build's distinct values with counts, digests shortened)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from fvp_harness.report.stats.findings import IdentityCheck

__all__ = ["identity_check"]


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
    """Outputs digests list full sha256 values; twelve hex digits are enough to see which files differ."""
    return _LONG_HEX.sub(r"\1…", value) if isinstance(value, str) else value


def identity_check(model: str, name: str, per_build: dict[str, list[object]]) -> IdentityCheck:
    listing = {build: _counted([_short_hashes(v) for v in values]) for build, values in per_build.items()}
    empty = [build for build, values in per_build.items() if not values]
    if empty:
        return IdentityCheck(model, name, "unverified", listing, f"no {name} recorded for {', '.join(empty)}")
    distinct = {_fmt_value(v) for values in per_build.values() for v in values}
    if name == "outputs" and distinct == {""}:
        return IdentityCheck(model, name, "unverified", listing, "no output hashes recorded")
    if len(distinct) == 1:
        value = next(iter(distinct))
        shown = value if name != "outputs" else f"{len(value.split(';'))} file(s)"
        return IdentityCheck(model, name, "pass", listing, f"all identical ({shown})")
    detail = "; ".join(f"{build}: {', '.join(vals)}" for build, vals in listing.items())
    return IdentityCheck(model, name, "fail", listing, f"values differ: {detail}")
