"""The emulated ExecuTorch ``executor_runner`` (Linux, Ethos-U "Direct Drive" delegate) that runner files start.

Why emulate the runner rather than stub its output: the harness must be tested against everything a real run
shows (flags, log prefix, per-inference lines, output files, exit codes, noise and failures), and every number
the runner prints comes from a model of the work: integer inference (``inference.py``), the NPU cycle model
(``npu.py``) and the driver cost model (``driver_cost.py``). Importing this module registers the program for
files that start with the runner magic (``modelfile.RUNNER_MAGIC``).

Command line (gflags style: ``--flag=value``, ``--flag value``, ``-flag=value``; booleans also ``--flag`` and
``--noflag``): ``--model_path`` (default ``model.pte``), ``--num_executions`` (1), ``--inputs``
(comma-separated raw int8 files; without it every input is filled with ones, as the real runner does),
``--output_file PREFIX`` (writes ``PREFIX-<i>.bin`` per output, raw int8), ``--print_output none|summary|all``
(``summary``), ``--print_all_output`` (older builds: same as ``--print_output all``), ``--method_name``
(``forward``). ``--server_mode`` is refused (the simulator does not emulate it); an unknown flag ends with
``ERROR: unknown command line flag 'X'`` and status 1.

Output, in order (stderr lines carry the real prefix ``I 00:00:00.123456 executorch:<file>:<line>] `` with the
simulated time since the program started; messages are cut at 255 characters like ET_LOG's buffer)::

    I ... executor_runner.cpp:60] executor_runner build id: <--id of the artifact, or "unset">
    I ... executor_runner.cpp:172] Model file <path> is loaded.
    I ... executor_runner.cpp:181] Using method forward
    I ... executor_runner.cpp:218] Setting up planned buffer 0, size <scratch bytes>.
    I ... executor_runner.cpp:243] Method loaded.
    I ... executor_runner.cpp:250] Model loaded in <%f> ms.
    I ... executor_runner.cpp:262] Inputs prepared.
    per execution i of n:
    I ... EthosUBackend.cpp:284] Ethos-U Linux delegate cycle counter: <NPU cycles>
    I ... EthosUBackend.cpp:291] EthosUBackend::execute() CPU time: <%.3f> ms
    I ... executor_runner.cpp:288] Iteration <i> of <n>: <%f> ms
    then:
    I ... executor_runner.cpp:296] Model executed successfully <n> time(s) in <%f> ms.
    I ... executor_runner.cpp:301] 1 outputs:
    stdout (summary: 3 edge items, the middle elided; all: every element; none: nothing):
    Output 0: tensor(sizes=[1, 10], [-79, -10, -128, ..., 127, -64])

Times: ``CPU time`` is the driver cost model for the artifact's driver mode, with noise; the iteration time
adds the NPU busy time (cycles at 1 GHz) and the runner's own overhead; ``Model loaded in`` is reading and
parsing the file, plus creating the driver objects once in the reuse build. Each inference calls
``ctx.advance`` with that time (so the guest clock, ``--stat`` and the ``speed`` knob follow), and
``ctx.check_interrupt`` runs between iterations.

Exit statuses: 0 success; 1 bad command line or bad knob; 134 (after ``Aborted``) when the runner's ET_CHECK
fails: missing model file (``open(<path>) failed: ...`` then ``FileDataLoader::from() failed: 0x22``), a real
``.pte`` (clear message that the simulator runs only its own model files, ``Program::load() failed: 0x23``), a
corrupt model file, input file problems, an NPU configuration mismatch (``Ethos-U Linux driver invocation
failed: ...``; at method load in the reuse build, at the first execution in the per-inference build), an
injected NPU timeout; 139 (after ``Segmentation fault``) for the injected crash; 130 when interrupted (the
shell reports it).

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
                                 (the (N+1)th inference times out in the driver, exit 134)
=====================  ========  ===========================================================================
"""

from __future__ import annotations

import itertools
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from fvp_harness.sim import guest_programs
from fvp_harness.sim.driver_cost import DEFAULT as DRIVER_COSTS
from fvp_harness.sim.driver_cost import DriverSizes
from fvp_harness.sim.inference import run_model
from fvp_harness.sim.modelfile import (
    MODEL_MAGIC,
    CompiledModel,
    ModelFileError,
    RunnerArtifact,
    decode_model,
    decode_runner,
    is_model_file,
    is_pte,
    is_runner,
)
from fvp_harness.sim.npu import NPU_CLOCK_HZ, inference_cycles

