"""Read an ExecuTorch program (``.pte``): its methods, the operators and backends they need, and
their memory plan.

Why: a program says before anything runs what a platform must have to run it. An
Ethos-U-delegated program needs the NPU's backend; a portable one the kernels of its operators;
and its memory plan is the RAM the runtime plans for each method
(``MethodMeta::memory_planned_buffer_size``), a memory metric read on the host. The harness
refuses a program a platform cannot run before booting anything (``scenario/fit.py``), and the
report reads the memory plan.

The file (ExecuTorch 1.5.1, ``exir/_serialize/_program.py`` of pytorch/executorch): a flatbuffer
whose identifier (bytes 4-7) is ``ET12``, then at byte 8 an optional extended header: ``eh00``,
its length (uint32), the size of the flatbuffer (uint64), the offset of the first segment
(uint64) and, when the length says so, the size of the segment data (uint64), all little-endian.
Segments (delegate blobs, constants) lie after the flatbuffer, each at the segment base offset
plus its ``DataSegment.offset``. The flatbuffer is read from ``program.fbs`` beside this module
(upstream's tables, fields in upstream's order) through ``formats.flatbuf``; a file is untrusted
input: every offset is checked, and whatever is wrong is one ``PteError`` naming what and where.
``tests/formats/test_pte_reader.py`` checks the reader against ``flatc --json`` on real programs
exported with ExecuTorch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from fvp_harness.formats.flatbuf import FlatReader, Schema, parse_schema

__all__ = [
    "ETHOS_U_BACKEND",
    "SCHEMA_FILE",
    "Delegate",
    "ExecutionPlan",
    "ExtendedHeader",
    "Operator",
    "Program",
    "PteError",
    "is_program",
    "program_identifier",
    "read_program",
    "read_program_file",
    "schema",
]

SCHEMA_FILE = Path(__file__).with_name("program.fbs")
ETHOS_U_BACKEND = "EthosUBackend"
"""The backend id of an Ethos-U-delegated partition (``backends/arm``): it runs only where an NPU
is."""
_HEADER_MAGIC = b"eh00"
_HEADER_MINIMUM = 24  # magic, length, program size, segment base offset
_IDENTIFIER = re.compile(rb"ET\d\d")


class PteError(ValueError):
    """The bytes are not a readable ExecuTorch program: the message says what is wrong and at which
    byte."""


@lru_cache(maxsize=1)
def schema() -> Schema:
    """``program.fbs`` parsed."""
    return parse_schema(SCHEMA_FILE, PteError)


def program_identifier(head: bytes) -> str | None:
    """``ET12`` (or another ``ET`` + two digits) when ``head`` starts an ExecuTorch program, else
    None."""
    ident = bytes(head[4:8])
    return ident.decode("ascii") if _IDENTIFIER.fullmatch(ident) else None


def is_program(head: bytes) -> bool:
    """Whether ``head`` (a file's first 8 bytes or more) starts an ExecuTorch program (``ET`` + two
    digits)."""
    return program_identifier(head) is not None


@dataclass(frozen=True)
class Operator:
    """An operator a method's kernel calls name: ``aten::convolution`` with overload ``out``."""

    name: str
    overload: str

    @property
    def qualified(self) -> str:
        """``name.overload`` (just the name when there is no overload), as the runtime's kernel
        registry names it."""
        return f"{self.name}.{self.overload}" if self.overload else self.name


@dataclass(frozen=True)
class Delegate:
    """A partition lowered to a backend: its id (``EthosUBackend``, ``XnnpackBackend``) and its
    compile spec keys."""

    backend: str
    compile_specs: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExecutionPlan:
    """One method. ``non_const_buffer_sizes`` is the memory plan as stored (index 0 reserved)."""

    name: str
    operators: tuple[Operator, ...]
    delegates: tuple[Delegate, ...]
    non_const_buffer_sizes: tuple[int, ...]
    inputs: int
    outputs: int

    @property
    def planned_buffer_sizes(self) -> tuple[int, ...]:
        """Bytes of each planned buffer, as ``MethodMeta::memory_planned_buffer_size(i)`` gives
        them."""
        return self.non_const_buffer_sizes[1:]

    @property
    def backends(self) -> tuple[str, ...]:
        """The backends its delegates need, each once, in order."""
        return tuple(dict.fromkeys(delegate.backend for delegate in self.delegates))


@dataclass(frozen=True)
class ExtendedHeader:
    """The ``eh00`` header: the flatbuffer's size and where the segment data starts (0: no
    segments)."""

    length: int
    program_size: int
    segment_base_offset: int
    segment_data_size: int


@dataclass(frozen=True)
class Program:
    """A decoded program: identifier, schema version, methods, the extended header and the segments'
    sizes."""

    identifier: str
    version: int
    plans: tuple[ExecutionPlan, ...]
    header: ExtendedHeader | None
    segments: tuple[tuple[int, int], ...]
    """(offset from the segment base, size) of each segment."""

    def plan(self, name: str) -> ExecutionPlan:
        for plan in self.plans:
            if plan.name == name:
                return plan
        raise KeyError(name)

    @property
    def backends(self) -> tuple[str, ...]:
        """Every backend any method needs, each once, in order."""
        return tuple(dict.fromkeys(backend for plan in self.plans for backend in plan.backends))


