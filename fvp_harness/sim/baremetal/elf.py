"""A small ELF32 little-endian writer and section reader for the emulated bare-metal runner.

Why our own: a real FVP is given an ``arm_executor_runner`` ELF (EM_ARM, sections ``.text``,
``.rodata``, ``.data``, ``.bss``...), and the harness reads flash and RAM from its section headers.
The simulator's runner is written in that shape so the same reading works on it; the few structures
(ELF header, program headers one per loaded section, section headers, ``.shstrtab``) are written
here, nothing more (no symbols, no relocations: the simulator executes nothing from the sections).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["EM_ARM", "Section", "read_sections", "write_elf"]

EM_ARM = 40
ET_EXEC = 2
SHT_PROGBITS, SHT_STRTAB, SHT_NOBITS = 1, 3, 8
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4
PT_LOAD = 1
PF_X, PF_W, PF_R = 1, 2, 4
EF_ARM_EABI5_HARD_FLOAT = 0x05000400
"""``e_flags``: EABI version 5, hard-float ABI (arm-none-eabi-gcc's ``-mfloat-abi=hard`` for
Cortex-M55/M85)."""
_EHDR = struct.Struct("<16sHHIIIIIHHHHHH")  # 52 bytes
_PHDR = struct.Struct("<IIIIIIII")  # 32 bytes
_SHDR = struct.Struct("<IIIIIIIIII")  # 40 bytes


@dataclass(frozen=True)
class Section:
    """One section: ``data`` for PROGBITS, ``size`` for NOBITS (``.bss``: RAM only, no file bytes).
    ``load`` is the load (flash) address of an initialised RAM section (``.data``), else its
    address."""

    name: str
    kind: int
    flags: int
    addr: int = 0
    data: bytes = b""
    size: int = 0
    align: int = 4
    load: int | None = None

    @property
    def mem_size(self) -> int:
        return self.size if self.kind == SHT_NOBITS else len(self.data)


def _align(value: int, to: int) -> int:
    return value + (-value % to)


def write_elf(sections: list[Section], *, entry: int, machine: int = EM_ARM,
              flags: int = EF_ARM_EABI5_HARD_FLOAT) -> bytes:
    """An ET_EXEC file holding ``sections`` (in order), a PT_LOAD per allocated section,
    ``.shstrtab`` last."""
    names = bytearray(b"\0")
    name_at: list[int] = []
    for section in [*sections, Section(".shstrtab", SHT_STRTAB, 0)]:
        name_at.append(len(names))
        names += section.name.encode() + b"\0"
    loaded = [s for s in sections if s.flags & SHF_ALLOC]
    offset = _EHDR.size + _PHDR.size * len(loaded)
    offsets: list[int] = []
    for section in sections:
        offset = _align(offset, max(section.align, 16 if section.flags & SHF_ALLOC else 1))
        offsets.append(offset)
        offset += len(section.data) if section.kind != SHT_NOBITS else 0
    names_at = offset
    shoff = _align(names_at + len(names), 4)
    out = bytearray(shoff + _SHDR.size * (len(sections) + 2))
    # ELFCLASS32, ELFDATA2LSB, EV_CURRENT, SYSV ABI
    ident = b"\x7fELF" + bytes([1, 1, 1, 0]) + bytes(8)
    _EHDR.pack_into(out, 0, ident, ET_EXEC, machine, 1, entry, _EHDR.size if loaded else 0, shoff,
                    flags,
                    _EHDR.size, _PHDR.size, len(loaded), _SHDR.size, len(sections) + 2,
                    len(sections) + 1)
    phdr = _EHDR.size
    for section, at in zip(sections, offsets, strict=True):
        out[at : at + len(section.data)] = section.data
        if section.flags & SHF_ALLOC:
            pflags = PF_R | (PF_W if section.flags & SHF_WRITE else 0)
            pflags |= PF_X if section.flags & SHF_EXECINSTR else 0
            filesz = 0 if section.kind == SHT_NOBITS else len(section.data)
            load = section.addr if section.load is None else section.load
            _PHDR.pack_into(out, phdr, PT_LOAD, at, section.addr, load, filesz, section.mem_size,
                            pflags, section.align)
            phdr += _PHDR.size
    out[names_at : names_at + len(names)] = names
    shdr = shoff + _SHDR.size  # entry 0: the null section, all zero
    for index, (section, at) in enumerate(zip(sections, offsets, strict=True)):
        _SHDR.pack_into(out, shdr, name_at[index], section.kind, section.flags, section.addr, at,
                        section.mem_size, 0, 0, section.align, 0)
        shdr += _SHDR.size
    _SHDR.pack_into(out, shdr, name_at[-1], SHT_STRTAB, 0, 0, names_at, len(names), 0, 0, 1, 0)
    return bytes(out)


def read_sections(data: bytes) -> dict[str, tuple[int, int, bytes]]:
    """``{name: (sh_type, sh_size, contents)}`` of an ELF32 little-endian file (contents empty for
    NOBITS). Raises ValueError saying what is wrong."""
    if len(data) < _EHDR.size or data[:4] != b"\x7fELF" or data[4:6] != b"\x01\x01":
        raise ValueError("not an ELF32 little-endian file")
    fields = _EHDR.unpack_from(data)
    shoff, shentsize, shnum, shstrndx = fields[6], fields[11], fields[12], fields[13]
    if shentsize != _SHDR.size or shstrndx >= shnum or shoff + shnum * _SHDR.size > len(data):
        raise ValueError("its section header table is truncated or malformed")
    headers = [_SHDR.unpack_from(data, shoff + i * _SHDR.size) for i in range(shnum)]

    def contents(header: tuple[int, ...]) -> bytes:
        if header[1] == SHT_NOBITS:
            return b""
        start, size = header[4], header[5]
        if start + size > len(data):
            raise ValueError(f"a section runs past the end of the file ({start + size} > "
                             f"{len(data)} bytes)")
        return data[start : start + size]

    strtab = contents(headers[shstrndx])
    found: dict[str, tuple[int, int, bytes]] = {}
    for header in headers[1:]:
        name = strtab[header[0] : strtab.find(b"\0", header[0])].decode("latin-1")
        found[name] = (header[1], header[5], contents(header))
    return found