__all__ = [
    "FAULT_KINDS",
    "EtLog",
    "FaultSpec",
    "RunnerAbort",
    "RunnerFlags",
    "UsageError",
    "executor_runner",
    "parse_faults",
    "parse_flags",
    "run_as_main",
]

RUNNER_SRC = "executor_runner.cpp"
BACKEND_SRC = "EthosUBackend.cpp"
LOADER_SRC = "file_data_loader.cpp"
MAX_LOG_MESSAGE = 255
RUNNER_OVERHEAD_MS = 0.015
"""Per execution outside the delegate: method dispatch, input/output tensor bookkeeping."""
LOAD_BASE_MS = 0.35
LOAD_US_PER_KIB = 0.9
"""Model load: program and method setup, plus reading and verifying the model file."""
NPU_TIMEOUT_NS = 5_000_000_000
FAULT_KINDS = ("crash", "hang", "truncate", "timeout")
EXIT_USAGE, EXIT_ABORT, EXIT_SEGV = 1, 134, 139

_invocations = itertools.count()


class UsageError(ValueError):
    """Bad command line, bad knob or bad fault spec: the message is printed, exit status 1."""


class RunnerAbort(Exception):
    """An ET_CHECK failed: the runner logs a Fatal line and aborts (exit 134; see ``run_as_main``)."""

    def __init__(self, source: str, line: int, condition: str, message: str) -> None:
        super().__init__(message)
        self.source, self.line, self.condition, self.message = source, line, condition, message


@dataclass
class RunnerFlags:
    """The real Linux executor_runner's flags (the ones the simulator honours)."""

    model_path: str = "model.pte"
    num_executions: int = 1
    inputs: list[str] = field(default_factory=list)
    output_file: str = ""
    print_output: str = "summary"
    method_name: str = "forward"


_STRING_FLAGS = {
    "model_path",
    "inputs",
    "output_file",
    "print_output",
    "method_name",
    "etdump_path",
    "bundled_input_index",
}
_INT_FLAGS = {"num_executions", "cpu_threads"}
_BOOL_FLAGS = {"print_all_output", "server_mode"}


def _parse_bool(name: str, text: str) -> bool:
    low = text.lower()
    if low in ("1", "true", "yes", "t", "y"):
        return True
    if low in ("0", "false", "no", "f", "n"):
        return False
    raise UsageError(f"ERROR: illegal value '{text}' specified for bool flag '{name}'")


def parse_flags(args: Sequence[str]) -> RunnerFlags:
    """gflags-style parsing of the arguments after argv[0]; UsageError with gflags' wording on mistakes."""
    values: dict[str, str] = {}
    bools: dict[str, bool] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            break
        if not arg.startswith("-") or arg == "-":
            continue  # gflags leaves positional arguments to the program; the runner ignores them
        body = arg.lstrip("-")
        name, eq, value = body.partition("=")
        if name in ("help", "helpfull"):
            raise UsageError(
                "executor_runner: runs an ExecuTorch program (simulated); flags: --model_path, "
                "--num_executions, --inputs, --output_file, --print_output, --method_name"
            )
        if name in _BOOL_FLAGS or (name.startswith("no") and name[2:] in _BOOL_FLAGS and not eq):
            if name in _BOOL_FLAGS:
                bools[name] = _parse_bool(name, value) if eq else True
            else:
                bools[name[2:]] = False
            continue
        if name not in _STRING_FLAGS and name not in _INT_FLAGS:
            raise UsageError(f"ERROR: unknown command line flag '{name}'")
        if not eq:
            if i >= len(args):
                raise UsageError(f"ERROR: flag '{arg}' is missing its argument")
            value = args[i]
            i += 1
        values[name] = value
    flags = RunnerFlags()
    for name, value in values.items():
        if name in _INT_FLAGS:
            try:
                number = int(value, 0)
            except ValueError:
                raise UsageError(
                    f"ERROR: illegal value '{value}' specified for int32 flag '{name}'"
                ) from None
            if name == "num_executions":
                if number < 0:
                    raise UsageError(f"ERROR: illegal value '{value}' specified for uint32 flag '{name}'")
                flags.num_executions = number
        elif name == "inputs":
            flags.inputs = [part for part in value.split(",") if part]
        elif name in ("model_path", "output_file", "method_name"):
            setattr(flags, name, value)
        elif name == "print_output":
            if value not in ("none", "summary", "all"):
                raise UsageError(f"ERROR: --print_output must be none, summary or all, not '{value}'")
            flags.print_output = value
    if bools.get("print_all_output"):
        flags.print_output = "all"
    if bools.get("server_mode"):
        raise UsageError(
            "ERROR: --server_mode is not emulated by the simulator; run one invocation per input"
        )
    return flags


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


