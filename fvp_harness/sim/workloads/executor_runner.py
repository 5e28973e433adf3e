"""The emulated ExecuTorch ``executor_runner`` (Linux, Ethos-U "Direct Drive" delegate) that runner files start.

Why emulate the runner rather than stub its output: the harness must be tested against everything a real run
shows (flags, log prefix, per-inference lines, output files, exit codes, noise and failures), and every number
the runner prints comes from a model of the work: integer inference (``networks/inference.py``), the NPU cycle model
(``npu/cycles.py``) and the driver cost model (``npu/driver_cost.py``). Importing this module registers the program for
files that start with the runner magic (``modelfile.RUNNER_MAGIC``).

**Stock output.** By default the emulation prints what upstream prints, line for line, error for error, exit code
for exit code: pytorch/executorch ``examples/portable/executor_runner/executor_runner.cpp`` at cff6f4dd32 with the
Ethos-U Linux delegate (``backends/arm/runtime/EthosUBackend.cpp`` and ``EthosUBackend_Cortex_A.cpp``) and the
runtime files they log through. Every stderr line is ET_LOG's Linux shape, ``%c %02u:%02u:%02u.%06lu
executorch:%s:%zu] %s`` (runtime/platform/default/posix.cpp), with the short source file name and the line of the
``ET_LOG(`` call (for an ``ET_CHECK_MSG``, the line of ``ET_CHECK_MSG(``), the simulated time since the program
started (truncated to microseconds), and the message cut to 255 bytes and then back to a valid UTF-8 prefix
(runtime/platform/log.cpp). Only Info level and above is printed (Debug lines such as ``Inputs prepared.`` are
hidden, as in a default build). ``SITES`` holds every file:line used. A successful run of
``executor_runner --model_path=m.pte --num_executions=2`` prints (``*`` = not in every run)::

    I ... executor_runner.cpp:393] Loading inputs from input file(s).            * with --inputs
    I ... executor_runner.cpp:476] Model file m.pte is loaded.
    I ... executor_runner.cpp:486] Using method forward
    I ... executor_runner.cpp:556] Setting up CPU planned buffer 0, size 3088.
    I ... EthosUBackend.cpp:101] data:0xaaaac3d2a040
    I ... executor_runner.cpp:624] Model loaded in 0.421112 ms.
    I ... EthosUBackend_Cortex_A.cpp:296] Ethos-U Linux delegate cycle counter: 84294   * cycle counter on
    I ... executor_runner.cpp:779] Iteration 1 of 2: 2.724077 ms
    ... (the same two lines for iteration 2)
    I ... executor_runner.cpp:789] Model executed successfully 2 time(s) in 5.447744 ms.
    I ... executor_runner.cpp:798] 1 outputs:                                    (ends in a space)
    I ... executor_runner.cpp:809] Writing output to file: out-0.bin             * with --output_file
    stdout, --print_output summary (default; print_evalue.cpp, 100 edge items, 10 items per line when wrapping):
    OutputX 0: tensor(sizes=[1, 10], [-74, -23, -111, 58, 2, 17, -90, -37, 85, -63])
    stdout, --print_output all: one ``Output[0][j]: (char) v`` line per element; none: nothing

The planned buffer holds the program's input and output tensors (16-byte aligned each: our estimate of what
ExecuTorch's memory planning gives a fully delegated program); the Ethos-U scratch comes from the temp allocator
and is not printed. ``data:%p`` shows a plausible aarch64 heap address of the delegate's segment (``0xaaaa...``
below glibc's mmap threshold of 128 KiB, ``0xffff...`` above), different in every run as with ASLR.

**Lines that are ours, only when the runner build asks for them** (``fvp-harness sim runner``): ``--build-id TEXT``
(alias ``--id``) adds ``executor_runner build id: TEXT`` after flag parsing (as ``executor_runner.cpp:306``, the
line it would follow); ``--cpu-time-report`` adds ``EthosUBackend::execute() CPU time: %.3f ms`` per inference
after the cycle counter line (as ``EthosUBackend.cpp:70``, where ``EthosUBackend_execute_end()`` runs): the
instrumentation used to measure the driver-reuse change came from a pull request that was closed unmerged, its
exact text is not public, and this is the harness's documented default shape. Upstream prints neither line.
Lines of ours that explain something upstream cannot know (a real ``.pte``, flags the simulator does not emulate)
start with ``fvp-sim:`` and carry no ET_LOG prefix.

**Log generations** (``--log-generation``): ``current`` is cff6f4dd32 as above; ``old`` is executor_runner.cpp at
5e8a0df301, the last before 2026-04-10 (the Linux Ethos-U delegate exists since 2026-02-16): its own line numbers,
``Setting up planned buffer``, ``Method loaded.`` instead of ``Model loaded in``, no ``Iteration`` lines, the flag
set of the time (``--print_all_output``; no ``--print_output``, ``--method_name`` or ``--server_mode``), an input
file that cannot be opened ends with exit 1 (``Failed to open input file: %s\\n``, the stray newline included), and
an output file that cannot be opened crashes (``fwrite`` on NULL).

**Command line**: gflags 2.2 as upstream links it (``ParseCommandLineFlags(&argc, &argv, true)``): ``--flag=value``,
``--flag value``, ``-flag``; booleans ``--flag``, ``--noflag``, ``--flag=true|false|yes|no|1|0|t|f|y|n``; ``--``
ends the flags; positional arguments are left over and rejected by the runner (``Extra commandline args: ...``,
exit 1). Mistakes are reported the way gflags reports them (src/gflags.cc: ``ERROR: unknown command line flag
'X'``, ``ERROR: illegal value 'V' specified for T flag 'X'``, ``ERROR: flag '--X' is missing its argument; flag
description: ...``, ``ERROR: boolean value (noX) specified for T command line flag``; all errors together, sorted
by flag name, then exit 1). ``--help`` prints gflags' usage (executor_runner.cpp's flags only) and exits 1,
``--version`` prints the program name and exits 0; ``--undefok`` works; ``--flagfile``, ``--fromenv``,
``--tryfromenv`` and ``--server_mode`` are refused with an ``fvp-sim:`` line and exit 1 (not emulated);
``--data_path`` is emulated up to loading the file (a missing one fails as upstream does; an existing one is not
emulated); ``--cpu_threads`` is accepted and changes nothing (no threadpool in this build).

**Errors** (each as upstream, see ``SITES``): a missing model file: ``E file_data_loader.cpp:110] Failed to open
%s: %s (%d)`` then ``F executor_runner.cpp:461] In function main(), assert failed (file_loader.ok()):
FileDataLoader::from() failed: 0x22``, ``Aborted``, exit 134; a file that is not a program: ``E program.cpp:168]
Program identifier 'XXXX' != expected 'ET12'`` (or the loader's short-file error) then ``E
executor_runner.cpp:473] Failed to parse model file %s``, exit 1; a real ``.pte`` is a program upstream would run:
the simulator adds an ``fvp-sim:`` line saying it runs only its own model files and then fails the same way; a
truncated simulator model file gives program.cpp's ``File size is too small...`` line. An NPU timeout (fault
``timeout=N``) takes the delegate's 60 s (``kDefaultEthosUTimeoutNs``) of simulated time, then ``Ethos-U inference
timed out after 60000000000 ns``, ``E method.cpp:1528] CALL_DELEGATE execute failed at instruction 0: 0x2`` and
the Fatal ``Execution of method forward failed with status 0x2``, exit 134. An NPU configuration mismatch is a
driver exception (``Ethos-U Linux driver invocation failed: <text>``; the driver's own text is not public, ours
names both configurations): in the per-inference build at the first execute (then as a timeout), in the reuse
build at method load (``Init failed for backend EthosUBackend: 0x2`` and the Fatal ``Loading of method forward
failed with status 0x2``; the reuse build is not upstream). Wrong input files fail in prepare_input_tensors
(inputs.cpp) with ``Could not prepare inputs: 0x12``; an unknown ``--method_name`` with program.cpp's ``No method
named`` and ``Failed to get method_meta for X: 0x12``. ``Aborted`` / ``Segmentation fault`` are what the shell
shows for SIGABRT / SIGSEGV.

Times: ``Iteration`` is the simulated time ``method->execute()`` took, as upstream measures it: the driver cost
model for the artifact's driver mode (with noise), the NPU busy time (cycles at 1 GHz) and the runner's own
overhead; on the per-inference build it includes the driver set-up the driver-reuse change removes. ``Model loaded
in`` is Program::load (reading and parsing the file) plus load_method (the reuse build creates the driver objects
there). Each step calls ``ctx.advance`` (so the guest clock, ``--stat`` and the ``speed`` knob follow), and
``ctx.check_interrupt`` runs between iterations. Exit statuses: 0 success; 1 bad command line, bad knob, a file
that does not parse; 134 (after ``Aborted``) a failed ET_CHECK; 139 (after ``Segmentation fault``) the injected
crash; 130 when interrupted (the shell reports it).

Knobs (``FVP_SIM_<NAME>`` environment / ``--sim name=value``), all optional:

=====================  ========  ===========================================================================
runner_seed            0         seed of the noise (also ``seed``); each invocation also mixes in a
                                 per-process counter and the build, so repetitions differ but a session
                                 replays identically
runner_jitter          0.01      relative standard deviation of the per-inference CPU time (Gaussian)
runner_outlier_rate    0.002     probability per inference of an interrupt outlier (adds 0.2-1.5 ms)
runner_drift           0         relative slowdown per simulated second since the model started (e.g.
                                 0.02), so blocked and interleaved run orders give visibly different results
runner_fault           (none)    fault spec, overrides the artifact's ``--fault``: comma-separated
                                 ``crash=N`` (segfault after N iterations, exit 139), ``hang=N`` (stop
                                 responding after N iterations until interrupted), ``truncate=N`` (output
                                 stops mid-line after N iterations, exit 0, no output files), ``timeout=N``
                                 (the (N+1)th inference times out in the driver after 60 s, exit 134)
=====================  ========  ===========================================================================
"""