def _extended_header(data: bytes) -> ExtendedHeader | None:
    if data[8:12] != _HEADER_MAGIC:
        return None
    if len(data) < 8 + _HEADER_MINIMUM:
        raise PteError(f"the extended header at byte 8 is cut short: {len(data)} bytes in the file")
    length = int.from_bytes(data[12:16], "little")
    if length < _HEADER_MINIMUM or 8 + length > len(data):
        raise PteError(
            f"the extended header at byte 8 says it is {length} bytes long (at least "
            f"{_HEADER_MINIMUM}, and within the {len(data)}-byte file)"
        )
    program_size = int.from_bytes(data[16:24], "little")
    base = int.from_bytes(data[24:32], "little")
    segment_size = int.from_bytes(data[32:40], "little") if length > _HEADER_MINIMUM else 0
    if not 8 + length <= program_size <= len(data):
        raise PteError(
            f"the extended header says the program is {program_size} bytes; the file has "
            f"{len(data)}: truncated, or not a program"
        )
    if base and (base < program_size or base + segment_size > len(data)):
        raise PteError(
            f"the extended header puts {segment_size} bytes of segments at byte {base}, outside "
            f"the {len(data)}-byte file after the {program_size}-byte program: truncated"
        )
    return ExtendedHeader(length, program_size, base, segment_size)


def read_program(data: bytes) -> Program:
    """Decode an ExecuTorch program. PteError when the bytes are not one (or are damaged)."""
    data = bytes(data)
    if len(data) < 8:
        raise PteError(f"{len(data)} bytes: too short for a program (root offset, identifier)")
    identifier = program_identifier(data)
    expected = schema().identifier
    if identifier is None:
        raise PteError(
            f"file identifier {data[4:8]!r} at byte 4, expected {expected!r}: not an ExecuTorch "
            "program"
        )
    if identifier.encode() != expected:
        raise PteError(
            f"file identifier {identifier} at byte 4: a program of another schema version than "
            f"{expected.decode()}, which this reader knows"
        )
    header = _extended_header(data)
    reader = FlatReader(
        data[: header.program_size] if header is not None else data, schema(), PteError
    )
    root = reader.table(reader.uoffset_at(0, "the root offset"), "Program")
    plans = tuple(_plan(reader, tab) for tab in reader.tables(root, "Program", "execution_plan"))
    segments = tuple(
        (
            int(reader.scalar(tab, "DataSegment", "offset")),
            int(reader.scalar(tab, "DataSegment", "size")),
        )
        for tab in reader.tables(root, "Program", "segments")
    )
    if segments:
        _check_segments(segments, header, len(data))
    return Program(
        identifier, int(reader.scalar(root, "Program", "version")), plans, header, segments
    )


def read_program_file(path: Path | str) -> Program:
    """``read_program`` of a file; the error names the file."""
    path = Path(path)
    try:
        return read_program(path.read_bytes())
    except PteError as exc:
        raise PteError(f"{path}: {exc}") from None


def _plan(reader: FlatReader, tab: Any) -> ExecutionPlan:
    t = "ExecutionPlan"
    operators = tuple(
        Operator(
            reader.string(op, "Operator", "name") or "",
            reader.string(op, "Operator", "overload") or "",
        )
        for op in reader.tables(tab, t, "operators")
    )
    delegates = tuple(
        Delegate(
            reader.string(item, "BackendDelegate", "id") or "",
            tuple(
                reader.string(spec, "CompileSpec", "key") or ""
                for spec in reader.tables(item, "BackendDelegate", "compile_specs")
            ),
        )
        for item in reader.tables(tab, t, "delegates")
    )
    sizes = tuple(int(size) for size in reader.scalars(tab, t, "non_const_buffer_sizes"))
    if any(size < 0 for size in sizes):
        raise PteError(
            f"ExecutionPlan.non_const_buffer_sizes of {reader.string(tab, t, 'name')!r} holds a "
            f"negative size: {list(sizes)}"
        )
    return ExecutionPlan(
        reader.string(tab, t, "name") or "",
        operators,
        delegates,
        sizes,
        len(reader.scalars(tab, t, "inputs")),
        len(reader.scalars(tab, t, "outputs")),
    )


def _check_segments(
    segments: tuple[tuple[int, int], ...], header: ExtendedHeader | None, size: int
) -> None:
    """Every segment must lie in the file: after the segment base offset, within the segment data
    when its size is known."""
    if header is None or not header.segment_base_offset:
        raise PteError(
            f"the program names {len(segments)} segments but has no extended header saying where "
            "they start"
        )
    room = header.segment_data_size or size - header.segment_base_offset
    for index, (offset, length) in enumerate(segments):
        if offset + length > room:
            raise PteError(
                f"segment {index} ({length} bytes at {offset} past the segment base, byte "
                f"{header.segment_base_offset}) ends outside the {room} bytes of segment data: "
                "truncated"
            )
