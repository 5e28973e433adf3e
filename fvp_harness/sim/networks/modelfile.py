"""Our own "compiled model" and "runner build" file formats, and the compiler that produces model
files.

Why our own formats, their layout byte by byte and the compiler's size model:
docs/simulator-workload.md, "File formats".
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fvp_harness.sim.networks.accelerator import Accelerator, Family, parse_accelerator
from fvp_harness.sim.networks.architectures import Architecture, Layer
from fvp_harness.sim.networks.estimate import VelaEstimate
from fvp_harness.sim.networks.inference import (
    LayerQuant,
    float_layer,
    quantize_multiplier,
    window_size,
)
from fvp_harness.sim.networks.magic import RUNNER_LIBCS, RUNNER_MAGIC, is_runner, runner_libc
from fvp_harness.sim.networks.partition import Delegation, delegation_of

__all__ = [
    "DEFAULT_NPU_DEVICE",
    "DRIVER_MODES",
    "LOG_GENERATIONS",
    "MODEL_MAGIC",
    "MODEL_VERSION",
    "RUNNER_MAGIC",
    "RUNNER_VERSION",
    "CompiledModel",
    "LayerSchedule",
    "ModelFileError",
    "RunnerArtifact",
    "Sizes",
    "compile_model",
    "decode_model",
    "decode_runner",
    "encode_model",
    "encode_runner",
    "is_model_file",
    "is_pte",
    "is_runner",
    "make_input",
    "model_file_size",
    "schedule_layers",
    "sizes_of",
]

MODEL_MAGIC = b"FVPSIMMD"
MODEL_VERSION = 1
RUNNER_VERSION = 2
RUNNER_VERSIONS_READ = (1, 2)
DRIVER_MODES = ("per-inference", "reuse")
LOG_GENERATIONS = ("current", "old")
"""Which upstream executor_runner.cpp a runner build follows: ``current`` (pytorch/executorch
cff6f4dd32) or ``old`` (5e8a0df301, the last before 2026-04-10: ``Method loaded.``, no
``Iteration``/``Model loaded in`` lines)."""
CYCLE_COUNTER_SPEC = "ethosu.enable_cycle_counter"
DEFAULT_NPU_DEVICE = "/dev/ethosu0"
"""``LinuxDriverOptions::device_path`` (EthosUBackend_Cortex_A.cpp:44): the
ethos-u-linux-driver-stack's node."""
SUPPORTED_MACS = (128, 256, 512, 1024, 2048)

_MODEL_HEADER = struct.Struct("<8sHHIII32s8s")  # 64 bytes
_RUNNER_HEADER = struct.Struct("<8sHHI")  # 16 bytes

# compiler size model (see the module docstring)
WEIGHT_EXPANSION = 1.15
SCALE_RECORD_BYTES = 10
COMMAND_STREAM_HEADER = 16
CMD0_BASE, CMD0_PER_EXTRA_IFM = 28, 12
CMD1_BASE, CMD1_PER_IFM = 11, 9
CMD1_PER_DEPTH_SLICE, DEPTH_SLICE = 6, 16
RANGE_HEADROOM = 1.25
"""Calibrated activation ranges are widened by this factor so inputs other than the calibration ones
rarely clip."""
CALIBRATION_SAMPLES = 4
"""Seeded inputs the activation ranges are measured on (inputs seed+1 .. seed+4)."""

INPUT_SCALE = 1.0 / 128.0
"""Inputs are int8 with zero point 0 covering [-1, 1): the runner's raw input files are these int8
bytes."""


class ModelFileError(ValueError):
    """A file is not a valid simulator model or runner file (bad magic, version, truncated,
    corrupt)."""


def _align(n: int, to: int = 16) -> int:
    return (n + to - 1) // to * to


