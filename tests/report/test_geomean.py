"""The geometric-mean row never claims more than its models: its CI's ratio bounds are at least as
wide as the geometric means of the models' own bounds (issue 38, finding 1), and it says
inconclusive when that CI does."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fvp_harness.report.rendering.markdown import render_markdown
from fvp_harness.report.stats.analysis import analyse
from fvp_harness.report.stats.findings import Comparison
from fvp_harness.report.stats.spec import Settings
from fvp_harness.scenario.model import Compare
from fvp_harness.store.records import Record
from tests.helpers import record

SPEC = Compare.model_validate(
    {"primary": "iteration_time", "min_effect": 5, "expect_identical": ["outputs"]}
)


def _records(medians: dict[str, dict[str, list[float]]], iterations: int = 5) -> list[Record]:
    """Units with the given medians (model -> build -> one per runner process), ``iterations``
    samples of ±1 % around each, interleaved as a run measures them."""
    out: list[Record] = []
    count = 0
    reps = len(next(iter(medians.values()))["before"])
    spread = np.linspace(0.99, 1.01, iterations)
    for rep in range(reps):
        for model, builds in medians.items():
            for build in ("before", "after"):
                count += 1
                values = [round(builds[build][rep] * f, 4) for f in spread]
                out.append(
                    record(
                        f"r{rep}-{build}-{model}",
                        build=build,
                        model=model,
                        repetition=rep,
                        samples={"iteration_time": values},
                        metric_units={"iteration_time": "ms"},
                        outputs={"out.bin": "ab" * 32},
                        started=f"2026-03-01T10:{count:02d}:00Z",
                    )
                )
    return out


def _spread(base: float, ratio: float, log_gap: float) -> dict[str, list[float]]:
    """Two runner processes per build whose medians sit ``log_gap`` apart (in log), after = before x
    ratio."""
    e = math.exp(log_gap / 2)
    return {"before": [base * e, base / e], "after": [base * ratio * e, base * ratio / e]}


def _combined_bounds(comparison: Comparison) -> tuple[float, float]:
    """The saved-% interval whose ratio bounds are the geometric means of the models' ratio bounds.
    """
    lows = [math.log(1 - m.ci_high / 100) for m in comparison.models if m.ci_high is not None]
    highs = [math.log(1 - m.ci_low / 100) for m in comparison.models if m.ci_low is not None]
    assert len(lows) == len(highs) == len(comparison.models)
    return 100 * (1 - math.exp(sum(highs) / len(highs))), 100 * (
        1 - math.exp(sum(lows) / len(lows))
    )


def test_two_inconclusive_models_do_not_make_a_faster_geometric_mean() -> None:
    """The QEMU case of issue 38: two processes per build, per-model CIs "123.7% slower … 83.8%" and
    "7.4% slower … 88.1%", both inconclusive; the pooled bootstrap draws made the summary row
    "faster" (37.5 … 64.8%)."""
    medians = {
        "fc_16x512x256": _spread(15.0, 0.602, 0.4314),
        "fc_16x256x128": _spread(4.7, 0.3575, 0.3615),
    }
    result = analyse(_records(medians), SPEC, (), Settings())
    comparison = result.comparison
    assert comparison is not None and comparison.geomean is not None
    shown = [
        (m.model, round(m.ci_low or 0, 1), round(m.ci_high or 0, 1), m.verdict)
        for m in comparison.models
    ]
    assert shown == [
        ("fc_16x512x256", -123.7, 83.8, "inconclusive"),
        ("fc_16x256x128", -7.4, 88.1, "inconclusive"),
    ]
    gm = comparison.geomean
    assert gm.verdict == "inconclusive"
    assert gm.ci_low is not None and gm.ci_high is not None
    low, high = _combined_bounds(comparison)
    assert gm.ci_low <= low + 1e-9 and gm.ci_high >= high - 1e-9
    assert (round(gm.ci_low, 1), round(gm.ci_high, 1)) == (-55.0, 86.1)  # "55.0% slower … 86.1%"
    row = next(
        line
        for line in render_markdown(result).splitlines()
        if line.startswith("| **Geometric mean**")
    )
    assert "55.0% slower … 86.1%" in row and row.rstrip(" |").endswith("inconclusive")


def test_the_geometric_mean_is_no_narrower_than_its_parts_allow() -> None:
    """Simulator-shaped: four models, two processes per build, CIs a few points wide and one tight
    pair; the pooled draws gave a CI a tenth as wide as the widest part's. Now its ratio bounds are
    at least the geometric means of the parts' bounds, and it is still "faster" where every part is.
    """
    medians = {
        "resnet8": _spread(2.63, 0.357, 0.02),
        "ds_cnn": _spread(1.97, 0.47, 0.018),
        "mobilenet_v1_025": _spread(4.23, 0.239, 0.002),
        "deep_autoencoder": _spread(4.05, 0.228, 0.002),
    }
    result = analyse(_records(medians, iterations=10), SPEC, (), Settings())
    comparison = result.comparison
    assert comparison is not None and comparison.geomean is not None
    assert all(m.verdict == "faster" for m in comparison.models)
    gm = comparison.geomean
    assert gm.ci_low is not None and gm.ci_high is not None
    low, high = _combined_bounds(comparison)
    assert gm.ci_low <= low + 1e-9 and gm.ci_high >= high - 1e-9
    widths = [(m.ci_high or 0) - (m.ci_low or 0) for m in comparison.models]
    assert gm.ci_high - gm.ci_low >= min(widths)
    assert gm.verdict == "faster"


@pytest.mark.parametrize("seed", range(6))
def test_the_geometric_mean_contains_the_combination_of_its_parts(seed: int) -> None:
    """Random process-to-process noise, 2 to 4 processes: the row's CI always holds the combined
    bounds, and when every model is inconclusive with a CI reaching below +m, the row is never
    faster."""
    rng = np.random.default_rng(seed)
    reps = int(rng.integers(2, 5))
    medians = {}
    for model in ("a", "b", "c"):
        base, ratio = float(rng.uniform(1, 20)), float(rng.uniform(0.4, 1.2))
        medians[model] = {
            build: [value * (1 + 0.3 * float(rng.standard_normal())) for _ in range(reps)]
            for build, value in (("before", base), ("after", base * ratio))
        }
    comparison = analyse(_records(medians), SPEC, (), Settings(resamples=500)).comparison
    assert comparison is not None and comparison.geomean is not None
    gm = comparison.geomean
    low, high = _combined_bounds(comparison)
    assert gm.ci_low is not None and gm.ci_high is not None
    assert gm.ci_low <= low + 1e-9 and gm.ci_high >= high - 1e-9
    if all(m.ci_low is not None and m.ci_low <= 5 for m in comparison.models):
        assert gm.verdict != "faster"
