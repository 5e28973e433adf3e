"""Read an ETDump file (ExecuTorch's event trace) into tidy event rows, from the schema, not from a writer.

Why its own reader: the harness compares the traces of two builds event by event, and a reader that shares its
idea of the layout with the simulator's writer would agree with it even where both are wrong. So this module knows
nothing of ``sim/``: it reads ``etdump.fbs`` (the schema written from upstream's facts, beside this file) to learn
each table's fields in order, which fixes their vtable slots, and decodes the bytes with the ``flatbuffers``
runtime's ``Table``; ``tests/report/test_etdump_reader.py`` checks it against ``flatc --json`` on the same bytes.

A file is untrusted input: every offset is checked against the buffer before it is followed, and whatever is wrong
(short file, wrong identifier, an offset out of the buffer, a string that is no UTF-8) is one ``EtdumpError``
naming what and where, never another exception.

The rows: one per ``ProfileEvent`` (debug and allocation events hold no time and are counted, not listed), in file
order: block index and name (``Default``: method loading; ``Execute``: one per ``Method::execute``), the event's
position in its block, its name (a delegate's event named only by its debug id gets that id), chain and
instruction id, delegate debug id, start, end and duration in the platform's ticks (nanoseconds on Linux, CPU
cycles on bare metal).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EVENT_COLUMNS", "SCHEMA_FILE", "EtdumpError", "EtdumpEvent", "EtdumpFile", "Field", "Schema",
           "events_frame", "read_etdump", "schema"]

SCHEMA_FILE = Path(__file__).with_name("etdump.fbs")
EVENT_COLUMNS = ("block", "run_block", "position", "event", "chain_index", "instruction_id", "delegate_debug_id",
                 "start", "end", "duration")  # fmt: skip


class EtdumpError(ValueError):
    """The bytes are not a readable ETDump: the message says what is wrong and at which byte."""


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    default: str | None
    slot: int


@dataclass(frozen=True)
class Schema:
    """What the reader needs of ``etdump.fbs``: each table's fields by name, and the file identifier."""

    tables: dict[str, dict[str, Field]]
    identifier: bytes

    def field(self, table: str, name: str) -> Field:
        return self.tables[table][name]


@lru_cache(maxsize=1)
def schema() -> Schema:
    """``etdump.fbs`` parsed: the tables of the ``etdump`` namespace and their fields in declaration order."""
    text = re.sub(r"//[^\n]*", "", SCHEMA_FILE.read_text(encoding="utf-8"))
    tables: dict[str, dict[str, Field]] = {}
    for name, body in re.findall(r"\btable\s+(\w+)\s*\{([^}]*)\}", text):
        fields = [f.strip() for f in body.split(";") if f.strip()]
        parsed: dict[str, Field] = {}
        for slot, item in enumerate(fields):
            match = re.fullmatch(r"(\w+)\s*:\s*([\w.\[\]]+)\s*(?:=\s*(\S+))?", item)
            if match is None:
                raise EtdumpError(f"{SCHEMA_FILE.name}: table {name}: cannot read the field {item!r}")
            parsed[match[1]] = Field(match[1], match[2], match[3], slot)
        tables[name] = parsed
    identifier = re.search(r'\bfile_identifier\s+"(\w{4})"', text)
    if identifier is None:
        raise EtdumpError(f"{SCHEMA_FILE.name}: no file_identifier")
    return Schema(tables, identifier[1].encode())


