"""The parsers against transcripts built from upstream ExecuTorch's own format strings.

Every fixture line says where upstream prints it (pytorch/executorch ``main`` at cff6f4dd,
2026-08-22; the line is the one of the ``ET_LOG(`` / ``ET_CHECK_MSG(`` call). Numbers and timestamps
are made up; the text around them is upstream's, including the odd spacing (``"% " PRIu64`` puts a
space before the NPU cycle count).
"""

from __future__ import annotations

import base64

from fvp_harness.run.scrape import find_errors, find_etdump, scrape
from fvp_harness.scenario.model import MetricSpec


def specs(*names: str) -> list[MetricSpec]:
    return [MetricSpec(name=name) for name in names]


def linux(level: str, where: str, message: str, stamp: str = "00:00:00.100000") -> str:
    """One line as et_pal_emit_log_message prints it on Linux
    (runtime/platform/default/posix.cpp)."""
    return f"{level} {stamp} executorch:{where}] {message}"


RUNNER = "executor_runner.cpp"
DELEGATE = "EthosUBackend_Cortex_A.cpp"

# A successful stock run with the cycle counter compiled in, 3 executions (current generation, since
# 2026-04-10).
STOCK_RUN = "\n".join([
    linux("I", f"{RUNNER}:473", "Model file /tmp/fvp-harness/ab12/resnet8.pte is loaded."),
    linux("I", f"{RUNNER}:483", "Using method forward"),
    linux("I", f"{RUNNER}:556", "Setting up CPU planned buffer 0, size 45056."),
    linux("I", f"{RUNNER}:624", "Model loaded in 1.532000 ms."),
    linux("I", f"{DELEGATE}:296", "Ethos-U Linux delegate cycle counter: 84294"),
    linux("I", f"{RUNNER}:779", "Iteration 1 of 3: 2.711000 ms"),
    linux("I", f"{DELEGATE}:296", "Ethos-U Linux delegate cycle counter: 84294"),
    # a kernel message lands in the middle of a word, and another splits the number of the next line
    linux("I", f"{RUNNER}:779",
          "Iteration 2 of 3: 2.6[   12.345678] random: crng init done\n43000 ms"),
    linux("I", f"{DELEGATE}:296", "Ethos-U Linux del[   12.400001] ttyAMA0: 1 input overrun(s)\n"
          "egate cycle counter: 84294"),
    linux("I", f"{RUNNER}:779", "Iteration 3 of 3: 2.650000 ms"),
    linux("I", f"{RUNNER}:789", "Model executed successfully 3 time(s) in 8.004000 ms."),
    linux("I", f"{RUNNER}:798", "1 outputs: "),
    "OutputX 0: tensor(sizes=[1, 10], [-79, -10, -128, 12, 0, 3, 9, 127, -64, 5])",
]) + "\n"


def test_a_stock_linux_run_gives_iteration_time_and_npu_cycles_and_no_cpu_time() -> None:
    result = scrape(STOCK_RUN,
                    specs("iteration_time", "npu_cycles", "run_time", "load_time", "cpu_time"))
    assert result.samples["iteration_time"] == [2.711, 2.643, 2.65], (
        "numbered from 1, kernel noise repaired")
    assert result.samples["npu_cycles"] == [84294.0] * 3
    assert result.samples["run_time"] == [8.004] and result.samples["load_time"] == [1.532]
    assert result.samples["cpu_time"] == [], "a stock runner prints no CPU-time line"
    assert result.executions == 3
    assert any("rejoined 2 runner line(s)" in warning for warning in result.warnings)


def test_the_older_log_generation_has_no_iteration_lines() -> None:
    """Before 2026-04-10 the runner printed ``Method loaded.`` and timed only the whole loop."""
    old = "\n".join([
        linux("I", f"{RUNNER}:172", "Model file model.pte is loaded."),
        linux("I", f"{RUNNER}:181", "Using method forward"),
        linux("I", f"{RUNNER}:243", "Method loaded."),
        linux("I", f"{DELEGATE}:296", "Ethos-U Linux delegate cycle counter: 42885"),
        linux("I", f"{DELEGATE}:296", "Ethos-U Linux delegate cycle counter: 42885"),
        linux("I", f"{RUNNER}:296", "Model executed successfully 2 time(s) in 3.900000 ms."),
    ]) + "\n"
    result = scrape(old, specs("iteration_time", "run_time", "load_time", "npu_cycles"))
    assert result.samples["iteration_time"] == [] and result.samples["load_time"] == []
    assert (result.samples["run_time"] == [3.9] and
            result.samples["npu_cycles"] == [42885.0, 42885.0])


