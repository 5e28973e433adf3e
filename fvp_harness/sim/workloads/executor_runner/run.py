"""The emulated ExecuTorch ``executor_runner`` (Linux, Ethos-U "Direct Drive" delegate) that runner
files start.

It prints what upstream's executor_runner.cpp at cff6f4dd32 prints, line for line, error for error,
exit code for exit code (``log.SITES``), with numbers from models of the work
(``networks/inference.py``, ``npu/cycles.py``, ``npu/driver_cost.py``). Its output, flags, errors,
times and knobs: docs/simulator-workload.md, "The emulated ``executor_runner``" and "Noise and
faults (knobs)".
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno as errno_codes
import itertools
import os
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from fvp_harness.sim.guest import programs
from fvp_harness.sim.networks.modelfile import (
    CompiledModel,
    ModelFileError,
    RunnerArtifact,
    decode_model,
    decode_runner,
    is_model_file,
    model_file_size,
)
from fvp_harness.sim.networks.once import model_digest, run_model_once
from fvp_harness.sim.networks.partition import planned_edge_bytes
from fvp_harness.sim.npu.cycles import NPU_CLOCK_HZ, model_cycles
from fvp_harness.sim.npu.driver_cost import DEFAULT as DRIVER_COSTS
from fvp_harness.sim.npu.driver_cost import DriverSizes
from fvp_harness.sim.workloads.executor_runner.device import open_problem
from fvp_harness.sim.workloads.executor_runner.faults import (
    FaultSpec,
    noise_from_knobs,
    parse_faults,
    slowdown,
)
from fvp_harness.sim.workloads.executor_runner.flags import (
    EXIT_ABORT,
    EXIT_SEGV,
    FlagSpec,
    RunnerFlags,
    UsageError,
    parse_flags,
)
from fvp_harness.sim.workloads.executor_runner.log import (
    SITES,
    EtLog,
    OutputTruncated,
    format_outputs,
    note,
)
from fvp_harness.sim.workloads.executor_runner.partitioned import Calls
from fvp_harness.sim.workloads.executor_runner.tracer import ETDUMP_PATH_FLAG, EventTracer

__all__ = ["Delegate", "DelegateError", "Run", "RunnerAbort", "executor_main", "executor_runner",
           "run_as_main"]

RUNNER_OVERHEAD_MS = 0.015
"""Per execution outside the delegate: method dispatch, input/output tensor bookkeeping."""
METHOD_OVERHEAD_MS, DISPATCH_OVERHEAD_MS = 0.008, 0.004
"""The parts of ``RUNNER_OVERHEAD_MS`` spent in ``Method::execute`` outside its instructions and in
the ``DELEGATE_CALL`` dispatch outside the backend; the rest is the backend's own bookkeeping
(scratch allocation)."""
LOAD_BASE_MS = 0.35
LOAD_US_PER_KIB = 0.9
"""Model load: program and method setup, plus reading and verifying the model file."""
NPU_TIMEOUT_NS = 60_000_000_000
"""``kDefaultEthosUTimeoutNs`` (EthosUBackend_Cortex_A.cpp:41)."""
EXTENDED_HEAD_BYTES = 64
"""``ExtendedHeader::kNumHeadBytes``: Program::load reads this much first
(schema/extended_header.h)."""
PROGRAM_IDENTIFIER = "ET12"
PLANNED_ALIGNMENT = 16
MMAP_THRESHOLD = 128 * 1024
RUNNER_IMAGE_BYTES = 7 << 20
"""The runner process's own resident pages before it reads anything: its code and data, the C and
C++ runtimes, the stack (7 MiB: an assumed figure for an aarch64 executor_runner with the portable
kernels, not a measurement; more than busybox's own 5 MiB, ``SHELL_RSS_KIB``, measured on the QEMU
guest). The rest of its resident set is what it holds: ``Run.hold``."""
ACCESS_FAILED, INVALID_STATE, INVALID_ARGUMENT, NOT_FOUND = 0x22, 0x2, 0x12, 0x20
"""runtime/core/error.h: Error::AccessFailed, Error::InvalidState, Error::InvalidArgument,
Error::NotFound."""
_invocations = itertools.count()


class RunnerAbort(Exception):
    """An ET_CHECK_MSG failed in ``main()``: a Fatal line, then abort (exit 134; see
    ``run_as_main``)."""

    def __init__(self, source: str, line: int, condition: str, message: str) -> None:
        super().__init__(message)
        self.source, self.line, self.condition, self.message = source, line, condition, message


class DelegateError(Exception):
    """A backend's init() or execute() returned an error (``code``: an
    ``executorch::runtime::Error``)."""

    def __init__(self, code: int) -> None:
        super().__init__(f"0x{code:x}")
        self.code = code


class _Exit(Exception):
    """The program returns from main() with ``status`` (after its last line)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