from __future__ import annotations

import errno as errno_codes
import itertools
import os
import re
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from fvp_harness.sim.guest import programs
from fvp_harness.sim.networks.inference import run_model
from fvp_harness.sim.networks.modelfile import (
    CompiledModel,
    ModelFileError,
    RunnerArtifact,
    decode_model,
    decode_runner,
    is_model_file,
    is_runner,
    model_file_size,
)
from fvp_harness.sim.npu.cycles import NPU_CLOCK_HZ, model_cycles
from fvp_harness.sim.npu.driver_cost import DEFAULT as DRIVER_COSTS
from fvp_harness.sim.npu.driver_cost import DriverSizes

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

MAX_LOG_MESSAGE = 255
"""vlogf's buffer is 256 bytes: at most 255 of the message (runtime/platform/log.cpp)."""
RUNNER_OVERHEAD_MS = 0.015
"""Per execution outside the delegate: method dispatch, input/output tensor bookkeeping."""
LOAD_BASE_MS = 0.35
LOAD_US_PER_KIB = 0.9
"""Model load: program and method setup, plus reading and verifying the model file."""
NPU_TIMEOUT_NS = 60_000_000_000
"""``kDefaultEthosUTimeoutNs`` (EthosUBackend_Cortex_A.cpp:41)."""
EXTENDED_HEAD_BYTES = 64
"""``ExtendedHeader::kNumHeadBytes``: Program::load reads this much first (schema/extended_header.h)."""
PROGRAM_IDENTIFIER = "ET12"
SUMMARY_EDGE_ITEMS = 100
"""``evalue_edge_items(100)`` in executor_runner.cpp's summary printing."""
ITEMS_PER_LINE = 10
"""``kItemsPerLine`` of print_evalue.cpp."""
PLANNED_ALIGNMENT = 16
MMAP_THRESHOLD = 128 * 1024
FAULT_KINDS = ("crash", "hang", "truncate", "timeout")
EXIT_USAGE, EXIT_ABORT, EXIT_SEGV = 1, 134, 139
ACCESS_FAILED, INVALID_STATE, INVALID_ARGUMENT = 0x22, 0x2, 0x12
"""runtime/core/error.h: Error::AccessFailed, Error::InvalidState, Error::InvalidArgument."""
GENERATIONS = ("current", "old")

_invocations = itertools.count()

# --- where upstream logs each line ------------------------------------------------------------------------------

_R, _FDL, _PROG, _METH, _INP = (
    "executor_runner.cpp", "file_data_loader.cpp", "program.cpp", "method.cpp", "inputs.cpp",
)  # fmt: skip
_ETHOS, _CORTEX_A, _VGF = "EthosUBackend.cpp", "EthosUBackend_Cortex_A.cpp", "VGFBackend.cpp"

_COMMON: dict[str, tuple[str, int]] = {
    # unchanged between the two generations
    "input_size_mismatch": (_INP, 178),  # "input size (%zu) and tensor size (%zu) mismatch!"
    "input_count_mismatch": (_INP, 37),  # "Wrong number of inputs allocated compared to method  %zu ? %zu"
    "npu_timed_out": (_CORTEX_A, 278),  # "Ethos-U inference timed out after %lld ns"
    "cycle_counter": (_CORTEX_A, 296),  # "Ethos-U Linux delegate cycle counter: %llu"
    "driver_failed": (_CORTEX_A, 318),  # "Ethos-U Linux driver invocation failed: %s"
    "vgf_available": (_VGF, 448),  # "Checking VGFBackend is available" (cff6f4dd32)
    "vgf_extensions": (_VGF, 84),  # "VKML Extensions loaded"
    "vgf_init": (_VGF, 460),  # "Entered VGF init"
    "vgf_execute": (_VGF, 556),  # "VGF execute: args=%zu IOs=%zu inputs=%zu outputs=%zu"
    "vgf_copy_input": (_VGF, 629),  # "Copy input IO[%d] -> args[%zu]"
    "vgf_copy_output": (_VGF, 742),  # "Copy output IO[%d] -> args[%zu]"
}

