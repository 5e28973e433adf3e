"""What a bare-metal run costs the Cortex-M, and what the Ethos-U PMU counts: the numbers of the
perf block.

Why a model of the work, and its parts (CPU instructions, simulated time, PMU event counters):
docs/simulator.md, "The cost model".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fvp_harness.sim.networks.architectures import Layer
from fvp_harness.sim.npu.driver_cost import DriverSizes

__all__ = ["DEFAULT", "PMU_EVENTS", "BareMetalCosts", "InferenceCost", "LoadCost", "pmu_counters"]

CACHE_LINE = 32

PMU_EVENTS: dict[str, tuple[str, ...]] = {
    "ethos-u55": (
        "ETHOSU_PMU_AXI0_RD_DATA_BEAT_RECEIVED", "ETHOSU_PMU_AXI1_RD_DATA_BEAT_RECEIVED",
        "ETHOSU_PMU_AXI0_WR_DATA_BEAT_WRITTEN", "ETHOSU_PMU_NPU_IDLE",
    ),
    "ethos-u85": (
        "ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED", "ETHOSU_PMU_SRAM_WR_DATA_BEAT_WRITTEN",
        "ETHOSU_PMU_EXT_RD_DATA_BEAT_RECEIVED", "ETHOSU_PMU_EXT_WR_DATA_BEAT_WRITTEN",
        "ETHOSU_PMU_NPU_IDLE", "ETHOSU_PMU_MAC_ACTIVE", "ETHOSU_PMU_WD_ACTIVE",
    ),
}  # fmt: skip
"""The events ``ethosu_inference_begin`` (arm_perf_monitor.cpp) counts, per NPU family, in counter
order."""

BEAT_BYTES = {"ethos-u55": 8, "ethos-u85": 16}


@dataclass(frozen=True)
class InferenceCost:
    """Instructions of one inference: inside the backend (``backend``, which includes ``wait``),
    between the NPU callbacks (``wait``) and the whole ``method->execute()`` (``total``)."""

    backend: int
    wait: int
    total: int


@dataclass(frozen=True)
class LoadCost:
    """Instructions before the inference loop: reset and target setup, Program::load, load_method,
    inputs."""

    startup: int
    program: int
    method: int
    inputs: int


@dataclass(frozen=True)
class BareMetalCosts:
    """The constants of the model in the module docstring (instructions; one per CPU cycle on an
    FVP)."""

    startup: int = 40_000
    program_load: int = 6_000
    method_load: int = 24_000
    method_per_command_kib: float = 220.0
    inputs_fixed: int = 1_500
    inputs_per_byte: float = 0.5
    method_overhead: int = 1_800
    backend_fixed: int = 2_600
    copy_per_byte: float = 0.5
    cache_per_line: int = 4
    irq: int = 450
    idle_per_operation: int = 24
    weights_decoded_per_cycle: float = 12.0
    uart_per_char: int = 12
    file_read: int = 1_500

    def _lines(self, nbytes: int) -> int:
        return self.cache_per_line * math.ceil(nbytes / CACHE_LINE)

    def inference(self, sizes: DriverSizes) -> InferenceCost:
        """One ``method->execute()`` of a model whose compiled sizes are ``sizes``."""
        io = sizes.input + sizes.output
        scratch = sizes.scratch + io
        cleaned = sizes.weights + scratch
        backend = (self.backend_fixed + round(self.copy_per_byte * io) + self._lines(cleaned)
                   + self._lines(scratch) + self.irq)  # fmt: skip
        return InferenceCost(backend, self.irq, backend + self.method_overhead)

    def load(self, sizes: DriverSizes, fills_inputs: bool) -> LoadCost:
        """Before the loop: ``fills_inputs`` when the runner fills the inputs with ones itself (no
        input files)."""
        method = self.method_load + round(self.method_per_command_kib * sizes.command_stream / 1024)
        inputs = self.inputs_fixed + (round(self.inputs_per_byte * sizes.input) if fills_inputs
                                      else 0)
        return LoadCost(self.startup, self.program_load, method, inputs)


DEFAULT = BareMetalCosts()


def pmu_counters(layers: Sequence[Layer], sizes: DriverSizes, npu_cycles: int, num_macs: int,
                 family: str, costs: BareMetalCosts = DEFAULT) -> list[int]:
    """The Ethos-U PMU event counts of one inference, in ``PMU_EVENTS[family]`` order."""
    beat = BEAT_BYTES[family]
    fm_read = math.ceil(sum(layer.in_elements for layer in layers) / beat)
    fm_written = math.ceil(sum(layer.out_elements for layer in layers) / beat)
    external = math.ceil((sizes.weights + sizes.command_stream) / beat)
    idle = costs.idle_per_operation * len(layers)
    if family == "ethos-u55":
        return [fm_read, external, fm_written, idle]
    mac_active = min(npu_cycles, math.ceil(sum(layer.macs for layer in layers) / num_macs))
    wd_active = min(npu_cycles,
                    math.ceil(sum(layer.n_weights for layer in layers)
                              / costs.weights_decoded_per_cycle))
    return [fm_read, fm_written, external, math.ceil(sizes.output / beat), idle, mac_active,
            wd_active]
