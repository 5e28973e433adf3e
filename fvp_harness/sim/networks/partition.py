"""Delegation: which layers run in which Ethos-U partition, and which run on the CPU between
partitions.

Why: a real ExecuTorch program is often only partly delegated. Operators the Ethos-U backend does
not take stay on the CPU (portable or quantized kernels), and the partitioner cuts the graph around
them, so one ``method->execute()`` makes several delegate calls, each with its own command stream,
weights, scratch, IFM and OFM buffers. The Linux delegate prints one ``Ethos-U Linux delegate cycle
counter`` line per call (EthosUBackend_Cortex_A.cpp:294-299), and a harness that counts lines as
inferences measures the wrong thing. ``fvp-harness sim model --partitions K`` makes such a program:
``choose_cpu_layers`` picks K-1 layers to leave on the CPU, evenly spread over the graph, and
``delegation_of`` derives the K partitions (the maximal runs of NPU layers between them) with the
tensors that cross each partition's edge. The model file stores only the CPU layers' names (header
key ``delegation``), so every other fact follows from the layers, as with the sizes.

Rules (deterministic, from the layer list alone): the first and the last layer are always delegated;
K-1 CPU layers at positions ``round(j * n / K)``, j = 1..K-1, moved forward past a neighbour when
two would touch, so no partition is empty. A network of n layers takes at most ``(n + 1) // 2``
partitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fvp_harness.sim.networks.architectures import Architecture

__all__ = ["Delegation", "Partition", "choose_cpu_layers", "delegation_of", "max_partitions",
           "planned_edge_bytes"]


@dataclass(frozen=True)
class Partition:
    """One delegated subgraph: ``layers`` (indices into ``arch.layers``, in order), the tensors it
    reads from outside (``inputs``: its IFM buffers) and the tensors it writes that something
    outside reads (``outputs``: its OFM buffers; the model output included)."""

    index: int
    layers: tuple[int, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class Delegation:
    """The partitions and CPU layers of a program, and the order ``method->execute()`` runs them in
    (``steps``: ``("npu", partition index)`` or ``("cpu", layer index)``)."""

    partitions: tuple[Partition, ...]
    cpu_layers: tuple[int, ...]
    steps: tuple[tuple[str, int], ...]


def max_partitions(arch: Architecture) -> int:
    """The most partitions ``choose_cpu_layers`` can make of ``arch`` (each needs a layer, and a CPU
    layer between two)."""
    return (len(arch.layers) + 1) // 2


def choose_cpu_layers(arch: Architecture, partitions: int) -> tuple[str, ...]:
    """The names of the ``partitions - 1`` layers left on the CPU (see the module docstring);
    ValueError when the network is too small for that many partitions."""
    n = len(arch.layers)
    if partitions < 1:
        raise ValueError(f"--partitions {partitions}: a delegated program has at least 1 partition")
    if partitions > max_partitions(arch):
        raise ValueError(f"--partitions {partitions}: {arch.name} has {n} layers, so at most "
                         f"{max_partitions(arch)} partitions (each needs a layer, with a CPU layer "
                         "between two)")
    chosen: list[int] = []
    for j in range(1, partitions):
        position = max(round(j * n / partitions), 1, chosen[-1] + 2 if chosen else 1)
        chosen.append(position)
    # pull back from the end: the last layer stays delegated, and the CPU layers keep a layer
    # between them
    limit = n - 2
    for i in range(len(chosen) - 1, -1, -1):
        chosen[i] = min(chosen[i], limit)
        limit = chosen[i] - 2
    return tuple(arch.layers[i].name for i in chosen)


def delegation_of(arch: Architecture, cpu_layers: Sequence[str] = ()) -> Delegation:
    """The partitions of ``arch`` when the named layers run on the CPU (none: one partition of every
    layer). ValueError for a name the network does not have."""
    names = [layer.name for layer in arch.layers]
    unknown = [name for name in cpu_layers if name not in names]
    if unknown:
        raise ValueError(f"{arch.name} has no layer {', '.join(map(repr, unknown))} "
                         "(delegation.cpu_layers)")
    on_cpu = {names.index(name) for name in cpu_layers}
    runs: list[list[int]] = []
    steps: list[tuple[str, int]] = []
    for i in range(len(arch.layers)):
        if i in on_cpu:
            steps.append(("cpu", i))
            continue
        if not steps or steps[-1][0] != "npu":
            runs.append([])
            steps.append(("npu", len(runs) - 1))
        runs[-1].append(i)
    readers: dict[str, set[int]] = {}
    for i, layer in enumerate(arch.layers):
        for name in layer.inputs:
            readers.setdefault(name, set()).add(i)
    partitions = []
    for index, run in enumerate(runs):
        inside = set(run)
        written = {arch.layers[i].output for i in run}
        inputs = [name for i in run for name in arch.layers[i].inputs if name not in written]
        outputs = [arch.layers[i].output for i in run
                   if arch.layers[i].output == arch.output_name or
                   readers.get(arch.layers[i].output, set()) - inside]
        partitions.append(Partition(index, tuple(run), tuple(dict.fromkeys(inputs)),
                                    tuple(outputs)))
    return Delegation(tuple(partitions), tuple(sorted(on_cpu)), tuple(steps))


def planned_edge_bytes(arch: Architecture, delegation: Delegation, alignment: int = 16) -> int:
    """Bytes the CPU planned buffer needs beyond the model's input and output: the tensors handed
    between partitions and CPU layers (each ``alignment``-aligned), at the largest set alive at once
    in ``steps`` order (memory planning reuses a tensor's space once its last reader ran). 0 for a
    fully delegated program."""
    if len(delegation.steps) <= 1:
        return 0
    step_of: dict[int, int] = {}
    for step, (kind, index) in enumerate(delegation.steps):
        for position in (delegation.partitions[index].layers if kind == "npu" else (index,)):
            step_of[position] = step
    produced = {layer.output: step_of[i] for i, layer in enumerate(arch.layers)}
    last: dict[str, int] = {}
    for i, layer in enumerate(arch.layers):
        for name in layer.inputs:
            if name in produced and produced[name] != step_of[i]:
                last[name] = max(last.get(name, 0), step_of[i])
    sizes = {layer.output: -(-layer.out_elements // alignment) * alignment for layer in arch.layers}
    edges = [name for name in last if name not in (arch.input_name, arch.output_name)]
    return max((sum(sizes[name] for name in edges if produced[name] <= step <= last[name])
                for step in range(len(delegation.steps))), default=0)
