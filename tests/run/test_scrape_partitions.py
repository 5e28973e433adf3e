"""Per-call metrics grouped per inference, and no sample from a failed measurement, on upstream's
text.

Upstream facts imitated (pytorch/executorch ``main`` at cff6f4dd): the Linux delegate prints
``Ethos-U Linux delegate cycle counter: %llu`` once per ``execute()`` call
(backends/arm/runtime/EthosUBackend_Cortex_A.cpp:294-299), so a model split into K Ethos-U
partitions prints K per inference; ``Iteration %u of %u: %f ms`` follows each ``method->execute()``
(examples/portable/executor_runner/executor_runner.cpp:779-785). On bare metal, a first inference
that fails still reaches ``StopMeasurements(0)``
(examples/arm/executor_runner/arm_executor_runner.cpp:1344), whose ``(double)total / 0`` prints
``nan`` or ``inf`` (arm_perf_monitor.cpp:151-222).
"""

from __future__ import annotations

import pytest

from fvp_harness.run.scrape import scrape
from fvp_harness.scenario.model import MetricSpec

from .test_scrape_upstream import ARM_RUNNER, DELEGATE, PERF, RUNNER, bare, linux, specs

COUNTER = f"{DELEGATE}:296"
# where the simulator shows the (closed, unmerged) #22596 CPU-time report
CPU = "arm_perf_monitor.cpp:124"


def partitioned_run(per_iteration: list[list[int]], *, done: int | None = None,
                    cpu: bool = False) -> str:
    """A current-generation run whose iteration i printed the counters ``per_iteration[i]``;
    ``done`` iterations completed (the rest of the last one's lines were printed, then the runner
    died)."""
    done = len(per_iteration) if done is None else done
    lines = [linux("I", f"{RUNNER}:624", "Model loaded in 1.000000 ms.")]
    for number, counters in enumerate(per_iteration, start=1):
        for value in counters:
            lines.append(linux("I", COUNTER, f"Ethos-U Linux delegate cycle counter: {value}"))
            if cpu:
                lines.append(linux("I", CPU,
                                   f"EthosUBackend::execute() CPU time: {value / 10000:.3f} ms"))
        if number <= done:
            lines.append(linux("I", f"{RUNNER}:779",
                               f"Iteration {number} of {len(per_iteration)}: 9.000000 ms"))
    if done == len(per_iteration):
        lines.append(linux("I", f"{RUNNER}:789",
                           f"Model executed successfully {done} time(s) in 27.000000 ms."))
    return "\n".join(lines) + "\n"


def test_k_counters_per_iteration_are_one_sample_each_their_sum_with_each_call_kept() -> None:
    text = partitioned_run([[43863, 11679, 4420]] * 3, cpu=True)
    result = scrape(text, specs("npu_cycles", "cpu_time", "iteration_time"))
    assert result.samples["npu_cycles"] == [59962.0] * 3, "one sample per inference, not per line"
    assert result.calls["npu_cycles"] == [[43863.0, 11679.0, 4420.0]] * 3
    assert result.samples["cpu_time"] == pytest.approx([4.386 + 1.168 + 0.442] * 3)
    assert result.calls["cpu_time"] == [[4.386, 1.168, 0.442]] * 3
    assert result.printed("npu_cycles") == 3 == result.executions, (
        "so the warmup drops whole inferences")
    assert result.warnings == []


def test_one_counter_per_iteration_is_kept_as_before_with_no_calls() -> None:
    result = scrape(partitioned_run([[84294]] * 3), specs("npu_cycles"))
    assert result.samples["npu_cycles"] == [84294.0] * 3
    assert result.calls == {}, "a fully delegated model has nothing per call to keep"


def test_calls_of_an_execute_that_never_finished_give_no_sample() -> None:
    text = partitioned_run([[100, 200], [100, 200], [100, 200]], done=2)
    result = scrape(text, specs("npu_cycles"))
    assert result.samples["npu_cycles"] == [300.0, 300.0]
    assert any("after the last completed iteration" in warning for warning in result.warnings)


def test_a_fully_delegated_run_cut_in_its_last_execute_keeps_only_completed_inferences() -> None:
    result = scrape(partitioned_run([[84294]] * 3, done=2), specs("npu_cycles", "iteration_time"))
    assert (result.samples["npu_cycles"] == [84294.0] * 2 == [84294.0]
            * len(result.samples["iteration_time"]))
    assert (result.calls == {} and
            any("after the last completed iteration" in w for w in result.warnings))


def test_an_inference_with_another_number_of_calls_gives_no_sample() -> None:
    result = scrape(partitioned_run([[100, 200], [100], [100, 200]]), specs("npu_cycles"))
    assert result.samples["npu_cycles"] == [300.0, 300.0]
    assert result.rejected_at["npu_cycles"] == [1], (
        "its position is kept, so the warmup count stays right")
    assert any("iteration 2 made 1 delegate call(s), the others 2" in w for w in result.warnings)