@dataclass(frozen=True)
class LayerSchedule:
    """What the "compiler" decided for one layer: the NPU operation and the bytes it occupies."""

    npu_op: str
    commands: int
    command_bytes: int
    encoded_weight_bytes: int
    depth_slices: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "npu_op": self.npu_op,
            "commands": self.commands,
            "command_bytes": self.command_bytes,
            "encoded_weight_bytes": self.encoded_weight_bytes,
            "depth_slices": self.depth_slices,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LayerSchedule:
        return cls(
            str(data["npu_op"]),
            int(data["commands"]),
            int(data["command_bytes"]),
            int(data["encoded_weight_bytes"]),
            int(data["depth_slices"]),
        )


@dataclass(frozen=True)
class Sizes:
    """Byte sizes of a compiled program: what the Linux driver allocates, copies and zeroes per
    object."""

    command_stream: int
    weights: int
    scratch: int
    input: int
    output: int

    def to_dict(self) -> dict[str, int]:
        return {
            "command_stream": self.command_stream,
            "weights": self.weights,
            "scratch": self.scratch,
            "input": self.input,
            "output": self.output,
        }


_NPU_OPS = {
    "conv": "NpuConv2D",
    "depthwise": "NpuConvDepthWise",
    "fc": "NpuConv2D(fully connected)",
    "add": "NpuElementWise(ADD)",
    "avgpool": "NpuPooling(AVG)",
}


def _schedule_layer(layer: Layer) -> LayerSchedule:
    encoded = 0
    if layer.n_weights:
        encoded = _align(
            math.ceil(layer.n_weights * WEIGHT_EXPANSION) + SCALE_RECORD_BYTES * layer.out_channels
        )
    n_ifm = len(layer.inputs)
    slices = math.ceil(layer.out_channels / DEPTH_SLICE)
    cmd0 = CMD0_BASE + CMD0_PER_EXTRA_IFM * (n_ifm - 1)
    cmd1 = CMD1_BASE + CMD1_PER_IFM * n_ifm + CMD1_PER_DEPTH_SLICE * slices
    return LayerSchedule(_NPU_OPS[layer.kind], cmd0 + cmd1, 4 * cmd0 + 8 * cmd1, encoded, slices)


def schedule_layers(arch: Architecture) -> list[LayerSchedule]:
    """The per-layer schedule (operation, commands, encoded weights, depth slices) in execution
    order."""
    return [_schedule_layer(layer) for layer in arch.layers]


def _scratch_bytes(arch: Architecture) -> int:
    """Largest live set of intermediate int8 tensors (model input and output excluded: own IFM/OFM
    buffers)."""
    produced = {layer.output: i for i, layer in enumerate(arch.layers)}
    last_use: dict[str, int] = {}
    for i, layer in enumerate(arch.layers):
        for name in layer.inputs:
            last_use[name] = i
    sizes = {layer.output: layer.out_elements for layer in arch.layers}
    peak = 0
    for step in range(len(arch.layers)):
        live = sum(
            size
            for name, size in sizes.items()
            if name != arch.output_name and
            produced[name] <= step <= last_use.get(name, produced[name])
        )
        peak = max(peak, live)
    return peak


def sizes_of(arch: Architecture) -> Sizes:
    """Compiled sizes of a network, from its layers alone."""
    schedule = schedule_layers(arch)
    return Sizes(
        command_stream=COMMAND_STREAM_HEADER + sum(s.command_bytes for s in schedule),
        weights=sum(s.encoded_weight_bytes for s in schedule),
        scratch=_scratch_bytes(arch),
        input=math.prod(arch.input_shape),
        output=math.prod(arch.output_shape),
    )


# --- the "compiler": seeded weights, calibration, quantisation
# ---------------------------------------------------------