SITES: dict[str, dict[str, tuple[str, int]]] = {
    # pytorch/executorch cff6f4dd32 (2026-08-22)
    "current": {
        **_COMMON,
        "build_id": (_R, 306),  # ours: inserted after gflags::ParseCommandLineFlags
        "extra_args": (_R, 312),
        "print_output_mode": (_R, 324),
        "loading_inputs": (_R, 393),
        "input_open_failed": (_R, 156),
        "load_inputs_check": (_R, 405),
        "loading_ptd": (_R, 416),
        "ptd_loader_check": (_R, 419),
        "ptd_loaded": (_R, 425),
        "loader_check": (_R, 461),
        "parse_failed": (_R, 473),
        "model_loaded": (_R, 476),
        "using_method": (_R, 486),
        "method_meta_check": (_R, 490),
        "planned_buffer": (_R, 556),
        "load_method_check": (_R, 617),
        "model_loaded_in": (_R, 624),
        "prepare_inputs_check": (_R, 751),
        "execute_check": (_R, 773),
        "iteration": (_R, 779),
        "executed": (_R, 789),
        "outputs": (_R, 798),
        "writing_output": (_R, 809),
        "output_open_check": (_R, 811),
        "open_failed": (_FDL, 110),
        "load_out_of_range": (_FDL, 155),
        "read_failed": (_FDL, 258),
        "no_method": (_PROG, 67),
        "file_too_small": (_PROG, 114),
        "program_identifier": (_PROG, 168),
        "init_failed": (_METH, 128),
        "call_delegate_failed": (_METH, 1528),
        "delegate_data": (_ETHOS, 101),
        "cpu_time": (_ETHOS, 70),  # ours: the EthosUBackend_execute_end() call site
    },
    # pytorch/executorch 5e8a0df301 (2026-04-10, before "Model loaded in" and "Iteration")
    "old": {
        **_COMMON,
        "build_id": (_R, 187),  # ours
        "extra_args": (_R, 193),
        "loading_inputs": (_R, 254),
        "input_open_failed": (_R, 270),
        "loading_ptd": (_R, 293),
        "ptd_loader_check": (_R, 296),
        "ptd_loaded": (_R, 302),
        "loader_check": (_R, 338),
        "parse_failed": (_R, 349),
        "model_loaded": (_R, 352),
        "using_method": (_R, 361),
        "method_meta_check": (_R, 365),
        "planned_buffer": (_R, 412),
        "load_method_check": (_R, 435),
        "method_loaded": (_R, 440),
        "prepare_inputs_check": (_R, 471),
        "execute_check": (_R, 485),
        "executed": (_R, 493),
        "outputs": (_R, 502),
        "writing_output": (_R, 513),
        "open_failed": (_FDL, 104),
        "load_out_of_range": (_FDL, 149),
        "read_failed": (_FDL, 252),
        "no_method": (_PROG, 58),
        "file_too_small": (_PROG, 105),
        "program_identifier": (_PROG, 159),
        "init_failed": (_METH, 110),
        "call_delegate_failed": (_METH, 1467),
        "delegate_data": (_ETHOS, 81),
        "cpu_time": (_ETHOS, 62),  # ours
    },
}
"""(file, line) of every line the emulation prints, per log generation (``ours`` marks lines upstream lacks)."""


class UsageError(ValueError):
    """The program ends before running anything: bad command line, bad knob, bad fault spec, ``--help``.

    ``str(self)`` goes to stderr, ``stdout`` to stdout, and ``status`` is the exit status (1 unless said)."""

    def __init__(self, message: str, status: int = EXIT_USAGE, stdout: str = "") -> None:
        super().__init__(message)
        self.status, self.stdout = status, stdout


class RunnerAbort(Exception):
    """An ET_CHECK_MSG failed in ``main()``: a Fatal line, then abort (exit 134; see ``run_as_main``)."""

    def __init__(self, source: str, line: int, condition: str, message: str) -> None:
        super().__init__(message)
        self.source, self.line, self.condition, self.message = source, line, condition, message


class DelegateError(Exception):
    """A backend's init() or execute() returned an error (``code``: an ``executorch::runtime::Error``)."""

    def __init__(self, code: int) -> None:
        super().__init__(f"0x{code:x}")
        self.code = code


class _Exit(Exception):
    """The program returns from main() with ``status`` (after its last line)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _OutputTruncated(Exception):
    """The injected ``truncate`` fault cut a line: the program stops there, status 0."""


# --- gflags -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FlagSpec:
    """One ``DEFINE_<type>(name, default, help)``: ``kind`` is gflags' type name."""

    name: str
    kind: str  # "string" | "bool" | "int32" | "uint32"
    default: str | bool | int
    help: str


_FLAGS_FILE = "examples/portable/executor_runner/executor_runner.cpp"
_MODEL_PATH = FlagSpec("model_path", "string", "model.pte", "Model serialized in flatbuffer format.")
_DATA_PATH = FlagSpec("data_path", "string", "", "Path to data file (.ptd).")
_INPUTS = FlagSpec("inputs", "string", "", "Comma-separated list of input files")
_OUTPUT_FILE = FlagSpec(
    "output_file", "string", "", "Base name of output file. If not empty output will be written to the file(s)."
)
_NUM_EXECUTIONS = FlagSpec("num_executions", "uint32", 1, "Number of times to run the model.")
_CPU_THREADS = FlagSpec(
    "cpu_threads",
    "int32",
    -1,
    "Number of CPU threads for inference. Defaults to -1, which implies we'll use a heuristic to derive the # of "
    "performant cores for a specific device.",
)
_STOCK_FLAGS: dict[str, tuple[FlagSpec, ...]] = {
    # DEFINE_* of executor_runner.cpp in a build without ET_EVENT_TRACER_ENABLED, bundled IO or VGF input dumps
    "current": (
        _MODEL_PATH,
        _DATA_PATH,
        _INPUTS,
        _OUTPUT_FILE,
        FlagSpec(
            "server_mode",
            "bool",
            False,
            "Run continuously, executing one inference per line read from stdin. In server mode, input files "
            "specified by --inputs are re-read before each execution and outputs are overwritten under "
            "--output_file.",
        ),
        FlagSpec(
            "print_output",
            "string",
            "summary",
            "Output printing mode: 'none' to suppress, 'summary' for first/last 100 elements, 'all' for "
            "everything.",
        ),
        _NUM_EXECUTIONS,
        FlagSpec(
            "method_name",
            "string",
            "",
            "Name of the method to run. If empty, uses the first method in the program.",
        ),
        _CPU_THREADS,
    ),
    "old": (
        _MODEL_PATH,
        _DATA_PATH,
        _INPUTS,
        _OUTPUT_FILE,
        FlagSpec(
            "print_all_output",
            "bool",
            False,
            "Prints all output. By default only first and last 100 elements are printed.",
        ),
        _NUM_EXECUTIONS,
        _CPU_THREADS,
    ),
}

# gflags' own flags (src/gflags.cc, gflags_reporting.cc, gflags_completions.cc)
_GFLAGS_OWN = {
    **{name: FlagSpec(name, "string", "", "") for name in ("flagfile", "fromenv", "tryfromenv", "undefok")},
    **{name: FlagSpec(name, "string", "", "") for name in ("helpon", "helpmatch", "tab_completion_word")},
    **{name: FlagSpec(name, "bool", False, "") for name in ("help", "helpfull", "helpshort", "helppackage")},
    **{name: FlagSpec(name, "bool", False, "") for name in ("helpxml", "version")},
    "tab_completion_columns": FlagSpec("tab_completion_columns", "int32", 80, ""),
}
_TRUE, _FALSE = ("1", "t", "true", "y", "yes"), ("0", "f", "false", "n", "no")
_INT_TEXT = {10: re.compile(r"\s*[+-]?[0-9]+"), 16: re.compile(r"\s*[+-]?(?:0[xX])?[0-9a-fA-F]+")}


def stock_flags(generation: str = "current") -> tuple[FlagSpec, ...]:
    """The flags an executor_runner of ``generation`` defines."""
    return _STOCK_FLAGS[generation]


def _parse_value(spec: FlagSpec, text: str) -> str | bool | int | None:
    """FlagValue::ParseFrom: the value, or None when gflags calls it illegal."""
    if spec.kind == "string":
        return text
    if spec.kind == "bool":
        word = text.lower()
        return True if word in _TRUE else False if word in _FALSE else None
    if not text:
        return None
    base = 16 if text.startswith(("0x", "0X")) else 10  # decided before uint32 skips leading spaces
    if spec.kind == "uint32":
        text = text.lstrip(" ")
        if text.startswith("-"):
            return None
    if not _INT_TEXT[base].fullmatch(text):
        return None
    number = int(text.strip(), base)  # int() takes the sign and the 0x prefix as strtoll does
    low, high = (0, 2**32 - 1) if spec.kind == "uint32" else (-(2**31), 2**31 - 1)
    return number if low <= number <= high else None


