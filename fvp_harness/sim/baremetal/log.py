"""Where and how upstream's bare-metal ``arm_executor_runner`` logs: every ET_LOG site, the line
format, and the texts printed once per run (the perf block, the ETDump script).

Why apart from the program (``baremetal/runner.py``): these are facts read from upstream's sources
(pytorch/executorch cff6f4dd32: examples/arm/executor_runner/arm_executor_runner.cpp,
arm_perf_monitor.cpp, backends/arm/runtime/ EthosUBackend.cpp and EthosUBackend_Cortex_M.cpp,
runtime/executor/method.cpp and program.cpp), kept in one place so a new upstream commit means
editing one table, and the texts are pure functions the tests can hold against upstream's format
strings.

Line format (``et_pal_emit_log_message`` in arm_executor_runner.cpp): ``%c [executorch:%s:%lu %s()]
%s`` - level, short file name, the line of the ``ET_LOG(`` call (of the ``ET_CHECK_MSG(`` for a
failed check: GCC puts ``__builtin_LINE()`` of a multi-line call there), the function
(``__FUNCTION__``), the message cut to 255 bytes as runtime/platform/log.cpp does.

The perf block (``StopMeasurements``, arm_perf_monitor.cpp:141-235) is printed once after the
inference loop with totals and ``(%.2f per inference)``. ``% " PRIu64`` prints no space (the space
flag applies to signed conversions only, in newlib as in C); a run that completed no inference
prints ``nan`` or ``inf`` (C's double division by zero).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fvp_harness.sim.baremetal.cost import PMU_EVENTS
from fvp_harness.sim.workloads.executor_runner import EtLog

__all__ = ["SITES", "Measure", "etdump_script", "format_log", "perf_block"]

_R, _PM = "arm_executor_runner.cpp", "arm_perf_monitor.cpp"
SITES: dict[str, tuple[str, int, str]] = {
    "build_id": (_R, 1433, "main"),  # ours: where runtime_init() is called
    "sh_parameters": (_R, 1406, "main"),
    "sh_argc_compiled": (_R, 1409, "main"),  # and 1410, 1411
    "sh_argc": (_R, 1416, "main"),  # and 1417, 1420
    "sh_arg0": (_R, 1424, "main"),
    "sh_arg_pair": (_R, 1426, "main"),
    "sh_reading_input": (_R, 1461, "main"),
    "sh_input_failed": (_R, 1469, "main"),
    "sh_reading_pte": (_R, 1480, "main"),
    "sh_pte_failed": (_R, 1484, "main"),
    "sh_server_requires": (_R, 1495, "main"),
    "sh_server_invalid": (_R, 1503, "main"),
    "no_model": (_R, 1514, "main"),
    "missing_o": (_R, 1519, "main"),
    "pte_at": (_R, 1523, "main"),
    "model_run_main": (_R, 1543, "main"),
    "problem_check": (_R, 1548, "main"),
    "complete": (_R, 1550, "main"),
    "eot": (_R, 1554, "main"),
    "open_failed": (_R, 554, "read_binary_file"),
    "read_short": (_R, 576, "read_binary_file"),
    "pte_loaded": (_R, 677, "runner_init"),
    "program_check": (_R, 685, "runner_init"),
    "buffer_loaded": (_R, 693, "runner_init"),
    "running_method": (_R, 703, "runner_init"),
    "allocator_pool": (_R, 714, "runner_init"),
    "planned_buffer": (_R, 740, "runner_init"),
    "etdump_setup": (_R, 807, "runner_init"),
    "etdump_buffer": (_R, 827, "runner_init"),
    "method_loaded": (_R, 877, "runner_init"),
    "preparing": (_R, 879, "runner_init"),
    "prepare_check": (_R, 898, "runner_init"),
    "input_prepared": (_R, 950, "runner_init"),
    "wrong_inputs": (_R, 463, "prepare_input_tensors"),
    "size_mismatch": (_R, 496, "prepare_input_tensors"),
    "mem_program_addr": (_R, 958, "log_mem_status"),
    "mem_loaded_addr": (_R, 962, "log_mem_status"),
    "mem_program": (_R, 967, "log_mem_status"),
    "mem_loaded": (_R, 971, "log_mem_status"),
    "mem_input_files": (_R, 979, "log_mem_status"),
    "mem_method_used": (_R, 992, "log_mem_status"),
    "mem_method_planned": (_R, 1000, "log_mem_status"),
    "mem_method_loaded": (_R, 1021, "log_mem_status"),
    "mem_method_input": (_R, 1025, "log_mem_status"),
    "mem_method_executor": (_R, 1029, "log_mem_status"),
    "mem_temp": (_R, 1035, "log_mem_status"),
    "mem_etdump": (_R, 1044, "log_mem_status"),
    "outputs": (_R, 1059, "print_outputs"),
    "writing_output": (_R, 1104, "print_outputs"),
    "output_open_failed": (_R, 1107, "print_outputs"),
    "base64_size": (_R, 1171, "write_etdump"),
    "sh_etdump_debug": (_R, 1228, "write_etdump"),
    "sh_etdump": (_R, 1253, "write_etdump"),
    "starting": (_R, 1328, "run_model"),
    "execute_check": (_R, 1346, "run_model"),
    "finished": (_R, 1352, "run_model"),
    "model_run": (_R, 1355, "run_model"),
    "server_mode": (_R, 1365, "run_model_server"),
    "perf_inferences": (_PM, 150, "StopMeasurements"),
    "perf_delegations": (_PM, 151, "StopMeasurements"),
    "perf_profiler": (_PM, 156, "StopMeasurements"),
    "perf_cycle_cnt": (_PM, 160, "StopMeasurements"),
    "perf_operators": (_PM, 168, "StopMeasurements"),
    "perf_runtime": (_PM, 175, "StopMeasurements"),
    "perf_note": (_PM, 181, "StopMeasurements"),
    "perf_cpu_ratio_unknown": (_PM, 187, "StopMeasurements"),
    "perf_npu_ratio_unknown": (_PM, 188, "StopMeasurements"),
    "perf_cpu_ratio": (_PM, 190, "StopMeasurements"),
    "perf_npu_ratio": (_PM, 194, "StopMeasurements"),
    "perf_wait": (_PM, 203, "StopMeasurements"),
    "perf_pmu_report": (_PM, 209, "StopMeasurements"),
    "perf_pmu_cycles": (_PM, 210, "StopMeasurements"),
    "perf_pmu_counter": (_PM, 217, "StopMeasurements"),
    "perf_events_u55": (_PM, 225, "StopMeasurements"),
    "perf_events_u85": (_PM, 229, "StopMeasurements"),
    "delegate_data": ("EthosUBackend.cpp", 101, "init"),
    "reserve_failed": ("EthosUBackend_Cortex_M.cpp", 91, "platform_execute"),
    "call_delegate_failed": ("method.cpp", 1528, "execute_instruction"),
    "program_identifier": ("program.cpp", 168, "load"),
    "file_too_small": ("program.cpp", 114, "load"),
}


def format_log(level: str, site: tuple[str, int, str], message: str) -> str:
    """One ET_LOG line of the bare-metal PAL: ``%c [executorch:%s:%lu %s()] %s`` and a newline."""
    source, line, function = site
    return f"{level} [executorch:{source}:{line} {function}()] {EtLog.cut(message)}\n"


@dataclass
class Measure:
    """The perf monitor's accumulators (arm_perf_monitor.cpp): CPU cycles at StartMeasurements,
    delegations, CPU cycles inside EthosUBackend::execute and between the NPU callbacks, NPU cycles,
    PMU event counts."""

    start: int = 0
    delegations: int = 0
    backend: int = 0
    wait: int = 0
    npu: int = 0
    counters: list[int] = field(default_factory=list)


def _per(total: float, n: int) -> str:
    """``(double)total / n`` printed with ``%.2f`` (nan / inf for no inferences, as C's division
    gives)."""
    if n == 0:
        return "nan" if total == 0 else "inf"
    return f"{total / n:.2f}"


def perf_block(n: int, cycle_count: int, m: Measure, family: str) -> list[tuple[str, str]]:
    """``StopMeasurements(n)``'s lines as (``SITES`` key, message); ``cycle_count``: CPU cycles of
    the loop."""
    per = "per inference"
    lines = [
        ("perf_inferences", f"NPU Inferences : {n}"),
        ("perf_delegations", f"NPU delegations: {m.delegations} ({_per(m.delegations, n)} {per})"),
        ("perf_profiler", "Profiler report, CPU cycles per operator:"),
        ("perf_cycle_cnt",
         f"ethos-u : cycle_cnt : {m.backend} cycles ({_per(m.backend, n)} {per})"),
        ("perf_operators",
         f"Operator(s) total: {m.backend} CPU cycles ({_per(m.backend, n)} {per})"),
        ("perf_runtime",
         f"Inference runtime: {cycle_count} CPU cycles total ({_per(cycle_count, n)} {per})"),
        ("perf_note",
         "NOTE: CPU cycle values and ratio calculations require FPGA and identical CPU/NPU "
         "frequency"),
    ]
    if cycle_count == 0:
        lines += [("perf_cpu_ratio_unknown", "Inference CPU ratio: ?.?? %"),
                  ("perf_npu_ratio_unknown", "Inference NPU ratio: ?.?? %")]  # fmt: skip
    else:
        lines += [("perf_cpu_ratio",
                   f"Inference CPU ratio: {100.0 * (cycle_count - m.wait) / cycle_count:.2f} %"),
                  ("perf_npu_ratio",
                   f"Inference NPU ratio: {100.0 * m.wait / cycle_count:.2f} %")]  # fmt: skip
    lines += [
        ("perf_wait", f"cpu_wait_for_npu_cntr : {m.wait} CPU cycles ({_per(m.wait, n)} {per})"),
        ("perf_pmu_report", "Ethos-U PMU report:"),
        ("perf_pmu_cycles", f"ethosu_pmu_cycle_cntr : {m.npu} ({_per(m.npu, n)} {per})"),
    ]
    lines += [("perf_pmu_counter", f"ethosu_pmu_cntr{i} : {count} ({_per(count, n)} {per})")
              for i, count in enumerate(m.counters)]  # fmt: skip
    key = "perf_events_u55" if family == "ethos-u55" else "perf_events_u85"
    lines.append((key, f"Ethos-U PMU Events:[{', '.join(PMU_EVENTS[family])}]"))
    return lines


def etdump_script(etdump_base64: str, debug_base64: str) -> list[str]:
    """What ``write_etdump`` printf()s without semihosting (arm_executor_runner.cpp:1176-1213): a
    shell script between ``#[RUN THIS]`` and ``#[END]`` that run_fvp.sh cuts out and decodes."""
    lines = ["#[RUN THIS]\n"]
    if debug_base64:
        lines += ["# Writing debug_buffer.bin [base64]\n",
                  f'echo "{debug_base64}" | base64 -d >debug_buffer.bin\n']
    flag = "--debug_buffer_path debug_buffer.bin" if debug_base64 else ""
    return [
        *lines,
        "# Writing etdump.bin [base64]\n",
        f'echo "{etdump_base64}" | base64 -d >etdump.bin\n',
        "# Generate cpu cycle table with:\n",
        f"python3 -m devtools.inspector.inspector_cli --etdump_path etdump.bin {flag} "
        "--source_time_scale cycles --target_time_scale cycles\n",
        "#[END]\n",
    ]
