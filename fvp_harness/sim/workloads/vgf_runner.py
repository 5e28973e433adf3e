"""The emulated VGF ``executor_runner`` with the (not upstream) benchmark mode: ``--vgf_perf_json``,
zero-copy I/O.

Its cost model (copies, imports, binding refreshes, execution), the artifact that runs in the guest
and on this host, and its command line: docs/vgf.md, "The simulator's VGF runner".
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import shlex
import sys
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from fvp_harness.sim.guest import programs
from fvp_harness.sim.networks.inference import run_model
from fvp_harness.sim.networks.magic import VGF_MAGIC, is_vgf_runner
from fvp_harness.sim.networks.modelfile import CompiledModel, ModelFileError
from fvp_harness.sim.workloads.executor_runner import (
    EXIT_USAGE,
    EtLog,
    FlagSpec,
    Run,
    RunnerFlags,
    UsageError,
    executor_main,
    run_as_main,
)

__all__ = [
    "KNOB_RANGES",
    "REJECT_CHOICES",
    "VGF_MAGIC",
    "CostModel",
    "HostContext",
    "VgfArtifact",
    "add_tool_parser",
    "artifact_info",
    "decode_artifact",
    "executor_runner_vgf",
    "host_main",
    "is_vgf_runner",
    "knob_value",
    "make_artifact",
    "make_tool_artifact",
]

REPORT_FORMAT = "executorch-vgf-perf"
REPORT_FORMAT_VERSION = 1
VGF_SRC = "VGFBackend.cpp"
PAGE = 4096
DEVICE = {
    "vendor_id": 0x13B5,  # Arm
    "device_id": 0xC0DE0001,
    "api_version": (1 << 22) | (3 << 12) | 275,  # VK_MAKE_API_VERSION(0, 1, 3, 275)
    "driver_version": "1.0.0",
    "device_name": "FVP-sim VGF emulation device",
    "driver_name": "fvp-sim-vgf",
    "driver_info": "emulated by the fvp-harness simulator (cost model, not a GPU)",
}
_invocations = itertools.count()


@dataclass(frozen=True)
class CostModel:
    """The constants of the cost model (module docstring). Host-side work (copies, imports,
    descriptor updates) is counted in CPU cycles at the simulated CPU clock (``host.cpu0.clock_hz``,
    100 MHz by default, as the A/B runner uses), because on an FVP the CPU is what is slow; the VGF
    execution runs at the device's own rate."""

    clock_hz: float = 100e6
    dispatch_ns: float = 35_000.0
    submit_ns: float = 12_000.0
    gmacs: float = 60.0
    """Effective device throughput, 10^9 MACs per second (= MACs per ns)."""
    memcpy_fixed_cycles: float = 25.0
    copy_bytes_per_cycle: float = 1.0
    """Writing inputs into write-combined staging memory."""
    readback_bytes_per_cycle: float = 0.25
    """Reading outputs back from uncached device-visible memory."""
    import_fixed_cycles: float = 600.0
    import_cycles_per_page: float = 40.0
    binding_fixed_cycles: float = 120.0
    binding_cycles_per_buffer: float = 40.0
    runner_overhead_ns: float = 15_000.0
    init_ns: float = 3_000_000.0
    """Method load: pipeline and descriptor-set creation."""

    def cycles_ns(self, cycles: float) -> float:
        return cycles / self.clock_hz * 1e9

    def execute_ns(self, macs: int) -> float:
        return self.dispatch_ns + macs / self.gmacs

    def copy_ns(self, nbytes: int, readback: bool) -> float:
        if not nbytes:
            return 0.0
        rate = self.readback_bytes_per_cycle if readback else self.copy_bytes_per_cycle
        return self.cycles_ns(self.memcpy_fixed_cycles + nbytes / rate)

    def import_ns(self, nbytes: int) -> float:
        return self.cycles_ns(self.import_fixed_cycles + self.import_cycles_per_page
                              * math.ceil(nbytes / PAGE))

    def binding_ns(self, buffers: int) -> float:
        if not buffers:
            return 0.0
        return self.cycles_ns(self.binding_fixed_cycles + self.binding_cycles_per_buffer * buffers)


