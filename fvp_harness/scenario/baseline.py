"""``compare.drift_check``: how a run whose baseline build comes from a stored run proves the
platform did not move.

Why it exists: an A/B inside one run interleaves the two builds, so anything that drifts (host load,
a new FVP build, a warmer machine) hits both alike. With ``compare.baseline_from`` the baseline was
measured days ago, and a platform that got 5 % slower looks exactly like a candidate that got 5 %
slower. Re-running a few baseline units next to the candidate and asking whether they still measure
what the stored run measured is the cheapest evidence that it did not: when they moved, the
comparison is inconclusive, whatever it says.

A section of its own (not in ``scenario.model``) so the stored-baseline feature keeps its language
in one place; ``Compare`` holds it as ``drift_check``.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["DriftCheck"]

_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


class DriftCheck(BaseModel):
    """Re-run ``units`` baseline units in this run, dealt over the models in the scenario's order
    (repetition 0 of each model first), and judge each one's primary metric against the stored
    baseline of its model as a tolerance: within ±``max_shift`` % (the whole CI of the shift inside
    it) the platform is steady; entirely beyond it the platform moved and every verdict of the
    comparison becomes inconclusive; a CI that straddles the limit leaves the run NOT VERIFIED.
    ``units: 0`` turns the check off (the report then says a platform change cannot be told from a
    code change)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    units: int = Field(2, ge=0, le=1000,
                       description="Baseline units re-run next to the candidate (0: no check).")
    max_shift: float = Field(
        3.0,
        gt=0,
        description="Largest shift of a re-run baseline unit against the stored baseline, in "
                    "percent (3 or '3%').",
        json_schema_extra={"anyOf": [{"type": "number", "exclusiveMinimum": 0},
                                     {"type": "string", "pattern": _PERCENT.pattern}]},
    )

    @field_validator("max_shift", mode="before")
    @classmethod
    def _percent_text(cls, value: object) -> object:
        """``3%`` and ``'3 %'`` mean 3 (percent), as the issue's and the gates' notation writes
        it."""
        if isinstance(value, str):
            match = _PERCENT.match(value)
            if match is None:
                raise ValueError(f"got {value!r}; expected a percentage such as 3 or '3%'")
            return float(match.group(1))
        return value