# --- main() of executor_runner.cpp, with a pluggable delegate -------------------------------------


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
    tracer: EventTracer | None = None
    """The ETDump event tracer of a build with ``ET_EVENT_TRACER_ENABLED`` (``tracer.py``), else
    None."""
    # sha256 of the model file: names it in the inference cache (networks/once.py)
    model_digest: str = ""
    held: int = 0
    """Bytes the process holds beyond its image (``hold``/``release``): its resident set is the two
    together."""

    @property
    def sites(self) -> dict[str, tuple[str, int]]:
        return SITES[self.generation]

    @property
    def compiled(self) -> CompiledModel:
        assert self.model is not None
        return self.model

    def traced(self, name: str) -> contextlib.AbstractContextManager[None]:
        """A profiling scope of the event tracer (nothing in a build without it)."""
        return self.tracer.scope(name) if self.tracer is not None else contextlib.nullcontext()

    def hold(self, size: int) -> None:
        """The process now also holds ``size`` bytes (read, allocated or mapped, and touched): its
        resident set grows, and its peak (``VmHWM``) with it."""
        self.held += size
        self.ctx.resident(RUNNER_IMAGE_BYTES + self.held)

    def release(self, size: int) -> None:
        """Freed or unmapped: the resident set shrinks, its peak stays."""
        self.held -= size
        self.ctx.resident(RUNNER_IMAGE_BYTES + self.held)

    def spend(self, seconds: float, cpu_seconds: float | None = None) -> None:
        """Advance the simulated clock (CPU instructions at the simulated CPU clock)."""
        cpu = seconds if cpu_seconds is None else cpu_seconds
        self.ctx.advance(seconds, max(1, int(cpu * _clock_hz(self.ctx))))


class Delegate(Protocol):
    """The backend behind executor_runner: where its lines, costs and failures come from."""

    backend_id: str
    registered: bool
    """Whether the runner was linked with this backend (method.cpp looks it up before its init)."""

    def executions(self, flags: RunnerFlags) -> int:
        """How many times the runner executes the method."""

    def load_program(self, run: Run) -> None:
        """Spend Program::load's time (reading and parsing the model file)."""

    def init(self, run: Run) -> None:
        """The backend's init() inside load_method: log, spend time; DelegateError on failure."""

    def execute(self, run: Run, index: int, total: int, x: np.ndarray) -> np.ndarray:
        """The backend's execute(): log, spend the time method->execute() takes; DelegateError on
        failure."""

    def after_executions(self, run: Run) -> None:
        """After ``Model executed successfully`` (a benchmark report, say)."""


def _strerror(exc: OSError) -> tuple[str, int]:
    code = exc.errno if isinstance(exc.errno, int) else {
        FileNotFoundError: errno_codes.ENOENT, IsADirectoryError: errno_codes.EISDIR,
        PermissionError: errno_codes.EACCES,
    }.get(type(exc), errno_codes.EIO)  # fmt: skip
    return os.strerror(code), code


