"""Analysis on synthetic samples with known answers."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import pytest

from fvp_harness.report.rendering.markdown import render_markdown
from fvp_harness.report.stats.analysis import analyse
from fvp_harness.report.stats.bootstrap import bootstrap_medians
from fvp_harness.report.stats.frames import to_frame
from fvp_harness.report.stats.pvalues import bootstrap_p, process_level_p
from fvp_harness.report.stats.result import expectations_violated
from fvp_harness.report.stats.samples import select_latest
from fvp_harness.report.stats.spec import Settings
from fvp_harness.report.stats.summary import SUMMARY_COLUMNS, summarise
from fvp_harness.report.stats.verdicts import decide_verdict
from fvp_harness.scenario.model import Compare
from fvp_harness.store.records import Record
from tests.helpers import interleaved, record

Sampler = Callable[[np.random.Generator, str, str, int], list[float]]


def make_records(
    sampler: Sampler,
    *,
    models: Sequence[str] = ("resnet8",),
    builds: Sequence[str] = ("before", "after"),
    reps: int = 3,
    seed: int = 0,
    npu: Callable[[str, str], float] | None = lambda model, build: 85092.0,
    outputs: Callable[[str, str, int], dict[str, str]]
    | None = lambda m, b, r: {"out-0.bin": "ab" * 32},
) -> list[Record]:
    """Interleaved units (r1-before-m1, r1-after-m1, r1-before-m2, ...) with samples from
    ``sampler``."""
    rng = np.random.default_rng(seed)
    records: list[Record] = []
    for second, rep, model, build in interleaved(range(1, reps + 1), models, builds):
        values = sampler(rng, model, build, rep)
        samples = {"cpu_time": values}
        units = {"cpu_time": "ms"}
        if npu is not None:
            samples["npu_cycles"] = [npu(model, build)] * len(values)
            units["npu_cycles"] = "cycles"
        records.append(record(
            f"r{rep}-{build}-{model}", key=f"k-{rep}-{build}-{model}", build=build, model=model,
            repetition=rep,
            samples=samples, metric_units=units,
            outputs=outputs(model, build, rep) if outputs else {},
            started=f"2026-03-01T10:{second // 60:02d}:{second % 60:02d}Z",
        ))
    return records


def normal(base: dict[str, float], noise: float = 0.02, n: int = 10,
           process: float = 0.0) -> Sampler:
    def sampler(rng: np.random.Generator, model: str, build: str, rep: int) -> list[float]:
        offset = 1.0 + process * rng.standard_normal()
        return (base[build] * offset * (1.0 + noise * rng.standard_normal(n))).tolist()

    return sampler


FAST = Settings(resamples=1000)


# --- frames ---------------------------------------------------------------------------------------


def test_to_frame_is_tidy_and_in_execution_order() -> None:
    records = make_records(normal({"before": 2.6, "after": 0.93}, n=4), reps=2)
    frame = to_frame(records)
    assert {
        "scenario",
        "unit_id",
        "instance",
        "build",
        "model",
        "repetition",
        "metric",
        "iteration",
        "value",
        "unit_of_measure",
        "status",
        "order",
    } <= set(frame.columns)
    assert len(frame) == 2 * 2 * 4 * 2  # reps x builds x iterations x metrics
    assert frame["order"].is_monotonic_increasing
    assert frame["value"].dtype == np.float64
    first = frame[frame["metric"] == "cpu_time"].iloc[0]
    assert first["unit_id"] == "r1-before-resnet8" and first["iteration"] == 0


def test_select_latest_prefers_the_ok_retry() -> None:
    ok = make_records(normal({"before": 1.0, "after": 1.0}, n=2), reps=1)
    failed = ok[1].model_copy(update={"status": "failed", "samples": {},
                                      "failure_class": "infrastructure"})
    retry = ok[1].model_copy(update={"attempt": 2})
    chosen = select_latest([ok[0], failed, retry])
    assert chosen == [ok[0], retry]
    # a later failure does not hide the ok one
    assert select_latest([ok[0], retry, failed]) == [ok[0], retry]


def test_summarise_known_values() -> None:
    records = make_records(lambda rng, m, b, r: [1.0, 2.0, 3.0, 4.0, 100.0], reps=2, npu=None)
    summary = summarise(to_frame(records), FAST)
    assert list(summary.columns) == SUMMARY_COLUMNS
    row = summary[(summary["build"] == "before") & (summary["metric"] == "cpu_time")].iloc[0]
    assert row["n"] == 10 and row["units"] == 2
    assert row["median"] == 3.0 and row["mean"] == pytest.approx(22.0)
    assert row["p5"] == pytest.approx(1.0) and row["p95"] == pytest.approx(100.0)
    assert row["ci_low"] <= row["median"] <= row["ci_high"]


def test_summary_does_not_depend_on_record_order() -> None:
    records = make_records(normal({"before": 2.6, "after": 0.93}), models=("a", "b"))
    shuffled = records[:]
    random.Random(3).shuffle(shuffled)
    key = ["model", "build", "metric"]
    one = summarise(to_frame(records), FAST).sort_values(key).reset_index(drop=True)
    two = summarise(to_frame(shuffled), FAST).sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(one, two)


def test_bootstrap_medians_constant_and_seeded() -> None:
    rng = np.random.default_rng(1)
    assert np.all(bootstrap_medians([np.full(5, 7.0), np.full(3, 7.0)], 200, rng) == 7.0)
    a = bootstrap_medians([np.arange(10.0), np.arange(10.0) + 5], 300, np.random.default_rng(9))
    b = bootstrap_medians([np.arange(10.0), np.arange(10.0) + 5], 300, np.random.default_rng(9))
    assert np.array_equal(a, b) and a.min() >= 0 and a.max() <= 14


# --- verdict rules --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("low", "high", "p", "expected"),
    [
        (-0.5, 0.8, 0.5, "no change"),
        (0.0, 0.0, 1.0, "no change"),
        (1.5, 3.0, 0.001, "faster"),
        (1.5, 3.0, 0.2, "inconclusive"),  # CI and test disagree
        (-3.0, -1.2, 0.01, "slower"),
        (0.5, 3.0, 0.01, "inconclusive"),  # straddles +1%
        (-2.0, 2.0, 0.5, "inconclusive"),
        (None, None, None, "inconclusive"),
        (1.5, 3.0, None, "faster"),  # no p-value (geometric mean): the CI decides
    ],
)
def test_decide_verdict(low: float | None, high: float | None, p: float | None,
                        expected: str) -> None:
    assert decide_verdict(low, high, p, min_effect=1.0)[0] == expected


# --- A/B comparisons with known answers -----------------------------------------------------------


def test_bootstrap_p_counts_the_draws_on_the_far_side_of_no_change() -> None:
    # none beyond 1: the add-one floor
    assert bootstrap_p(np.full(99, 0.5)) == pytest.approx(2 / 100)
    assert bootstrap_p(np.full(99, 1.0)) == 1.0  # every draw is no change
    draws = np.concatenate([np.full(90, 0.9), np.full(9, 1.1)])
    assert bootstrap_p(draws) == pytest.approx(2 * 10 / 100)
    assert bootstrap_p(np.array([0.5, np.nan, 0.6])) is None  # too few finite draws


def test_process_level_p_is_the_larger_like_the_ci_is_the_wider() -> None:
    assert process_level_p(0.001, 0.03) == 0.03 and process_level_p(0.2, 0.03) == 0.2
    assert process_level_p(0.01, None) == 0.01 and process_level_p(None, None) is None


def test_known_64_percent_saving_is_recovered() -> None:
    records = make_records(normal({"before": 2.60, "after": 2.60 * 0.36}, process=0.01))
    result = analyse(records, Compare(), ["npu_cycles"], FAST)
    model = result.comparison.models[0]  # type: ignore[union-attr]
    assert model.verdict == "faster"
    assert model.ci_low is not None and model.ci_high is not None
    assert model.ci_low <= 64.0 <= model.ci_high
    assert model.ci_high - model.ci_low < 5.0
    assert model.saved_pct == pytest.approx(64.0, abs=1.5)
    assert model.p_value is not None and model.p_value < 0.01  # process level: 3 processes a build
    # the pooled test, far more confident than it may be
    assert model.p_pooled is not None and model.p_pooled < 1e-6
    assert model.n_baseline == model.n_candidate == 30 and model.units_baseline == 3
    assert not expectations_violated(result)


@pytest.mark.parametrize("seed", range(8))
def test_identical_distributions_are_never_called_a_change(seed: int) -> None:
    records = make_records(normal({"before": 1.0, "after": 1.0}, noise=0.03), seed=seed,
                           models=("a", "b"))
    result = analyse(records, Compare(), (), FAST)
    for model in result.comparison.models:  # type: ignore[union-attr]
        assert model.verdict in ("no change", "inconclusive"), (seed, model)
    assert result.comparison.geomean.verdict in ("no change", "inconclusive")  # type: ignore[union-attr]


def test_process_to_process_noise_is_not_a_change() -> None:
    """The pyperf pain: iterations pooled across few processes make identical code look different.
    Here the processes differ by 3% each while iterations are tight. The pooled U-test is fooled
    most of the time; the verdict, built on unit-level intervals, errs only at its nominal rate: a
    95% CI entirely beyond ±1% happens for about 1.5% of seeds (measured over 1000 seeds; seeds 0-99
    happen to hold 6). The bound below is loose on purpose: the point is a few percent against the
    pooled test's majority."""
    sampler = normal({"before": 1.0, "after": 1.0}, noise=0.005, n=20, process=0.03)
    changes = pooled_significant = process_significant = 0
    for seed in range(100):
        result = analyse(make_records(sampler, seed=seed, reps=5), Compare(), (),
                         Settings(resamples=200))
        model = result.comparison.models[0]  # type: ignore[union-attr]
        changes += model.verdict in ("faster", "slower")
        pooled_significant += model.p_pooled is not None and model.p_pooled < 0.05
        process_significant += model.p_value is not None and model.p_value < 0.05
    assert changes <= 8
    assert pooled_significant >= 50  # what a tool trusting pooled iterations would have reported
    # the headline p, at the level of the CI, errs near its nominal rate
    assert process_significant <= 10


