"""Sizes in the analysis: a memory metric every run of each build measured the same is exact, so its
gate and its minimum effect are decided on the change itself (no zero-width CI, no p-value); one
that varies between runs (a real process's peak resident set) keeps the CI rule. The Memory table
shows both."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from fvp_harness.report.rendering.markdown import render_markdown
from fvp_harness.report.stats.analysis import analyse
from fvp_harness.report.stats.spec import Settings
from fvp_harness.report.stats.verdicts import decide_exact
from fvp_harness.scenario.model import Compare
from fvp_harness.store.records import Record
from tests.helpers import record

FAST = Settings(resamples=500)


def _records(rss: Mapping[str, list[float]], reps: int = 2) -> list[Record]:
    """``reps`` units per build of resnet8, each with its cpu_time and one peak_rss
    (``rss[build][rep]``)."""
    out = []
    for rep in range(reps):
        for build in ("before", "after"):
            out.append(
                record(
                    f"r{rep}-{build}-resnet8",
                    build=build,
                    repetition=rep,
                    samples={"cpu_time": [1.0 + 0.01 * rep, 1.01], "peak_rss": [rss[build][rep]]},
                    metric_units={"cpu_time": "ms", "peak_rss": "bytes"},
                    started=f"2026-03-01T10:00:{2 * rep + (build == 'after'):02d}Z",
                )
            )
    return out


def _row(markdown: str, start: str) -> list[str]:
    line = next(line for line in markdown.splitlines() if line.startswith(start))
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _spec(**fields: object) -> Compare:
    return Compare.model_validate(
        {"baseline": "before", "candidate": "after", "primary": "cpu_time", **fields}
    )


@pytest.mark.parametrize(
    ("grown", "verdict", "status"), [(1024, "within", "pass"), (1025, "violated", "fail")]
)
def test_an_exact_gate_is_decided_on_the_change(grown: int, verdict: str, status: str) -> None:
    rss = {"before": [8e6, 8e6], "after": [8e6 + grown, 8e6 + grown]}
    result = analyse(
        _records(rss),
        _spec(gates={"peak_rss": {"max_regression": 1024, "unit": "bytes"}}),
        settings=FAST,
    )
    gate = result.comparisons[0].gates[0]
    assert (gate.verdict, gate.status, gate.change) == (verdict, status, grown)
    assert gate.ci_low is None and gate.ci_high is None and "decided without a CI" in gate.detail


def test_an_exact_gate_needs_one_run_per_build() -> None:
    """One run each is enough for a size (a timed metric would be inconclusive: fewer than 2
    samples)."""
    rss = {"before": [8e6], "after": [9e6]}
    result = analyse(
        _records(rss, reps=1), _spec(gates={"peak_rss": {"max_regression": 0}}), settings=FAST
    )
    assert result.comparisons[0].gates[0].verdict == "violated"


def test_a_varying_size_keeps_the_ci_rule() -> None:
    rss = {"before": [8.0e6, 8.1e6], "after": [8.0e6, 8.2e6]}
    result = analyse(
        _records(rss),
        _spec(gates={"peak_rss": {"max_regression": 1024, "unit": "bytes"}}),
        settings=FAST,
    )
    gate = result.comparisons[0].gates[0]
    assert gate.ci_low is not None and gate.verdict == "inconclusive"


def test_a_size_as_the_primary_metric_has_an_exact_verdict() -> None:
    rss = {"before": [8e6, 8e6], "after": [8.8e6, 8.8e6]}  # 10% larger
    result = analyse(_records(rss), _spec(primary="peak_rss", min_effect=5), settings=FAST)
    row = result.comparisons[0].models[0]
    assert (row.verdict, row.ci_low, row.p_value) == ("slower", None, None)
    assert row.reason.startswith("exact: +10.0% (larger)")
    effect = [e for e in result.comparisons[0].expectations if e.kind == "min_effect"]
    assert effect[0].status == "fail"
    cells = _row(render_markdown(result), "| resnet8")
    assert cells[2] == "10.0% larger" and cells[3] == "exact" and cells[4] == ""
    assert cells[-1] == "larger"


def test_decide_exact() -> None:
    assert decide_exact(0.0, 5)[0] == "no change" and "no change" in decide_exact(0.0, 5)[1]
    assert decide_exact(-4.0, 5)[0] == "no change"
    assert decide_exact(6.0, 5) == (
        "faster",
        "exact: -6.0% (smaller), beyond the ±5% that counts as no change",
    )


def test_memory_table_rows() -> None:
    rss = {"before": [8e6, 8.1e6], "after": [8e6 + 4096, 8e6 + 4096]}
    markdown = render_markdown(analyse(_records(rss), _spec(), settings=FAST))
    cells = _row(markdown[markdown.index("## Memory") :], "| resnet8")
    assert cells == [
        "resnet8",
        "`peak_rss`",
        "8,050,000 -> 8,004,096 B",
        "-45,904 B (-0.6%) (runs: before 8,000,000 … 8,100,000)",
    ]
    assert (
        "## Per build" in markdown and "peak_rss" not in markdown[markdown.index("## Per build") :]
    )