# --- the artifact ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class VgfArtifact:
    """A "build" of the VGF runner: identity text, and whether it was built with
    EXECUTORCH_VGF_IO_STATS."""

    build_id: str = ""
    io_stats: bool = True


def make_artifact(artifact: VgfArtifact, python: str | None = None) -> bytes:
    """The artifact's bytes. ``python`` (default: this interpreter) runs it on a host target."""
    info = json.dumps(
        {"format": "fvp-sim-vgf-runner", "id": artifact.build_id, "io_stats": artifact.io_stats},
        sort_keys=True
    )
    interpreter = shlex.quote(python or sys.executable)
    return VGF_MAGIC + info.encode() + b"\n" + (f'exec {interpreter} -m fvp_harness.sim.vgf_runner '
                                                '"$0" "$@"\n').encode()


def decode_artifact(data: bytes) -> VgfArtifact:
    if not is_vgf_runner(data):
        raise ModelFileError("not a simulator VGF runner artifact (no '# FVPSIMVG' line)")
    line = data[len(VGF_MAGIC) :].split(b"\n", 1)[0]
    try:
        info = json.loads(line)
        return VgfArtifact(str(info.get("id", "")), bool(info.get("io_stats", True)))
    except (ValueError, AttributeError) as exc:
        raise ModelFileError(f"VGF runner artifact is corrupt: {exc}") from exc


def add_tool_parser(sub: Any) -> None:
    """``sim vgf-runner``: the sub-command ``tools.build_parser`` adds (kept here, next to the
    format it writes)."""
    parser = sub.add_parser(
        "vgf-runner",
        help="an emulated executor_runner with the VGF benchmark mode (--vgf_perf_json, "
             "ET_VGF_ZERO_COPY)",
        description="Write an emulated executor_runner built with EXECUTORCH_VGF_IO_STATS=ON. It "
                    "runs in the "
        "simulated guest and, as a shell script, on this host (target: host).",
    )
    parser.add_argument(
        "--build-id",
        "--id",
        default="",
        dest="build_id",
        metavar="TEXT",
        help="add the line 'executor_runner build id: TEXT' after flag parsing (not upstream); "
             "--id: older spelling",
    )
    parser.add_argument(
        "--no-io-stats",
        dest="io_stats",
        action="store_false",
        help="a build without EXECUTORCH_VGF_IO_STATS: --vgf_perf_json is then an unknown flag",
    )
    parser.add_argument("-o", "--output", required=True, type=Path, help="file to write")


def make_tool_artifact(args: Any, out: Any) -> int:
    """Handle ``sim vgf-runner``: write the artifact atomically (executable) and say what it is."""
    data = make_artifact(VgfArtifact(args.build_id, args.io_stats))
    path: Path = args.output
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    tmp.chmod(0o755)
    tmp.replace(path)
    stats = "with" if args.io_stats else "without"
    out.write(f"{path}: executor_runner build with the VGF backend ({stats} IO stats, id "
              f"{args.build_id or 'unset'}), {len(data)} bytes\n")  # fmt: skip
    return 0


def artifact_info(path: Path, data: bytes) -> dict[str, object]:
    """What ``sim info`` shows for a VGF runner artifact."""
    artifact = decode_artifact(data)
    return {"file": str(path), "kind": "vgf-runner", "id": artifact.build_id,
            "io_stats": artifact.io_stats}


# --- the program ----------------------------------------------------------------------------------


def _env_int(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name, "")
    if not text.strip():
        return default
    try:
        value = int(text, 0)
    except ValueError:
        raise UsageError(f"ERROR: {name}={text!r} is not a whole number") from None
    if value < 0:
        raise UsageError(f"ERROR: {name}={text!r} must not be negative")
    return value