def test_tight_identical_distributions_are_no_change() -> None:
    records = make_records(normal({"before": 1.0, "after": 1.0}, noise=0.002, n=20), reps=5)
    model = analyse(records, Compare(), (), FAST).comparison.models[0]  # type: ignore[union-attr]
    assert model.verdict == "no change"
    assert (model.ci_low is not None and model.ci_high is not None and
            -1.0 <= model.ci_low <= model.ci_high <= 1.0)


def test_regression_is_slower_and_violates_the_expectation() -> None:
    records = make_records(normal({"before": 1.0, "after": 1.10}, noise=0.01, process=0.005))
    result = analyse(records, Compare(), (), FAST)
    model = result.comparison.models[0]  # type: ignore[union-attr]
    assert model.verdict == "slower" and model.saved_pct == pytest.approx(-10.0, abs=1.5)
    effect = [e for e in result.comparison.expectations if e.kind == "min_effect"]  # type: ignore[union-attr]
    assert effect[0].status == "fail"
    assert expectations_violated(result)


def test_geometric_mean_row() -> None:
    ratio = {"a": 0.36, "b": 0.25}

    def sampler(rng: np.random.Generator, model: str, build: str, rep: int) -> list[float]:
        base = 2.0 if build == "before" else 2.0 * ratio[model]
        return (base * (1 + 0.001 * rng.standard_normal(10))).tolist()

    comparison = analyse(make_records(sampler, models=("a", "b")), Compare(), (), FAST).comparison
    assert comparison is not None and comparison.geomean is not None
    assert comparison.geomean.ratio == pytest.approx(0.30, rel=0.01)
    assert comparison.geomean.saved_pct == pytest.approx(70.0, abs=0.5)
    assert comparison.geomean.verdict == "faster"
    assert comparison.geomean.ci_low is not None and comparison.geomean.ci_low <= 70.0 + 0.5