def _open_model(run: Run, path: str) -> bytes:
    """FileDataLoader::from + Program::load up to the identifier check: the file's bytes, or the
    upstream lines and RunnerAbort / _Exit."""
    ctx, log, sites = run.ctx, run.log, run.sites
    try:
        data = ctx.read_file(path)
    except IsADirectoryError:
        # open(O_RDONLY) succeeds on a directory; the first pread fails
        log.at("E", sites["read_failed"],
               f"Reading from {path}: failed to read {EXTENDED_HEAD_BYTES} bytes at "
               f"offset 0: {os.strerror(errno_codes.EISDIR)}")  # fmt: skip
        log.at("E", sites["parse_failed"], f"Failed to parse model file {path}")
        raise _Exit(1) from None
    except OSError as exc:
        text, code = _strerror(exc)
        log.at("E", sites["open_failed"], f"Failed to open {path}: {text} ({code})")
        raise RunnerAbort(*sites["loader_check"], "file_loader.ok()",
                          "FileDataLoader::from() failed: "
                          f"0x{ACCESS_FAILED:x}") from None  # fmt: skip
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
        raise fail(("E", sites["load_out_of_range"],
                    f"File {path}: offset 0 + size {EXTENDED_HEAD_BYTES} > "
                    f"file_size_ {len(data)}, or overflow detected"))  # fmt: skip
    if not is_model_file(data):
        ident = data[4:8].split(b"\0", 1)[0]  # "%.4s"
        if ident == PROGRAM_IDENTIFIER.encode():
            note(ctx, f"{path} is a real ExecuTorch program ({PROGRAM_IDENTIFIER}): this simulated "
                  "executor_runner runs only simulator model files (magic FVPSIMMD); make one with "
                  "'fvp-harness sim model NAME -o FILE'")  # fmt: skip
            raise fail()
        shown = ident.decode("utf-8", "surrogateescape")
        raise fail(("E", sites["program_identifier"],
                    f"Program identifier '{shown}' != expected "
                    f"'{PROGRAM_IDENTIFIER}'"))  # fmt: skip
    expected = model_file_size(data)
    if expected is not None and expected > len(data):
        raise fail(("E", sites["file_too_small"],
                    "File size is too small. Expected file size from extended header "
                    f"is {expected}, actual file size from data loader is "
                    f"{len(data)}"))  # fmt: skip
    try:
        return decode_model(data)
    except (ModelFileError, KeyError, ValueError, TypeError) as exc:
        note(ctx, f"{path}: {exc}")
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
                          "FileDataLoader::from() failed for PTD file: "
                          f"0x{ACCESS_FAILED:x}") from None  # fmt: skip
    log.at("I", sites["ptd_loaded"], f"PTD file {path} is loaded.")
    note(run.ctx,
         "--data_path: external tensor data (.ptd) is not emulated; simulator model files hold "
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
            *sites["prepare_inputs_check"], "res.ok()",
            f"Could not prepare inputs: 0x{INVALID_ARGUMENT:x}"
        )
    return np.frombuffer(buffers[0], dtype=np.int8).reshape(model.arch.input_shape)


def _planned_buffer_bytes(model: CompiledModel) -> int:
    def align(n: int) -> int:
        return (n + PLANNED_ALIGNMENT - 1) // PLANNED_ALIGNMENT * PLANNED_ALIGNMENT

    # a partly delegated program also plans the tensors its partitions and CPU layers hand each
    # other
    return (
        align(model.sizes.input)
        + align(model.sizes.output)
        + planned_edge_bytes(model.arch, model.delegation)
    )


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
    event_tracer: bool = False,
) -> int:
    """``main()`` of executor_runner.cpp of ``generation`` around ``delegate``; returns the exit
    status (raises RunnerAbort for a failed ET_CHECK). ``build_id`` adds our build-id line;
    ``faults`` the injected faults; ``event_tracer`` makes a build with ``ET_EVENT_TRACER_ENABLED``
    (``--etdump_path``, an ETDump file)."""
    faults = faults or FaultSpec()
    specs = (*extra_specs, ETDUMP_PATH_FLAG) if event_tracer else tuple(extra_specs)
    flags = parse_flags(ctx.argv[1:], generation, specs, argv0=ctx.argv[0])
    run = Run(ctx, log, generation, flags)
    if event_tracer:
        run.tracer = EventTracer(lambda: round(ctx.now() * 1e9))
    try:
        return _main(run, delegate, build_id, faults)
    except _Exit as exc:
        return exc.status
    except OutputTruncated:
        return 0


