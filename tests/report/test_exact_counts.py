"""A metric one number in every sample of each build (NPU cycles) is exact: "no change" when it did
not move, its exact change when it did, never a p-value or a CI of zero width (issue 38, finding 1).
"""

from __future__ import annotations

import re

import pytest

from fvp_harness.report.rendering.markdown import render_markdown
from fvp_harness.report.stats.analysis import analyse
from fvp_harness.report.stats.spec import Settings
from fvp_harness.run.adaptive import judge
from fvp_harness.scenario.model import Compare, Until
from fvp_harness.store.records import Record
from tests.helpers import interleaved, record

SPEC = Compare.model_validate(
    {
        "primary": "npu_cycles",
        "min_effect": 5,
        "expect_identical": ["outputs"],
        "gates": {"npu_cycles": {"max_regression": "1%"}},
    }
)
FAST = Settings(resamples=300)


def _records(cycles: dict[str, dict[str, float]]) -> list[Record]:
    """Two runner processes per build, two inferences each, every sample of a build the same count.
    """
    out: list[Record] = []
    for count, rep, model, build in interleaved([0, 1], list(cycles), ["before", "after"]):
        out.append(
            record(
                f"r{rep}-{build}-{model}",
                build=build,
                model=model,
                repetition=rep,
                samples={"npu_cycles": [cycles[model][build]] * 2},
                metric_units={"npu_cycles": "cycles"},
                outputs={"out.bin": "ab" * 32},
                started=f"2026-03-01T10:{count:02d}:00Z",
            )
        )
    return out


CYCLES = {
    "resnet8": {"before": 84546.0, "after": 84546.0},
    "deep_autoencoder": {"before": 22248.0, "after": 22200.0},
    "ds_cnn": {"before": 66218.0, "after": 39800.0},
}


def _cells(markdown: str, start: str) -> list[str]:
    line = next(line for line in markdown.splitlines() if line.startswith(start))
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]


def test_identical_counts_are_no_change_without_a_p_or_an_interval() -> None:
    result = analyse(_records(CYCLES), SPEC, (), FAST)
    assert result.comparison is not None
    rows = {m.model: m for m in result.comparison.models}
    same = rows["resnet8"]
    assert (same.verdict, same.ci_low, same.ci_high, same.p_value, same.exact) == (
        "no change",
        None,
        None,
        None,
        True,
    )
    assert same.reason == (
        "exact (every sample of each build the same number): identical, inside the ±5% that "
        "counts as no change"
    )
    cells = _cells(render_markdown(result), "| resnet8")
    assert cells[2:6] == ["0.0%", "exact", "", "2/2"] and cells[-1] == "no change"


def test_a_count_that_moved_says_its_exact_change() -> None:
    """22,248 -> 22,200 cycles: 0.2 % lower, exactly; before, "0.2 … 0.2%" and "p <0.001"."""
    result = analyse(_records(CYCLES), SPEC, (), FAST)
    assert result.comparison is not None
    rows = {m.model: m for m in result.comparison.models}
    moved, big = rows["deep_autoencoder"], rows["ds_cnn"]
    assert (moved.verdict, moved.p_value, moved.ci_low) == ("no change", None, None)
    assert moved.reason == (
        "exact (every sample of each build the same number): 0.2% lower, inside the ±5% that "
        "counts as no change"
    )
    assert (big.verdict, big.p_value, big.ci_low) == ("faster", None, None)
    assert big.reason.startswith(
        "exact (every sample of each build the same number): 39.9% lower, beyond"
    )
    markdown = render_markdown(result)
    assert _cells(markdown, "| deep_autoencoder")[2:5] == ["+0.2%", "exact", ""]
    assert "0.2 … 0.2%" not in markdown and "<0.001" not in markdown
    geo = _cells(markdown, "| **Geometric mean**")
    assert geo[3] == "exact" and geo[-1] == "faster"
    assert result.comparison.geomean is not None and result.comparison.geomean.exact
    per_build = _cells(markdown, "| deep_autoencoder | before")
    assert per_build[6] == "exact"  # the per-build CI of a median that is one number
    gates = {g.model: g for g in result.comparison.gates}
    assert (gates["deep_autoencoder"].verdict, gates["deep_autoencoder"].ci_low) == ("within", None)
    assert gates["deep_autoencoder"].detail.endswith(
        "every sample of each build the same number: decided without a CI)"
    )


def test_a_tolerance_on_an_exact_count_is_decided_without_a_ci() -> None:
    spec = Compare.model_validate(
        {
            "primary": "npu_cycles",
            "min_effect": 5,
            "expect_identical": [{"metric": "npu_cycles", "rel": 0.005}],
        }
    )
    result = analyse(_records(CYCLES), spec, (), FAST)
    assert result.comparison is not None
    checks = {m.model: m.identity[0] for m in result.comparison.models}
    assert (checks["deep_autoencoder"].status, checks["ds_cnn"].status) == ("pass", "fail")
    assert checks["deep_autoencoder"].detail == (
        "-0.2% within ±0.5% (exact, every sample of each build the same "
        "number: decided without a CI)"
    )


@pytest.mark.parametrize("metric", ["npu_cycles", "planned_memory"])
def test_run_until_stops_an_exact_model_at_once(metric: str) -> None:
    """No interval to narrow: more rounds would measure the same numbers (before, an exact size
    never stopped: ``run.until`` ran it to ``max_repetitions``)."""
    records = [
        r.model_copy(
            update={
                "samples": {metric: r.samples["npu_cycles"]},
                "metric_units": {metric: "B" if metric == "planned_memory" else "cycles"},
            }
        )
        for r in _records(CYCLES)
    ]
    result = analyse(
        records, Compare.model_validate({"primary": metric, "min_effect": 5}), (), FAST
    )
    assert result.comparison is not None
    until = Until.model_validate({"ci_width": 2, "min_repetitions": 2, "max_repetitions": 10})
    for row in result.comparison.models:
        assert row.exact
        decided = judge([row], until, 5)
        assert decided is not None and decided[0] == "ci_width"