@dataclass
class CompiledModel:
    """Everything the emulated runner needs, as held in memory (``encode_model``/``decode_model``
    convert)."""

    arch: Architecture
    seed: int
    num_macs: int
    quant: dict[str, LayerQuant]
    tensors: dict[str, tuple[float, int]]  # name -> (scale, zero_point)
    schedule: list[LayerSchedule]
    sizes: Sizes
    extra: dict[str, Any] = field(default_factory=dict)
    cycle_counter: bool = True
    """The ``ethosu.enable_cycle_counter`` compile spec: the delegate prints its cycle counter per
    inference."""
    family: Family = "ethos-u85"
    """The NPU family compiled for (``num_macs`` is the MAC count); ``accelerator`` joins the
    two."""
    vela: VelaEstimate | None = None
    """Vela's estimate for this model (``npu.vela.estimate_model``); None: ``npu/cycles.py``'s model
    counts."""
    cpu_layers: tuple[str, ...] = ()
    """Layers left on the CPU between Ethos-U partitions (``sim model --partitions``); empty: fully
    delegated."""

    @property
    def delegation(self) -> Delegation:
        """The program's Ethos-U partitions and CPU layers (one partition of every layer when fully
        delegated)."""
        return delegation_of(self.arch, self.cpu_layers)

    @property
    def accelerator(self) -> Accelerator:
        return Accelerator(self.family, self.num_macs)

    @property
    def input_quant(self) -> tuple[float, int]:
        return self.tensors[self.arch.input_name]

    @property
    def output_quant(self) -> tuple[float, int]:
        return self.tensors[self.arch.output_name]


def make_input(arch: Architecture, seed: int = 0) -> np.ndarray:
    """A seeded int8 input of the network's shape (uniform over the int8 range, i.e. [-1, 1) in real
    terms)."""
    rng = np.random.default_rng([seed, 0x1F])
    return rng.integers(-128, 128, size=arch.input_shape, dtype=np.int8)


def _activation_quant(values: np.ndarray) -> tuple[float, int]:
    """Asymmetric int8 (scale, zero point) covering the observed range and 0 (standard post-training
    rule)."""
    lo = min(float(values.min()), 0.0) * RANGE_HEADROOM
    hi = max(float(values.max()), 0.0) * RANGE_HEADROOM
    if hi - lo < 1e-12:
        hi = lo + 1e-6
    scale = (hi - lo) / 255.0
    zero_point = int(np.clip(round(-128 - lo / scale), -128, 127))
    return scale, zero_point


def _clamp(relu: bool, zero_point: int) -> tuple[int, int]:
    return (max(-128, zero_point), 127) if relu else (-128, 127)