def _describe_flag(spec: FlagSpec, width: int = 80) -> str:
    """gflags' DescribeOneFlag: ``    -name (help) type: T default: V``, wrapped before column 80."""
    text, out, column = f"    -{spec.name} ({spec.help})", "", 0
    while True:
        if column + len(text) < width:
            out, column = out + text, column + len(text)
            break
        cut = width - column - 1
        while cut > 0 and not text[cut].isspace():
            cut -= 1
        if cut <= 0:
            out, column = out + text, width
            break
        out, column = out + text[:cut], column + cut
        text = text[cut:].lstrip()
        if not text:
            break
        out, column = out + "\n      ", 6
    default = spec.default
    shown = f'"{default}"' if spec.kind == "string" else str(default).lower() if spec.kind == "bool" else str(default)
    for part in (f"type: {spec.kind}", f"default: {shown}"):
        if column + 1 + len(part) >= width:
            out, column = out + "\n      ", 6
        else:
            out, column = out + " ", column + 1
        out, column = out + part, column + len(part)
    return out + "\n"


def _usage(argv0: str, specs: Sequence[FlagSpec]) -> str:
    """What ``--help`` prints (stdout): the program's own flags; gflags' flags are left out (documented)."""
    text = f"{os.path.basename(argv0)}: Warning: SetUsageMessage() never called\n\n  Flags from {_FLAGS_FILE}:\n"
    return text + "".join(_describe_flag(spec) for spec in sorted(specs, key=lambda s: s.name))


@dataclass
class _Parsed:
    values: dict[str, str | bool | int]
    explicit: set[str]
    extras: list[str]


def _parse_gflags(argv0: str, args: Sequence[str], specs: Sequence[FlagSpec]) -> _Parsed:
    """``gflags::ParseCommandLineFlags(&argc, &argv, true)`` as gflags 2.2 does it (src/gflags.cc:
    ParseNewCommandLineFlags, SplitArgumentLocked, TryParseLocked, ReportErrors; gflags_reporting.cc:
    HandleCommandLineHelpFlags); written from its documented behaviour and its messages."""
    table = {**_GFLAGS_OWN, **{spec.name: spec for spec in specs}}

    def find(name: str) -> FlagSpec | None:
        return table.get(name) or table.get(name.replace("-", "_"))

    values: dict[str, str | bool | int] = {}
    errors: dict[str, str] = {}
    undefined: set[str] = set()
    positional: list[str] = []
    after_dashes: list[str] = []
    items = list(args)
    i = 0
    while i < len(items):
        arg = items[i]
        i += 1
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)  # permuted to the end: left for the program
            continue
        body = arg[2:] if arg.startswith("--") else arg[1:]
        if not body:  # "--": the rest are arguments
            after_dashes = items[i:]
            break
        key, eq, text = body.partition("=")
        value: str | None = text if eq else None
        spec = find(key)
        if spec is None:
            plain = find(key[2:]) if key.startswith("no") else None
            if plain is None:
                errors[key] = f"ERROR: unknown command line flag '{key}'\n"
                undefined.add(key)
                continue
            if plain.kind != "bool":
                errors[key] = f"ERROR: boolean value ({key}) specified for {plain.kind} command line flag\n"
                undefined.add(key)
                continue
            spec, value = plain, "0"
        if value is None:
            if spec.kind == "bool":
                value = "1"
            elif i >= len(items):
                errors[key] = f"ERROR: flag '{arg}' is missing its argument; flag description: {spec.help}\n"
                break
            else:
                value = items[i]
                i += 1
        parsed = _parse_value(spec, value)
        if parsed is None:
            errors[spec.name] = f"ERROR: illegal value '{value}' specified for {spec.kind} flag '{spec.name}'\n"
            continue
        values[spec.name] = parsed
    # reporting flags first (they exit even when there are errors), then --undefok, then the errors
    if any(values.get(name) for name in ("help", "helpfull", "helpshort", "helppackage", "helpxml", "helpon",
                                         "helpmatch")):  # fmt: skip
        raise UsageError("", status=1, stdout=_usage(argv0, specs))
    if values.get("version"):
        raise UsageError("", status=0, stdout=f"{os.path.basename(argv0)}\n")
    for name in str(values.get("undefok", "")).split(","):
        for key in (name, f"no{name}"):
            if name and key in undefined:
                errors.pop(key, None)
    if errors:
        raise UsageError("".join(errors[key] for key in sorted(errors)))
    for name in ("flagfile", "fromenv", "tryfromenv"):
        if values.get(name):
            raise UsageError(f"fvp-sim: --{name} is not emulated by the simulator; give the flags on the command line")
    explicit = {name for name in values if name not in _GFLAGS_OWN}
    return _Parsed(values, explicit, after_dashes + positional)


@dataclass
class RunnerFlags:
    """The executor_runner's flags after gflags parsing (``extras``: what gflags left in argv)."""

    model_path: str = "model.pte"
    num_executions: int = 1
    inputs: list[str] = field(default_factory=list)
    inputs_text: str = ""
    output_file: str = ""
    print_output: str = "summary"
    method_name: str = ""
    data_path: str = ""
    server_mode: bool = False
    cpu_threads: int = -1
    extras: list[str] = field(default_factory=list)
    explicit: set[str] = field(default_factory=set)
    other: dict[str, str | bool | int] = field(default_factory=dict)


def _split_inputs(text: str) -> list[str]:
    """``std::getline(stream, path, ',')`` over ``--inputs``: a trailing comma adds no empty path."""
    parts = text.split(",")
    return parts[:-1] if parts and parts[-1] == "" else parts


def parse_flags(
    args: Sequence[str],
    generation: str = "current",
    extra_specs: Sequence[FlagSpec] = (),
    argv0: str = "executor_runner",
) -> RunnerFlags:
    """gflags parsing of the arguments after argv[0] for a runner of ``generation``; ``extra_specs`` are flags a
    special build adds. UsageError (with gflags' wording and status) on mistakes and reporting flags."""
    parsed = _parse_gflags(argv0, args, (*stock_flags(generation), *extra_specs))
    v = parsed.values
    flags = RunnerFlags(extras=parsed.extras, explicit=parsed.explicit)
    flags.model_path = str(v.get("model_path", flags.model_path))
    flags.num_executions = int(v.get("num_executions", 1))
    flags.inputs_text = str(v.get("inputs", ""))
    flags.inputs = _split_inputs(flags.inputs_text) if flags.inputs_text else []
    flags.output_file = str(v.get("output_file", ""))
    flags.data_path = str(v.get("data_path", ""))
    flags.cpu_threads = int(v.get("cpu_threads", -1))
    if generation == "old":
        flags.print_output = "all" if v.get("print_all_output") else "summary"
    else:
        flags.print_output = str(v.get("print_output", "summary"))
        flags.method_name = str(v.get("method_name", ""))
        flags.server_mode = bool(v.get("server_mode", False))
    known = {spec.name for spec in stock_flags(generation)} | set(_GFLAGS_OWN)
    flags.other = {name: value for name, value in v.items() if name not in known}
    return flags


