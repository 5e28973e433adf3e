"""Ethos-U85 cycle model: per operation ``max(compute, memory)``, summed over the schedule (Vela's
shape).

Its terms and constants: docs/simulator-workload.md, "NPU cycles".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fvp_harness.sim.networks.accelerator import Family
from fvp_harness.sim.networks.architectures import Layer
from fvp_harness.sim.networks.modelfile import CompiledModel, LayerSchedule

__all__ = [
    "ARRAY_GEOMETRY",
    "FAMILIES",
    "NPU_CLOCK_HZ",
    "FamilyConstants",
    "LayerCycles",
    "cycle_source",
    "inference_cycles",
    "layer_cycles",
    "model_cycles",
    "utilisation",
]

NPU_CLOCK_HZ = 1_000_000_000
"""ExecuTorch compiles the U85 for a 1 GHz system; cycles / NPU_CLOCK_HZ is the NPU busy time."""

ARRAY_GEOMETRY: dict[int, tuple[int, int, int]] = {
    128: (16, 8, 1),
    256: (16, 16, 1),
    512: (16, 16, 2),
    1024: (16, 16, 4),
    2048: (16, 16, 8),
}
"""num_macs -> (IFM depth lanes, OFM depth lanes, OFM position lanes); the product is num_macs."""

KIND_EFFICIENCY = {"conv3x3": 0.70, "conv1x1": 0.80, "depthwise": 0.90, "fc": 0.80}
PACKING_EFFICIENCY = 0.75
OUTPUT_ELEMENTS_PER_CYCLE: dict[int, float] = {128: 4.0, 256: 4.0, 512: 4.0, 1024: 8.0, 2048: 8.0}
"""Output-stage throughput in int8 elements per cycle (0.25 cycle per element on the 256
configuration)."""
WEIGHTS_DECODED_PER_CYCLE = 12.0
SRAM_BYTES_PER_CYCLE = 32.0
DRAM_BYTES_PER_CYCLE = 12.0
LATENCY_CYCLES = 250
INFERENCE_OVERHEAD = 1000


@dataclass(frozen=True)
class FamilyConstants:
    """The per-family part of the model: array shapes and throughputs (the formulas are shared)."""

    geometry: dict[int, tuple[int, int, int]]
    output_elements_per_cycle: dict[int, float]
    weights_decoded_per_cycle: float
    sram_bytes_per_cycle: float
    dram_bytes_per_cycle: float


FAMILIES: dict[str, FamilyConstants] = {
    "ethos-u85": FamilyConstants(
        ARRAY_GEOMETRY, OUTPUT_ELEMENTS_PER_CYCLE, WEIGHTS_DECODED_PER_CYCLE, SRAM_BYTES_PER_CYCLE,
        DRAM_BYTES_PER_CYCLE,
    ),
    # Ethos-U55: 8 IFM channels per MAC block (4 on the 32-MAC build), the OFM micro-block grows
    # with the MACs (1x1x8 .. 2x2x8); a narrower output stage, half the weight decoder, and the
    # Corstone-300's slower memories (Vela's Ethos_U55_High_End_Embedded: SRAM on a 16 B/cycle path,
    # flash/DRAM 8 B/cycle). Not calibrated to Vela's U55 estimates: used only when Vela is not
    # installed.
    "ethos-u55": FamilyConstants(
        {32: (4, 8, 1), 64: (8, 8, 1), 128: (8, 8, 2), 256: (8, 8, 4)},
        {32: 1.0, 64: 1.0, 128: 2.0, 256: 2.0},
        6.0,
        16.0,
        8.0,
    ),
}


@dataclass(frozen=True)
class LayerCycles:
    """The estimate for one operation, with its parts (for reports and tests)."""

    name: str
    mac_cycles: float
    output_cycles: float
    decode_cycles: float
    memory_cycles: float
    utilisation: float
    cycles: int

    @property
    def bound(self) -> str:
        parts = {
            "mac": self.mac_cycles,
            "output": self.output_cycles,
            "decode": self.decode_cycles,
            "memory": self.memory_cycles,
        }
        return max(parts, key=lambda key: parts[key])


def _fill(n: int, lanes: int) -> float:
    return n / (math.ceil(n / lanes) * lanes)


def _geometry(num_macs: int, family: Family = "ethos-u85") -> tuple[int, int, int]:
    geometry = FAMILIES[family].geometry
    try:
        return geometry[num_macs]
    except KeyError:
        raise ValueError(
            f"no {family} configuration with {num_macs} MACs (known: "
            f"{', '.join(map(str, geometry))})"
        ) from None


def utilisation(layer: Layer, num_macs: int, family: Family = "ethos-u85") -> float:
    """Fraction of the MAC array's peak a layer achieves (0 for layers without MACs)."""
    depth_lanes, ofm_lanes, position_lanes = _geometry(num_macs, family)
    positions = math.prod(layer.out_shape[1:]) if len(layer.out_shape) == 3 else 1
    if layer.kind == "conv":
        cin, (kh, kw) = layer.in_channels, layer.kernel
        efficiency = KIND_EFFICIENCY["conv1x1" if kh * kw == 1 else "conv3x3"]
        # first layer: kernel columns packed into the depth lanes
        if cin < depth_lanes and kh * kw > 1:
            depth_fill = _fill(min(cin * kw, depth_lanes), depth_lanes) * PACKING_EFFICIENCY
        else:
            depth_fill = _fill(cin, depth_lanes)
        return (
            efficiency * depth_fill * _fill(layer.out_channels, ofm_lanes)
            * _fill(positions, position_lanes)
        )
    if layer.kind == "depthwise":
        return (
            KIND_EFFICIENCY["depthwise"]
            / depth_lanes
            * _fill(layer.out_channels, ofm_lanes)
            * _fill(positions, position_lanes)
        )
    if layer.kind == "fc":
        cin = math.prod(layer.in_shapes[0])
        return (
            KIND_EFFICIENCY["fc"]
            * _fill(cin, depth_lanes)
            * _fill(layer.out_channels, ofm_lanes)
            * _fill(1, position_lanes)
        )
    return 0.0