KNOB_RANGES: dict[str, tuple[float, float]] = {
    "vgf_gmacs": (0.01, 1e6),
    "vgf_copy_bytes_per_cycle": (0.001, 1e3),
    "vgf_readback_bytes_per_cycle": (0.001, 1e3),
    "vgf_import_cache": (0, 1),
    "vgf_import_alignment": (1, 1 << 20),
    "runner_jitter": (0.0, 0.5),
    "runner_outlier_rate": (0.0, 1.0),
}
"""The numeric knobs this runner reads and the range of each."""

REJECT_CHOICES = ("", "none", "input", "output", "all")
"""What the ``vgf_reject`` knob takes."""


def knob_value(knobs: Mapping[str, str], name: str, default: float) -> float:
    """The numeric knob ``name`` (``KNOB_RANGES``), or ``default`` when not given; UsageError when
    out of range."""
    low, high = KNOB_RANGES[name]
    text = knobs.get(name, "")
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"knob {name}: {text!r} is not a number") from None
    if not low <= value <= high:
        raise UsageError(f"knob {name}: {value} is outside {low}..{high}")
    return value


def _zero_copy(env: Mapping[str, str]) -> bool:
    text = env.get("ET_VGF_ZERO_COPY", "0").strip().lower()
    if text in ("1", "true", "on", "yes"):
        return True
    if text in ("", "0", "false", "off", "no"):
        return False
    raise UsageError(f"ERROR: ET_VGF_ZERO_COPY={text!r}: expected 0 or 1")


@dataclass(frozen=True)
class _Buffer:
    name: str
    direction: str
    nbytes: int
    rejection: str | None


def _buffers(model: CompiledModel, knobs: Mapping[str, str], zero_copy: bool) -> list[_Buffer]:
    reject = (knobs.get("vgf_reject") or "").strip().lower()
    if reject not in REJECT_CHOICES:
        raise UsageError(f"knob vgf_reject: {reject!r}: expected input, output, all or none")
    alignment = int(knob_value(knobs, "vgf_import_alignment", 1))
    out = []
    for name, direction, nbytes in (("input0", "input", model.sizes.input),
                                    ("output0", "output", model.sizes.output)):
        reason = None
        if zero_copy:
            if reject in (direction, "all"):
                reason = (
                    f"vkGetMemoryHostPointerPropertiesEXT refused the {direction} tensor's host "
                    "pointer (VK_ERROR_INVALID_EXTERNAL_HANDLE): memory type not importable"
                )
            elif nbytes % alignment:
                reason = (
                    f"size {nbytes} B is not a multiple of minImportedHostPointerAlignment "
                    f"({alignment} B): cannot import as host memory"
                )
        out.append(_Buffer(name, direction, nbytes, reason))
    return out


PERF_FLAG = FlagSpec(
    "vgf_perf_json", "string", "",
    "Write the VGF benchmark report (per-execute records) to this JSON file."
)
"""The benchmark mode's flag: not upstream (an open change), defined only in builds with IO
stats."""