# --- identity -------------------------------------------------------------------------------------


def test_npu_cycle_difference_fails_and_shows_values() -> None:
    records = make_records(
        normal({"before": 2.6, "after": 0.93}),
        npu=lambda m, b: 85092.0 if b == "before" else 85100.0
    )
    result = analyse(records, Compare(), ["npu_cycles"], FAST)
    model = result.comparison.models[0]  # type: ignore[union-attr]
    check = next(c for c in model.identity if c.name == "npu_cycles")
    assert check.status == "fail"
    assert check.values == {"before": ["85092 x30"], "after": ["85100 x30"]}
    assert "85092" in check.detail and "85100" in check.detail
    assert model.others[0].identical is False
    assert expectations_violated(result)


def test_output_difference_in_one_unit_fails_with_short_hashes() -> None:
    def outputs(model: str, build: str, rep: int) -> dict[str, str]:
        return {"out-0.bin": ("cd" if (build, rep) == ("after", 2) else "ab") * 32}

    records = make_records(normal({"before": 2.6, "after": 0.93}), outputs=outputs)
    model = analyse(records, Compare(), (), FAST).comparison.models[0]  # type: ignore[union-attr]
    check = next(c for c in model.identity if c.name == "outputs")
    assert check.status == "fail"
    assert check.values["after"] == ["out-0.bin=abababababab… x2", "out-0.bin=cdcdcdcdcdcd… x1"]