def layer_cycles(
    layer: Layer, schedule: LayerSchedule, num_macs: int, family: Family = "ethos-u85"
) -> LayerCycles:
    """Cycle estimate of one operation on a ``num_macs`` configuration of ``family``."""
    constants = FAMILIES[family]
    util = utilisation(layer, num_macs, family)
    mac_cycles = layer.macs / (num_macs * util) if layer.macs else 0.0
    elements = layer.in_elements if layer.kind == "avgpool" else layer.out_elements
    output_cycles = elements / constants.output_elements_per_cycle[num_macs]
    decode_cycles = layer.n_weights / constants.weights_decoded_per_cycle
    sram = (layer.in_elements + layer.out_elements) / constants.sram_bytes_per_cycle
    dram = (schedule.encoded_weight_bytes + schedule.command_bytes) / constants.dram_bytes_per_cycle
    memory_cycles = max(sram, dram) + LATENCY_CYCLES
    cycles = math.ceil(max(mac_cycles, output_cycles, decode_cycles, memory_cycles))
    return LayerCycles(layer.name, mac_cycles, output_cycles, decode_cycles, memory_cycles, util,
                       cycles)


def inference_cycles(
    layers: Sequence[Layer], schedule: Sequence[LayerSchedule], num_macs: int,
    family: Family = "ethos-u85"
) -> int:
    """NPU cycle counter value for one inference: the sum of the operations' estimates plus the
    fixed overhead."""
    return INFERENCE_OVERHEAD + sum(
        layer_cycles(layer, sched, num_macs, family).cycles
        for layer, sched in zip(layers, schedule, strict=True)
    )


def model_cycles(model: CompiledModel) -> int:
    """The NPU cycle counter for one inference of a compiled model on the configuration it was
    compiled for.

    The one entry point the emulated runners (Linux and bare-metal) use, so where the number comes
    from is decided in one place: Vela's estimate when the model file carries one (``sim model``
    runs Vela when it is installed: ``npu/vela.py``), else this module's analytic model.
    """
    if model.vela is not None:
        return model.vela.cycles
    return inference_cycles(model.arch.layers, model.schedule, model.num_macs, model.family)


def cycle_source(model: CompiledModel) -> str:
    """Where ``model_cycles`` takes its number from, for people: ``Vela 5.2.0 (ethos-u85-256, ...)``
    or the analytic model."""
    if model.vela is not None:
        return model.vela.describe
    return f"analytic cycle model (fvp_harness/sim/npu/cycles.py, {model.accelerator})"
