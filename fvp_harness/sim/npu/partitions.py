"""What each delegate call of a partly delegated program costs, and what the CPU layers between the
calls cost.

Why per partition: every Ethos-U partition is its own delegate with its own command stream, weights,
scratch, IFM and OFM buffers (``networks/partition.py``), so each call is one NPU inference (its own
cycle counter value) and, in the per-inference driver build, its own set of driver objects
re-created. The numbers come from the same models as a fully delegated program's, applied to the
partition's layers alone:

* cycles: Vela's per-layer estimates of the partition's layers, summed, when the model file carries
  Vela's estimate with its per-layer rows; else ``cycles.inference_cycles`` over the partition's
  layers (its fixed ``INFERENCE_OVERHEAD`` once per call: every command stream starts and ends with
  an interrupt of its own);
* driver sizes: the partition's command stream (a header each), encoded weights, the largest live
  set of its intermediate tensors (scratch) and the tensors crossing its edge (IFM and OFM buffers,
  one per tensor);
* a CPU layer (the int8 work runs in numpy with the rest of the network, ``networks/inference.py``):
  a fixed kernel dispatch cost, its MACs at ``CPU_MACS_PER_US`` and the elements it reads and writes
  at ``CPU_ELEMENTS_PER_US`` (an in-order Cortex-A320 core running ExecuTorch's quantized kernels;
  the FVP is not cycle-accurate, so this is a plausible scale, not a silicon figure).

A fully delegated program gives exactly the numbers it gave before partitions existed
(``partition_cycles`` is ``(model_cycles(model),)`` and ``partition_sizes`` its whole sizes), so no
shipped scenario moves.
"""

from __future__ import annotations

import math

from fvp_harness.sim.networks.architectures import Architecture, Layer
from fvp_harness.sim.networks.modelfile import COMMAND_STREAM_HEADER, CompiledModel
from fvp_harness.sim.networks.partition import Partition
from fvp_harness.sim.npu.cycles import inference_cycles, model_cycles
from fvp_harness.sim.npu.driver_cost import DriverSizes

__all__ = [
    "CPU_ELEMENTS_PER_US",
    "CPU_LAYER_FIXED_US",
    "CPU_MACS_PER_US",
    "cpu_layer_ms",
    "partition_cycles",
    "partition_sizes",
]

CPU_LAYER_FIXED_US = 12.0
"""Per CPU operator: kernel dispatch, argument checks, requantisation set-up."""
CPU_MACS_PER_US = 1000.0
"""int8 multiply-accumulates per microsecond of one Cortex-A320 core (NEON dot product, about 1
GMAC/s)."""
CPU_ELEMENTS_PER_US = 400.0
"""int8 tensor elements read or written per microsecond outside the MAC loop (requantise, clamp,
store)."""


def _tensor_elements(arch: Architecture, name: str) -> int:
    if name == arch.input_name:
        return math.prod(arch.input_shape)
    return next(layer.out_elements for layer in arch.layers if layer.output == name)


def _scratch(arch: Architecture, partition: Partition) -> int:
    """Largest live set of the partition's intermediate tensors (its IFM and OFM tensors have
    buffers of their own, as the whole model's input and output do)."""
    edge = set(partition.inputs) | set(partition.outputs)
    layers = [arch.layers[i] for i in partition.layers]
    produced = {layer.output: step for step, layer in enumerate(layers)}
    last_use: dict[str, int] = {}
    for step, layer in enumerate(layers):
        for name in layer.inputs:
            last_use[name] = step
    peak = 0
    for step in range(len(layers)):
        live = sum(layer.out_elements for layer in layers
                   if layer.output not in edge and
                   produced[layer.output] <= step <= last_use.get(layer.output, -1))
        peak = max(peak, live)
    return peak


def partition_sizes(model: CompiledModel, partition: Partition) -> DriverSizes:
    """The driver objects' bytes of one partition (a fully delegated model's single partition: its
    whole sizes)."""
    if not model.cpu_layers:
        return DriverSizes.from_mapping(model.sizes.to_dict())
    arch = model.arch
    schedule = [model.schedule[i] for i in partition.layers]
    return DriverSizes(
        command_stream=COMMAND_STREAM_HEADER + sum(s.command_bytes for s in schedule),
        weights=sum(s.encoded_weight_bytes for s in schedule),
        scratch=_scratch(arch, partition),
        input=sum(_tensor_elements(arch, name) for name in partition.inputs),
        output=sum(_tensor_elements(arch, name) for name in partition.outputs),
        n_inputs=len(partition.inputs),
        n_outputs=len(partition.outputs),
    )


def partition_cycles(model: CompiledModel) -> tuple[int, ...]:
    """The NPU cycle counter of each delegate call of one inference, in call order."""
    if not model.cpu_layers:
        return (model_cycles(model),)
    delegation = model.delegation
    if model.vela is not None and model.vela.layers:
        per_layer: dict[str, int] = {}
        for row in model.vela.layers:
            per_layer[row.name] = per_layer.get(row.name, 0) + row.cycles
        return tuple(sum(per_layer.get(model.arch.layers[i].name, 0) for i in p.layers)
                     for p in delegation.partitions)
    return tuple(
        inference_cycles([model.arch.layers[i] for i in p.layers],
                         [model.schedule[i] for i in p.layers], model.num_macs, model.family)
        for p in delegation.partitions
    )


def cpu_layer_ms(layer: Layer) -> float:
    """CPU time of one layer run by a CPU kernel between two delegate calls."""
    elements = layer.in_elements + layer.out_elements
    return (CPU_LAYER_FIXED_US + layer.macs / CPU_MACS_PER_US
            + elements / CPU_ELEMENTS_PER_US) / 1000.0