@dataclass(frozen=True)
class EtdumpEvent:
    """One profiling event (see the module docstring for the fields)."""

    block: int
    run_block: str
    position: int
    event: str
    chain_index: int
    instruction_id: int
    delegate_debug_id: str | None
    start: int
    end: int

    @property
    def duration(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class EtdumpFile:
    """A decoded file: its version, its profiling events, and how many events of other kinds it held."""

    version: int
    events: tuple[EtdumpEvent, ...]
    blocks: tuple[str, ...]
    other_events: int = 0


_SCALARS: dict[str, tuple[str, int]] = {  # schema type -> struct code, size
    "bool": ("?", 1), "byte": ("b", 1), "ubyte": ("B", 1), "short": ("h", 2), "ushort": ("H", 2),
    "int": ("i", 4), "uint": ("I", 4), "long": ("q", 8), "ulong": ("Q", 8), "float": ("f", 4),
    "double": ("d", 8),
}  # fmt: skip


class _Reader:
    """Bounds-checked access to one buffer's tables through ``flatbuffers.table.Table``."""

    def __init__(self, data: bytes) -> None:
        from flatbuffers import number_types  # late: the runtime is needed only when a trace is read
        from flatbuffers.table import Table  # late: as above

        self.data, self.table_class, self.uoffset = bytearray(data), Table, number_types.UOffsetTFlags
        self.schema = schema()

    def need(self, pos: int, size: int, what: str) -> None:
        if pos < 0 or pos + size > len(self.data):
            raise EtdumpError(f"{what} at byte {pos} (+{size}) is outside the {len(self.data)}-byte buffer")

    def uoffset_at(self, pos: int, what: str) -> int:
        """The position an unsigned offset stored at ``pos`` points to."""
        self.need(pos, 4, what)
        return pos + int.from_bytes(self.data[pos:pos + 4], "little")

    def table(self, pos: int, what: str) -> Any:
        self.need(pos, 4, what)
        vtable = pos - int.from_bytes(self.data[pos:pos + 4], "little", signed=True)
        self.need(vtable, 4, f"the vtable of {what}")
        vt_size = int.from_bytes(self.data[vtable:vtable + 2], "little")
        if vt_size < 4 or vt_size % 2:
            raise EtdumpError(f"the vtable of {what} at byte {vtable} has an impossible size {vt_size}")
        self.need(vtable, vt_size, f"the vtable of {what}")
        return self.table_class(self.data, pos)

    def offset(self, tab: Any, table: str, name: str) -> int:
        """The field's position inside ``tab`` (0: absent), from its schema slot."""
        slot = self.schema.field(table, name).slot
        return int(tab.Offset(4 + 2 * slot))

    def scalar(self, tab: Any, table: str, name: str) -> int | float | bool:
        field = self.schema.field(table, name)
        code, size = _SCALARS.get(field.type, _SCALARS["byte"])  # an enum field: its underlying byte
        at = self.offset(tab, table, name)
        if not at:
            return _default(field)
        self.need(tab.Pos + at, size, f"{table}.{name}")
        value: int | float | bool = struct.unpack_from("<" + code, self.data, tab.Pos + at)[0]
        return value

    def string(self, tab: Any, table: str, name: str) -> str | None:
        at = self.offset(tab, table, name)
        if not at:
            return None
        start = self.uoffset_at(tab.Pos + at, f"{table}.{name}")
        self.need(start, 4, f"the length of {table}.{name}")
        length = int.from_bytes(self.data[start:start + 4], "little")
        self.need(start + 4, length, f"{table}.{name}")
        try:
            return bytes(tab.String(tab.Pos + at)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise EtdumpError(f"{table}.{name} at byte {start} is not UTF-8 ({exc.reason})") from None

    def child(self, tab: Any, table: str, name: str) -> Any | None:
        at = self.offset(tab, table, name)
        if not at:
            return None
        return self.table(self.uoffset_at(tab.Pos + at, f"{table}.{name}"), f"{table}.{name}")

    def tables(self, tab: Any, table: str, name: str) -> list[Any]:
        at = self.offset(tab, table, name)
        if not at:
            return []
        start = self.uoffset_at(tab.Pos + at, f"{table}.{name}")
        self.need(start, 4, f"the length of {table}.{name}")
        count = int.from_bytes(self.data[start:start + 4], "little")
        self.need(start + 4, 4 * count, f"the {count} elements of {table}.{name}")
        return [self.table(self.uoffset_at(start + 4 + 4 * i, f"{table}.{name}[{i}]"), f"{table}.{name}[{i}]")
                for i in range(count)]


def _default(field: Field) -> int | float | bool:
    if field.default is None:
        return False if field.type == "bool" else 0
    if field.type in ("float", "double"):
        return float(field.default)
    return int(field.default, 0)


def read_etdump(data: bytes) -> EtdumpFile:
    """Decode an ETDump file (size-prefixed ``ED00`` flatbuffer, as ETDumpGen writes it). EtdumpError when the
    bytes are not one."""
    if len(data) < 12:
        raise EtdumpError(f"{len(data)} bytes: too short for an ETDump (size prefix, root offset, identifier)")
    size = int.from_bytes(data[:4], "little")
    if size != len(data) - 4:
        raise EtdumpError(f"the size prefix says {size} bytes follow, the file has {len(data) - 4}: truncated or "
                          f"not size-prefixed")
    reader = _Reader(data)
    found = bytes(data[8:12])
    if found != reader.schema.identifier:
        raise EtdumpError(f"file identifier {found!r}, expected {reader.schema.identifier!r}")
    root = reader.table(reader.uoffset_at(4, "the root offset"), "ETDump")
    version = int(reader.scalar(root, "ETDump", "version"))
    events: list[EtdumpEvent] = []
    blocks: list[str] = []
    other = 0
    for b, run in enumerate(reader.tables(root, "ETDump", "run_data")):
        block = reader.string(run, "RunData", "name") or ""
        blocks.append(block)
        for position, event in enumerate(reader.tables(run, "RunData", "events")):
            profile = reader.child(event, "Event", "profile_event")
            if profile is None:
                other += 1
                continue
            events.append(_profile_event(reader, profile, b, block, position))
    return EtdumpFile(version, tuple(events), tuple(blocks), other)


def _profile_event(reader: _Reader, tab: Any, block: int, run_block: str, position: int) -> EtdumpEvent:
    t = "ProfileEvent"
    name = reader.string(tab, t, "name")
    debug_int = int(reader.scalar(tab, t, "delegate_debug_id_int"))
    debug_str = reader.string(tab, t, "delegate_debug_id_str")
    delegate = debug_str if debug_str is not None else (str(debug_int) if debug_int != -1 else None)
    start, end = int(reader.scalar(tab, t, "start_time")), int(reader.scalar(tab, t, "end_time"))
    return EtdumpEvent(block, run_block, position, name if name is not None else (delegate or ""),
                       int(reader.scalar(tab, t, "chain_index")), int(reader.scalar(tab, t, "instruction_id")),
                       delegate, start, end)


def events_frame(events: EtdumpFile | tuple[EtdumpEvent, ...] | list[EtdumpEvent],
                 time_unit: str | None = None) -> pd.DataFrame:
    """The tidy frame of the events: ``EVENT_COLUMNS``, one row per profiling event, and with ``time_unit`` (the
    platform's ticks: ``ns`` on Linux, ``cycles`` on bare metal; the file does not say) a column holding it."""
    import pandas as pd  # late: pandas only when a frame is wanted

    rows = events.events if isinstance(events, EtdumpFile) else events
    frame = pd.DataFrame([{c: getattr(e, c) for c in EVENT_COLUMNS} for e in rows], columns=list(EVENT_COLUMNS))
    if time_unit is not None:
        frame["time_unit"] = time_unit
    return frame