class _Vgf:
    """VGFBackend (backends/arm/runtime/VGFBackend.cpp) plus the benchmark mode (not upstream): the
    cost model, the per-execute records, the report."""

    backend_id = "VgfBackend"
    registered = True  # the VGF runner is built with its backend

    def __init__(self, ctx: programs.GuestContext, artifact: VgfArtifact) -> None:
        self.artifact = artifact
        self.zero_copy = _zero_copy(ctx.env)
        self.warmup_env = _env_int(ctx.env, "ET_VGF_WARMUP", 20)
        self.measured_env = _env_int(ctx.env, "ET_VGF_ITERATIONS", 200)
        try:
            clock_hz = float(ctx.params.get("host.cpu0.clock_hz", CostModel.clock_hz))
        except ValueError:
            clock_hz = CostModel.clock_hz
        knobs = ctx.knobs
        self.costs = CostModel(
            clock_hz=clock_hz if clock_hz > 0 else CostModel.clock_hz,
            gmacs=knob_value(knobs, "vgf_gmacs", CostModel.gmacs),
            copy_bytes_per_cycle=knob_value(
                knobs, "vgf_copy_bytes_per_cycle", CostModel.copy_bytes_per_cycle
            ),
            readback_bytes_per_cycle=knob_value(
                knobs, "vgf_readback_bytes_per_cycle", CostModel.readback_bytes_per_cycle
            ),
        )
        self.cache = knob_value(knobs, "vgf_import_cache", 0) >= 1
        self.jitter = knob_value(knobs, "runner_jitter", 0.01)
        self.outlier_rate = knob_value(knobs, "runner_outlier_rate", 0.002)
        seed_text = knobs.get("runner_seed") or knobs.get("seed") or "0"
        try:
            seed = int(seed_text, 0)
        except ValueError:
            seed = zlib.crc32(seed_text.encode())
        self.rng = np.random.default_rng(
            [seed & 0xFFFFFFFF, next(_invocations),
             zlib.crc32(f"vgf\0{artifact.build_id}".encode())]
        )
        self.perf_path: str | None = None
        self.warmup = self.measured = 0
        self.records: list[dict[str, Any]] = []
        self.imported_once = False
        self.output: np.ndarray | None = None
        self.buffers: list[_Buffer] = []
        self.handle = ""

    def noisy(self, ns: float, outliers: bool = False) -> float:
        if ns <= 0:
            return 0.0
        value = ns * max(0.5, 1.0 + self.jitter * self.rng.standard_normal())
        if outliers and self.rng.random() < self.outlier_rate:
            value += self.rng.uniform(20_000, 150_000)
        return float(round(value))

    def _configure(self, flags: RunnerFlags) -> None:
        perf = flags.other.get("vgf_perf_json")
        self.perf_path = str(perf) if perf is not None else None
        warmup, measured = self.warmup_env, self.measured_env
        if "num_executions" in flags.explicit:
            total = flags.num_executions
            warmup = warmup if total > warmup else 0
            measured = total - warmup
        elif self.perf_path is None:
            warmup, measured = 0, flags.num_executions
        self.warmup, self.measured = warmup, measured

    def executions(self, flags: RunnerFlags) -> int:
        return self.warmup + self.measured

    def load_program(self, run: Run) -> None:
        return None

    def init(self, run: Run) -> None:
        log, sites, model = run.log, run.sites, run.compiled
        self._configure(run.flags)
        log.at("I", sites["vgf_available"], "Checking VGFBackend is available")
        # once in ensure_initialized() ...
        log.at("I", sites["vgf_extensions"], "VKML Extensions loaded")
        # ... once more in is_available()
        log.at("I", sites["vgf_extensions"], "VKML Extensions loaded")
        log.at("I", sites["vgf_init"], "Entered VGF init")
        self.buffers = _buffers(model, run.ctx.knobs, self.zero_copy)
        if self.perf_path is not None:  # the benchmark mode's own lines (not upstream)
            log("I", VGF_SRC, 112,
                f"VGF device: {DEVICE['device_name']} (vendor 0x{DEVICE['vendor_id']:04x}, "
                "Vulkan 1.3.275)")  # fmt: skip
            log("I", VGF_SRC, 140, f"VGF I/O: {'zero-copy' if self.zero_copy else 'copy'} "
                f"(ET_VGF_ZERO_COPY={int(self.zero_copy)})")  # fmt: skip
            for buffer in self.buffers:
                if buffer.rejection:
                    log("W", VGF_SRC, 233,
                        f"VGF zero-copy rejected {buffer.name}: {buffer.rejection}; "
                        "falling back to copy")  # fmt: skip
        self.handle = f"0x{zlib.crc32(f'{run.flags.model_path}'.encode()) & 0xFFFF:04x}0"
        load_ns = self.noisy(self.costs.init_ns + 900.0 * model.sizes.weights / 1024)
        run.spend(load_ns / 1e9)

    def execute(self, run: Run, index: int, total: int, x: np.ndarray) -> np.ndarray:
        log, sites, model = run.log, run.sites, run.compiled
        log.at("I", sites["vgf_execute"], "VGF execute: args=2 IOs=2 inputs=1 outputs=1")
        log.at("I", sites["vgf_copy_input"], "Copy input IO[0] -> args[0]")
        cached = self.cache and self.imported_once
        rec = _execute(self.costs, self.buffers, model.arch.macs, self.zero_copy, cached,
                       self.noisy)
        self.imported_once = self.imported_once or rec["imports"] > 0
        rec["delegate_handle"] = self.handle
        run.spend(rec["latency_ns"] / 1e9)
        log.at("I", sites["vgf_copy_output"], "Copy output IO[1] -> args[1]")
        if index >= self.warmup:
            self.records.append({"iteration": index - self.warmup, **rec})
        if self.output is None:  # the same input every execution: compute the result once
            self.output = run_model(model.arch, model.quant, x)
        return self.output

    def after_executions(self, run: Run) -> None:
        if self.perf_path is None:
            return
        report = _report(run.compiled, run.flags.model_path, self.zero_copy, self.warmup,
                         self.measured, self.buffers, self.records, self.handle)  # fmt: skip
        run.ctx.write_file(self.perf_path, (json.dumps(report, indent=1) + "\n").encode())
        run.log("I", VGF_SRC, 412,
                f"VGF perf report written to {self.perf_path} ({self.measured} measured, "
                f"{self.warmup} warmup)")  # fmt: skip