class EtLog:
    """ET_LOG on Linux: ``%c %02u:%02u:%02u.%06lu executorch:%s:%zu] %s`` to stderr, time since program
    start; messages cut at ``MAX_LOG_MESSAGE`` characters as ExecuTorch does. Shared by every emulated runner."""

    def __init__(self, ctx: guest_programs.GuestContext) -> None:
        self.ctx = ctx
        self.start = ctx.now()

    def prefix(self, level: str, source: str, line: int) -> str:
        micros = max(0, round((self.ctx.now() - self.start) * 1e6))
        seconds, us = divmod(micros, 1_000_000)
        minutes, ss = divmod(seconds, 60)
        hh, mm = divmod(minutes, 60)
        return f"{level} {hh:02d}:{mm:02d}:{ss:02d}.{us:06d} executorch:{source}:{line}] "

    def line(self, level: str, source: str, line: int, message: str) -> str:
        return self.prefix(level, source, line) + message[:MAX_LOG_MESSAGE] + "\n"

    def __call__(self, level: str, source: str, line: int, message: str) -> None:
        self.ctx.stderr(self.line(level, source, line, message))


def _format_tensor(values: np.ndarray, shape: Sequence[int], mode: str) -> str:
    items = [str(int(v)) for v in values.reshape(-1)]
    if mode == "summary" and len(items) > 6:
        items = [*items[:3], "...", *items[-3:]]
    return f"tensor(sizes=[{', '.join(map(str, shape))}], [{', '.join(items)}])"


def _mismatch(model: CompiledModel, npu_macs: int) -> str | None:
    if model.num_macs == npu_macs:
        return None
    return (
        f"network compiled for ethos-u85-{model.num_macs} ({model.num_macs} MACs) but the NPU is "
        f"ethos-u85-{npu_macs} ({npu_macs} MACs): recompile the model for this configuration "
        f"(fvp-harness sim model --macs {npu_macs}) or run with -C host.ethosu.num_macs={model.num_macs}"
    )


def _refuse_config_mismatch(model: CompiledModel, npu_macs: int, log: EtLog, abort: RunnerAbort) -> None:
    """The driver refuses a command stream compiled for another NPU configuration: log its error, then ``abort``
    as the runner does at that point (the reuse build at method load, the per-inference build at its first run)."""
    mismatch = _mismatch(model, npu_macs)
    if mismatch:
        log("E", BACKEND_SRC, 197, f"Ethos-U Linux driver invocation failed: {mismatch}")
        raise abort


def _load_model(ctx: guest_programs.GuestContext, log: EtLog, path: str) -> tuple[CompiledModel, int]:
    try:
        data = ctx.read_file(path)
    except FileNotFoundError:
        log("E", LOADER_SRC, 82, f"open({path}) failed: No such file or directory")
        raise RunnerAbort(RUNNER_SRC, 165, "loader.ok()", "FileDataLoader::from() failed: 0x22") from None
    except IsADirectoryError:
        log("E", LOADER_SRC, 82, f"open({path}) failed: Is a directory")
        raise RunnerAbort(RUNNER_SRC, 165, "loader.ok()", "FileDataLoader::from() failed: 0x22") from None
    except PermissionError:
        log("E", LOADER_SRC, 82, f"open({path}) failed: Permission denied")
        raise RunnerAbort(RUNNER_SRC, 165, "loader.ok()", "FileDataLoader::from() failed: 0x22") from None
    log("I", RUNNER_SRC, 172, f"Model file {path} is loaded.")
    head = data[:64]
    if is_pte(head):
        log(
            "E",
            RUNNER_SRC,
            176,
            f"{path} is a real ExecuTorch program ({head[4:8].decode('ascii', 'replace')}): "
            f"this simulated executor_runner runs only simulator model files (magic "
            f"{MODEL_MAGIC.decode()}); make one with 'fvp-harness sim model NAME -o FILE'",
        )
        raise RunnerAbort(RUNNER_SRC, 177, "program.ok()", "Program::load() failed: 0x23")
    if not is_model_file(head):
        shown = head[4:8].decode("ascii", "replace") if len(head) >= 8 else head.decode("ascii", "replace")
        log(
            "E",
            RUNNER_SRC,
            176,
            f"Program identifier '{shown}' != expected 'ET12': {path} is neither an "
            f"ExecuTorch program nor a simulator model file (magic {MODEL_MAGIC.decode()})",
        )
        raise RunnerAbort(RUNNER_SRC, 177, "program.ok()", "Program::load() failed: 0x23")
    try:
        model = decode_model(data)
    except (ModelFileError, KeyError, ValueError, TypeError) as exc:
        log("E", RUNNER_SRC, 176, f"{path}: {exc}")
        raise RunnerAbort(RUNNER_SRC, 177, "program.ok()", "Program::load() failed: 0x23") from None
    return model, len(data)


