"""Parsers on text shaped like real runner output, including the ugly parts of a shared FVP
console."""

from __future__ import annotations

import base64
import json

import pytest

from fvp_harness.run.scrape import (
    BUILTIN_METRICS,
    LOG_MESSAGE_LIMIT,
    PARSERS_VERSION,
    clean_console_text,
    find_build_id,
    find_errors,
    parse_log_line,
    prepare_text,
    repair_kernel_interleaving,
    scrape,
    validate_regex,
)
from fvp_harness.scenario.model import MetricSpec

ALL_BUILTINS = [MetricSpec(name=name) for name in BUILTIN_METRICS]


def linux_line(msg: str, t: str = "00:00:01.000100", src: str = "EthosUBackend.cpp:312",
               level: str = "I") -> str:
    return f"{level} {t} executorch:{src}] {msg}"


LINUX_RUN = "\r\n".join(
    [
        "drv-reuse build 2026.02 (after)",
        linux_line("Model file /tmp/fvp-harness/resnet8.pte is loaded.",
                   src="executor_runner.cpp:190"),
        linux_line("Using method forward", src="executor_runner.cpp:240"),
        linux_line("Model loaded in 12.500 ms.", src="executor_runner.cpp:260"),
        linux_line("EthosUBackend::execute() CPU time: 2.912 ms"),
        linux_line("Ethos-U Linux delegate cycle counter: 85092"),
        linux_line("Iteration 1 of 3: 3.125 ms", src="executor_runner.cpp:700"),
        linux_line("EthosUBackend::execute() CPU time: 931 us"),
        linux_line("Ethos-U Linux delegate cycle counter: 85092"),
        linux_line("Iteration 2 of 3: 1.100 ms", src="executor_runner.cpp:700"),
        linux_line("EthosUBackend::execute() CPU time: 0.929 ms"),
        linux_line("Ethos-U Linux delegate cycle counter: 85092"),
        linux_line("Iteration 3 of 3: 1.090 ms", src="executor_runner.cpp:700"),
        linux_line("Model executed successfully 3 time(s) in 5.315000 ms.",
                   src="executor_runner.cpp:791"),
        linux_line("1 outputs: ", src="executor_runner.cpp:800"),
        "Output 0: tensor(sizes=[1, 10], [-12, 3, 7, ..., 1, 0, -4])",
        "",
    ]
)


def specs(*names: str, required: bool = False) -> list[MetricSpec]:
    return [MetricSpec(name=name, required=required) for name in names]


# --- contract -------------------------------------------------------------------------------------


def test_builtin_names_are_the_published_contract() -> None:
    assert set(BUILTIN_METRICS) == {
        "cpu_time",
        "npu_cycles",
        "iteration_time",
        "run_time",
        "load_time",
        "bm_npu_cycles",
        "bm_execute_cycles",
        "bm_cpu_cycles",
        "mlia_npu_active",
        "method_allocator_used",
        "method_allocator_pool",
        "method_allocator_planned",
        "method_allocator_loaded",
        "method_allocator_input",
        "method_allocator_executor",
        "temp_allocator",
        "pte_program_size",
        "pte_loaded_size",
        "etdump_buffer_used",
        "planned_memory",
        "peak_rss",
        "runner_text",
        "runner_rodata",
        "runner_data",
        "runner_bss",
        "runner_flash",
        "model_bytes",
        "program_planned",
    }
    assert PARSERS_VERSION == 4


# --- cleaning -------------------------------------------------------------------------------------


def test_clean_console_text_line_ends_ansi_and_controls() -> None:
    raw = "a\r\nb\rc\n\x1b[1;32mgreen\x1b[0m \x1b]0;title\x07x\x1b(B\ttab\x04\x00\x07end\x1b[2K"
    assert clean_console_text(raw) == "a\nb\nc\ngreen x\ttabend"


def test_clean_is_idempotent() -> None:
    once = clean_console_text(LINUX_RUN)
    assert clean_console_text(once) == once


# --- Linux executor_runner ------------------------------------------------------------------------