def _run(ctx: programs.GuestContext, log: EtLog) -> int:
    artifact = _artifact(ctx)
    delegate = _Vgf(ctx, artifact)
    extra = (PERF_FLAG,) if artifact.io_stats else ()
    return executor_main(ctx, log, delegate, build_id=artifact.build_id, extra_specs=extra)


def _execute(
    costs: CostModel, buffers: list[_Buffer], macs: int, zero_copy: bool, cached: bool, noisy: Any
) -> dict[str, Any]:
    """One delegate execute(): the record the runtime keeps, plus the iteration's latency."""
    rec: dict[str, Any] = dict.fromkeys(
        ("in_copy_bytes", "out_copy_bytes", "in_memcpy_ns", "out_memcpy_ns", "imports", "import_ns",
         "binding_refresh_ns", "in_zero_copy_bytes", "out_zero_copy_bytes", "fallback_count",
         "rejection_count"),
        0,
    )  # fmt: skip
    bound = 0
    for buffer in buffers:
        side = "in" if buffer.direction == "input" else "out"
        if zero_copy and buffer.rejection is None:
            rec[f"{side}_zero_copy_bytes"] += buffer.nbytes
            bound += 1
            if not cached:
                rec["imports"] += 1
                rec["import_ns"] += noisy(costs.import_ns(buffer.nbytes))
        else:
            if zero_copy:
                rec["fallback_count"] += 1
                rec["rejection_count"] += 1
            rec[f"{side}_copy_bytes"] += buffer.nbytes
            rec[f"{side}_memcpy_ns"] += noisy(costs.copy_ns(buffer.nbytes, readback=side == "out"))
    rec["binding_refresh_ns"] = noisy(costs.binding_ns(bound))
    execute = noisy(costs.execute_ns(macs), outliers=True)
    rec["execute_ns"] = execute
    rec["submit_wait_ns"] = execute + noisy(costs.submit_ns)
    rec["success"] = True
    boundary = rec["in_memcpy_ns"] + rec["out_memcpy_ns"] + rec["import_ns"] + rec[
        "binding_refresh_ns"]
    rec["latency_ns"] = boundary + rec["submit_wait_ns"] + noisy(costs.runner_overhead_ns)
    for key in rec:
        if key.endswith("_ns"):
            rec[key] = round(rec[key])  # the runtime counts whole nanoseconds
    return rec