def _read_inputs(
    ctx: guest_programs.GuestContext, log: EtLog, flags: RunnerFlags, model: CompiledModel
) -> np.ndarray:
    need = model.sizes.input
    if not flags.inputs:
        return np.ones(model.arch.input_shape, dtype=np.int8)
    if len(flags.inputs) != 1:
        log(
            "E",
            RUNNER_SRC,
            258,
            f"{len(flags.inputs)} input files given, method {flags.method_name} has 1 input",
        )
        raise RunnerAbort(RUNNER_SRC, 259, "inputs.ok()", "Could not prepare inputs: 0x12")
    path = flags.inputs[0]
    try:
        data = ctx.read_file(path)
    except OSError as exc:
        log("E", RUNNER_SRC, 258, f"Could not read input file {path}: {exc.strerror or exc}")
        raise RunnerAbort(RUNNER_SRC, 259, "inputs.ok()", "Could not prepare inputs: 0x22") from None
    if len(data) != need:
        log(
            "E",
            RUNNER_SRC,
            258,
            f"Input file {path} has {len(data)} bytes; input 0 "
            f"(int8 {list((1, *model.arch.input_shape))}) needs {need}",
        )
        raise RunnerAbort(RUNNER_SRC, 259, "inputs.ok()", "Could not prepare inputs: 0x12")
    return np.frombuffer(data, dtype=np.int8).reshape(model.arch.input_shape)


