"""The event tracer of an executor_runner built with ``ET_EVENT_TRACER_ENABLED``: ``--etdump_path``
and the ETDump it writes (docs/etdump.md, "The simulator's event tracer")."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from fvp_harness.sim.workloads.etdump import ProfileEvent, RunBlock, encode_etdump
from fvp_harness.sim.workloads.executor_runner.flags import FlagSpec

__all__ = ["ETDUMP_PATH_FLAG", "UNSET_CHAIN", "UNSET_DEBUG_HANDLE", "EventTracer"]

ETDUMP_PATH_FLAG = FlagSpec("etdump_path", "string", "model.etdump",
                            "Write ETDump data to this path.")
"""``DEFINE_string(etdump_path, "model.etdump", ...)`` (executor_runner.cpp:90), only in a traced
build."""
UNSET_CHAIN, UNSET_DEBUG_HANDLE = -1, 0
"""``kUnsetChainId`` and ``kUnsetDebugHandle`` (runtime/core/event_tracer.h:34-35)."""


@dataclass
class _Block:
    name: str
    events: list[ProfileEvent] = field(default_factory=list)


class EventTracer:
    """ETDumpGen as the runner drives it: event blocks, profiling scopes, the current instruction;
    ``ticks`` is the clock (``pal_current_ticks``: simulated nanoseconds)."""

    def __init__(self, ticks: Callable[[], int]) -> None:
        self.ticks = ticks
        self.blocks: list[_Block] = []
        self.chain, self.debug_handle = UNSET_CHAIN, UNSET_DEBUG_HANDLE

    def create_event_block(self, name: str) -> None:
        self.blocks.append(_Block(name))

    @contextmanager
    def scope(self, name: str) -> Iterator[None]:
        """``start_profiling(name)`` ... ``end_profiling``: the event is written when the scope
        ends."""
        chain, handle, start = self.chain, self.debug_handle, self.ticks()
        yield
        # upstream checks this state with ET_CHECK_MSG; the runner always opened a block
        if not self.blocks:
            raise RuntimeError("ETDumpGen: an event before any event block")
        self.blocks[-1].events.append(
            ProfileEvent(start=start, end=self.ticks(), name=name, chain_index=chain,
                         instruction_id=handle))

    @contextmanager
    def instruction(self, chain: int, instruction: int) -> Iterator[None]:
        """``EventTracerProfileInstructionScope``: events inside belong to this chain and
        instruction."""
        self.chain, self.debug_handle = chain, instruction
        try:
            yield
        finally:
            self.chain, self.debug_handle = UNSET_CHAIN, UNSET_DEBUG_HANDLE

    def etdump(self) -> bytes:
        """``get_etdump_data()``: the size-prefixed ``ED00`` flatbuffer of every block so far."""
        return encode_etdump([RunBlock(b.name, tuple(b.events)) for b in self.blocks])
