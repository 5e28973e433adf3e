"""Metric parsers: pure functions from console text to numbers.

(Being written. The names below are the contract other modules rely on: the scenario validator accepts these as
built-in metric names, and plan.py folds PARSERS_VERSION into every unit's content key.)
"""

from __future__ import annotations

__all__ = ["BUILTIN_METRICS", "PARSERS_VERSION"]

PARSERS_VERSION = 1
"""Bump when any built-in parser's behaviour changes: every unit's content key changes with it."""

BUILTIN_METRICS: dict[str, str] = {
    "cpu_time": "EthosUBackend::execute() CPU time per inference, ms (documented default shape; ms or us accepted)",
    "npu_cycles": "Ethos-U Linux delegate cycle counter per inference, cycles",
    "iteration_time": "executor_runner 'Iteration i of n: X ms' per inference, ms",
    "run_time": "executor_runner 'Model executed successfully N time(s) in X ms' per run, ms",
    "load_time": "executor_runner 'Model loaded in X ms' per run, ms",
    "bm_npu_cycles": "bare-metal perf monitor 'ethos-u : cycle_cnt' per inference, cycles",
    "bm_cpu_cycles": "bare-metal perf monitor 'Inference runtime' per inference, CPU cycles",
    "mlia_npu_active": "MLIA <metrics> block 'NPU ACTIVE' cycles per run",
}