def test_no_recorded_outputs_is_unverified_not_a_pass() -> None:
    records = make_records(normal({"before": 2.6, "after": 0.93}), outputs=None, npu=None)
    result = analyse(records, Compare(), (), FAST)
    statuses = {c.name: c.status for c in result.comparison.models[0].identity}  # type: ignore[union-attr]
    assert statuses == {"outputs": "unverified", "npu_cycles": "unverified"}
    assert not expectations_violated(result)
    assert expectations_violated(result, strict=True)


# --- failures and missing data --------------------------------------------------------------------


def test_failed_units_are_listed_and_a_build_without_data_is_not_measured() -> None:
    records = make_records(normal({"before": 2.6, "after": 0.93}), models=("a", "b"))
    broken = [
        r.model_copy(
            update={
                "status": "failed",
                "samples": {},
                "failure_class": "test",
                "failure": "exit 139",
                "log": f"logs/s0/{r.unit_id}.log",
            }
        )
        if (r.model, r.build) == ("b", "after")
        else r
        for r in records
    ]
    result = analyse(broken, Compare(), (), FAST)
    assert [f.unit_id for f in result.failed_units] == ["r1-after-b", "r2-after-b", "r3-after-b"]
    assert (result.failed_units[0].failure_class == "test" and
            result.failed_units[0].log == "logs/s0/r1-after-b.log")
    by_model = {m.model: m for m in result.comparison.models}  # type: ignore[union-attr]
    assert by_model["a"].verdict == "faster"
    assert by_model["b"].verdict == "not measured" and "after" in by_model["b"].reason
    assert result.comparison.geomean is None  # type: ignore[union-attr]  # one model with a ratio only


# --- drift ----------------------------------------------------------------------------------------


def test_drift_is_flagged() -> None:
    counter = {"after": 0}

    def sampler(rng: np.random.Generator, model: str, build: str, rep: int) -> list[float]:
        if build == "before":
            return (2.6 * (1 + 0.01 * rng.standard_normal(10))).tolist()
        values = []
        for _ in range(10):
            counter["after"] += 1
            values.append(0.93 * (1 + 0.004 * counter["after"])
                          * (1 + 0.005 * rng.standard_normal()))
        return values

    result = analyse(make_records(sampler), Compare(), (), FAST)
    flags = {d.build: d for d in result.drift}
    assert flags["after"].flagged and flags["after"].rho > 0.8 and flags["after"].change_pct > 5
    assert not flags["before"].flagged


def test_the_size_of_a_drift_is_measured_from_where_the_series_started() -> None:
    """A series that falls from 3.0 to 0.5 ms moved 83% down from where it started; in % of the
    whole series' median it read -278% here (-113% in issue 38, finding 9): more than all of it."""
    falling = [3.0] * 8 + [2.5, 2.0, 1.5, 1.0, 0.8, 0.6] + [0.5] * 10

    def sampler(rng: np.random.Generator, model: str, build: str, rep: int) -> list[float]:
        return falling if build == "after" else [1.0 + 0.01 * i for i in range(24)][::-1]

    result = analyse(make_records(sampler, reps=1), Compare(), (), FAST)
    flag = next(d for d in result.drift if d.build == "after")
    assert flag.flagged and flag.change_pct == pytest.approx(100 * (0.5 - 3.0) / 3.0)
    markdown = render_markdown(result)
    assert "last third vs first third -83.3%)" in markdown and "-113" not in markdown


def test_constant_series_do_not_drift_or_warn() -> None:
    records = make_records(lambda rng, m, b, r: [1.0] * 10)
    result = analyse(records, Compare(), (), FAST)
    assert result.drift == ()
    row = result.comparison.models[0]  # type: ignore[union-attr]
    # one number in every sample: no change, exactly, with no p-value and no CI of zero width
    shown = (row.verdict, row.p_value, row.ci_low, row.ci_high, row.exact)
    assert shown == ("no change", None, None, None, True)


