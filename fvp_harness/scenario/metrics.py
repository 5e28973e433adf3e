"""The metric names a scenario may use without a regex, and the rule every custom metric regex must follow.

They belong to the scenario language: ``validate`` checks a scenario's ``metrics:`` against them before anything
runs, and the JSON schema offers them to editors. ``run.scrape`` implements one parser per name (it asserts that
its parsers and this catalogue list the same names).
"""

from __future__ import annotations

import re

__all__ = ["BUILTIN_METRICS", "validate_regex"]

BUILTIN_METRICS: dict[str, str] = {
    "cpu_time": ("EthosUBackend::execute() CPU time per inference, ms (documented default shape; ms or us accepted)"),
    "npu_cycles": "Ethos-U Linux delegate cycle counter per inference, cycles",
    "iteration_time": "executor_runner 'Iteration i of n: X ms' per inference, ms",
    "run_time": "executor_runner 'Model executed successfully N time(s) in X ms' per run, ms",
    "load_time": "executor_runner 'Model loaded in X ms' per run, ms",
    "bm_npu_cycles": "bare-metal perf block 'ethosu_pmu_cycle_cntr' (NPU cycles), per-inference figure, once per run",
    "bm_execute_cycles": "bare-metal perf block 'ethos-u : cycle_cnt' (CPU cycles inside EthosUBackend::execute), "
    "per-inference figure, once per run",
    "bm_cpu_cycles": "bare-metal perf block 'Inference runtime' (CPU cycles of the inference loop), per-inference "
    "figure, once per run",
    "mlia_npu_active": "MLIA <metrics> block 'NPU ACTIVE' cycles per run",
}
"""Built-in metric name -> what it reads and in which unit (``docs/results-format.md`` has the line shapes)."""


def validate_regex(regex: str) -> str | None:
    """The problem with a scenario metric regex (does not compile, not exactly one group), or None if fine."""
    try:
        compiled = re.compile(regex, re.MULTILINE)
    except re.error as exc:
        return f"invalid regex {regex!r}: {exc}"
    if compiled.groups != 1:
        return f"regex {regex!r} must have exactly one capture group (the number), it has {compiled.groups}"
    return None