# --- faults and noise -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FaultSpec:
    """Injected faults: each is the number of completed iterations after which it strikes (None: off)."""

    crash: int | None = None
    hang: int | None = None
    truncate: int | None = None
    timeout: int | None = None

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.crash, self.hang, self.truncate, self.timeout))


def parse_faults(spec: str) -> FaultSpec:
    """``"crash=3,hang=0"`` -> FaultSpec; a bare kind means after 0 iterations. UsageError on unknown
    kinds."""
    found: dict[str, int] = {}
    for item in (part.strip() for part in spec.split(",")):
        if not item or item.lower() in ("none", "off"):
            continue
        kind, _, count = item.partition("=")
        kind = kind.strip().lower().removesuffix("_after")
        if kind not in FAULT_KINDS:
            raise UsageError(f"unknown runner fault {kind!r} (known: {', '.join(FAULT_KINDS)}; e.g. crash=3)")
        try:
            found[kind] = int(count) if count.strip() else 0
        except ValueError:
            raise UsageError(f"runner fault {item!r}: the count must be an integer") from None
        if found[kind] < 0:
            raise UsageError(f"runner fault {item!r}: the count must not be negative")
    return FaultSpec(**found)


@dataclass(frozen=True)
class _Noise:
    seed: int
    jitter: float
    outlier_rate: float
    drift: float


def _knob_float(knobs: Mapping[str, str], name: str, default: float, high: float) -> float:
    text = knobs.get(name)
    if text is None or text == "":
        return default
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"knob {name}: {text!r} is not a number") from None
    if not 0.0 <= value <= high:
        raise UsageError(f"knob {name}: {value} is outside 0..{high}")
    return value


def _noise_from_knobs(knobs: Mapping[str, str]) -> _Noise:
    seed_text = knobs.get("runner_seed") or knobs.get("seed") or "0"
    try:
        seed = int(seed_text, 0)
    except ValueError:
        seed = zlib.crc32(seed_text.encode())
    return _Noise(
        seed & 0xFFFFFFFF,
        _knob_float(knobs, "runner_jitter", 0.01, 0.5),
        _knob_float(knobs, "runner_outlier_rate", 0.002, 1.0),
        _knob_float(knobs, "runner_drift", 0.0, 10.0),
    )


def _slowdown(knobs: Mapping[str, str], model: str, driver: str) -> float:
    """The ``runner_slowdown`` knob's factor on the driver's CPU time: comma-separated ``[DRIVER:][MODEL=]FACTOR``
    items, ``DRIVER`` a build's driver mode (``reuse`` or ``per-inference``), ``MODEL`` an architecture name; the
    most specific item that matches wins, 1 when none does. ``reuse:resnet8=1.2`` makes the reuse build 20 % slower
    on resnet8 only: how a test makes one build slower for one model (a regression to find in a history of runs)
    without a second runner build; ``1.1`` slows every build and model (a platform that moved)."""
    text = (knobs.get("runner_slowdown") or "").strip()
    if not text:
        return 1.0
    factors: dict[tuple[str, str], str] = {}
    for item in text.split(","):
        scope, colon, rest = item.partition(":")
        mode, rest = (scope.strip(), rest) if colon else ("*", scope)
        name, sep, value = rest.partition("=")
        factors[(mode, name.strip() if sep else "*")] = (value if sep else name).strip()
    chosen = next((factors[key] for key in ((driver, model), ("*", model), (driver, "*"), ("*", "*"))
                   if key in factors), None)
    if chosen is None:
        return 1.0
    try:
        factor = float(chosen)
    except ValueError:
        raise UsageError(f"knob runner_slowdown: {chosen!r} is not a number (e.g. 1.2, resnet8=1.2 or "
                         "reuse:resnet8=1.2)") from None
    if not 0.1 <= factor <= 100.0:
        raise UsageError(f"knob runner_slowdown: {factor} is outside 0.1..100")
    return factor


# --- ET_LOG -----------------------------------------------------------------------------------------------------


def _valid_utf8_prefix(data: bytes) -> int:
    """log.cpp's rule: look only at the last character; cut it off when it is incomplete or malformed."""
    i = len(data)
    while i > 0 and data[i - 1] & 0xC0 == 0x80:
        i -= 1
    if i == 0:
        return 0
    lead = data[i - 1]
    need = 0
    for mask, value, length in ((0x80, 0x00, 1), (0xE0, 0xC0, 2), (0xF0, 0xE0, 3), (0xF8, 0xF0, 4)):
        if lead & mask == value:
            need = length
            break
    if not need:
        return i - 1
    return len(data) if len(data) - (i - 1) == need else i - 1