def test_an_inference_with_a_rejected_call_gives_no_partial_sum() -> None:
    text = partitioned_run([[100, 200], [100, 200]]).replace("counter: 200\n", "counter: -1\n", 1)
    result = scrape(text, specs("npu_cycles"))
    assert result.samples["npu_cycles"] == [300.0]
    assert result.rejected["npu_cycles"] == 1 and result.flagged["npu_cycles"]


def test_the_older_generation_without_iteration_lines_groups_by_the_execution_count() -> None:
    """executor_runner.cpp before 2026-04-10 printed no ``Iteration`` line; ``Model executed
    successfully N`` gives N, and K x N counters make N groups of K."""
    text = "\n".join([
        *[linux("I", COUNTER, f"Ethos-U Linux delegate cycle counter: {v}")
          for v in (10, 20, 30) * 2],
        linux("I", f"{RUNNER}:493", "Model executed successfully 2 time(s) in 5.000000 ms."),
    ]) + "\n"
    result = scrape(text, specs("npu_cycles"))
    assert result.samples["npu_cycles"] == [60.0, 60.0]
    assert result.calls["npu_cycles"] == [[10.0, 20.0, 30.0]] * 2


def test_a_scenario_regex_under_cpu_time_is_grouped_per_call_too() -> None:
    """The user's own pattern for the CPU-time report (#22596's text is not public): still one line
    per call."""
    text = "\n".join([
        linux("I", CPU, "execute took 900 us"), linux("I", CPU, "execute took 100 us"),
        linux("I", f"{RUNNER}:779", "Iteration 1 of 1: 2.000000 ms"),
    ]) + "\n"
    spec = MetricSpec(name="cpu_time", regex=r"execute took (\d+) us", scale=0.001, unit="ms")
    result = scrape(text, [spec])
    assert result.samples["cpu_time"] == [1.0]
    assert result.calls["cpu_time"] == [[0.9, 0.1]]


# --- no sample from a failed measurement (bare metal) ---------------------------------------------

def zero_inference_block(per: str) -> str:
    """StopMeasurements(0) after a first inference that failed (arm_executor_runner.cpp:1344): the
    totals, and ``(double)x / 0`` printed with %.2f: ``nan`` for 0/0, ``inf`` otherwise
    (arm_perf_monitor.cpp:150-214)."""
    return "\n".join([
        bare(f"{ARM_RUNNER}:1328", "run_model", "Starting running 1 inferences..."),
        bare(f"{PERF}:150", "StopMeasurements", "NPU Inferences : 0"),
        bare(f"{PERF}:151", "StopMeasurements", "NPU delegations: 0 (nan per inference)"),
        bare(f"{PERF}:160", "StopMeasurements",
             f"ethos-u : cycle_cnt : 1200 cycles ({per} per inference)"),
        bare(f"{PERF}:175", "StopMeasurements",
             f"Inference runtime: 5000 CPU cycles total ({per} per inference)"),
        bare(f"{PERF}:210", "StopMeasurements", "ethosu_pmu_cycle_cntr :  0 (nan per inference)"),
    ]) + "\n"


def test_nan_and_inf_per_inference_give_no_sample_and_say_why() -> None:
    for per in ("inf", "nan", "-nan"):
        result = scrape(zero_inference_block(per),
                        specs("bm_npu_cycles", "bm_execute_cycles", "bm_cpu_cycles"))
        assert result.samples == {"bm_npu_cycles": [], "bm_execute_cycles": [],
                                  "bm_cpu_cycles": []}, \
            "the run totals must not stand in for per-inference figures"
        assert result.rejected == {"bm_npu_cycles": 1, "bm_execute_cycles": 1, "bm_cpu_cycles": 1}
        assert all("zero inferences" in w and "StopMeasurements(0)" in w
                   for w in result.warnings), result.warnings
        assert result.executions == 0


def test_nan_per_inference_is_refused_even_without_the_inference_count_line() -> None:
    text = bare(f"{PERF}:160", "StopMeasurements",
                "ethos-u : cycle_cnt : 1200 cycles (inf per inference)") + "\n"
    result = scrape(text, specs("bm_execute_cycles"))
    assert result.samples["bm_execute_cycles"] == []
    assert "'inf per inference'" in result.warnings[0]


def test_a_total_without_a_per_inference_figure_is_no_sample_unless_one_inference_ran() -> None:
    def block(inferences: int) -> str:
        return "\n".join([bare(f"{PERF}:150", "StopMeasurements", f"NPU Inferences : {inferences}"),
                          bare(f"{PERF}:210", "StopMeasurements",
                               "ethosu_pmu_cycle_cntr : 340376")]) + "\n"

    result = scrape(block(4), specs("bm_npu_cycles"))
    assert result.samples["bm_npu_cycles"] == []
    assert "run total without a per-inference figure" in result.warnings[0]
    assert scrape(block(1), specs("bm_npu_cycles")).samples["bm_npu_cycles"] == [340376.0]