def test_analyse_without_compare_spec() -> None:
    result = analyse(make_records(normal({"before": 1.0, "after": 1.0})), None, (), FAST)
    assert result.comparison is None and len(result.summary) == 4
    assert not expectations_violated(result)


def test_empty_input() -> None:
    result = analyse([], Compare(), (), FAST)
    assert result.comparison is not None and result.comparison.models == ()
    assert result.summary.empty and result.failed_units == ()


# --- a list of primary metrics --------------------------------------------------------------------


def _runs(with_cpu_time: Callable[[int, str, str], bool]) -> list[Record]:
    """Three repetitions of two models: iteration time always, CPU time where ``with_cpu_time``
    says."""
    rng = np.random.default_rng(3)
    out = []
    for count, rep, model, build in interleaved([1, 2, 3], ["a", "b"], ["before", "after"]):
        centre = 2.6 if build == "before" else 0.9
        samples = {"iteration_time": list(centre + 0.5 + 0.01 * rng.standard_normal(5))}
        if with_cpu_time(rep, model, build):
            samples["cpu_time"] = list(centre + 0.01 * rng.standard_normal(5))
        out.append(record(f"r{rep}-{build}-{model}", build=build, model=model, repetition=rep,
                          samples=samples, metric_units={"cpu_time": "ms", "iteration_time": "ms"},
                          started=f"2026-03-01T10:{count:02d}:00Z"))
    return out


def test_a_primary_list_takes_the_first_metric_every_unit_produced() -> None:
    spec = Compare(primary=["cpu_time", "iteration_time"], expect_identical=[])
    instrumented = analyse(_runs(lambda *_: True), spec, ["cpu_time", "iteration_time"]).comparison
    assert instrumented is not None and instrumented.primary == "cpu_time"
    assert instrumented.primary_choice is not None
    assert (instrumented.primary_choice.reason
            == "first of cpu_time, iteration_time that every unit produced")

    stock = analyse(_runs(lambda *_: False), spec, ["cpu_time", "iteration_time"]).comparison
    assert stock is not None and stock.primary == "iteration_time"
    assert (stock.primary_choice is not None and
            "cpu_time: 0 of 12 units" in stock.primary_choice.reason)
    assert all(m.verdict == "faster" for m in stock.models)

    # a CPU-time line some units lack would compare different units: the complete metric is the fair
    # headline
    partial = analyse(_runs(lambda rep, model, build: rep != 2), spec,
                      ["cpu_time", "iteration_time"]).comparison
    assert partial is not None and partial.primary == "iteration_time"
    assert ("cpu_time: 8 of 12 units" in (partial.primary_choice.reason if partial.primary_choice
                                          else ""))


def test_a_primary_list_no_metric_of_which_is_complete_takes_the_most_complete() -> None:
    spec = Compare(primary=["npu_cycles", "cpu_time"], expect_identical=[])
    comparison = analyse(_runs(lambda rep, model, build: rep != 2), spec).comparison
    assert comparison is not None and comparison.primary == "cpu_time"
    assert comparison.primary_choice is not None
    assert comparison.primary_choice.reason.startswith(
        "no metric of npu_cycles, cpu_time was produced by every unit"
    )


def test_a_single_primary_is_used_as_written() -> None:
    comparison = analyse(_runs(lambda *_: False),
                         Compare(primary="cpu_time", expect_identical=[])).comparison
    assert comparison is not None and comparison.primary == "cpu_time"
    assert all(m.verdict == "not measured" for m in comparison.models)


# --- pinned numbers -------------------------------------------------------------------------------


def _pinned_records() -> list[Record]:
    """A fixed record set, no random numbers: two models (``a`` 64 % faster, ``b`` about 4 %
    faster), three repetitions of 10 iterations (one unit of 12, so unit sizes differ), constant NPU
    cycles, one ``load_time`` per unit, a drifting ``after`` build of ``a``, and a failed fourth
    repetition of ``b``."""
    out = []
    for count, rep, model, build in interleaved([1, 2, 3], ["a", "b"], ["before", "after"]):
        centre = {"before": 2.6, "after": 0.93 if model == "a" else 2.5}[build]
        n = 12 if (rep, build) == (2, "after") else 10
        trend = 0.004 * count if (model, build) == ("a", "after") else 0.0
        cpu = [round(centre * (1 + trend + 0.01 * (((i * 7 + rep * 5 + count) % 11) - 5)), 4)
               for i in range(n)]
        out.append(record(
            f"r{rep}-{build}-{model}", build=build, model=model, repetition=rep,
            samples={"cpu_time": cpu, "npu_cycles": [85092.0] * n,
                     "load_time": [40.0 + rep + 3 * (build == "after")]},
            metric_units={"cpu_time": "ms", "npu_cycles": "cycles", "load_time": "ms"},
            outputs={"out-0.bin": "ab" * 32}, started=f"2026-03-01T10:{count:02d}:00Z"))
    out.append(record("r4-after-b", status="failed", build="after", model="b", repetition=4,
                      started="2026-03-01T10:59:00Z"))
    return out


