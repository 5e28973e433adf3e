"""The event tracer of an executor_runner built with ``ET_EVENT_TRACER_ENABLED``: ``--etdump_path`` and the
ETDump it writes.

Why imitate it: a user who profiles with ETDump gets a file from the runner, not a line on the console; the harness
must fetch it, read it and compare two builds' events, and the simulator has to give it the same file upstream would.
What upstream does (pytorch/executorch cff6f4dd32):

* executor_runner.cpp:89-91 defines ``--etdump_path`` (default ``model.etdump``) only in a traced build, and
  :225-273 ``EventTraceManager`` hands an ``ETDumpGen`` to ``load_method``; after printing the outputs (:867-872) it
  writes the file: ``ETDump written to file '%s'.`` (:261), or ``Failed to open ETDump file at %s.`` (:253) and
  the Fatal ``Failed to save ETDump file.`` (:871).
* ETDumpGen (devtools/etdump/etdump_flatcc.cpp) starts a ``RunData`` block per ``create_event_block``
  (``Default`` in Program::load_method, program.cpp:377; ``Execute`` per Method::execute, method.cpp:1698) and
  writes a ``ProfileEvent`` when a scope *ends* (``end_profiling``), so inner events come before the events
  around them. A scope without its own chain takes the tracer's current chain and debug handle, which
  Method::execute sets per instruction (``EventTracerProfileInstructionScope``, method.cpp:1756) and resets to
  ``kUnsetChainId`` -1 / ``kUnsetDebugHandle`` 0 afterwards (runtime/core/event_tracer.h:34-35).
* Times are ``pal_current_ticks()``: nanoseconds on Linux (the tick ratio is 1/1), here the simulated clock.

The events the emulated runner records, as upstream's code records them for a fully delegated Ethos-U program:
``Default``: ``+EthosUBackend::init()processed_data``, ``+EthosUBackend::init()vela_bin_read()``
(EthosUBackend.cpp:93-122), ``Method::init`` (method.cpp:887), ``Program::load_method`` (program.cpp:378);
``Execute`` per execution: ``+EthosUBackend::execute()handles.input.memcpy()`` per input (EthosUBackend.cpp:244),
``+EthosUBackend::execute()NPU`` (:269, ``platform_execute``: the Linux driver's work and the NPU's),
``EthosUBackend::execute()`` (:144), ``DELEGATE_CALL`` (method.cpp:1505) at chain 0 / instruction i, and
``Method::execute`` (method.cpp:1700) at chain -1 / instruction 0. A partly delegated program
(``partitioned.py``) has one instruction per step: ``OPERATOR_CALL`` (method.cpp:1469) for a CPU operator,
``DELEGATE_CALL`` around the backend's scopes for each partition.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from fvp_harness.sim.workloads.etdump import ProfileEvent, RunBlock, encode_etdump
from fvp_harness.sim.workloads.executor_runner.flags import FlagSpec

__all__ = ["ETDUMP_PATH_FLAG", "UNSET_CHAIN", "UNSET_DEBUG_HANDLE", "EventTracer"]

ETDUMP_PATH_FLAG = FlagSpec("etdump_path", "string", "model.etdump", "Write ETDump data to this path.")
"""``DEFINE_string(etdump_path, "model.etdump", ...)`` (executor_runner.cpp:90), only in a traced build."""
UNSET_CHAIN, UNSET_DEBUG_HANDLE = -1, 0
"""``kUnsetChainId`` and ``kUnsetDebugHandle`` (runtime/core/event_tracer.h:34-35)."""


@dataclass
class _Block:
    name: str
    events: list[ProfileEvent] = field(default_factory=list)


class EventTracer:
    """ETDumpGen as the runner drives it: event blocks, profiling scopes, the current instruction; ``ticks`` is
    the clock (``pal_current_ticks``: simulated nanoseconds)."""

    def __init__(self, ticks: Callable[[], int]) -> None:
        self.ticks = ticks
        self.blocks: list[_Block] = []
        self.chain, self.debug_handle = UNSET_CHAIN, UNSET_DEBUG_HANDLE

    def create_event_block(self, name: str) -> None:
        self.blocks.append(_Block(name))

    @contextmanager
    def scope(self, name: str) -> Iterator[None]:
        """``start_profiling(name)`` ... ``end_profiling``: the event is written when the scope ends."""
        chain, handle, start = self.chain, self.debug_handle, self.ticks()
        yield
        if not self.blocks:  # upstream checks this state with ET_CHECK_MSG; the runner always opened a block
            raise RuntimeError("ETDumpGen: an event before any event block")
        self.blocks[-1].events.append(
            ProfileEvent(start=start, end=self.ticks(), name=name, chain_index=chain, instruction_id=handle))

    @contextmanager
    def instruction(self, chain: int, instruction: int) -> Iterator[None]:
        """``EventTracerProfileInstructionScope``: events inside belong to this chain and instruction."""
        self.chain, self.debug_handle = chain, instruction
        try:
            yield
        finally:
            self.chain, self.debug_handle = UNSET_CHAIN, UNSET_DEBUG_HANDLE

    def etdump(self) -> bytes:
        """``get_etdump_data()``: the size-prefixed ``ED00`` flatbuffer of every block so far."""
        return encode_etdump([RunBlock(b.name, tuple(b.events)) for b in self.blocks])