def test_linux_runner_all_metrics_in_order() -> None:
    result = scrape(LINUX_RUN, ALL_BUILTINS)
    assert result.samples["cpu_time"] == pytest.approx([2.912, 0.931, 0.929])  # us converted to ms
    assert result.samples["npu_cycles"] == [85092.0] * 3
    assert result.samples["iteration_time"] == pytest.approx([3.125, 1.100, 1.090])
    assert result.samples["run_time"] == pytest.approx([5.315])
    assert result.samples["load_time"] == pytest.approx([12.5])
    assert result.units["cpu_time"] == "ms" and result.units["npu_cycles"] == "cycles"
    assert result.per["cpu_time"] == "inference" and result.per["run_time"] == "run"
    assert result.executions == 3
    assert result.missing == [] and result.flagged == {}


def test_executions_found_even_when_run_time_is_not_asked_for() -> None:
    assert scrape(LINUX_RUN, specs("cpu_time")).executions == 3
    assert scrape("no run line", specs("cpu_time")).executions is None


def test_optional_group_that_did_not_match_is_skipped() -> None:
    spec = MetricSpec(name="v", regex=r"v(?:=(\d+))?;")
    assert scrape("v; v=4;", [spec]).samples["v"] == [4.0]


def test_required_metric_missing_is_named() -> None:
    result = scrape("nothing here\n",
                    specs("cpu_time", "npu_cycles", required=True) + specs("run_time"))
    assert result.missing == ["cpu_time", "npu_cycles"]
    assert result.samples == {"cpu_time": [], "npu_cycles": [], "run_time": []}


def test_parse_log_line_prefixes() -> None:
    linux = parse_log_line("I 00:01:02.500000 executorch:executor_runner.cpp:791] Model loaded in "
                           "1 ms.")
    assert linux is not None and linux.level == "I" and linux.line == 791
    assert linux.time_s == pytest.approx(62.5) and linux.message == "Model loaded in 1 ms."
    newer = parse_log_line("E [executorch:arm_executor_runner.cpp:412 main()] boom")
    assert (newer is not None and newer.function == "main" and newer.message == "boom" and
            newer.time_s is None)
    mid = parse_log_line("W [executorch:arm_perf_monitor.cpp:120] careful")
    assert mid is not None and mid.function is None and mid.message == "careful"
    old = parse_log_line("I executorch:arm_executor_runner.cpp:99] hello")
    assert old is not None and old.file == "arm_executor_runner.cpp" and old.message == "hello"
    assert parse_log_line("[   12.345678] random: crng init done") is None


# --- kernel interleaving --------------------------------------------------------------------------


def test_kernel_message_in_the_middle_of_a_runner_line_is_repaired() -> None:
    text = (
        "I 00:00:01.0 executorch:EthosUBackend.cpp:200] Ethos-U Linux del[   12.345678] random: "
        "crng init done\negate cycle counter: 85092\n"
    )
    repaired, count = repair_kernel_interleaving(text)
    assert count == 1
    assert ("I 00:00:01.0 executorch:EthosUBackend.cpp:200] Ethos-U Linux delegate cycle counter: "
            "85092") in (
        repaired.split("\n")
    )
    assert "random: crng init done" not in repaired  # noise removed (the unit's log file keeps it)
    result = scrape(text, specs("npu_cycles"))
    assert result.samples["npu_cycles"] == [85092.0]
    assert any("rejoined 1" in w for w in result.warnings)


def test_kernel_burst_inside_the_number_with_crlf_and_ansi() -> None:
    text = (
        "\x1b[0mI 00:00:01.000000 executorch:EthosUBackend.cpp:210] EthosUBackend::execute() CPU "
        "time: 0.9[  100.000001] ethosu 1c000000.npu: irq\r\n[  100.000002] another kernel "
        "line\r\n31 ms\r\nI 00:00:01.100000 executorch:EthosUBackend.cpp:210] "
        "EthosUBackend::execute() CPU time: 0.930 ms\r\n"
    )
    result = scrape(text, specs("cpu_time"))
    assert result.samples["cpu_time"] == pytest.approx([0.931, 0.930])


def test_two_kernel_fragments_in_one_runner_line() -> None:
    text = (
        "I 00:00:01.0 executorch:a.cpp:1] Ethos-U Linux[    1.000000] one\n"
        " delegate cycle[    1.000001] two\n counter: 42\n"
    )
    assert scrape(text, specs("npu_cycles")).samples["npu_cycles"] == [42.0]


def test_kernel_lines_at_line_start_are_left_alone() -> None:
    text = "[   12.345678] Ethos-U Linux delegate cycle counter is a kernel word here\nplain line\n"
    repaired, count = repair_kernel_interleaving(text)
    assert count == 0 and repaired == text