def test_an_npu_timeout_is_explained_by_the_delegate_the_method_and_the_check() -> None:
    text = "\n".join([
        linux("E", f"{DELEGATE}:278", "Ethos-U inference timed out after 60000000000 ns"),
        linux("E", "method.cpp:1528", "CALL_DELEGATE execute failed at instruction 0: 0x2"),
        linux("F", f"{RUNNER}:771",
              "In function main(), assert failed (status == Error::Ok): Execution of method "
              "forward failed with status 0x2"),
        "Aborted",
    ]) + "\n"
    errors = find_errors(text)
    assert ([error.split("] ", 1)[1].split(" ")[0] for error in errors]
            == ["Ethos-U", "CALL_DELEGATE", "In"])


def test_a_missing_model_is_explained() -> None:
    text = "\n".join([
        linux("E", "file_data_loader.cpp:110",
              "Failed to open missing.pte: No such file or directory (2)"),
        linux("F", f"{RUNNER}:459",
              "In function main(), assert failed (file_loader.ok()): FileDataLoader::from() "
              "failed: 0x22"),
    ]) + "\n"
    assert [error.split("] ", 1)[1] for error in find_errors(text)] == [
        "Failed to open missing.pte: No such file or directory (2)",
        "In function main(), assert failed (file_loader.ok()): FileDataLoader::from() failed: 0x22",
    ]


def bare(where: str, function: str, message: str) -> str:
    """One line as arm_executor_runner.cpp's et_pal_emit_log_message prints it: ``%c
    [executorch:%s:%lu %s()] %s``."""
    return f"I [executorch:{where} {function}()] {message}"


PERF = "arm_perf_monitor.cpp"
ARM_RUNNER = "arm_executor_runner.cpp"

# The perf block of a Corstone-320 (Ethos-U85: 7 PMU event counters) run of 4 inferences, printed
# once by StopMeasurements() after the inference loop (arm_perf_monitor.cpp:150-232).
CORSTONE_320 = "\n".join([
    bare(f"{ARM_RUNNER}:1328", "run_model", "Starting running 4 inferences..."),
    bare(f"{PERF}:150", "StopMeasurements", "NPU Inferences : 4"),
    bare(f"{PERF}:151", "StopMeasurements", "NPU delegations: 4 (1.00 per inference)"),
    bare(f"{PERF}:156", "StopMeasurements", "Profiler report, CPU cycles per operator:"),
    bare(f"{PERF}:160", "StopMeasurements",
         "ethos-u : cycle_cnt : 402000 cycles (100500.00 per inference)"),
    bare(f"{PERF}:168", "StopMeasurements",
         "Operator(s) total: 402000 CPU cycles (100500.00 per inference)"),
    bare(f"{PERF}:175", "StopMeasurements",
         "Inference runtime: 480000 CPU cycles total (120000.00 per inference)"),
    bare(f"{PERF}:181", "StopMeasurements",
         "NOTE: CPU cycle values and ratio calculations require FPGA and identical CPU/NPU "
         "frequency"),
    bare(f"{PERF}:190", "StopMeasurements", "Inference CPU ratio: 29.07 %"),
    bare(f"{PERF}:194", "StopMeasurements", "Inference NPU ratio: 70.93 %"),
    bare(f"{PERF}:203", "StopMeasurements",
         "cpu_wait_for_npu_cntr : 340464 CPU cycles (85116.00 per inference)"),
    bare(f"{PERF}:209", "StopMeasurements", "Ethos-U PMU report:"),
    bare(f"{PERF}:210", "StopMeasurements",
         "ethosu_pmu_cycle_cntr :  340376 (85094.00 per inference)"),
    *(bare(f"{PERF}:217", "StopMeasurements",
           f"ethosu_pmu_cntr{i} : {100 * (i + 1)} ({25.0 * (i + 1):.2f} per "
           "inference)") for i in range(7)),
    bare(f"{PERF}:229", "StopMeasurements",
         "Ethos-U PMU Events:[ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED, "
         "ETHOSU_PMU_SRAM_WR_DATA_BEAT_WRITTEN, ETHOSU_PMU_EXT_RD_DATA_BEAT_RECEIVED, "
         "ETHOSU_PMU_EXT_WR_DATA_BEAT_WRITTEN, ETHOSU_PMU_NPU_IDLE, ETHOSU_PMU_MAC_ACTIVE, "
         "ETHOSU_PMU_WD_ACTIVE]"),
    bare(f"{ARM_RUNNER}:1352", "run_model", "4 inferences finished"),
    bare(f"{ARM_RUNNER}:1355", "run_model", "Model run: 1"),
    bare(f"{ARM_RUNNER}:1550", "main", "Program complete, exiting."),
    bare(f"{ARM_RUNNER}:1554", "main", "\x04"),
]) + "\n"