class EtLog:
    """ET_LOG on Linux: ``%c %02u:%02u:%02u.%06lu executorch:%s:%zu] %s`` to stderr, time since program start
    (truncated to microseconds); the message cut to 255 bytes and back to a valid UTF-8 prefix as vlogf does.
    Shared by every emulated runner."""

    def __init__(self, ctx: programs.GuestContext) -> None:
        self.ctx = ctx
        self.start = ctx.now()
        self.truncate_next = False

    def prefix(self, level: str, source: str, line: int) -> str:
        micros = max(0, round((self.ctx.now() - self.start) * 1e9)) // 1000  # ns ticks, then "timestamp /= 1000"
        seconds, us = divmod(micros, 1_000_000)
        minutes, ss = divmod(seconds, 60)
        hh, mm = divmod(minutes, 60)
        return f"{level} {hh:02d}:{mm:02d}:{ss:02d}.{us:06d} executorch:{source}:{line}] "

    @staticmethod
    def cut(message: str) -> str:
        data = message.encode("utf-8", "surrogateescape")[:MAX_LOG_MESSAGE]
        return data[: _valid_utf8_prefix(data)].decode("utf-8", "surrogateescape")

    def line(self, level: str, source: str, line: int, message: str) -> str:
        return self.prefix(level, source, line) + self.cut(message) + "\n"

    def __call__(self, level: str, source: str, line: int, message: str) -> None:
        text = self.line(level, source, line, message)
        if self.truncate_next:
            self.ctx.stderr(text[: len(text) // 2])
            raise _OutputTruncated
        self.ctx.stderr(text)

    def at(self, level: str, site: tuple[str, int], message: str) -> None:
        """Log ``message`` at an upstream location (``SITES``)."""
        self(level, site[0], site[1], message)


def _note(ctx: programs.GuestContext, message: str) -> None:
    """A line of ours that upstream cannot print (no ET_LOG prefix, so no parser takes it for upstream's)."""
    ctx.stderr(f"fvp-sim: {message}\n")


# --- printing outputs (extension/evalue_util/print_evalue.cpp, executor_runner.cpp) ----------------------------


def _scalar_list(items: Sequence[str], edge: int | None) -> str:
    """print_scalar_list: ``edge`` first and last items (None: all), wrapped 10 per line when more than 10 are
    shown, with a trailing ``, `` on every wrapped item."""
    n = len(items)
    wrapping = (n if edge is None else min(n, 2 * edge)) > ITEMS_PER_LINE
    parts = ["["]
    printed = 0
    i = 0
    while i < n:
        if wrapping and printed % ITEMS_PER_LINE == 0:
            parts.append("\n  ")
        parts.append(items[i])
        if wrapping or i < n - 1:
            parts.append(", ")
        printed += 1
        if edge is not None and i + 1 == edge and i + edge + 1 < n:
            if wrapping:
                parts.append("\n  ...,")
                printed = ITEMS_PER_LINE - edge % ITEMS_PER_LINE
                if printed % ITEMS_PER_LINE:
                    parts.append("\n  ")
            else:
                parts.append("..., ")
            i = n - edge - 1
        i += 1
    if wrapping:
        parts.append("\n")
    parts.append("]")
    return "".join(parts)


def format_outputs(outputs: Sequence[tuple[np.ndarray, Sequence[int]]], mode: str) -> str:
    """What executor_runner prints on stdout for int8 output tensors ``(values, sizes)`` in ``mode``."""
    if mode == "all":
        return "".join(
            f"Output[{i}][{j}]: (char) {int(v)}\n" for i, (values, _) in enumerate(outputs)
            for j, v in enumerate(values.reshape(-1))
        )  # fmt: skip
    if mode != "summary":
        return ""
    text = []
    for i, (values, sizes) in enumerate(outputs):
        tensor = (
            f"tensor(sizes={_scalar_list([str(s) for s in sizes], None)}, "
            f"{_scalar_list([str(int(v)) for v in values.reshape(-1)], SUMMARY_EDGE_ITEMS)})"
        )
        text.append(f"OutputX {i}: {tensor}\n")
    return "".join(text)


# --- main() of executor_runner.cpp, with a pluggable delegate -----------------------------------------------------


@dataclass
class Run:
    """What ``executor_main`` knows while it runs, handed to the delegate."""

    ctx: programs.GuestContext
    log: EtLog
    generation: str
    flags: RunnerFlags
    method: str = "forward"
    model: CompiledModel | None = None
    file_bytes: int = 0

    @property
    def sites(self) -> dict[str, tuple[str, int]]:
        return SITES[self.generation]

    @property
    def compiled(self) -> CompiledModel:
        assert self.model is not None
        return self.model

    def spend(self, seconds: float, cpu_seconds: float | None = None) -> None:
        """Advance the simulated clock (CPU instructions at the simulated CPU clock)."""
        cpu = seconds if cpu_seconds is None else cpu_seconds
        self.ctx.advance(seconds, max(1, int(cpu * _clock_hz(self.ctx))))


class Delegate(Protocol):
    """The backend behind executor_runner: where its lines, costs and failures come from."""

    backend_id: str

    def executions(self, flags: RunnerFlags) -> int:
        """How many times the runner executes the method."""

    def load_program(self, run: Run) -> None:
        """Spend Program::load's time (reading and parsing the model file)."""

    def init(self, run: Run) -> None:
        """The backend's init() inside load_method: log, spend time; DelegateError on failure."""

    def execute(self, run: Run, index: int, total: int, x: np.ndarray) -> np.ndarray:
        """The backend's execute(): log, spend the time method->execute() takes; DelegateError on failure."""

    def after_executions(self, run: Run) -> None:
        """After ``Model executed successfully`` (a benchmark report, say)."""


def _strerror(exc: OSError) -> tuple[str, int]:
    code = exc.errno if isinstance(exc.errno, int) else {
        FileNotFoundError: errno_codes.ENOENT, IsADirectoryError: errno_codes.EISDIR,
        PermissionError: errno_codes.EACCES,
    }.get(type(exc), errno_codes.EIO)  # fmt: skip
    return os.strerror(code), code


def _open_model(run: Run, path: str) -> bytes:
    """FileDataLoader::from + Program::load up to the identifier check: the file's bytes, or the upstream lines
    and RunnerAbort / _Exit."""
    ctx, log, sites = run.ctx, run.log, run.sites
    try:
        data = ctx.read_file(path)
    except IsADirectoryError:
        # open(O_RDONLY) succeeds on a directory; the first pread fails
        log.at("E", sites["read_failed"], f"Reading from {path}: failed to read {EXTENDED_HEAD_BYTES} bytes at "
               f"offset 0: {os.strerror(errno_codes.EISDIR)}")  # fmt: skip
        log.at("E", sites["parse_failed"], f"Failed to parse model file {path}")
        raise _Exit(1) from None
    except OSError as exc:
        text, code = _strerror(exc)
        log.at("E", sites["open_failed"], f"Failed to open {path}: {text} ({code})")
        raise RunnerAbort(*sites["loader_check"], "file_loader.ok()",
                          f"FileDataLoader::from() failed: 0x{ACCESS_FAILED:x}") from None  # fmt: skip
    return data


def _load_program(run: Run, path: str, data: bytes) -> CompiledModel:
    """Program::load on the file's bytes: our model, or upstream's parse failure (exit 1)."""
    ctx, log, sites = run.ctx, run.log, run.sites

    def fail(*lines: tuple[str, tuple[str, int], str]) -> _Exit:
        for level, site, message in lines:
            log.at(level, site, message)
        log.at("E", sites["parse_failed"], f"Failed to parse model file {path}")
        return _Exit(1)

    if len(data) < EXTENDED_HEAD_BYTES:
        raise fail(("E", sites["load_out_of_range"], f"File {path}: offset 0 + size {EXTENDED_HEAD_BYTES} > "
                    f"file_size_ {len(data)}, or overflow detected"))  # fmt: skip
    if not is_model_file(data):
        ident = data[4:8].split(b"\0", 1)[0]  # "%.4s"
        if ident == PROGRAM_IDENTIFIER.encode():
            _note(ctx, f"{path} is a real ExecuTorch program ({PROGRAM_IDENTIFIER}): this simulated "
                  "executor_runner runs only simulator model files (magic FVPSIMMD); make one with "
                  "'fvp-harness sim model NAME -o FILE'")  # fmt: skip
            raise fail()
        shown = ident.decode("utf-8", "surrogateescape")
        raise fail(("E", sites["program_identifier"],
                    f"Program identifier '{shown}' != expected '{PROGRAM_IDENTIFIER}'"))  # fmt: skip
    expected = model_file_size(data)
    if expected is not None and expected > len(data):
        raise fail(("E", sites["file_too_small"], "File size is too small. Expected file size from extended header "
                    f"is {expected}, actual file size from data loader is {len(data)}"))  # fmt: skip
    try:
        return decode_model(data)
    except (ModelFileError, KeyError, ValueError, TypeError) as exc:
        _note(ctx, f"{path}: {exc}")
        raise fail() from None


def _read_input_files(run: Run) -> list[bytes] | None:
    """``--inputs``: upstream reads every file before loading the model."""
    flags, log, sites = run.flags, run.log, run.sites
    if not flags.inputs_text:
        return None
    log.at("I", sites["loading_inputs"], "Loading inputs from input file(s).")
    buffers = []
    for path in flags.inputs:
        try:
            buffers.append(run.ctx.read_file(path))
        except OSError:
            if run.generation == "old":
                log.at("E", sites["input_open_failed"], f"Failed to open input file: {path}\n")
                raise _Exit(1) from None
            log.at("E", sites["input_open_failed"], f"Failed to open input file: {path}")
            raise RunnerAbort(*sites["load_inputs_check"], "load_status == Error::Ok",
                              f"Could not load inputs: 0x{ACCESS_FAILED:x}") from None  # fmt: skip
    return buffers


def _load_data_file(run: Run) -> None:
    """``--data_path``: upstream loads a .ptd; emulated up to opening it."""
    path, log, sites = run.flags.data_path, run.log, run.sites
    if not path:
        return
    log.at("I", sites["loading_ptd"], "Loading tensor data from .ptd file.")
    try:
        run.ctx.read_file(path)
    except OSError as exc:
        text, code = _strerror(exc)
        log.at("E", sites["open_failed"], f"Failed to open {path}: {text} ({code})")
        raise RunnerAbort(*sites["ptd_loader_check"], "ptd_loader_result.ok()",
                          f"FileDataLoader::from() failed for PTD file: 0x{ACCESS_FAILED:x}") from None  # fmt: skip
    log.at("I", sites["ptd_loaded"], f"PTD file {path} is loaded.")
    _note(run.ctx, "--data_path: external tensor data (.ptd) is not emulated; simulator model files hold "
          "all their data")  # fmt: skip
    raise _Exit(1)


def _prepare_input(run: Run, buffers: list[bytes] | None) -> np.ndarray:
    """prepare_input_tensors (extension/runner_util/inputs.cpp): ones, or the input file's bytes."""
    model, sites = run.compiled, run.sites
    if buffers is None:
        return np.ones(model.arch.input_shape, dtype=np.int8)
    need = model.sizes.input
    message = None
    if len(buffers) != 1:
        site, message = sites["input_count_mismatch"], (
            f"Wrong number of inputs allocated compared to method  1 ? {len(buffers)}")
    elif len(buffers[0]) != need:
        site = sites["input_size_mismatch"]
        message = f"input size ({len(buffers[0])}) and tensor size ({need}) mismatch!"
    if message is not None:
        run.log.at("E", site, message)
        raise RunnerAbort(
            *sites["prepare_inputs_check"], "res.ok()", f"Could not prepare inputs: 0x{INVALID_ARGUMENT:x}"
        )
    return np.frombuffer(buffers[0], dtype=np.int8).reshape(model.arch.input_shape)


def _planned_buffer_bytes(model: CompiledModel) -> int:
    def align(n: int) -> int:
        return (n + PLANNED_ALIGNMENT - 1) // PLANNED_ALIGNMENT * PLANNED_ALIGNMENT

    return align(model.sizes.input) + align(model.sizes.output)


def _output_filename(prefix: str, index: int) -> str:
    """``snprintf(out_filename, 255, "%s-%d.bin", ...)``: at most 254 bytes."""
    data = f"{prefix}-{index}.bin".encode("utf-8", "surrogateescape")[:254]
    return data.decode("utf-8", "surrogateescape")


def executor_main(
    ctx: programs.GuestContext,
    log: EtLog,
    delegate: Delegate,
    *,
    generation: str = "current",
    build_id: str = "",
    faults: FaultSpec | None = None,
    extra_specs: Sequence[FlagSpec] = (),
) -> int:
    """``main()`` of executor_runner.cpp of ``generation`` around ``delegate``; returns the exit status (raises
    RunnerAbort for a failed ET_CHECK). ``build_id`` adds our build-id line; ``faults`` the injected faults."""
    faults = faults or FaultSpec()
    flags = parse_flags(ctx.argv[1:], generation, extra_specs, argv0=ctx.argv[0])
    run = Run(ctx, log, generation, flags)
    try:
        return _main(run, delegate, build_id, faults)
    except _Exit as exc:
        return exc.status
    except _OutputTruncated:
        return 0


def _main(run: Run, delegate: Delegate, build_id: str, faults: FaultSpec) -> int:
    ctx, log, flags, sites = run.ctx, run.log, run.flags, run.sites
    if build_id:
        log.at("I", sites["build_id"], f"executor_runner build id: {build_id}")
    if flags.extras:
        log.at("E", sites["extra_args"], "Extra commandline args:" + "".join(f" {arg}" for arg in flags.extras))
        return 1
    if run.generation == "current" and flags.print_output not in ("none", "summary", "all"):
        mode = flags.print_output
        message = f"Unknown --print_output mode '{mode}'. Expected 'none', 'summary', or 'all'."
        log.at("E", sites["print_output_mode"], message)
        return 1
    if flags.server_mode:
        _note(ctx, "--server_mode is not emulated by the simulator; run one invocation per input")
        return 1
    buffers = _read_input_files(run)
    _load_data_file(run)
    path = flags.model_path
    data = _open_model(run, path)
    before_load = ctx.now()
    run.file_bytes = len(data)
    model = _load_program(run, path, data)
    run.model = model
    delegate.load_program(run)
    log.at("I", sites["model_loaded"], f"Model file {path} is loaded.")
    run.method = flags.method_name or "forward"
    log.at("I", sites["using_method"], f"Using method {run.method}")
    if run.method != "forward":
        log.at("E", sites["no_method"], f"No method named '{run.method}' in program")
        raise RunnerAbort(*sites["method_meta_check"], "method_meta.ok()",
                          f"Failed to get method_meta for {run.method}: 0x{INVALID_ARGUMENT:x}")  # fmt: skip
    kind = "CPU planned" if run.generation == "current" else "planned"
    log.at("I", sites["planned_buffer"], f"Setting up {kind} buffer 0, size {_planned_buffer_bytes(model)}.")
    try:
        delegate.init(run)
    except DelegateError as exc:
        log.at("E", sites["init_failed"], f"Init failed for backend {delegate.backend_id}: 0x{exc.code:x}")
        raise RunnerAbort(*sites["load_method_check"], "method.ok()",
                          f"Loading of method {run.method} failed with status 0x{exc.code:x}") from None  # fmt: skip
    if run.generation == "current":
        log.at("I", sites["model_loaded_in"], f"Model loaded in {(ctx.now() - before_load) * 1000.0:f} ms.")
    else:
        log.at("I", sites["method_loaded"], "Method loaded.")

    total = delegate.executions(flags)
    spent = 0.0
    output: np.ndarray | None = None
    for i in range(total):
        ctx.check_interrupt()
        if faults.crash is not None and i >= faults.crash:
            ctx.stderr("Segmentation fault\n")
            return EXIT_SEGV
        if faults.hang is not None and i >= faults.hang:
            _hang(ctx)
        if faults.truncate is not None and i >= faults.truncate:
            log.truncate_next = True
        x = _prepare_input(run, buffers)
        before = ctx.now()
        try:
            output = delegate.execute(run, i, total, x)
        except DelegateError as exc:
            code = exc.code
            log.at("E", sites["call_delegate_failed"], f"CALL_DELEGATE execute failed at instruction 0: 0x{code:x}")
            raise RunnerAbort(*sites["execute_check"], "status == Error::Ok",
                              f"Execution of method {run.method} failed with status 0x{code:x}") from None  # fmt: skip
        elapsed = ctx.now() - before
        spent += elapsed
        if run.generation == "current":
            log.at("I", sites["iteration"], f"Iteration {i + 1} of {total}: {elapsed * 1000.0:f} ms")
    log.at("I", sites["executed"], f"Model executed successfully {total} time(s) in {spent * 1000.0:f} ms.")
    delegate.after_executions(run)
    log.at("I", sites["outputs"], "1 outputs: ")
    if output is None:  # the method never ran: the planned output buffer holds its initial zeros
        output = np.zeros(model.arch.output_shape, dtype=np.int8)
    if flags.output_file:
        name = _output_filename(flags.output_file, 0)
        log.at("I", sites["writing_output"], f"Writing output to file: {name}")
        try:
            ctx.write_file(name, output.astype(np.int8).tobytes())
        except OSError:
            if run.generation == "old":  # fopen() returned NULL and fwrite() got it
                ctx.stderr("Segmentation fault\n")
                return EXIT_SEGV
            raise RunnerAbort(*sites["output_open_check"], "out_file != nullptr",
                              f"Failed to open output file: {name}") from None  # fmt: skip
    printed = format_outputs([(output, [1, *model.arch.output_shape])], flags.print_output)
    if printed:
        ctx.stdout(printed)
    return 0


def _clock_hz(ctx: programs.GuestContext) -> float:
    try:
        return float(ctx.params.get("host.cpu0.clock_hz", "100000000"))
    except ValueError:
        return 100e6


def _hang(ctx: programs.GuestContext) -> None:
    """The injected hang: never returns; only an interrupt (Ctrl-C, closed channel, model stop) ends it."""
    while True:
        ctx.check_interrupt()
        time.sleep(0.02)
        ctx.advance(0.02)  # a spinning CPU keeps simulated time going


def run_as_main(ctx: programs.GuestContext, run: Callable[[programs.GuestContext, EtLog], int]) -> int:
    """The process around ``run(ctx, log)``: a ``UsageError`` prints its texts and exits with its status; a failed
    ET_CHECK (``RunnerAbort``) logs its Fatal line (assert.h's ``In function %s(), assert failed (%s): ...``) and
    aborts: the shell shows ``Aborted``, status 134."""
    with ctx.busy():
        return _run_main(ctx, run)


def _run_main(ctx: programs.GuestContext, run: Callable[[programs.GuestContext, EtLog], int]) -> int:
    log = EtLog(ctx)
    try:
        return run(ctx, log)
    except UsageError as exc:
        if exc.stdout:
            ctx.stdout(exc.stdout)
        message = str(exc)
        if message:
            ctx.stderr(message if message.endswith("\n") else message + "\n")
        return exc.status
    except RunnerAbort as exc:
        log.truncate_next = False
        log("F", exc.source, exc.line, f"In function main(), assert failed ({exc.condition}): {exc.message}")
        ctx.stderr("Aborted\n")
        return EXIT_ABORT


# --- the Ethos-U Linux delegate ---------------------------------------------------------------------------------


def _mismatch(model: CompiledModel, npu_macs: int) -> str | None:
    if model.num_macs == npu_macs and model.family == "ethos-u85":
        return None
    return (
        f"network compiled for {model.accelerator} ({model.num_macs} MACs) but the NPU is "
        f"ethos-u85-{npu_macs} ({npu_macs} MACs): recompile the model for this configuration "
        f"(fvp-harness sim model --macs {npu_macs}) or run with -C host.ethosu.num_macs={model.num_macs}"
    )


class _EthosU:
    """EthosUBackend with the Linux driver (EthosUBackend_Cortex_A.cpp) in the artifact's driver mode."""

    backend_id = "EthosUBackend"

    def __init__(self, ctx: programs.GuestContext, artifact: RunnerArtifact, faults: FaultSpec) -> None:
        self.artifact, self.faults = artifact, faults
        self.noise = _noise_from_knobs(ctx.knobs)
        invocation = next(_invocations)
        self.rng = np.random.default_rng(
            [self.noise.seed, invocation, zlib.crc32(f"{artifact.driver}\0{artifact.build_id}".encode())]
        )
        self.addresses = np.random.default_rng([self.noise.seed, invocation, 0xDA7A])
        self.load_ms = 0.0
        self.program_ms = 0.0

    def noisy(self, ctx: programs.GuestContext, ms: float) -> float:
        noise, rng = self.noise, self.rng
        factor = max(0.5, 1.0 + noise.jitter * rng.standard_normal()) * (1.0 + noise.drift * ctx.now())
        outlier = rng.uniform(0.2, 1.5) if rng.random() < noise.outlier_rate else 0.0
        return ms * factor + outlier

    def executions(self, flags: RunnerFlags) -> int:
        return flags.num_executions

    def load_program(self, run: Run) -> None:
        model = run.compiled
        self.sizes = DriverSizes.from_mapping(model.sizes.to_dict())
        program = LOAD_BASE_MS / 2 + LOAD_US_PER_KIB * run.file_bytes / 1024.0 / 1000.0
        method = LOAD_BASE_MS / 2 + (DRIVER_COSTS.setup_ms(self.sizes) if self.artifact.driver == "reuse" else 0.0)
        total = self.noisy(run.ctx, program + method)
        self.program_ms, self.load_ms = total * program / (program + method), total * method / (program + method)
        run.spend(self.program_ms / 1000.0)
        self.cycles = model_cycles(model)

    def _address(self, size: int) -> str:
        base = 0xFFFF80000000 if size >= MMAP_THRESHOLD else 0xAAAAC0000000
        offset = int(self.addresses.integers(0, 0x3FFFFFFF)) & ~0xF
        return f"0x{base + offset:x}"

    def init(self, run: Run) -> None:
        model = run.compiled
        segment = model.sizes.weights + model.sizes.command_stream
        run.log.at("I", run.sites["delegate_data"], f"data:{self._address(segment)}")
        if self.artifact.driver == "reuse":  # the driver-reuse build creates the network and buffers here
            mismatch = _mismatch(model, run.ctx.npu_macs)
            if mismatch:
                run.log.at("E", run.sites["driver_failed"], f"Ethos-U Linux driver invocation failed: {mismatch}")
                raise DelegateError(INVALID_STATE)
        run.spend(self.load_ms / 1000.0)

    def execute(self, run: Run, index: int, total: int, x: np.ndarray) -> np.ndarray:
        ctx, model, log, sites = run.ctx, run.compiled, run.log, run.sites
        if self.artifact.driver == "per-inference":  # creates the network on every execute
            mismatch = _mismatch(model, ctx.npu_macs)
            if mismatch:
                log.at("E", sites["driver_failed"], f"Ethos-U Linux driver invocation failed: {mismatch}")
                raise DelegateError(INVALID_STATE)
        if self.faults.timeout is not None and index >= self.faults.timeout:
            remaining = NPU_TIMEOUT_NS / 1e9
            while remaining > 0:  # inference->wait(timeout_ns), interruptible
                step = min(1.0, remaining)
                run.spend(step, 0.0)
                remaining -= step
            log.at("E", sites["npu_timed_out"], f"Ethos-U inference timed out after {NPU_TIMEOUT_NS} ns")
            raise DelegateError(INVALID_STATE)
        output = run_model(model.arch, model.quant, x)
        cpu_ms = self.noisy(ctx, DRIVER_COSTS.execute_ms(self.sizes, self.artifact.driver)) * _slowdown(
            ctx.knobs, model.arch.name, self.artifact.driver)
        npu_ms = self.cycles / NPU_CLOCK_HZ * 1000.0
        run.spend((cpu_ms + npu_ms + RUNNER_OVERHEAD_MS) / 1000.0, cpu_ms / 1000.0)
        if model.cycle_counter:
            log.at("I", sites["cycle_counter"], f"Ethos-U Linux delegate cycle counter: {self.cycles}")
        if self.artifact.cpu_time_report:  # ours: the unmerged instrumentation's documented default shape
            log.at("I", sites["cpu_time"], f"EthosUBackend::execute() CPU time: {cpu_ms:.3f} ms")
        return output

    def after_executions(self, run: Run) -> None:
        return None


def _artifact(ctx: programs.GuestContext) -> RunnerArtifact:
    try:
        return decode_runner(ctx.read_file(ctx.argv[0]))
    except (OSError, ModelFileError) as exc:
        raise UsageError(f"{ctx.argv[0]}: cannot read the runner build: {exc}") from None


def _run(ctx: programs.GuestContext, log: EtLog) -> int:
    artifact = _artifact(ctx)
    faults = parse_faults(ctx.knobs.get("runner_fault") or artifact.fault)
    delegate = _EthosU(ctx, artifact, faults)
    return executor_main(
        ctx, log, delegate, generation=artifact.log_generation, build_id=artifact.build_id, faults=faults
    )


def executor_runner(ctx: programs.GuestContext) -> int:
    """The guest program: run as the real Linux executor_runner would, return its exit status."""
    return run_as_main(ctx, _run)


programs.register_program(is_runner, executor_runner)
