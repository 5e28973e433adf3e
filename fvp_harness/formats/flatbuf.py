"""Read a flatbuffer from its schema file, every offset checked: the one reader under the ETDump
(``report/stats/etdump``) and the ExecuTorch program (``formats/pte``) readers.

Why a reader of our own over the ``flatbuffers`` runtime's ``Table`` rather than generated code:
the files read are untrusted input (a user's ``.pte``, a runner's ETDump), and generated
accessors follow any offset they are given. The schema file (``.fbs``) fixes each table's fields
in order, hence their vtable slots (a union field takes two: its ``_type`` byte, then the value);
before an offset is followed it is checked against the buffer, and whatever is wrong is one error
of the caller's class naming what and where, never another exception.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["SCALARS", "Field", "FlatReader", "Schema", "parse_schema"]


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    default: str | None
    slot: int


@dataclass(frozen=True)
class Schema:
    """What a reader needs of a ``.fbs`` file: each table's fields by name, and the file identifier.
    """

    tables: dict[str, dict[str, Field]]
    identifier: bytes

    def field(self, table: str, name: str) -> Field:
        return self.tables[table][name]


def parse_schema(path: Path, error: type[Exception]) -> Schema:
    """The tables of ``path`` and their fields in declaration order (attributes such as
    ``(force_align: 16)`` ignored; a union field counts two slots). ``error`` is raised for what
    cannot be read."""
    text = re.sub(r"//[^\n]*", "", path.read_text(encoding="utf-8"))
    unions = set(re.findall(r"\bunion\s+(\w+)\s*\{", text))
    tables: dict[str, dict[str, Field]] = {}
    for name, body in re.findall(r"\btable\s+(\w+)\s*\{([^}]*)\}", text):
        fields = [re.sub(r"\([^)]*\)", "", f).strip() for f in body.split(";") if f.strip()]
        parsed: dict[str, Field] = {}
        slot = 0
        for item in fields:
            match = re.fullmatch(r"(\w+)\s*:\s*([\w.\[\]]+)\s*(?:=\s*(\S+))?", item)
            if match is None:
                raise error(f"{path.name}: table {name}: cannot read the field {item!r}")
            if match[2] in unions:
                slot += 1  # the union's type byte comes first
            parsed[match[1]] = Field(match[1], match[2], match[3], slot)
            slot += 1
        tables[name] = parsed
    identifier = re.search(r'\bfile_identifier\s+"(\w{4})"', text)
    if identifier is None:
        raise error(f"{path.name}: no file_identifier")
    return Schema(tables, identifier[1].encode())


SCALARS: dict[str, tuple[str, int]] = {  # schema type -> struct code, size
    "bool": ("?", 1), "byte": ("b", 1), "ubyte": ("B", 1), "short": ("h", 2),
    "ushort": ("H", 2), "int": ("i", 4), "uint": ("I", 4), "long": ("q", 8), "ulong": ("Q", 8),
    "float": ("f", 4), "double": ("d", 8), "int8": ("b", 1), "uint8": ("B", 1),
    "int16": ("h", 2), "uint16": ("H", 2), "int32": ("i", 4), "uint32": ("I", 4),
    "int64": ("q", 8), "uint64": ("Q", 8), "float32": ("f", 4), "float64": ("d", 8),
}  # fmt: skip


class FlatReader:
    """Bounds-checked access to one buffer's tables through ``flatbuffers.table.Table``."""

    def __init__(self, data: bytes | bytearray, schema: Schema, error: type[Exception]) -> None:
        from flatbuffers.table import Table  # late: the runtime is needed only when a file is read

        self.data, self.table_class, self.schema, self.error = bytearray(data), Table, schema, error

    def need(self, pos: int, size: int, what: str) -> None:
        if pos < 0 or size < 0 or pos + size > len(self.data):
            raise self.error(
                f"{what} at byte {pos} (+{size}) is outside the {len(self.data)}-byte buffer"
            )

    def uoffset_at(self, pos: int, what: str) -> int:
        """The position an unsigned offset stored at ``pos`` points to."""
        self.need(pos, 4, what)
        return pos + int.from_bytes(self.data[pos : pos + 4], "little")

    def table(self, pos: int, what: str) -> Any:
        self.need(pos, 4, what)
        vtable = pos - int.from_bytes(self.data[pos : pos + 4], "little", signed=True)
        self.need(vtable, 4, f"the vtable of {what}")
        vt_size = int.from_bytes(self.data[vtable : vtable + 2], "little")
        if vt_size < 4 or vt_size % 2:
            raise self.error(
                f"the vtable of {what} at byte {vtable} has an impossible size {vt_size}"
            )
        self.need(vtable, vt_size, f"the vtable of {what}")
        return self.table_class(self.data, pos)

    def offset(self, tab: Any, table: str, name: str) -> int:
        """The field's position inside ``tab`` (0: absent), from its schema slot."""
        slot = self.schema.field(table, name).slot
        return int(tab.Offset(4 + 2 * slot))

    def scalar(self, tab: Any, table: str, name: str) -> int | float | bool:
        field = self.schema.field(table, name)
        code, size = SCALARS.get(field.type, SCALARS["byte"])  # an enum field: its underlying byte
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
        length = int.from_bytes(self.data[start : start + 4], "little")
        self.need(start + 4, length, f"{table}.{name}")
        try:
            return bytes(tab.String(tab.Pos + at)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.error(
                f"{table}.{name} at byte {start} is not UTF-8 ({exc.reason})"
            ) from None

    def child(self, tab: Any, table: str, name: str) -> Any | None:
        at = self.offset(tab, table, name)
        if not at:
            return None
        return self.table(self.uoffset_at(tab.Pos + at, f"{table}.{name}"), f"{table}.{name}")

    def tables(self, tab: Any, table: str, name: str) -> list[Any]:
        start, count = self._vector(tab, table, name, 4)
        return [
            self.table(
                self.uoffset_at(start + 4 * i, f"{table}.{name}[{i}]"), f"{table}.{name}[{i}]"
            )
            for i in range(count)
        ]

    def scalars(self, tab: Any, table: str, name: str) -> list[int | float | bool]:
        """A vector of scalars (``[int64]``, ``[uint]``, ...), by its element type in the schema."""
        element = self.schema.field(table, name).type.strip("[]")
        code, size = SCALARS.get(element, SCALARS["byte"])
        start, count = self._vector(tab, table, name, size)
        return list(struct.unpack_from(f"<{count}{code}", self.data, start)) if count else []

    def _vector(self, tab: Any, table: str, name: str, size: int) -> tuple[int, int]:
        """Where a vector's elements start and how many there are ((0, 0) when the field is absent).
        """
        at = self.offset(tab, table, name)
        if not at:
            return 0, 0
        start = self.uoffset_at(tab.Pos + at, f"{table}.{name}")
        self.need(start, 4, f"the length of {table}.{name}")
        count = int.from_bytes(self.data[start : start + 4], "little")
        self.need(start + 4, size * count, f"the {count} elements of {table}.{name}")
        return start + 4, count


def _default(field: Field) -> int | float | bool:
    if field.default is None:
        return False if field.type == "bool" else 0
    if field.type in ("float", "double"):
        return float(field.default)
    try:
        return int(field.default, 0)
    except (
        ValueError
    ):  # an enum's named default (``device_type: DeviceType = CPU``): not needed as a number
        return 0
