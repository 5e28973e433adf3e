"""Read an ETDump file (ExecuTorch's event trace) into tidy event rows, from the schema, not from a
writer.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fvp_harness.formats.flatbuf import Field, FlatReader, Schema, parse_schema

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EVENT_COLUMNS", "SCHEMA_FILE", "EtdumpError", "EtdumpEvent", "EtdumpFile", "Field",
           "Schema", "events_frame", "read_etdump", "schema"]

SCHEMA_FILE = Path(__file__).with_name("etdump.fbs")
EVENT_COLUMNS = ("block", "run_block", "position", "event", "chain_index", "instruction_id",
                 "delegate_debug_id", "start", "end", "duration")  # fmt: skip


class EtdumpError(ValueError):
    """The bytes are not a readable ETDump: the message says what is wrong and at which byte."""


@lru_cache(maxsize=1)
def schema() -> Schema:
    """``etdump.fbs`` parsed: the tables of the ``etdump`` namespace and their fields in declaration
    order."""
    return parse_schema(SCHEMA_FILE, EtdumpError)


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
    """A decoded file: its version, its profiling events, and how many events of other kinds it
    held."""

    version: int
    events: tuple[EtdumpEvent, ...]
    blocks: tuple[str, ...]
    other_events: int = 0


class _Reader(FlatReader):
    """Bounds-checked access to an ETDump's tables (``FlatReader`` raising ``EtdumpError``)."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data, schema(), EtdumpError)


def read_etdump(data: bytes) -> EtdumpFile:
    """Decode an ETDump file (size-prefixed ``ED00`` flatbuffer, as ETDumpGen writes it).
    EtdumpError when the bytes are not one."""
    if len(data) < 12:
        raise EtdumpError(f"{len(data)} bytes: too short for an ETDump (size prefix, root offset, "
                          "identifier)")
    size = int.from_bytes(data[:4], "little")
    if size != len(data) - 4:
        raise EtdumpError(f"the size prefix says {size} bytes follow, the file has "
                          f"{len(data) - 4}: truncated or not size-prefixed")
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


def _profile_event(reader: _Reader, tab: Any, block: int, run_block: str,
                   position: int) -> EtdumpEvent:
    t = "ProfileEvent"
    name = reader.string(tab, t, "name")
    debug_int = int(reader.scalar(tab, t, "delegate_debug_id_int"))
    debug_str = reader.string(tab, t, "delegate_debug_id_str")
    delegate = debug_str if debug_str is not None else (str(debug_int) if debug_int != -1 else None)
    start, end = int(reader.scalar(tab, t, "start_time")), int(reader.scalar(tab, t, "end_time"))
    return EtdumpEvent(block, run_block, position, name if name is not None else (delegate or ""),
                       int(reader.scalar(tab, t, "chain_index")),
                       int(reader.scalar(tab, t, "instruction_id")), delegate, start, end)


def events_frame(events: EtdumpFile | tuple[EtdumpEvent, ...] | list[EtdumpEvent],
                 time_unit: str | None = None) -> pd.DataFrame:
    """The tidy frame of the events: ``EVENT_COLUMNS``, one row per profiling event, and with
    ``time_unit`` (the platform's ticks: ``ns`` on Linux, ``cycles`` on bare metal; the file does
    not say) a column holding it."""
    import pandas as pd  # late: pandas only when a frame is wanted

    rows = events.events if isinstance(events, EtdumpFile) else events
    frame = pd.DataFrame([{c: getattr(e, c) for c in EVENT_COLUMNS} for e in rows],
                         columns=list(EVENT_COLUMNS))
    if time_unit is not None:
        frame["time_unit"] = time_unit
    return frame
