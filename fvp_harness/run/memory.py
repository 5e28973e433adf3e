"""The memory metrics the harness measures itself (``scenario.metrics.HARNESS_METRICS``): flash from
the unit's files on the host, and the runner's peak resident set from the guest's ``time``
(``run.framed``).

Why it is shaped so: docs/architecture.md, "Inside `run/`"."""

from __future__ import annotations

import functools
import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from fvp_harness.formats.pte import PteError, is_program, read_program_file

__all__ = ["ELF_METRICS", "HarnessSamples", "elf_sections", "harness_samples", "program_planned"]

ELF_METRICS = ("runner_text", "runner_rodata", "runner_data", "runner_bss", "runner_flash")


@dataclass
class HarnessSamples:
    """One unit's harness-measured samples (metric -> one value, bytes) and why each missing one has
    none."""

    samples: dict[str, list[float]] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)


def elf_sections(path: Path) -> dict[str, int]:
    """``runner_text``, ``_rodata``, ``_data``, ``_bss`` and ``_flash`` of an ELF file, in bytes.
    Raises ``ValueError`` saying why when the file is no ELF, ``OSError`` when it cannot be read."""
    stat = path.stat()
    return dict(_sections(str(path), stat.st_size, stat.st_mtime_ns))


@functools.lru_cache(maxsize=64)
def _sections(path: str, size: int, mtime_ns: int) -> tuple[tuple[str, int], ...]:
    with open(path, "rb") as handle:
        if handle.read(4) != b"\x7fELF":
            raise ValueError(
                f"{os.path.basename(path)} is not an ELF file (a simulator Linux runner artifact "
                "or a script has no sections)"
            )
        handle.seek(0)
        try:
            elf = ELFFile(handle)
            totals = {"runner_text": 0, "runner_rodata": 0, "runner_data": 0, "runner_bss": 0}
            for section in elf.iter_sections():
                flags = section["sh_flags"]
                if not flags & SH_FLAGS.SHF_ALLOC:
                    continue  # debug info, symbols, notes not loaded: neither flash nor RAM
                if section["sh_type"] == "SHT_NOBITS":
                    totals["runner_bss"] += section["sh_size"]
                elif flags & SH_FLAGS.SHF_EXECINSTR:
                    totals["runner_text"] += section["sh_size"]
                elif flags & SH_FLAGS.SHF_WRITE:
                    totals["runner_data"] += section["sh_size"]
                else:
                    totals["runner_rodata"] += section["sh_size"]
        except ELFError as exc:
            raise ValueError(f"{os.path.basename(path)}: unreadable ELF ({exc})") from exc
    totals["runner_flash"] = totals["runner_text"] + totals["runner_rodata"] + totals["runner_data"]
    return tuple(totals.items())


def program_planned(model: Path | None, method: str = "forward") -> int:
    """Bytes of the planned buffers ``model`` (a real ``.pte``) declares for ``method`` (its first
    method when it has no such one). Raises ``ValueError`` saying why when it is no program."""
    if model is None:
        raise ValueError("the unit names no model file")
    with open(model, "rb") as handle:
        head = handle.read(64)
    if not is_program(head):
        raise ValueError(f"{model.name} is not an ExecuTorch program (.pte): no memory plan to "
                         "read")
    try:
        program = read_program_file(model)
    except PteError as exc:
        raise ValueError(f"{model.name}: {exc}") from exc
    if not program.plans:
        raise ValueError(f"{model.name} has no method")
    names = [plan.name for plan in program.plans]
    plan = program.plan(method) if method in names else program.plans[0]
    return sum(plan.planned_buffer_sizes)


def harness_samples(
    names: Collection[str],
    *,
    runner: Path | None,
    model: Path | None,
    peak_rss_kib: int | None = None,
) -> HarnessSamples:
    """The samples of the harness metrics in ``names`` for one unit: flash from ``runner`` and
    ``model`` (host paths of the files it ran), ``peak_rss`` from ``time -f %M`` (KiB) of its framed
    line."""
    out = HarnessSamples()
    wanted = [name for name in ELF_METRICS if name in names]
    if wanted:
        try:
            if runner is None:
                raise ValueError("the unit names no runner file")
            sections = elf_sections(runner)
        except (OSError, ValueError) as exc:
            out.reasons.update(dict.fromkeys(wanted, str(exc)))
        else:
            out.samples.update({name: [float(sections[name])] for name in wanted})
    if "model_bytes" in names:
        try:
            if model is None:
                raise ValueError("the unit names no model file")
            out.samples["model_bytes"] = [float(model.stat().st_size)]
        except (OSError, ValueError) as exc:
            out.reasons["model_bytes"] = str(exc)
    if "program_planned" in names:
        try:
            out.samples["program_planned"] = [float(program_planned(model))]
        except (OSError, ValueError) as exc:
            out.reasons["program_planned"] = str(exc)
    if "peak_rss" in names:
        if peak_rss_kib is None:
            out.reasons["peak_rss"] = (
                "the guest's time -f printed no peak resident set (no time applet in "
                "the guest's busybox, or the line was cut)"
            )
        else:
            out.samples["peak_rss"] = [float(peak_rss_kib) * 1024]
    return out