def _report(
    model: CompiledModel,
    path: str,
    zero_copy: bool,
    warmup: int,
    measured: int,
    buffers: list[_Buffer],
    records: list[dict[str, Any]],
    handle: str,
) -> dict[str, Any]:
    """The documented default layout (docs/vgf.md)."""
    rejections = [
        {"buffer": b.name, "reason": b.rejection, "count": len(records)}
        for b in buffers if b.rejection is not None
    ]
    return {
        "format": REPORT_FORMAT,
        "format_version": REPORT_FORMAT_VERSION,
        "device": DEVICE,
        "model": {
            "name": model.arch.name,
            "path": path,
            "method": "forward",
            "macs": model.arch.macs,
            "inputs": [
                {"index": 0, "dtype": "int8", "sizes": [1, *model.arch.input_shape],
                 "nbytes": model.sizes.input}
            ],
            "outputs": [
                {"index": 0, "dtype": "int8", "sizes": [1, *model.arch.output_shape],
                 "nbytes": model.sizes.output}
            ],
        },
        "config": {"zero_copy": zero_copy, "warmup": warmup, "iterations": measured},
        "buffers": [
            {
                "name": b.name,
                "direction": b.direction,
                "nbytes": b.nbytes,
                "zero_copy": zero_copy and b.rejection is None,
                "delegate_handle": handle,
            }
            for b in buffers
        ],
        "rejections": rejections,
        "records": records,
    }


def _artifact(ctx: programs.GuestContext) -> VgfArtifact:
    try:
        return decode_artifact(ctx.read_file(ctx.argv[0]))
    except (OSError, ModelFileError) as exc:
        raise UsageError(f"{ctx.argv[0]}: cannot read the runner build: {exc}") from None


def executor_runner_vgf(ctx: programs.GuestContext) -> int:
    """The guest program: run as the VGF-enabled executor_runner would, return its exit status."""
    return run_as_main(ctx, _run)



# --- on this host ---------------------------------------------------------------------------------


class HostContext:
    """``GuestContext`` on this machine (``target: host``): real files and streams, simulated time
    only.

    Time is only counted (no sleeping): the numbers come from the cost model either way, and a host
    run should take as long as the work, not as long as the simulated GPU.
    """

    def __init__(self, argv: list[str], env: Mapping[str, str] | None = None,
                 cwd: str | None = None) -> None:
        env = dict(os.environ if env is None else env)
        self.argv = list(argv)
        self.env: Mapping[str, str] = MappingProxyType(env)
        self.cwd = cwd or os.getcwd()
        self.params: Mapping[str, str] = MappingProxyType({})
        self.knobs: Mapping[str, str] = MappingProxyType(
            {k.removeprefix("FVP_SIM_").lower(): v
             for k, v in env.items() if k.startswith("FVP_SIM_")}
        )
        self.npu_macs = 256
        self._now = 0.0

    def _path(self, path: str) -> Path:
        return Path(self.cwd, path)

    def read_file(self, path: str) -> bytes:
        return self._path(path).read_bytes()

    def write_file(self, path: str, data: bytes) -> None:
        self._path(path).write_bytes(data)

    def stdout(self, text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    def stderr(self, text: str) -> None:
        sys.stderr.write(text)
        sys.stderr.flush()

    def advance(self, cpu_seconds: float, instructions: int = 0) -> None:
        self._now += cpu_seconds

    def resident(self, size: int) -> None:
        """Nothing reads a host run's resident set (the host's own ``time`` would measure the real
        process)."""

    def now(self) -> float:
        return self._now

    def busy(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()  # this clock only moves by declared work anyway

    def check_interrupt(self) -> None:
        return None


def host_main(argv: Sequence[str] | None = None) -> int:
    """``python -m fvp_harness.sim.vgf_runner ARTIFACT [FLAGS...]``: what the artifact's ``exec``
    line runs."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        sys.stderr.write("usage: python -m fvp_harness.sim.vgf_runner ARTIFACT [executor_runner "
                         "flags]\n")
        return EXIT_USAGE
    return executor_runner_vgf(HostContext(args))