PINNED_SPEC = Compare.model_validate({
    "primary": "cpu_time", "min_effect": 5,
    "expect_identical": ["outputs", "npu_cycles", {"metric": "load_time", "rel": 0.5}],
    "gates": {"load_time": {"max_regression": "10%"},
              "cpu_time": {"max_regression": 0.05, "unit": "ms"}},
})


def _pinned_numbers(settings: Settings) -> dict[str, object]:
    """The numbers ``analyse`` gives for ``_pinned_records``: per-build statistics, comparisons,
    gates, tolerance checks and drift."""
    result = analyse(_pinned_records(), PINNED_SPEC, ["npu_cycles"], settings)
    comparison = result.comparison
    assert comparison is not None and comparison.geomean is not None
    numbers: dict[str, object] = {}
    for row in result.summary[result.summary["metric"] != "npu_cycles"].to_dict("records"):
        numbers[f"{row['model']} {row['build']} {row['metric']}"] = tuple(
            row[name]
            for name in ("n", "units", "median", "mean", "std", "p5", "p95", "ci_low", "ci_high"))
    for m in comparison.models:
        numbers[m.model] = (m.ratio, m.saved_pct, m.ci_low, m.ci_high, m.p_value, m.p_units,
                            *m.baseline_ci, *m.candidate_ci, m.verdict)
        numbers[f"{m.model} identity"] = tuple((c.name, c.status, c.detail) for c in m.identity)
        numbers[f"{m.model} others"] = tuple((c.metric, c.baseline_median, c.candidate_median)
                                             for c in m.others)
    gm = comparison.geomean
    numbers["geomean"] = (gm.ratio, gm.saved_pct, gm.ci_low, gm.ci_high, gm.verdict)
    for g in comparison.gates:
        numbers[f"gate {g.model} {g.metric}"] = (g.change, g.ci_low, g.ci_high, g.verdict)
    for d in result.drift:
        numbers[f"drift {d.model} {d.build}"] = (d.n, d.rho, d.p_value, d.change_pct, d.flagged)
    numbers["failed"] = tuple(f.unit_id for f in result.failed_units)
    return numbers


