"""Vela's performance estimate for one compiled model, as the model file stores it (header key
``vela``).

Why a record of its own: the estimate is made once, when ``fvp-harness sim model`` compiles a
network (running Vela takes a fraction of a second but needs the ``ethos-u-vela`` package), and read
on every inference by the emulated runners through ``npu.model_cycles``. Keeping it in the model
file makes the counter a property of the file, like the command stream on a real NPU: the same file
gives the same count on every machine, with or without Vela.

Header form (JSON, all keys required except ``layers``)::

    "vela": {"version": "5.2.0", "accelerator": "ethos-u85-256", "config": "Arm/vela.ini",
             "system_config": "Ethos_U85_SYS_DRAM_Mid", "memory_mode": "Sram_Only",
             "clock_hz": 1000000000, "tflite_sha256": "...", "cycles": 84546, "npu_cycles": 84546,
             "layers": [{"name": "conv1", "operator": "Conv2D", "npu_op": "Conv2D", "cycles": 6790,
                         "macs": 160000},
                        ...]}

``cycles`` is Vela's ``cycles_total`` (the summary CSV's estimate of one inference, memory stalls
included: what the NPU's cycle counter counts) and equals the sum of the per-layer ``Op Cycles``;
``npu_cycles`` is Vela's ``cycles_npu`` (compute alone), kept for reports. ``layers`` are Vela's
per-layer rows (``--verbose-performance``) in its order, named by the output tensor of the TFLite
operator (the simulator's layer names, see ``networks/tflite_export.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["VelaEstimate", "VelaLayer", "vela_summary"]


@dataclass(frozen=True)
class VelaLayer:
    """One row of Vela's per-layer performance report."""

    name: str
    operator: str
    npu_op: str
    cycles: int
    macs: int

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "operator": self.operator, "npu_op": self.npu_op,
                "cycles": self.cycles, "macs": self.macs}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VelaLayer:
        return cls(str(data["name"]), str(data["operator"]), str(data["npu_op"]),
                   int(data["cycles"]), int(data["macs"]))


@dataclass(frozen=True)
class VelaEstimate:
    """Vela's estimate of one inference of a model on one accelerator and system configuration."""

    version: str
    accelerator: str
    config: str
    system_config: str
    memory_mode: str
    clock_hz: int
    tflite_sha256: str
    cycles: int
    npu_cycles: int
    layers: tuple[VelaLayer, ...] = ()

    @property
    def describe(self) -> str:
        """``Vela 5.2.0 (ethos-u85-256, Ethos_U85_SYS_DRAM_Mid, Sram_Only)``: where a counter came
        from."""
        return f"Vela {self.version} ({self.accelerator}, {self.system_config}, {self.memory_mode})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "accelerator": self.accelerator,
            "config": self.config,
            "system_config": self.system_config,
            "memory_mode": self.memory_mode,
            "clock_hz": self.clock_hz,
            "tflite_sha256": self.tflite_sha256,
            "cycles": self.cycles,
            "npu_cycles": self.npu_cycles,
            "layers": [layer.to_dict() for layer in self.layers],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VelaEstimate:
        """Read the header form; ValueError naming the missing or malformed key."""
        try:
            estimate = cls(
                str(data["version"]),
                str(data["accelerator"]),
                str(data["config"]),
                str(data["system_config"]),
                str(data["memory_mode"]),
                int(data["clock_hz"]),
                str(data["tflite_sha256"]),
                int(data["cycles"]),
                int(data["npu_cycles"]),
                tuple(VelaLayer.from_dict(layer) for layer in data.get("layers", ())),
            )
        except KeyError as exc:
            raise ValueError(f"vela estimate lacks {exc.args[0]!r}") from None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"vela estimate is malformed: {exc}") from None
        if estimate.cycles <= 0:
            raise ValueError(f"vela estimate has {estimate.cycles} cycles")
        return estimate


def vela_summary(estimate: VelaEstimate) -> dict[str, Any]:
    """What ``sim info`` shows of an estimate: its settings, totals and cycles per layer (rows of
    one layer, such as a convolution and its fused ReLU, summed; in Vela's order)."""
    per_layer: dict[str, int] = {}
    for layer in estimate.layers:
        per_layer[layer.name] = per_layer.get(layer.name, 0) + layer.cycles
    data = estimate.to_dict()
    data["layers"] = per_layer
    return data