def test_the_bare_metal_perf_block_gives_one_per_inference_value_per_run() -> None:
    result = scrape(CORSTONE_320, specs("bm_npu_cycles", "bm_execute_cycles", "bm_cpu_cycles"))
    assert result.samples == {"bm_npu_cycles": [85094.0], "bm_execute_cycles": [100500.0],
                              "bm_cpu_cycles": [120000.0]}
    assert result.per == {"bm_npu_cycles": "run", "bm_execute_cycles": "run",
                          "bm_cpu_cycles": "run"}
    assert (result.units["bm_npu_cycles"] == "cycles" and
            result.units["bm_execute_cycles"] == "CPU cycles")
    assert result.executions == 4, "the inference count comes from 'NPU Inferences'"
    assert find_errors(CORSTONE_320) == []


def test_negative_garbage_from_old_percent_d_builds_is_flagged_not_averaged() -> None:
    old = "\n".join([
        "I executorch:arm_perf_monitor.cpp:160] ethos-u : cycle_cnt : -1294967296 cycles "
        "(-323741824.00 per inference)",
        "I executorch:arm_perf_monitor.cpp:210] ethosu_pmu_cycle_cntr : -4 (-1.00 per inference)",
    ]) + "\n"
    result = scrape(old, specs("bm_npu_cycles", "bm_execute_cycles"))
    assert result.samples == {"bm_npu_cycles": [], "bm_execute_cycles": []}
    assert set(result.flagged) == {"bm_npu_cycles", "bm_execute_cycles"}


def test_bare_metal_failures_upstream_scripts_look_for() -> None:
    """backends/arm/scripts/run_fvp.sh:238 and backends/arm/test/runner_utils.py grep for these."""
    text = "\n".join([
        bare(f"{ARM_RUNNER}:1328", "run_model", "Starting running 1 inferences..."),
        "Hard fault. irq=-13, r0=0x00000000",
        "E [executorch:arm_executor_runner.cpp:900 main()] Something failed",
        "[critical] stack overflow",
        "Assertion failed: (x), function f",
        "Info: Simulation is stopping. Reason: CPU time has been exceeded.",
    ]) + "\n"
    assert len(find_errors(text)) == 5


def test_an_etdump_block_becomes_files() -> None:
    """arm_executor_runner.cpp:1176-1213 prints the ETDump (and a debug buffer) as shell lines to
    replay."""
    etdump, debug = b"ED00\x00\x01binary", b"\xff\x00debug"
    text = "\n".join([
        bare(f"{ARM_RUNNER}:1170", "write_etdump", "[base64] buffer size: 20"),
        "#[RUN THIS]",
        "# Writing debug_buffer.bin [base64]",
        f'echo "{base64.b64encode(debug).decode()}" | base64 -d >debug_buffer.bin',
        "# Writing etdump.bin [base64]",
        f'echo "{base64.b64encode(etdump).decode()}" | base64 -d >etdump.bin',
        "# Generate cpu cycle table with:",
        "python3 -m devtools.inspector.inspector_cli --etdump_path etdump.bin --debug_buffer_path "
        "debug_buffer.bin --source_time_scale cycles --target_time_scale cycles",
        "#[END]",
    ]) + "\r\n"
    files, warnings = find_etdump(text)
    assert files == {"debug_buffer.bin": debug, "etdump.bin": etdump} and warnings == []
    cut, warnings = find_etdump(text.split("#[END]")[0])
    assert cut == {} and "never ends" in warnings[0]
    assert find_etdump(STOCK_RUN) == ({}, [])