def _run(ctx: guest_programs.GuestContext, log: EtLog) -> int:
    artifact = _artifact(ctx)
    faults = parse_faults(ctx.knobs.get("runner_fault") or artifact.fault)
    noise = _noise_from_knobs(ctx.knobs)
    flags = parse_flags(ctx.argv[1:])
    rng = np.random.default_rng(
        [noise.seed, next(_invocations), zlib.crc32(f"{artifact.driver}\0{artifact.build_id}".encode())]
    )
    clock_hz = _clock_hz(ctx)

    def spend(seconds: float, cpu_seconds: float) -> None:
        ctx.advance(seconds, max(1, int(cpu_seconds * clock_hz)))

    def noisy(ms: float) -> float:
        factor = max(0.5, 1.0 + noise.jitter * rng.standard_normal()) * (1.0 + noise.drift * ctx.now())
        outlier = rng.uniform(0.2, 1.5) if rng.random() < noise.outlier_rate else 0.0
        return ms * factor + outlier

    log("I", RUNNER_SRC, 60, f"executor_runner build id: {artifact.build_id or 'unset'}")
    model, file_bytes = _load_model(ctx, log, flags.model_path)
    log("I", RUNNER_SRC, 181, f"Using method {flags.method_name}")
    if flags.method_name != "forward":
        log(
            "E",
            RUNNER_SRC,
            185,
            f"Method {flags.method_name} not found in {flags.model_path} (methods: forward)",
        )
        raise RunnerAbort(
            RUNNER_SRC,
            186,
            "method_meta.ok()",
            f"Could not get method metadata for {flags.method_name}: 0x20",
        )
    sizes = DriverSizes.from_mapping(model.sizes.to_dict())
    log("I", RUNNER_SRC, 218, f"Setting up planned buffer 0, size {model.sizes.scratch}.")
    load_ms = LOAD_BASE_MS + LOAD_US_PER_KIB * file_bytes / 1024.0 / 1000.0
    if artifact.driver == "reuse":
        # the driver-reuse build creates the network and every buffer once, at method init
        _refuse_config_mismatch(
            model, ctx.npu_macs, log,
            RunnerAbort(RUNNER_SRC, 241, "method.ok()",
                        f"Loading of method {flags.method_name} failed with status 0x30"),
        )
        load_ms += DRIVER_COSTS.setup_ms(sizes)
    load_ms = noisy(load_ms)
    spend(load_ms / 1000.0, load_ms / 1000.0)
    log("I", RUNNER_SRC, 243, "Method loaded.")
    log("I", RUNNER_SRC, 250, f"Model loaded in {load_ms:f} ms.")
    x = _read_inputs(ctx, log, flags, model)
    log("I", RUNNER_SRC, 262, "Inputs prepared.")

    cycles = inference_cycles(model.arch.layers, model.schedule, model.num_macs)
    npu_ms = cycles / NPU_CLOCK_HZ * 1000.0
    cpu_model_ms = DRIVER_COSTS.execute_ms(sizes, artifact.driver)
    n = flags.num_executions
    total_ms = 0.0
    output: np.ndarray | None = None
    for i in range(n):
        ctx.check_interrupt()
        if faults.crash is not None and i >= faults.crash:
            ctx.stderr("Segmentation fault\n")
            return EXIT_SEGV
        if faults.hang is not None and i >= faults.hang:
            _hang(ctx)
        if faults.truncate is not None and i >= faults.truncate:
            cut = log.line("I", BACKEND_SRC, 284, f"Ethos-U Linux delegate cycle counter: {cycles}")
            ctx.stderr(cut[: len(cut) // 2])
            return 0
        if artifact.driver == "per-inference":
            _refuse_config_mismatch(
                model, ctx.npu_macs, log,
                RunnerAbort(RUNNER_SRC, 283, "status == Error::Ok",
                            f"Execution of method {flags.method_name} failed with status 0x1"),
            )
        if faults.timeout is not None and i >= faults.timeout:
            spend(NPU_TIMEOUT_NS / 1e9, 0.001)
            log("E", BACKEND_SRC, 276, f"Ethos-U inference timed out after {NPU_TIMEOUT_NS} ns")
            raise RunnerAbort(
                RUNNER_SRC,
                283,
                "status == Error::Ok",
                f"Execution of method {flags.method_name} failed with status 0x1",
            )
        output = run_model(model.arch, model.quant, x)
        cpu_ms = noisy(cpu_model_ms)
        iteration_ms = cpu_ms + npu_ms + RUNNER_OVERHEAD_MS
        spend(iteration_ms / 1000.0, cpu_ms / 1000.0)
        log("I", BACKEND_SRC, 284, f"Ethos-U Linux delegate cycle counter: {cycles}")
        log("I", BACKEND_SRC, 291, f"EthosUBackend::execute() CPU time: {cpu_ms:.3f} ms")
        log("I", RUNNER_SRC, 288, f"Iteration {i + 1} of {n}: {iteration_ms:f} ms")
        total_ms += iteration_ms
    log("I", RUNNER_SRC, 296, f"Model executed successfully {n} time(s) in {total_ms:f} ms.")
    if output is None:  # --num_executions=0: the method never ran; outputs hold their initial zeros
        output = np.zeros(model.arch.output_shape, dtype=np.int8)
    log("I", RUNNER_SRC, 301, "1 outputs: ")
    shape = [1, *model.arch.output_shape]
    if flags.print_output != "none":
        ctx.stdout(f"Output 0: {_format_tensor(output, shape, flags.print_output)}\n")
    if flags.output_file:
        ctx.write_file(f"{flags.output_file}-0.bin", output.astype(np.int8).tobytes())
    return 0


def _artifact(ctx: guest_programs.GuestContext) -> RunnerArtifact:
    try:
        return decode_runner(ctx.read_file(ctx.argv[0]))
    except (OSError, ModelFileError) as exc:
        raise UsageError(f"{ctx.argv[0]}: cannot read the runner build: {exc}") from None


def _clock_hz(ctx: guest_programs.GuestContext) -> float:
    try:
        return float(ctx.params.get("host.cpu0.clock_hz", "100000000"))
    except ValueError:
        return 100e6


def _hang(ctx: guest_programs.GuestContext) -> None:
    """The injected hang: never returns; only an interrupt (Ctrl-C, closed channel, model stop) ends it."""
    while True:
        ctx.check_interrupt()
        time.sleep(0.02)


def run_as_main(ctx: guest_programs.GuestContext, run: Callable[[guest_programs.GuestContext, EtLog], int]) -> int:
    """``main()`` of an emulated runner around ``run(ctx, log)``: a ``UsageError`` is printed with exit status 1,
    a failed ET_CHECK (``RunnerAbort``) logs its Fatal line and "Aborted" with status 134."""
    log = EtLog(ctx)
    try:
        return run(ctx, log)
    except UsageError as exc:
        ctx.stderr(f"{exc}\n")
        return EXIT_USAGE
    except RunnerAbort as exc:
        log("F", exc.source, exc.line, f"In function main(), assert failed ({exc.condition}): {exc.message}")
        ctx.stderr("Aborted\n")
        return EXIT_ABORT


def executor_runner(ctx: guest_programs.GuestContext) -> int:
    """The guest program: run as the real Linux executor_runner would, return its exit status."""
    return run_as_main(ctx, _run)


guest_programs.register_program(is_runner, executor_runner)