def _main(run: Run, delegate: Delegate, build_id: str, faults: FaultSpec) -> int:
    ctx, log, flags, sites = run.ctx, run.log, run.flags, run.sites
    if build_id:
        log.at("I", sites["build_id"], f"executor_runner build id: {build_id}")
    if flags.extras:
        log.at("E", sites["extra_args"],
               "Extra commandline args:" + "".join(f" {arg}" for arg in flags.extras))
        return 1
    if run.generation == "current" and flags.print_output not in ("none", "summary", "all"):
        mode = flags.print_output
        message = f"Unknown --print_output mode '{mode}'. Expected 'none', 'summary', or 'all'."
        log.at("E", sites["print_output_mode"], message)
        return 1
    if flags.server_mode:
        note(ctx, "--server_mode is not emulated by the simulator; run one invocation per input")
        return 1
    run.hold(0)  # the process's image
    buffers = _read_input_files(run)
    run.hold(sum(map(len, buffers or ())))  # the input files, read into the heap for the whole run
    _load_data_file(run)
    path = flags.model_path
    data = _open_model(run, path)
    run.hold(len(data))  # FileDataLoader reads the program; the delegate keeps its segment
    before_load = ctx.now()
    run.file_bytes = len(data)
    run.model_digest = model_digest(data)
    model = _load_program(run, path, data)
    run.model = model
    delegate.load_program(run)
    log.at("I", sites["model_loaded"], f"Model file {path} is loaded.")
    run.method = flags.method_name or "forward"
    log.at("I", sites["using_method"], f"Using method {run.method}")
    if run.method != "forward":
        log.at("E", sites["no_method"], f"No method named '{run.method}' in program")
        raise RunnerAbort(*sites["method_meta_check"], "method_meta.ok()",
                          f"Failed to get method_meta for {run.method}: "
                          f"0x{INVALID_ARGUMENT:x}")  # fmt: skip
    kind = "CPU planned" if run.generation == "current" else "planned"
    log.at("I", sites["planned_buffer"],
           f"Setting up {kind} buffer 0, size {_planned_buffer_bytes(model)}.")
    run.hold(_planned_buffer_bytes(model))  # make_unique<uint8_t[]>: touched as it is used
    try:
        if run.tracer is not None:
            run.tracer.create_event_block("Default")  # Program::load_method (program.cpp:377)
        with run.traced("Program::load_method"), run.traced("Method::init"):
            if not delegate.registered:  # BackendDelegate::Init looks it up first (method.cpp:85)
                text = f"Backend {delegate.backend_id} is not registered."
                log.at("E", sites["backend_not_registered"], text)
                raise DelegateError(NOT_FOUND)
            delegate.init(run)
    except DelegateError as exc:
        if delegate.registered:
            text = f"Init failed for backend {delegate.backend_id}: 0x{exc.code:x}"
            log.at("E", sites["init_failed"], text)
        raise RunnerAbort(*sites["load_method_check"], "method.ok()",
                          f"Loading of method {run.method} failed with status "
                          f"0x{exc.code:x}") from None  # fmt: skip
    if run.generation == "current":
        log.at("I", sites["model_loaded_in"],
               f"Model loaded in {(ctx.now() - before_load) * 1000.0:f} ms.")
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
            output = _method_execute(run, delegate, i, total, x)
        except DelegateError as exc:
            code = exc.code
            log.at("E", sites["call_delegate_failed"],
                   f"CALL_DELEGATE execute failed at instruction 0: 0x{code:x}")
            raise RunnerAbort(*sites["execute_check"], "status == Error::Ok",
                              f"Execution of method {run.method} failed with status "
                              f"0x{code:x}") from None  # fmt: skip
        elapsed = ctx.now() - before
        spent += elapsed
        if run.generation == "current":
            log.at("I", sites["iteration"],
                   f"Iteration {i + 1} of {total}: {elapsed * 1000.0:f} ms")
    log.at("I", sites["executed"],
           f"Model executed successfully {total} time(s) in {spent * 1000.0:f} ms.")
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
    if run.tracer is not None:
        _write_etdump(run, run.tracer)
    return 0