def test_printed_tensor_is_not_taken_for_a_kernel_stamp() -> None:
    text = "Output 0: tensor(sizes=[1], [0.500000])\nnext\n"
    assert repair_kernel_interleaving(text) == (text, 0)


# --- the 255-character cut ------------------------------------------------------------------------


def _cut_line(message_start: str, value: str) -> str:
    filler = "x" * (LOG_MESSAGE_LIMIT - len(message_start) - len(value))
    message = message_start + filler + value
    assert len(message) == LOG_MESSAGE_LIMIT
    return linux_line(message)


def test_value_at_the_end_of_a_cut_message_is_rejected() -> None:
    spec = MetricSpec(name="custom", regex=r"latency=(\d+)$", unit="us")
    text = _cut_line("trace ", " latency=1234") + "\n"
    result = scrape(text, [spec])
    assert result.samples["custom"] == []
    assert "custom" in result.flagged and "255" in result.warnings[0]


def test_output_that_stops_inside_a_number_is_flagged() -> None:
    """The runner died while printing (the simulator's ``truncate`` fault): ``85092`` may read as
    ``850``."""
    text = linux_line("Ethos-U Linux delegate cycle counter: 85092") + "\n"
    text += linux_line("Ethos-U Linux delegate cycle counter: 850")  # no line end: cut
    result = scrape(text, specs("npu_cycles"))
    assert result.samples["npu_cycles"] == [85092.0]
    assert "output ends in the middle" in result.warnings[0]
    # a unit after the number proves it complete, even without a final line end
    assert scrape(linux_line("EthosUBackend::execute() CPU time: 0.9 ms"),
                  specs("cpu_time")).samples == {
        "cpu_time": [0.9]
    }


def test_long_messages_elsewhere_do_not_hide_metrics() -> None:
    long_path = "/tmp/" + "d/" * 200 + "model.pte"
    text = (
        linux_line(f"Model file {long_path}"[:LOG_MESSAGE_LIMIT])
        + "\n"
        + linux_line("Ethos-U Linux delegate cycle counter: 7")
        + "\n"
    )
    result = scrape(text, specs("npu_cycles"))
    assert result.samples["npu_cycles"] == [7.0] and not result.flagged


# --- bare metal and MLIA --------------------------------------------------------------------------

PERF_BLOCK = """I [executorch:arm_perf_monitor.cpp:180 StopMeasurements()] NPU Inferences : 1
I [executorch:arm_perf_monitor.cpp:184 StopMeasurements()] ethos-u : cycle_cnt : 411 cycles (411.00 per inference)
I [executorch:arm_perf_monitor.cpp:190 StopMeasurements()] Inference runtime: 2585 CPU cycles total (2585.00 per inference)
I [executorch:arm_perf_monitor.cpp:200 StopMeasurements()] Inference CPU ratio: 90.10 %
I [executorch:arm_perf_monitor.cpp:201 StopMeasurements()] Inference NPU ratio: 9.90 %
I [executorch:arm_perf_monitor.cpp:210 StopMeasurements()] ethosu_pmu_cycle_cntr : 411 (411.00 per inference)
I [executorch:arm_perf_monitor.cpp:212 StopMeasurements()] ethosu_pmu_cntr0 : 6 (6.00 per inference)
I [executorch:arm_executor_runner.cpp:700 main()] Program complete, exiting.
\x04"""  # noqa: E501 - real line lengths


def test_bare_metal_perf_block() -> None:
    result = scrape(PERF_BLOCK, specs("bm_npu_cycles", "bm_execute_cycles", "bm_cpu_cycles"))
    assert result.samples == {"bm_npu_cycles": [411.0], "bm_execute_cycles": [411.0],
                              "bm_cpu_cycles": [2585.0]}
    assert result.units["bm_cpu_cycles"] == "CPU cycles" and result.executions == 1


def test_bare_metal_garbage_counters_are_flagged_not_used() -> None:
    text = (
        "I executorch:arm_perf_monitor.cpp:184] ethos-u : cycle_cnt : -1294967296 cycles "
        "(-1294967296.00 per inference)\n"
        "I executorch:arm_perf_monitor.cpp:190] Inference runtime: 100 CPU cycles total (5000.00 "
        "per inference)\n"
    )
    result = scrape(text, specs("bm_execute_cycles", "bm_cpu_cycles"))
    assert result.samples == {"bm_execute_cycles": [], "bm_cpu_cycles": []}
    assert set(result.flagged) == {"bm_execute_cycles", "bm_cpu_cycles"}
    assert any("64-bit" in w for w in result.warnings)
    assert any("exceeds the total" in w for w in result.warnings)