def compile_model(
    arch: Architecture,
    seed: int = 0,
    num_macs: int = 256,
    cycle_counter: bool = True,
    accelerator: Accelerator | str | None = None,
    cpu_layers: tuple[str, ...] = (),
) -> CompiledModel:
    """Quantise ``arch`` with seeded weights for an Ethos-U85 with ``num_macs`` MACs, or for
    ``accelerator`` (e.g. ``ethos-u55-128``; it overrides ``num_macs``) (``cycle_counter``: the
    ``ethosu.enable_cycle_counter`` compile spec; ``cpu_layers``: layers left on the CPU between
    Ethos-U partitions, ``partition.choose_cpu_layers``).

    Weights are He-initialised (so activations keep their magnitude through the depth), quantised
    symmetrically per output channel; activation ranges come from float passes over seeded
    calibration inputs (post-training quantisation, as a real flow does with a representative
    dataset).
    """
    if isinstance(accelerator, str):
        accelerator = parse_accelerator(accelerator)
    if accelerator is None:
        if num_macs not in SUPPORTED_MACS:
            raise ValueError(
                f"num_macs {num_macs} is not an Ethos-U85 configuration "
                f"({', '.join(map(str, SUPPORTED_MACS))})"
            )
        accelerator = Accelerator("ethos-u85", num_macs)
    num_macs = accelerator.num_macs
    delegation_of(arch, cpu_layers)  # ValueError for a layer the network does not have
    rng = np.random.default_rng([seed, 0xE7])
    in_scale, in_zp = INPUT_SCALE, 0
    tensors: dict[str, tuple[float, int]] = {arch.input_name: (in_scale, in_zp)}
    samples = [
        make_input(arch, seed + 1 + k).astype(np.float64) * in_scale
        for k in range(CALIBRATION_SAMPLES)
    ]
    floats: dict[str, list[np.ndarray]] = {arch.input_name: samples}
    quant: dict[str, LayerQuant] = {}
    for layer in arch.layers:
        in_q = [tensors[name] for name in layer.inputs]
        w_deq: np.ndarray | None = None
        b_deq: np.ndarray | None = None
        w_q: np.ndarray | None = None
        b_q: np.ndarray | None = None
        w_scale = np.ones(1)
        if layer.weight_shape is not None:
            fan_in = layer.n_weights // layer.out_channels
            w = rng.normal(0.0, math.sqrt(2.0 / fan_in), size=layer.weight_shape)
            b = rng.normal(0.0, 0.05, size=layer.out_channels)
            per_channel = np.abs(w.reshape(layer.out_channels, -1)).max(axis=1)
            w_scale = np.where(per_channel > 0, per_channel / 127.0, 1.0)
            w_q = np.clip(np.round(w / w_scale.reshape(-1, *([1] * (w.ndim - 1)))), -127,
                          127).astype(np.int8)
            bias_scale = in_q[0][0] * w_scale
            b_q = np.round(b / bias_scale).astype(np.int32)
            w_deq = w_q.astype(np.float64) * w_scale.reshape(-1, *([1] * (w.ndim - 1)))
            b_deq = b_q.astype(np.float64) * bias_scale
        outs = [
            float_layer(layer, [floats[name][k] for name in layer.inputs], w_deq, b_deq)
            for k in range(CALIBRATION_SAMPLES)
        ]
        if layer.kind == "avgpool":
            # ExecuTorch's Arm quantizer shares avg_pool's input qparams with its output (an average
            # stays in its input's range), which is also what TFLite's AVERAGE_POOL_2D requires
            # (sim/networks/tflite_export.py)
            out_scale, out_zp = in_q[0]
        else:
            out_scale, out_zp = _activation_quant(np.stack(outs))
        tensors[layer.output] = (out_scale, out_zp)
        floats[layer.output] = outs
        act_min, act_max = _clamp(layer.relu, out_zp)
        in_zps = tuple(zp for _, zp in in_q)
        if layer.kind in ("conv", "depthwise", "fc"):
            m, s = quantize_multiplier(in_q[0][0] * w_scale / out_scale)
            quant[layer.name] = LayerQuant(in_zps, out_zp, act_min, act_max, m, s, w_q, b_q)
        elif layer.kind == "add":
            twice_max = 2.0 * max(in_q[0][0], in_q[1][0])
            im, ishift = quantize_multiplier(np.array([in_q[0][0], in_q[1][0]]) / twice_max)
            m, s = quantize_multiplier(twice_max / ((1 << 20) * out_scale))
            quant[layer.name] = LayerQuant(
                in_zps, out_zp, act_min, act_max, m, s, in_multiplier=im, in_shift=ishift
            )
        else:  # avgpool
            m, s = quantize_multiplier(in_q[0][0] / (out_scale * window_size(layer)))
            quant[layer.name] = LayerQuant(in_zps, out_zp, act_min, act_max, m, s)
    return CompiledModel(
        arch,
        seed,
        num_macs,
        quant,
        tensors,
        schedule_layers(arch),
        sizes_of(arch),
        cycle_counter=cycle_counter,
        family=accelerator.family,
        cpu_layers=tuple(cpu_layers),
    )


# --- encoding
# --------------------------------------------------------------------------------------------------

_ARRAY_FIELDS = ("weights", "bias", "multiplier", "shift", "in_multiplier", "in_shift")
_DTYPES = {"int8": np.int8, "int32": np.int32}