def _method_execute(run: Run, delegate: Delegate, index: int, total: int,
                    x: np.ndarray) -> np.ndarray:
    """``method->execute()`` of a program that is one delegate call: with the event tracer, its
    ``Execute`` block (method.cpp:1698-1768: ``Method::execute`` around instruction 0 of chain 0, a
    ``DELEGATE_CALL``)."""
    tracer = run.tracer
    if tracer is None:
        return delegate.execute(run, index, total, x)
    tracer.create_event_block("Execute")
    with tracer.scope("Method::execute"):
        # the input checks, temp allocator reset, instruction loop
        run.spend(METHOD_OVERHEAD_MS / 1000.0)
        # partly delegated: one instruction a step
        if isinstance(delegate, _EthosU) and delegate.calls is not None:
            return delegate.execute(run, index, total, x)
        with tracer.instruction(0, 0), tracer.scope("DELEGATE_CALL"):
            run.spend(DISPATCH_OVERHEAD_MS / 1000.0)
            return delegate.execute(run, index, total, x)


def _write_etdump(run: Run, tracer: EventTracer) -> None:
    """``EventTraceManager::write_etdump_to_file`` (executor_runner.cpp:238-268) and its ET_CHECK
    (:871)."""
    path = str(run.flags.other.get("etdump_path", ETDUMP_PATH_FLAG.default))
    try:
        run.ctx.write_file(path, tracer.etdump())
    except OSError:
        run.log.at("E", run.sites["etdump_open_failed"], f"Failed to open ETDump file at {path}.")
        raise RunnerAbort(*run.sites["etdump_check"], "status == Error::Ok",
                          "Failed to save ETDump file.") from None
    run.log.at("I", run.sites["etdump_written"], f"ETDump written to file '{path}'.")


def _clock_hz(ctx: programs.GuestContext) -> float:
    try:
        return float(ctx.params.get("host.cpu0.clock_hz", "100000000"))
    except ValueError:
        return 100e6


def _hang(ctx: programs.GuestContext) -> None:
    """The injected hang: never returns; only an interrupt (Ctrl-C, closed channel, model stop) ends
    it."""
    while True:
        ctx.check_interrupt()
        time.sleep(0.02)
        ctx.advance(0.02)  # a spinning CPU keeps simulated time going


def run_as_main(ctx: programs.GuestContext,
                run: Callable[[programs.GuestContext, EtLog], int]) -> int:
    """The process around ``run(ctx, log)``: a ``UsageError`` prints its texts and exits with its
    status; a failed ET_CHECK (``RunnerAbort``) logs its Fatal line (assert.h's ``In function %s(),
    assert failed (%s): ...``) and aborts: the shell shows ``Aborted``, status 134."""
    with ctx.busy():
        return _run_main(ctx, run)


def _run_main(ctx: programs.GuestContext,
              run: Callable[[programs.GuestContext, EtLog], int]) -> int:
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
        log("F", exc.source, exc.line,
            f"In function main(), assert failed ({exc.condition}): {exc.message}")
        ctx.stderr("Aborted\n")
        return EXIT_ABORT


# --- the Ethos-U Linux delegate -------------------------------------------------------------------


def _mismatch(model: CompiledModel, npu_macs: int) -> str | None:
    if model.num_macs == npu_macs and model.family == "ethos-u85":
        return None
    return (
        f"network compiled for {model.accelerator} ({model.num_macs} MACs) but the NPU is "
        f"ethos-u85-{npu_macs} ({npu_macs} MACs): recompile the model for this configuration "
        f"(fvp-harness sim model --macs {npu_macs}) or run with -C "
        f"host.ethosu.num_macs={model.num_macs}"
    )