def test_negative_linux_cycle_counter_is_flagged() -> None:
    result = scrape(linux_line("Ethos-U Linux delegate cycle counter: -5"), specs("npu_cycles"))
    assert result.samples["npu_cycles"] == [] and result.flagged["npu_cycles"]


def _mlia(payload: object) -> str:
    return "<metrics>" + base64.b64encode(json.dumps(payload).encode()).decode() + "</metrics>"


def test_mlia_metrics_block() -> None:
    payload = [
        {
            "profiling_group": "Inference",
            "samples": [
                {"name": "NPU IDLE", "value": [10]},
                {"name": "NPU ACTIVE", "value": [85092]},
                {"name": "NPU TOTAL", "value": [85102]},
            ],
        }
    ]
    text = "some boot text\r\n" + _mlia(payload) + "\r\nProgram complete, exiting.\r\n"
    result = scrape(text, specs("mlia_npu_active"))
    assert result.samples["mlia_npu_active"] == [85092.0]
    assert result.per["mlia_npu_active"] == "run"


def test_mlia_garbage_block_is_flagged() -> None:
    result = scrape("<metrics>bm90IGpzb24=</metrics>\n", specs("mlia_npu_active"))  # "not json"
    assert result.samples["mlia_npu_active"] == [] and result.flagged["mlia_npu_active"]


# --- scenario regexes -----------------------------------------------------------------------------


def test_custom_regex_with_scale_and_per_run() -> None:
    spec = MetricSpec(name="boot_ms", regex=r"booted in (\d+(?:\.\d+)?) s", unit="ms", scale=1000,
                      per="run")
    result = scrape("booted in 1.5 s\n", [spec])
    assert result.samples["boot_ms"] == [1500.0]
    assert result.units["boot_ms"] == "ms" and result.per["boot_ms"] == "run"


def test_custom_regex_replaces_a_builtin_shape() -> None:
    spec = MetricSpec(name="cpu_time", regex=r"execute took (\d+) us", unit="ms", scale=0.001)
    result = scrape("execute took 931 us\nexecute took 929 us\n", [spec])
    assert result.samples["cpu_time"] == pytest.approx([0.931, 0.929])


def test_custom_regex_is_multiline_anchored_per_line() -> None:
    spec = MetricSpec(name="v", regex=r"^value (\d+)$")
    assert scrape("a\nvalue 3\nvalue 4 trailing\n", [spec]).samples["v"] == [3.0]


def test_bad_specs_raise() -> None:
    assert validate_regex(r"(a)(b)") is not None
    assert validate_regex(r"(") is not None
    assert validate_regex(r"x=(\d+)") is None
    with pytest.raises(ValueError, match="not a built-in"):
        scrape("", [MetricSpec(name="no_such_metric")])


# --- build identity and errors --------------------------------------------------------------------


def test_find_build_id() -> None:
    text = "\x1b[1mdrv-reuse build 2026.02\x1b[0m (after)\r\nrest\r\n"
    assert find_build_id(text, "drv-reuse build 2026.02") == "drv-reuse build 2026.02 (after)"
    assert find_build_id(text, "drv-reuse build 2025") is None
    assert find_build_id(text, "") is None


def test_find_build_id_through_a_kernel_fragment() -> None:
    text = "runner id: af[    3.000000] usb 1-1: new device\nter-42\n"
    assert find_build_id(text, "runner id: after-42") == "runner id: after-42"


def test_find_errors() -> None:
    text = "\n".join(
        [
            linux_line("ok"),
            linux_line("Ethos-U inference timed out after 5000000000 ns", level="E"),
            "Ethos-U Linux driver invocation failed: EIO",
        ]
    )
    found = find_errors(text)
    assert len(found) == 2 and "timed out" in found[0]


def test_prepare_text_reports_repairs() -> None:
    text, warnings = prepare_text("abc[    1.000000] k\ndef\n")
    assert text == "abcdef\n" and warnings == ["rejoined 1 runner line(s) cut by kernel messages"]
