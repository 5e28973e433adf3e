"""``method->execute()`` of a partly delegated program: K Ethos-U delegate calls with CPU operators
between them.

What each call costs and prints, and the ``runner_partition_cycles`` knob:
docs/simulator-workload.md, "Partly delegated programs".
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping
from typing import Protocol

import numpy as np

from fvp_harness.sim.guest import programs
from fvp_harness.sim.networks.modelfile import CompiledModel
from fvp_harness.sim.networks.once import run_model_once
from fvp_harness.sim.npu.cycles import NPU_CLOCK_HZ
from fvp_harness.sim.npu.driver_cost import DEFAULT as DRIVER_COSTS
from fvp_harness.sim.npu.driver_cost import DriverSizes
from fvp_harness.sim.npu.partitions import cpu_layer_ms, partition_cycles, partition_sizes
from fvp_harness.sim.workloads.executor_runner.faults import slowdown
from fvp_harness.sim.workloads.executor_runner.flags import UsageError
from fvp_harness.sim.workloads.executor_runner.log import EtLog

__all__ = ["PARTITION_CYCLES_KNOB", "Calls", "partition_factors"]

PARTITION_CYCLES_KNOB = "runner_partition_cycles"


class _Tracer(Protocol):
    """What this module uses of ``tracer.EventTracer``: the current instruction."""

    def instruction(self, chain: int,
                    instruction: int) -> contextlib.AbstractContextManager[None]: ...


class _Run(Protocol):
    """What this module uses of ``run.Run`` (typed structurally: ``run.py`` imports this module)."""

    ctx: programs.GuestContext
    log: EtLog
    model_digest: str

    @property
    def tracer(self) -> _Tracer | None: ...
    def traced(self, name: str) -> contextlib.AbstractContextManager[None]: ...

    @property
    def sites(self) -> dict[str, tuple[str, int]]: ...
    @property
    def compiled(self) -> CompiledModel: ...
    def spend(self, seconds: float, cpu_seconds: float | None = None) -> None: ...


class _Delegate(Protocol):
    """What this module uses of ``run._EthosU``: its noise and address generators and its build."""

    def noisy(self, ctx: programs.GuestContext, ms: float) -> float: ...
    def _address(self, size: int) -> str: ...


def partition_factors(knobs: Mapping[str, str], driver: str, partitions: int) -> tuple[float, ...]:
    """Each partition's factor from ``runner_partition_cycles`` for a build of ``driver`` (1 where
    no item names it); UsageError for a malformed item or a partition the program does not have."""
    factors = [1.0] * partitions
    text = (knobs.get(PARTITION_CYCLES_KNOB) or "").strip()
    for item in filter(None, (part.strip() for part in text.split(","))):
        scope, colon, rest = item.partition(":")
        mode, rest = (scope.strip(), rest) if colon else ("", scope)
        number, sep, value = rest.partition("=")
        try:
            index, factor = int(number), float(value)
        except ValueError:
            raise UsageError(f"knob {PARTITION_CYCLES_KNOB}: {item!r} is not [DRIVER:]P=FACTOR "
                             "(e.g. reuse:2=1.05)") from None
        if not sep or not math.isfinite(factor) or not 0.1 <= factor <= 100.0:
            raise UsageError(f"knob {PARTITION_CYCLES_KNOB}: {item!r}: FACTOR must be within "
                             "0.1..100")
        if not 1 <= index <= partitions:
            raise UsageError(f"knob {PARTITION_CYCLES_KNOB}: {item!r}: the program has partitions "
                             f"1..{partitions}")
        if mode in ("", driver):
            factors[index - 1] = factor
    return tuple(factors)


class Calls:
    """The delegate calls of one partly delegated program, for one runner build (``driver``)."""

    def __init__(self, model: CompiledModel, driver: str, knobs: Mapping[str, str]) -> None:
        self.model, self.driver = model, driver
        self.delegation = model.delegation
        self.sizes: list[DriverSizes] = [partition_sizes(model, p)
                                         for p in self.delegation.partitions]
        factors = partition_factors(knobs, driver, len(self.sizes))
        self.cycles = [max(1, round(c * f))
                       for c, f in zip(partition_cycles(model), factors, strict=True)]
        self.slowdown = slowdown(knobs, model.arch.name, driver)

    def setup_ms(self) -> float:
        """What the reuse build spends creating every partition's driver objects at method load."""
        return sum(DRIVER_COSTS.setup_ms(sizes) for sizes in self.sizes)

    def init(self, delegate: _Delegate, run: _Run) -> None:
        """``EthosUBackend::init()`` of each delegate: its ``data:%p`` line
        (EthosUBackend.cpp:101)."""
        for sizes in self.sizes:
            segment = sizes.weights + sizes.command_stream
            run.log.at("I", run.sites["delegate_data"], f"data:{delegate._address(segment)}")

    def execute(self, delegate: _Delegate, run: _Run, x: np.ndarray, *, runner_overhead_ms: float,
                cpu_time_report: bool, method_spent_ms: float = 0.0) -> np.ndarray:
        """One ``method->execute()``: the steps in graph order; returns the model output.

        With the event tracer each step is an instruction of chain 0 (method.cpp:1756): a CPU
        operator an ``OPERATOR_CALL`` (method.cpp:1469), a delegate a ``DELEGATE_CALL`` (:1505)
        around the backend's ``EthosUBackend::execute()`` scopes (EthosUBackend.cpp:144, 244, 269).
        The caller has spent ``method_spent_ms`` of the runner's overhead inside
        ``Method::execute``; the rest is shared by the delegate calls, so a traced build spends
        exactly the untraced build's time."""
        ctx, model, log, sites = run.ctx, run.compiled, run.log, run.sites
        # once per input (networks/once)
        output = run_model_once(run.model_digest, model.arch, model.quant, x)
        traced = run.tracer is not None
        if not traced:
            run.spend(runner_overhead_ms / 1000.0)
        dispatch_ms = (runner_overhead_ms - method_spent_ms) / max(1, len(self.sizes))
        for position, (kind, index) in enumerate(self.delegation.steps):
            if kind == "cpu":
                ms = cpu_layer_ms(model.arch.layers[index])
                with _step(run, position, "OPERATOR_CALL"):
                    run.spend(ms / 1000.0)
                continue
            cpu_ms = (
                delegate.noisy(ctx, DRIVER_COSTS.execute_ms(self.sizes[index], self.driver))
                * self.slowdown
            )
            npu_ms = self.cycles[index] / NPU_CLOCK_HZ * 1000.0
            if not traced:
                run.spend((cpu_ms + npu_ms) / 1000.0, cpu_ms / 1000.0)
            else:
                nominal = DRIVER_COSTS.execute_ms(self.sizes[index], self.driver)
                copy_ms = cpu_ms * DRIVER_COSTS.io_us_per_kib * self.sizes[
                    index].input / 1024.0 / 1000.0 / nominal
                with _step(run, position, "DELEGATE_CALL"), run.traced("EthosUBackend::execute()"):
                    run.spend(dispatch_ms / 1000.0)
                    with run.traced("+EthosUBackend::execute()handles.input.memcpy()"):
                        run.spend(copy_ms / 1000.0)
                    with run.traced("+EthosUBackend::execute()NPU"):
                        run.spend((cpu_ms - copy_ms + npu_ms) / 1000.0, (cpu_ms - copy_ms) / 1000.0)
            if model.cycle_counter:
                log.at("I", sites["cycle_counter"],
                       f"Ethos-U Linux delegate cycle counter: {self.cycles[index]}")
            if cpu_time_report:
                log.at("I", sites["cpu_time"],
                       f"EthosUBackend::execute() CPU time: {cpu_ms:.3f} ms")
        return output


@contextlib.contextmanager
def _step(run: _Run, position: int, name: str) -> Iterator[None]:
    """Instruction ``position`` of chain 0 and its profiling scope (nothing in a build without the
    tracer)."""
    if run.tracer is None:
        yield
        return
    with run.tracer.instruction(0, position), run.traced(name):
        yield
