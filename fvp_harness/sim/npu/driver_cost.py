"""Host CPU time of ``EthosUBackend::execute()`` on the Linux driver path, per inference.

The model (per-inference vs reuse driver, its terms and fitted constants):
docs/simulator-workload.md, "Driver cost model".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["DEFAULT", "PASSES", "DriverCostModel", "DriverSizes", "fit"]

KIB = 1024.0


PASSES: dict[str, int] = {"command_stream": 4, "weights": 3, "scratch": 2, "input": 2, "output": 2}
"""How many times re-creating the objects walks over each buffer's bytes (see the module
docstring)."""


@dataclass(frozen=True)
class DriverSizes:
    """Bytes of the driver objects of one compiled model."""

    command_stream: int
    weights: int
    scratch: int
    input: int
    output: int
    n_inputs: int = 1
    n_outputs: int = 1

    @classmethod
    def from_mapping(cls, sizes: Mapping[str, int], n_inputs: int = 1,
                     n_outputs: int = 1) -> DriverSizes:
        return cls(
            int(sizes["command_stream"]),
            int(sizes["weights"]),
            int(sizes["scratch"]),
            int(sizes["input"]),
            int(sizes["output"]),
            n_inputs,
            n_outputs,
        )

    @property
    def objects(self) -> int:
        """Network, weight buffer, scratch buffer, one IFM per input, one OFM per output, the
        inference."""
        return 4 + self.n_inputs + self.n_outputs

    @property
    def buffer_bytes(self) -> int:
        """Bytes of the buffers the objects map into the process (the network's command stream and
        weights, the scratch, the IFMs and OFMs): resident while the objects exist."""
        return self.command_stream + self.weights + self.scratch + self.input + self.output

    @property
    def io_kib(self) -> float:
        return (self.input + self.output) / KIB

    @property
    def pass_kib(self) -> float:
        """KiB walked over when every object is created and torn down (sum of passes x size)."""
        return sum(passes * getattr(self, name) for name, passes in PASSES.items()) / KIB


@dataclass(frozen=True)
class DriverCostModel:
    """The constants of the model in the module docstring."""

    fixed_ms: float
    io_us_per_kib: float
    object_ms: float
    byte_us_per_kib: float

    def reuse_ms(self, sizes: DriverSizes) -> float:
        """CPU time of one execute() when the objects already exist (the driver-reuse build)."""
        return self.fixed_ms + self.io_us_per_kib * sizes.io_kib / 1000.0

    def recreate_ms(self, sizes: DriverSizes) -> float:
        """Extra CPU time of creating and tearing down every driver object in one execute()."""
        return sizes.objects * self.object_ms + self.byte_us_per_kib * sizes.pass_kib / 1000.0

    def execute_ms(self, sizes: DriverSizes, driver: str) -> float:
        """CPU time of one execute() for the given driver mode ("per-inference" or "reuse")."""
        if driver == "reuse":
            return self.reuse_ms(sizes)
        if driver == "per-inference":
            return self.reuse_ms(sizes) + self.recreate_ms(sizes)
        raise ValueError(f"unknown driver mode {driver!r}")

    def setup_ms(self, sizes: DriverSizes) -> float:
        """Creating the objects once (reuse build, at method load): about half of create +
        teardown."""
        return 0.5 * self.recreate_ms(sizes)


DEFAULT = DriverCostModel(fixed_ms=0.9252, io_us_per_kib=3.1229, object_ms=0.1159,
                          byte_us_per_kib=2.5020)


def _nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Non-negative least squares by exhaustive active sets (a handful of columns: exact and
    dependency-free)."""
    n = a.shape[1]
    best: tuple[float, np.ndarray] | None = None
    for mask in range(1, 1 << n):
        cols = [i for i in range(n) if mask >> i & 1]
        sol, *_ = np.linalg.lstsq(a[:, cols], b, rcond=None)
        if np.any(sol < 0):
            continue
        full = np.zeros(n)
        full[cols] = sol
        err = float(np.sum((a @ full - b) ** 2))
        if best is None or err < best[0] - 1e-15:
            best = (err, full)
    assert best is not None
    return best[1]


def fit(observations: Sequence[tuple[DriverSizes, float, float]]) -> DriverCostModel:
    """Fit the constants to (sizes, before_ms, after_ms) measurements.

    The reuse part (FIXED, IO) is fitted on the "after" values, then the re-creation part (OBJECT,
    BYTE) on "before - fitted after"; both by non-negative least squares on relative errors.
    """
    after = np.array([obs[2] for obs in observations])
    before = np.array([obs[1] for obs in observations])
    io_kib = np.array([obs[0].io_kib for obs in observations])
    a1 = np.column_stack([np.ones_like(io_kib), io_kib / 1000.0]) / after[:, None]
    fixed, io = _nnls(a1, np.ones_like(after))
    reuse = fixed + io * io_kib / 1000.0
    objects = np.array([obs[0].objects for obs in observations], dtype=float)
    pass_kib = np.array([obs[0].pass_kib for obs in observations])
    a2 = np.column_stack([objects, pass_kib / 1000.0]) / before[:, None]
    obj, byte = _nnls(a2, (before - reuse) / before)
    return DriverCostModel(float(fixed), float(io), float(obj), float(byte))