PINNED: dict[str, object] = {
    "a before cpu_time": (30, 3, 2.5869999999999997, 2.5922, 0.08254461698441305, 2.47, 2.7183,
                          2.548, 2.645825),
    "a before load_time": (3, 3, 42.0, 42.0, 1.0, 41.1, 42.9, 41.0, 43.0),
    "a after cpu_time": (32, 3, 0.9523, 0.953171875, 0.03032585646877127, 0.9078350000000001,
                         1.00132, 0.9374, 0.9672),
    "a after load_time": (3, 3, 45.0, 45.0, 1.0, 44.1, 45.9, 44.0, 46.0),
    "b before cpu_time": (30, 3, 2.6, 2.5965333333333334, 0.08071223183518154, 2.47, 2.7183, 2.548,
                          2.652),
    "b before load_time": (3, 3, 42.0, 42.0, 1.0, 41.1, 42.9, 41.0, 43.0),
    "b after cpu_time": (32, 3, 2.5, 2.50078125, 0.0789253360420774, 2.375, 2.625, 2.45, 2.55),
    "b after load_time": (3, 3, 45.0, 45.0, 1.0, 44.1, 45.9, 44.0, 46.0),
    # p (5th) is the process-level one: here at the bootstrap's floor 2 / (300 + 1), above the Welch
    # t-test's
    "a": (0.36810977966756864, 63.189022033243134, 62.192917142668655, 64.1616507127535,
          0.006644518272425249,
          3.8663550880487744e-05, 2.548, 2.6260000000000003, 0.9374, 0.9672, "faster"),
    "a identity": (("outputs", "pass", "all identical (1 file(s))"),
                   ("npu_cycles", "pass", "all identical (85092)"),
                   ("load_time", "pass", "+7.1% within ±50% (CI +1.7 … +12.9%)")),
    "a others": (("npu_cycles", 85092.0, 85092.0), ("load_time", 42.0, 45.0)),
    "b": (0.9615384615384615, 3.8461538461538547, 0.9167915417915444, 5.760186595582631,
          0.006644518272425249, 0.0015980791493146517, 2.548, 2.645825, 2.45, 2.55, "inconclusive"),
    "b identity": (("outputs", "pass", "all identical (1 file(s))"),
                   ("npu_cycles", "pass", "all identical (85092)"),
                   ("load_time", "pass", "+7.1% within ±50% (CI +1.7 … +12.9%)")),
    "b others": (("npu_cycles", 85092.0, 85092.0), ("load_time", 42.0, 45.0)),
    # the CI's ratio bounds: the geometric means of the models' (the draws pooled: 39.45 … 41.38)
    "geomean": (0.594938409601209, 40.506159039879094, 38.79504046280464, 41.884603162737974,
                "faster"),
    "gate a load_time": (7.14285714285714, 1.6842094211933833, 12.900040163845294, "inconclusive"),
    "gate a cpu_time": (-1.6346999999999996, -1.6969975, -1.5864, "within"),
    "gate b load_time": (7.14285714285714, 1.6842094211933833, 12.900040163845294, "inconclusive"),
    "gate b cpu_time": (-0.10000000000000009, -0.15152499999999997, -0.02400000000000002, "within"),
    "drift a before": (30, 0.05002829947803977, 0.7929073325283833, 0.0, False),
    # the drift's size in % of the first third's median (of the overall median: 2.15, -1.0, -1.0)
    "drift a after": (32, 0.2601044828081175, 0.15051489795393236, 2.17610530226633, False),
    "drift b before": (30, -0.0906762928039471, 0.6336935422061778, -0.9950248756218999, False),
    "drift b after": (32, -0.10379179652662295, 0.5718657817636092, -0.9950248756219046, False),
    "failed": ("r4-after-b",),
}


def test_analysis_numbers_are_pinned() -> None:
    """Exact floats, so a faster implementation cannot change a number unnoticed (these are the
    numbers the pandas-mask implementation gave, before the analysis was made faster)."""
    assert _pinned_numbers(Settings(resamples=300)) == PINNED


@pytest.mark.parametrize("metric", ["cpu_time", "npu_cycles", "my_metric"])
@pytest.mark.parametrize("unit", ["ms", "s", "us", "min", "cycles", "count", "", "MB/s"])
def test_the_samples_checked_by_block_are_those_checked_one_by_one(metric: str, unit: str) -> None:
    """``sample_blocks`` checks a value alone only when its record holds one outside a range every
    value of its metric may take: what it keeps and leaves out must be exactly what
    ``invalid_reason`` says of every value, also at the ends of each unit's limits (a day of time
    per run, 2^63 for counters and built-in metrics)."""
    import math

    from fvp_harness.report.stats.samples import invalid_reason, sample_blocks

    limits = [86400.0, 86400e3, 86400e6, 1440.0, 2.0**63, 0.0]
    ends = [
        value
        for limit in limits
        for value in (
            limit,
            math.nextafter(limit, math.inf),
            math.nextafter(limit, -math.inf),
            -limit,
        )
    ]
    every = [*ends, 1.5, -0.0, 1e300, -1e300, math.nan, math.inf, -math.inf]
    # a value alone: no other one to give it away
    groups = [[value] for value in every] + [every, [0.5, 1.5, 2.5]]
    records = [record(f"r{i}-after-m", samples={metric: values}, metric_units={metric: unit},
                      started=f"2026-03-01T10:{i // 60:02d}:{i % 60:02d}Z")
               for i, values in enumerate(groups)]
    blocks, dropped = sample_blocks(records)
    kept = {(block.record.unit_id, iteration, value) for block in blocks
            for iteration, value in zip(block.iterations, block.values, strict=True)}
    expected = {(r.unit_id, i, v) for r in records for i, v in enumerate(r.samples[metric])
                if invalid_reason(metric, v, unit) is None}
    assert kept == expected
    assert [(d.unit_id, d.count) for d in dropped] == [
        (r.unit_id, n)
        for r in records
        if (n := sum(invalid_reason(metric, v, unit) is not None for v in r.samples[metric]))
    ]