def encode_model(model: CompiledModel) -> bytes:
    """Serialise a compiled model into the documented file format."""
    payload = bytearray()

    def put(array: np.ndarray) -> dict[str, Any]:
        offset = len(payload)
        data = (
            np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        )
        payload.extend(data)
        payload.extend(b"\0" * (_align(len(payload)) - len(payload)))
        return {"offset": offset, "shape": list(array.shape), "dtype": str(array.dtype)}

    arch = model.arch
    layers_json = []
    for layer, sched in zip(arch.layers, model.schedule, strict=True):
        q = model.quant[layer.name]
        arrays = {name: put(getattr(q, name))
                  for name in _ARRAY_FIELDS if getattr(q, name) is not None}
        layers_json.append(
            {
                **layer.to_dict(),
                "quant": {
                    "in_zero_points": list(q.in_zero_points),
                    "out_zero_point": q.out_zero_point,
                    "act_min": q.act_min,
                    "act_max": q.act_max,
                    "arrays": arrays,
                },
                "schedule": sched.to_dict(),
            }
        )
    in_scale, in_zp = model.input_quant
    out_scale, out_zp = model.output_quant
    header = {
        "format": "fvp-sim-model",
        "version": MODEL_VERSION,
        "model": arch.name,
        "description": arch.description,
        "seed": model.seed,
        "npu": {"accelerator": model.accelerator.name, "num_macs": model.num_macs},
        "compile_specs": {CYCLE_COUNTER_SPEC: bool(model.cycle_counter)},
        "input": {
            "name": arch.input_name,
            "shape": [1, *arch.input_shape],
            "dtype": "int8",
            "scale": in_scale,
            "zero_point": in_zp,
            "bytes": model.sizes.input,
        },
        "output": {
            "name": arch.output_name,
            "shape": [1, *arch.output_shape],
            "dtype": "int8",
            "scale": out_scale,
            "zero_point": out_zp,
            "bytes": model.sizes.output,
        },
        "sizes": model.sizes.to_dict(),
        "params": arch.params,
        "macs": arch.macs,
        "tensors": {name: {"scale": s, "zero_point": zp}
                    for name, (s, zp) in model.tensors.items()},
        "layers": layers_json,
    }
    if model.vela is not None:
        header["vela"] = model.vela.to_dict()
    # only then: a fully delegated model's file is what it was before partitions existed
    if model.cpu_layers:
        header["delegation"] = {"cpu_layers": list(model.cpu_layers)}
    header_bytes = json.dumps(header, separators=(",", ":")).encode()
    header_bytes += b" " * (_align(len(header_bytes)) - len(header_bytes))
    fixed = _MODEL_HEADER.pack(
        MODEL_MAGIC,
        MODEL_VERSION,
        0,
        model.num_macs,
        len(header_bytes),
        len(payload),
        hashlib.sha256(payload).digest(),
        b"\0" * 8,
    )
    return fixed + header_bytes + bytes(payload)


def is_model_file(head: bytes) -> bool:
    return head[:8] == MODEL_MAGIC


def is_pte(head: bytes) -> bool:
    """A real ExecuTorch file: bytes 4..7 are "ET" + two digits (.pte), or the sibling BP08/FT01
    identifiers."""
    ident = head[4:8]
    return (len(ident) == 4 and ident[:2] == b"ET" and ident[2:].isdigit()) or ident in (
        b"BP08",
        b"FT01",
    )


def model_file_size(data: bytes) -> int | None:
    """The size a model file's fixed header says the file has (None when ``data`` is no model file
    header)."""
    if len(data) < _MODEL_HEADER.size or not is_model_file(data):
        return None
    _magic, _version, _flags, _macs, header_len, payload_len, _digest, _ = (
        _MODEL_HEADER.unpack_from(data))
    return int(_MODEL_HEADER.size + header_len + payload_len)