class _EthosU:
    """EthosUBackend with the Linux driver (EthosUBackend_Cortex_A.cpp) in the artifact's driver
    mode."""

    backend_id = "EthosUBackend"

    def __init__(self, ctx: programs.GuestContext, artifact: RunnerArtifact,
                 faults: FaultSpec) -> None:
        self.artifact, self.faults = artifact, faults
        self.registered = artifact.ethos_u
        self.noise = noise_from_knobs(ctx.knobs)
        if artifact.jitter is not None:  # a noisy build (sim runner --jitter), over the knob
            self.noise = dataclasses.replace(self.noise, jitter=artifact.jitter)
        invocation = next(_invocations)
        self.rng = np.random.default_rng(
            [self.noise.seed, invocation,
             zlib.crc32(f"{artifact.driver}\0{artifact.build_id}".encode())]
        )
        self.addresses = np.random.default_rng([self.noise.seed, invocation, 0xDA7A])
        self.load_ms = 0.0
        self.program_ms = 0.0
        self.calls: Calls | None = None

    def noisy(self, ctx: programs.GuestContext, ms: float) -> float:
        noise, rng = self.noise, self.rng
        factor = max(0.5,
                     1.0 + noise.jitter * rng.standard_normal()) * (1.0 + noise.drift * ctx.now())
        outlier = rng.uniform(0.2, 1.5) if rng.random() < noise.outlier_rate else 0.0
        return ms * factor + outlier

    def executions(self, flags: RunnerFlags) -> int:
        return flags.num_executions

    def load_program(self, run: Run) -> None:
        model = run.compiled
        self.sizes = DriverSizes.from_mapping(model.sizes.to_dict())
        # a partly delegated program makes one delegate call per partition (partitioned.py)
        self.calls = Calls(model, self.artifact.driver, run.ctx.knobs) if model.cpu_layers else None
        setup = (self.calls.setup_ms() if self.calls is not None
                 else DRIVER_COSTS.setup_ms(self.sizes))
        program = LOAD_BASE_MS / 2 + LOAD_US_PER_KIB * run.file_bytes / 1024.0 / 1000.0
        method = LOAD_BASE_MS / 2 + (setup if self.artifact.driver == "reuse" else 0.0)
        total = self.noisy(run.ctx, program + method)
        self.program_ms, self.load_ms = (
            total * program / (program + method),
            total * method / (program + method),
        )
        run.spend(self.program_ms / 1000.0)
        self.cycles = model_cycles(model)

    def _address(self, size: int) -> str:
        base = 0xFFFF80000000 if size >= MMAP_THRESHOLD else 0xAAAAC0000000
        offset = int(self.addresses.integers(0, 0x3FFFFFFF)) & ~0xF
        return f"0x{base + offset:x}"

    def init(self, run: Run) -> None:
        model = run.compiled
        load_ms = self.load_ms
        if self.calls is not None:  # one EthosUBackend::init() per delegate
            self.calls.init(self, run)
        else:
            segment = model.sizes.weights + model.sizes.command_stream
            with run.traced("+EthosUBackend::init()processed_data"):
                pass  # a pointer to the processed blob: no time
            run.log.at("I", run.sites["delegate_data"], f"data:{self._address(segment)}")
            # vela_bin_read() parses the blob: the method's share of the load
            if run.tracer is not None:
                setup = (DRIVER_COSTS.setup_ms(self.sizes) if self.artifact.driver == "reuse"
                         else 0.0)
                read_ms = self.load_ms * (LOAD_BASE_MS / 2) / (LOAD_BASE_MS / 2 + setup)
                with run.traced("+EthosUBackend::init()vela_bin_read()"):
                    run.spend(read_ms / 1000.0)
                load_ms -= read_ms
        # the driver-reuse build creates the network and buffers here
        if self.artifact.driver == "reuse":
            mismatch = (open_problem(run.ctx, self.artifact.npu_device) or
                        _mismatch(model, run.ctx.npu_macs))
            if mismatch:
                run.log.at("E", run.sites["driver_failed"],
                           f"Ethos-U Linux driver invocation failed: {mismatch}")
                raise DelegateError(INVALID_STATE)
            run.hold(sum(self._buffers()))  # every partition's buffers, kept for the method's life
        run.spend(load_ms / 1000.0)

    def execute(self, run: Run, index: int, total: int, x: np.ndarray) -> np.ndarray:
        ctx, model, log, sites = run.ctx, run.compiled, run.log, run.sites
        # opens the device and creates the network on every execute
        if self.artifact.driver == "per-inference":
            mismatch = open_problem(ctx, self.artifact.npu_device) or _mismatch(model, ctx.npu_macs)
            if mismatch:
                log.at("E", sites["driver_failed"],
                       f"Ethos-U Linux driver invocation failed: {mismatch}")
                raise DelegateError(INVALID_STATE)
        if self.faults.timeout is not None and index >= self.faults.timeout:
            remaining = NPU_TIMEOUT_NS / 1e9
            while remaining > 0:  # inference->wait(timeout_ns), interruptible
                step = min(1.0, remaining)
                run.spend(step, 0.0)
                remaining -= step
            log.at("E", sites["npu_timed_out"],
                   f"Ethos-U inference timed out after {NPU_TIMEOUT_NS} ns")
            raise DelegateError(INVALID_STATE)
        if self.artifact.driver == "per-inference":  # a call creates its buffers, then frees them
            largest = max(self._buffers())
            run.hold(largest)
            run.release(largest)
        if self.calls is not None:
            return self.calls.execute(self, run, x, runner_overhead_ms=RUNNER_OVERHEAD_MS,
                                      cpu_time_report=self.artifact.cpu_time_report,
                                      method_spent_ms=METHOD_OVERHEAD_MS if run.tracer is not None
                                      else 0.0)
        # the time is charged below
        output = run_model_once(run.model_digest, model.arch, model.quant, x)
        nominal = DRIVER_COSTS.execute_ms(self.sizes, self.artifact.driver)
        cpu_ms = self.noisy(ctx, nominal) * slowdown(
            ctx.knobs, model.arch.name, self.artifact.driver
        )
        npu_ms = self.cycles / NPU_CLOCK_HZ * 1000.0
        if run.tracer is None:
            run.spend((cpu_ms + npu_ms + RUNNER_OVERHEAD_MS) / 1000.0, cpu_ms / 1000.0)
        else:
            self._traced_execute(run, cpu_ms * self._input_copy_ms() / nominal, cpu_ms, npu_ms)
        if model.cycle_counter:
            log.at("I", sites["cycle_counter"],
                   f"Ethos-U Linux delegate cycle counter: {self.cycles}")
        # ours: #22596's report (closed unmerged), the documented default shape
        if self.artifact.cpu_time_report:
            log.at("I", sites["cpu_time"], f"EthosUBackend::execute() CPU time: {cpu_ms:.3f} ms")
        return output

    def after_executions(self, run: Run) -> None:
        return None

    def _buffers(self) -> list[int]:
        """Bytes of each delegate call's driver buffers (``DriverSizes.buffer_bytes``; one call per
        partition)."""
        calls = self.calls.sizes if self.calls is not None else [self.sizes]
        return [sizes.buffer_bytes for sizes in calls]

    def _input_copy_ms(self) -> float:
        """The nominal cost of copying the input into the NPU's scratch (the driver cost model's I/O
        rate over the input's bytes): what ``+EthosUBackend::execute()handles.input.memcpy()``
        times."""
        return DRIVER_COSTS.io_us_per_kib * self.sizes.input / 1024.0 / 1000.0

    def _traced_execute(self, run: Run, copy_ms: float, cpu_ms: float, npu_ms: float) -> None:
        """The same time as an untraced execute, spent scope by scope as EthosUBackend::execute
        records it (EthosUBackend.cpp:144-279): the input copy, then ``platform_execute`` (the
        driver's work, with the per-inference set-up in that build, and the NPU's), around them the
        backend's bookkeeping."""
        own_ms = RUNNER_OVERHEAD_MS - METHOD_OVERHEAD_MS - DISPATCH_OVERHEAD_MS
        with run.traced("EthosUBackend::execute()"):
            run.spend(own_ms / 1000.0)
            with run.traced("+EthosUBackend::execute()handles.input.memcpy()"):
                run.spend(copy_ms / 1000.0)
            with run.traced("+EthosUBackend::execute()NPU"):
                run.spend((cpu_ms - copy_ms + npu_ms) / 1000.0, (cpu_ms - copy_ms) / 1000.0)


def _artifact(ctx: programs.GuestContext) -> RunnerArtifact:
    try:
        return decode_runner(ctx.read_file(ctx.argv[0]))
    except (OSError, ModelFileError) as exc:
        raise UsageError(f"{ctx.argv[0]}: cannot read the runner build: {exc}") from None


def _run(ctx: programs.GuestContext, log: EtLog) -> int:
    artifact = _artifact(ctx)
    faults = parse_faults(ctx.knobs.get("runner_fault") or artifact.fault)
    delegate = _EthosU(ctx, artifact, faults)
    return executor_main(ctx, log, delegate, generation=artifact.log_generation,
                         build_id=artifact.build_id,
                         faults=faults, event_tracer=artifact.event_tracer)


def executor_runner(ctx: programs.GuestContext) -> int:
    """The guest program: run as the real Linux executor_runner would, return its exit status."""
    return run_as_main(ctx, _run)

