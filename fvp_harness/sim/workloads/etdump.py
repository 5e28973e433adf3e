"""A minimal ETDump writer: the size-prefixed ``ED00`` flatbuffer a bare-metal runner built with
ETDump prints.

Why write a real flatbuffer: ExecuTorch's tools (``devtools.inspector``) and the harness read the
ETDump that the emulated ``arm_executor_runner`` prints between ``#[RUN THIS]`` and ``#[END]``; a
file in the real layout lets them treat it like a real one. The schema is
``devtools/etdump/etdump_schema_flatcc.fbs`` (pytorch/executorch cff6f4dd32); only what the runner
records is written:

* ``ETDump {version: uint (slot 0) = 0, run_data: [RunData] (slot 1)}``;
* ``RunData {name: string (0), bundled_input_index: int (1) = -1, allocators (2, absent), events:
  [Event] (3)}``
  - one ``Default`` block (Program::load_method creates it) and one ``Execute`` block per
    ``Method::execute``;
* ``Event {profile_event: ProfileEvent (0), allocation_event (1, absent), debug_event: DebugEvent
  (2)}``;
* ``ProfileEvent {name: string (0), chain_index: int (1), instruction_id: int (2) = -1,
  delegate_debug_id_int: int (3) = -1, delegate_debug_id_str: string (4), delegate_debug_metadata
  (5, absent), start_time: ulong (6), end_time: ulong (7)}`` - times in CPU cycles on bare metal;
* ``DebugEvent {chain_index: ulong (0), instruction_id: int (1) = -1, debug_entry: Value (2),
  delegate_debug_id_int (3) = -1, delegate_debug_id_str (4), name: string (5)}`` with ``Value {val:
  byte (0) = 5 (Tensor), tensor: Tensor (1), ..., output: Bool (7)}`` and ``Tensor {scalar_type:
  byte (0), sizes: [long] (1), strides: [long] (2), offset: long (3)}`` - the tensor's bytes are in
  the separate debug buffer at ``offset``.

Layout: written front to back (every offset points forward, as flatbuffers require of unsigned
offsets): the 4-byte size prefix, the root offset, the file identifier ``ED00``, then each table
after its vtable and each table's strings, vectors and sub-tables after the table. Scalars are
aligned to their size from the start of the buffer, as flatcc's ``start_as_root_with_size`` buffers
are.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["FILE_IDENTIFIER", "SCALAR_TYPE_CHAR", "DebugTensor", "ProfileEvent", "RunBlock",
           "encode_etdump"]

FILE_IDENTIFIER = b"ED00"
ETDUMP_VERSION = 0
SCALAR_TYPE_CHAR = 1
"""``executorch_flatbuffer.ScalarType.CHAR`` (int8), schema/scalar_type.fbs."""
_VALUE_TENSOR = 5
"""``etdump.ValueType.Tensor``."""


@dataclass(frozen=True)
class ProfileEvent:
    """A profiling event: a runtime event by ``name``, or a delegate's event by
    ``delegate_debug_id_str``."""

    start: int
    end: int
    name: str = ""
    chain_index: int = 0
    instruction_id: int = -1
    delegate_debug_id_str: str = ""


@dataclass(frozen=True)
class DebugTensor:
    """A debug event holding one tensor (an instruction's output) whose bytes are at ``offset`` of
    the debug buffer."""

    sizes: tuple[int, ...]
    offset: int
    name: str = ""
    instruction_id: int = 0
    scalar_type: int = SCALAR_TYPE_CHAR
    output: bool = True


@dataclass(frozen=True)
class RunBlock:
    """One ``RunData``: an event block (``Default`` for method loading, ``Execute`` per
    execution)."""

    name: str
    events: tuple[ProfileEvent | DebugTensor, ...]


_Child = Callable[["_Writer"], int]
# (vtable slot, kind, value); kind: a struct code, or "ref" (value: _Child)
_Field = tuple[int, str, object]


def _size(kind: str) -> int:
    return 4 if kind == "ref" else struct.calcsize("<" + kind)


class _Writer:
    """Front-to-back flatbuffer writer (see the module docstring)."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def pad(self, align: int, phase: int = 0) -> None:
        while len(self.buf) % align != phase:
            self.buf.append(0)

    def string(self, text: str) -> int:
        data = text.encode("utf-8")
        self.pad(4)
        pos = len(self.buf)
        self.buf += struct.pack("<I", len(data)) + data + b"\0"
        return pos

    def longs(self, values: Sequence[int]) -> int:
        self.pad(8, 4)  # the elements after the 4-byte length are 8-aligned
        pos = len(self.buf)
        self.buf += struct.pack(f"<I{len(values)}q", len(values), *values)
        return pos

    def tables(self, children: Sequence[_Child]) -> int:
        self.pad(4)
        pos = len(self.buf)
        self.buf += struct.pack("<I", len(children)) + b"\0" * (4 * len(children))
        for i, child in enumerate(children):
            slot = pos + 4 + 4 * i
            struct.pack_into("<I", self.buf, slot, child(self) - slot)
        return pos

    def table(self, fields: Sequence[_Field]) -> int:
        """Write a vtable and its table, then the table's children; returns the table's position.
        Callers leave out optional fields at their schema default (``instruction_id`` -1, ...), as
        builders do."""
        layout: list[tuple[int, str, object, int]] = []  # slot, kind, value, offset in the table
        offset = 4  # after the soffset to the vtable
        for slot, kind, value in sorted(fields, key=lambda f: -_size(f[1])):
            size = _size(kind)
            offset = (offset + size - 1) // size * size
            layout.append((slot, kind, value, offset))
            offset += size
        align = max([4, *(_size(kind) for _, kind, _ in fields)])
        table_size = (offset + align - 1) // align * align if fields else 4
        slots = 1 + max((slot for slot, _, _ in fields), default=-1)
        vtable = [4 + 2 * slots, table_size] + [0] * slots
        for slot, _, _, at in layout:
            vtable[2 + slot] = at
        self.pad(2)
        vtable_pos = len(self.buf)
        self.buf += struct.pack(f"<{len(vtable)}H", *vtable)
        self.pad(align)
        table_pos = len(self.buf)
        self.buf += b"\0" * table_size
        struct.pack_into("<i", self.buf, table_pos, table_pos - vtable_pos)
        for _, kind, value, at in layout:
            if kind != "ref":
                struct.pack_into("<" + kind, self.buf, table_pos + at, value)
        for _, kind, value, at in layout:
            if kind == "ref":
                assert callable(value)
                struct.pack_into("<I", self.buf, table_pos + at, value(self) - (table_pos + at))
        return table_pos


def _string(text: str) -> _Child:
    return lambda w: w.string(text)


def _profile(event: ProfileEvent) -> _Child:
    fields: list[_Field] = [(1, "i", event.chain_index), (6, "Q", event.start), (7, "Q", event.end)]
    if event.name:
        fields.append((0, "ref", _string(event.name)))
    if event.instruction_id != -1:
        fields.append((2, "i", event.instruction_id))
    if event.delegate_debug_id_str:
        fields.append((4, "ref", _string(event.delegate_debug_id_str)))
    return lambda w: w.table(fields)


def _debug(event: DebugTensor) -> _Child:
    sizes = list(event.sizes)
    strides = [1] * len(sizes)
    for i in range(len(sizes) - 2, -1, -1):
        strides[i] = strides[i + 1] * sizes[i + 1]

    def tensor(w: _Writer) -> int:
        return w.table([(0, "b", event.scalar_type), (1, "ref", lambda w: w.longs(sizes)),
                        (2, "ref", lambda w: w.longs(strides)),
                        (3, "q", event.offset)])  # fmt: skip

    def value(w: _Writer) -> int:
        fields: list[_Field] = [(0, "b", _VALUE_TENSOR), (1, "ref", tensor)]
        if event.output:
            fields.append((7, "ref", lambda w: w.table([(0, "?", True)])))
        return w.table(fields)

    fields: list[_Field] = [(2, "ref", value)]
    if event.name:
        fields.append((5, "ref", _string(event.name)))
    if event.instruction_id != -1:
        fields.append((1, "i", event.instruction_id))
    return lambda w: w.table(fields)


def _event(event: ProfileEvent | DebugTensor) -> _Child:
    if isinstance(event, ProfileEvent):
        inner, slot = _profile(event), 0
    else:
        inner, slot = _debug(event), 2
    return lambda w: w.table([(slot, "ref", inner)])


def _run_data(block: RunBlock) -> _Child:
    events = [_event(e) for e in block.events]
    return lambda w: w.table([(0, "ref", _string(block.name)),
                              (3, "ref", lambda w: w.tables(events))])


def encode_etdump(blocks: Sequence[RunBlock]) -> bytes:
    """The ETDump file (size-prefixed flatbuffer, identifier ``ED00``) of these event blocks."""
    w = _Writer()
    w.buf += b"\0" * 8 + FILE_IDENTIFIER  # size prefix, root offset, identifier
    runs = [_run_data(b) for b in blocks]
    root = w.table([(0, "I", ETDUMP_VERSION), (1, "ref", lambda w: w.tables(runs))])
    struct.pack_into("<I", w.buf, 4, root - 4)
    w.pad(8)
    struct.pack_into("<I", w.buf, 0, len(w.buf) - 4)
    return bytes(w.buf)