def decode_model(data: bytes) -> CompiledModel:
    """Parse and verify a model file; ModelFileError says what is wrong."""
    if len(data) < _MODEL_HEADER.size or not is_model_file(data):
        raise ModelFileError("not a simulator model file (magic FVPSIMMD missing)")
    _magic, version, _flags, macs, header_len, payload_len, digest, _ = _MODEL_HEADER.unpack_from(
        data)
    if version != MODEL_VERSION:
        raise ModelFileError(
            f"model file format version {version} is not supported (this simulator reads "
            f"{MODEL_VERSION})"
        )
    start = _MODEL_HEADER.size + header_len
    if len(data) < start + payload_len:
        raise ModelFileError(f"model file truncated: {len(data)} bytes, header says "
                             f"{start + payload_len}")
    payload = data[start : start + payload_len]
    if hashlib.sha256(payload).digest() != digest:
        raise ModelFileError("model file corrupt: payload checksum mismatch")
    try:
        header = json.loads(data[_MODEL_HEADER.size : start])
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"model file header is not valid JSON: {exc}") from exc

    def get(spec: Mapping[str, Any]) -> np.ndarray:
        dtype = np.dtype(_DTYPES[spec["dtype"]]).newbyteorder("<")
        count = math.prod(spec["shape"])
        array = np.frombuffer(payload, dtype=dtype, count=count, offset=int(spec["offset"]))
        return array.astype(dtype.newbyteorder("="), copy=True).reshape(spec["shape"])

    layers: list[Layer] = []
    quant: dict[str, LayerQuant] = {}
    schedule: list[LayerSchedule] = []
    for entry in header["layers"]:
        layer = Layer.from_dict(entry)
        layers.append(layer)
        q = entry["quant"]
        arrays = {name: get(spec) for name, spec in q["arrays"].items()}
        quant[layer.name] = LayerQuant(
            tuple(int(z) for z in q["in_zero_points"]),
            int(q["out_zero_point"]),
            int(q["act_min"]),
            int(q["act_max"]),
            arrays["multiplier"],
            arrays["shift"],
            arrays.get("weights"),
            arrays.get("bias"),
            arrays.get("in_multiplier"),
            arrays.get("in_shift"),
        )
        schedule.append(LayerSchedule.from_dict(entry["schedule"]))
    arch = Architecture(
        str(header["model"]),
        str(header["description"]),
        tuple(header["input"]["shape"][1:]),
        tuple(layers),
        str(header["input"]["name"]),
    )
    tensors = {name: (float(t["scale"]), int(t["zero_point"]))
               for name, t in header["tensors"].items()}
    sizes = Sizes(**{k: int(v) for k, v in header["sizes"].items()})
    specs = header.get("compile_specs") or {}
    try:
        accelerator = parse_accelerator(str(header["npu"].get("accelerator", f"ethos-u85-{macs}")))
    except ValueError as exc:
        raise ModelFileError(f"model file names an unknown NPU: {exc}") from exc
    vela = None
    if header.get("vela") is not None:
        try:
            vela = VelaEstimate.from_dict(header["vela"])
        except (ValueError, TypeError, AttributeError) as exc:
            raise ModelFileError(f"model file header: {exc}") from exc
        if vela.accelerator != accelerator.name:
            raise ModelFileError(
                f"model file header: the vela estimate is for {vela.accelerator}, the model for "
                f"{accelerator.name}"
            )
    cpu_layers = tuple(str(name) for name in (header.get("delegation") or {}).get("cpu_layers", ()))
    try:
        delegation_of(arch, cpu_layers)
    except ValueError as exc:
        raise ModelFileError(f"model file header: {exc}") from exc
    return CompiledModel(
        arch,
        int(header["seed"]),
        int(macs),
        quant,
        tensors,
        schedule,
        sizes,
        extra={"npu": header["npu"]},
        cycle_counter=bool(specs.get(CYCLE_COUNTER_SPEC, True)),
        family=accelerator.family,
        vela=vela,
        cpu_layers=cpu_layers,
    )


