"""The emulated ExecuTorch ``executor_runner`` (Linux, Ethos-U delegate), in four parts:
``flags.py`` (gflags), ``log.py`` (where upstream logs each line, ET_LOG, printing outputs),
``faults.py`` (injected faults and noise) and ``run.py`` (``main()``, the delegate, the guest
program; its docstring has the whole story).

The names other modules use are importable from here.
"""

from fvp_harness.sim.workloads.executor_runner.faults import FAULT_KINDS, FaultSpec, parse_faults
from fvp_harness.sim.workloads.executor_runner.flags import (
    EXIT_ABORT,
    EXIT_SEGV,
    EXIT_USAGE,
    GENERATIONS,
    FlagSpec,
    RunnerFlags,
    UsageError,
    parse_flags,
    stock_flags,
)
from fvp_harness.sim.workloads.executor_runner.log import SITES, EtLog, format_outputs
from fvp_harness.sim.workloads.executor_runner.run import (
    Delegate,
    DelegateError,
    Run,
    RunnerAbort,
    executor_main,
    executor_runner,
    run_as_main,
)

__all__ = [
    "EXIT_ABORT",
    "EXIT_SEGV",
    "EXIT_USAGE",
    "FAULT_KINDS",
    "GENERATIONS",
    "SITES",
    "Delegate",
    "DelegateError",
    "EtLog",
    "FaultSpec",
    "FlagSpec",
    "Run",
    "RunnerAbort",
    "RunnerFlags",
    "UsageError",
    "executor_main",
    "executor_runner",
    "format_outputs",
    "parse_faults",
    "parse_flags",
    "run_as_main",
    "stock_flags",
]