# --- runner artifact
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunnerArtifact:
    """A "build" of the emulated executor_runner: driver behaviour, the instrumentation it carries
    (a build-id line, the CPU-time report; both absent from upstream), the upstream log generation,
    injected faults."""

    driver: str
    build_id: str = ""
    fault: str = ""
    cpu_time_report: bool = False
    log_generation: str = "current"
    event_tracer: bool = False
    """Built with ``ET_EVENT_TRACER_ENABLED``: ``--etdump_path`` and an ETDump file
    (executor_runner/tracer.py)."""
    libc: str = "glibc"
    npu_device: str = DEFAULT_NPU_DEVICE
    ethos_u: bool = True
    """Linked with the Ethos-U delegate (``executorch_delegate_ethos_u``); without it the runtime
    has no ``EthosUBackend`` and every program delegated to it fails at method load, as
    upstream's does."""
    jitter: float | None = None
    """Relative standard deviation of this build's per-inference CPU time, over the
    ``runner_jitter`` knob: a build that measures noisily (how a test plants one noisy commit in a
    range); None: the knob's."""

    def __post_init__(self) -> None:
        if self.jitter is not None and not 0.0 <= self.jitter <= 0.5:
            raise ValueError(f"jitter {self.jitter!r}: expected 0 to 0.5")
        if self.libc not in RUNNER_LIBCS:
            raise ValueError(f"C library {self.libc!r}: expected one of {', '.join(RUNNER_LIBCS)}")
        if not self.npu_device.startswith("/dev/"):
            raise ValueError(f"NPU device {self.npu_device!r}: expected a path under /dev/")
        if self.driver not in DRIVER_MODES:
            raise ValueError(f"driver mode {self.driver!r}: expected one of "
                             f"{', '.join(DRIVER_MODES)}")
        if self.log_generation not in LOG_GENERATIONS:
            raise ValueError(
                f"log generation {self.log_generation!r}: expected one of "
                f"{', '.join(LOG_GENERATIONS)}"
            )
        if self.event_tracer and self.log_generation != "current":
            raise ValueError("the event tracer is emulated for the current log generation only")


def encode_runner(artifact: RunnerArtifact) -> bytes:
    body = json.dumps(
        {
            "format": "fvp-sim-executor-runner",
            "driver": artifact.driver,
            "id": artifact.build_id,
            "fault": artifact.fault,
            "cpu_time_report": artifact.cpu_time_report,
            "log_generation": artifact.log_generation,
            **({"event_tracer": True} if artifact.event_tracer else {}),
            **({"npu_device": artifact.npu_device} if artifact.npu_device != DEFAULT_NPU_DEVICE
               else {}),
            **({} if artifact.ethos_u else {"ethos_u": False}),
            **({"jitter": artifact.jitter} if artifact.jitter is not None else {}),
        },
        sort_keys=True,
    ).encode()
    flags = RUNNER_LIBCS.index(artifact.libc)
    return _RUNNER_HEADER.pack(RUNNER_MAGIC, RUNNER_VERSION, flags, len(body)) + body + b"\n"


def decode_runner(data: bytes) -> RunnerArtifact:
    """Read a runner artifact of any version in ``RUNNER_VERSIONS_READ`` (version 1: see the module
    docstring)."""
    if len(data) < _RUNNER_HEADER.size or not is_runner(data):
        raise ModelFileError("not a simulator runner artifact (magic FVPSIMRN missing)")
    _magic, version, _flags, length = _RUNNER_HEADER.unpack_from(data)
    if version not in RUNNER_VERSIONS_READ:
        raise ModelFileError(
            f"runner artifact version {version} is not supported (this simulator reads "
            f"{', '.join(map(str, RUNNER_VERSIONS_READ))})"
        )
    body = data[_RUNNER_HEADER.size : _RUNNER_HEADER.size + length]
    if len(body) != length:
        raise ModelFileError("runner artifact truncated")
    try:
        info = json.loads(body)
        if version == 1:
            return RunnerArtifact(
                str(info["driver"]), str(info.get("id", "")), str(info.get("fault", "")),
                cpu_time_report=True
            )
        return RunnerArtifact(
            str(info["driver"]),
            str(info.get("id", "")),
            str(info.get("fault", "")),
            cpu_time_report=bool(info.get("cpu_time_report", False)),
            log_generation=str(info.get("log_generation", "current")),
            event_tracer=bool(info.get("event_tracer", False)),
            libc=runner_libc(data),
            npu_device=str(info.get("npu_device", DEFAULT_NPU_DEVICE)),
            ethos_u=bool(info.get("ethos_u", True)),
            jitter=float(info["jitter"]) if info.get("jitter") is not None else None,
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ModelFileError(f"runner artifact is corrupt: {exc}") from exc
