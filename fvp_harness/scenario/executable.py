"""Can this host execute a runner file? What ``target: host`` needs, read from the file's first
bytes.

A scenario that runs on this host (``target: host``) runs each build's runner with ``/bin/sh``. A
runner built for the model (an AArch64 ELF, or one of the simulator's runner artifacts) then fails
every unit with ``Exec format error`` and the run reports that as the *runner's* failure.
``host_exec_problem`` says before anything runs why a file cannot run here, from what the kernel
looks at when it executes a file:

- an ELF file: its ``e_machine`` must be this host's (``platform.machine()``), its class the right
  word size, its type an executable or a shared object (``ET_EXEC`` / ``ET_DYN``);
- a simulator runner artifact (magic ``FVPSIMRN``, ``sim/networks/modelfile.py``) runs only inside
  the simulator's guest, and its bare-metal runner (an EM_ARM ELF whose ``.fvpsim`` section starts
  ``FVPSIMBM``, ``sim/baremetal/artifact.py``) only on its Corstone platforms; the simulator's VGF
  runner (``#!/bin/sh`` + ``# FVPSIMVG``, ``sim/workloads/vgf_runner.py``) is a shell script that
  runs here too, through the Python that made it (which must exist on this host);
- a script (``#!``): its interpreter must exist and be executable (``#!/usr/bin/env NAME``: NAME on
  PATH);
- a file that is none of these is run by ``/bin/sh`` as a shell script when it is text, and fails
  when it is binary;
- and the file must carry an execute bit (the deploy step copies it with mode 755, which would hide
  the mistake).

The simulator's magic numbers are repeated here (the harness never imports the simulator:
``tests/test_layers.py``); ``tests/targets/test_host_exec.py`` checks they still match.
"""

from __future__ import annotations

import os
import platform
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

__all__ = ["ELF_MACHINES", "SIM_BAREMETAL_MAGIC", "SIM_BAREMETAL_SECTION", "SIM_RUNNER_MAGIC",
           "SIM_VGF_MAGIC",
           "ElfHeader", "elf_header", "host_exec_problem", "host_machines",
           "is_sim_baremetal_runner"]

SIM_RUNNER_MAGIC = b"FVPSIMRN"
"""``sim.modelfile.RUNNER_MAGIC``: the emulated executor_runner, which only the simulator's guest
shell can run."""
SIM_VGF_MAGIC = b"#!/bin/sh\n# FVPSIMVG "
SIM_BAREMETAL_MAGIC = b"FVPSIMBM"
"""``sim.baremetal.artifact.BAREMETAL_MAGIC``: how the emulated arm_executor_runner's own section
starts."""
SIM_BAREMETAL_SECTION = ".fvpsim"
"""``sim.baremetal.artifact.BAREMETAL_SECTION``: the ELF section holding the emulated runner's
settings."""
"""``sim.vgf_runner.VGF_MAGIC``: the emulated VGF runner, a shell script that also runs on this
host."""

ELF_MACHINES: dict[int, str] = {
    3: "x86 (i386)",
    8: "MIPS",
    20: "PowerPC",
    21: "PowerPC64",
    22: "S/390",
    40: "ARM (AArch32)",
    62: "x86-64",
    183: "AArch64",
    243: "RISC-V",
    258: "LoongArch",
}
"""``e_machine`` values (the ELF header's target architecture) and their names."""

_HOST_MACHINES: dict[str, set[tuple[int, int]]] = {
    # platform.machine() -> the (e_machine, ELF class 1=32/2=64 bit) pairs its kernel executes
    "x86_64": {(62, 2), (3, 1)},
    "amd64": {(62, 2), (3, 1)},
    "i386": {(3, 1)},
    "i686": {(3, 1)},
    "aarch64": {(183, 2), (40, 1)},
    "arm64": {(183, 2)},
    "armv7l": {(40, 1)},
    "armv8l": {(40, 1)},
    "riscv64": {(243, 2)},
    "ppc64le": {(21, 2)},
    "ppc64": {(21, 2)},
    "s390x": {(22, 2)},
    "loongarch64": {(258, 2)},
}

_HEAD_BYTES = 512
_ET_EXEC, _ET_DYN = 2, 3


def host_machines(machine: str | None = None) -> set[tuple[int, int]] | None:
    """The (e_machine, class) pairs ``machine`` (default: this host's) executes; None when it is not
    known here."""
    return _HOST_MACHINES.get((machine or platform.machine()).lower())


@dataclass(frozen=True)
class ElfHeader:
    """What the kernel looks at first in an ELF file: its machine, class (1: 32-bit, 2: 64-bit) and
    type."""

    machine: int
    elf_class: int
    type: int

    @property
    def what(self) -> str:
        """``AArch64 (64-bit)``: the machine's name and word size, for messages."""
        bits = {1: "32-bit", 2: "64-bit"}.get(self.elf_class, "unknown-class")
        return f"{ELF_MACHINES.get(self.machine, f'e_machine {self.machine}')} ({bits})"


def elf_header(head: bytes) -> ElfHeader | None:
    """The ELF header of a file's first bytes (at least 20), or None when they are no ELF file's (or
    cut short)."""
    if len(head) < 20 or not head.startswith(b"\x7fELF"):
        return None
    order: Literal["little", "big"] = "little" if head[5] == 1 else "big"
    machine, elf_type = int.from_bytes(head[18:20], order), int.from_bytes(head[16:18], order)
    return ElfHeader(machine, head[4], elf_type)


def _elf_problem(head: bytes, machine: str) -> str | None:
    header = elf_header(head)
    if header is None:
        return "a truncated ELF file (its header is incomplete)"
    elf_class, e_type, e_machine = header.elf_class, header.type, header.machine
    what = ELF_MACHINES.get(e_machine, f"e_machine {e_machine}")
    bits = {1: "32-bit", 2: "64-bit"}.get(elf_class, "unknown-class")
    accepted = host_machines(machine)
    if accepted is not None and (e_machine, elf_class) not in accepted:
        return (f"an ELF executable for {what} ({bits}, e_machine {e_machine}); this host is "
                f"{machine}, so it cannot run here (Exec format error): build the runner for this "
                "host, or run it on the model (target: fvp)")
    if e_type not in (_ET_EXEC, _ET_DYN):
        kind = {1: "a relocatable object (.o)", 4: "a core dump"}.get(e_type, f"ELF type {e_type}")
        return f"{kind}, not an executable"
    return None


def _interpreter_problem(head: bytes) -> str | None:
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    if not line:
        return "a script whose #! line names no interpreter"
    interpreter, _, argument = line.partition(" ")
    argument = argument.strip()
    if not os.path.isfile(interpreter) or not os.access(interpreter, os.X_OK):
        return f"a script for {interpreter}, which this host does not have (#!{line})"
    if os.path.basename(interpreter) == "env" and argument:
        program = [word for word in argument.split() if not word.startswith("-")][:1]
        if program and shutil.which(program[0]) is None:
            return f"a script for {program[0]}, which is not on this host's PATH (#!{line})"
    return None


def _vgf_problem(head: bytes) -> str | None:
    """The simulator's VGF runner runs on this host through the Python that made it: it must exist
    here."""
    for line in head.split(b"\n")[2:4]:
        try:
            words = shlex.split(line.decode("utf-8", "replace"))
        except ValueError:
            continue
        if len(words) >= 2 and words[0] == "exec":
            python = words[1]
            if not (os.path.isfile(python) and os.access(python, os.X_OK)):
                return ("a simulator VGF runner made by a Python this host does not have "
                        f"({python}); make it again here with `fvp-harness sim vgf-runner`")
    return None


def is_sim_baremetal_runner(path: Path | str) -> bool:
    """Whether ``path`` is the simulator's emulated bare-metal runner: an ELF whose ``.fvpsim``
    section starts with ``FVPSIMBM`` (a real runner has no such section), or a flat file of the
    previous format."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(SIM_BAREMETAL_MAGIC))
            if head == SIM_BAREMETAL_MAGIC:
                return True
            if not head.startswith(b"\x7fELF"):
                return False
            handle.seek(0)
            section = ELFFile(handle).get_section_by_name(SIM_BAREMETAL_SECTION)
            return (section is not None and
                    section.data()[: len(SIM_BAREMETAL_MAGIC)] == SIM_BAREMETAL_MAGIC)
    # unreadable or malformed: not the simulator's
    except (OSError, ELFError, ValueError, EOFError):
        return False


def host_exec_problem(path: Path | str, *, machine: str | None = None) -> str | None:
    """Why this host cannot execute ``path`` as a program, or None when it can (or the file is not
    there yet: a runner with a ``build`` command is checked after it is built). ``machine`` stands
    for ``platform.machine()``."""
    path = Path(path)
    machine = machine or platform.machine()
    try:
        with path.open("rb") as handle:
            head = handle.read(_HEAD_BYTES)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        return "a folder, not a program"
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if not head:
        return "an empty file, not a program"
    if head.startswith(SIM_RUNNER_MAGIC):
        return ("a simulator runner artifact (FVPSIMRN): it runs only inside the simulator's guest "
                "(target: fvp with fvp.binary: sim), not on this host")
    if is_sim_baremetal_runner(path):
        return ("the simulator's bare-metal runner (an ELF with a .fvpsim section, FVPSIMBM): it "
                "runs only on the simulator's Corstone platforms (target: fvp with fvp.binary: "
                "sim), not on this host")
    if head.startswith(b"\x7fELF"):
        problem = _elf_problem(head, machine)
    elif head.startswith(SIM_VGF_MAGIC):
        problem = _vgf_problem(head)
    elif head.startswith(b"#!"):
        problem = _interpreter_problem(head)
    elif b"\0" in head:
        shown = head[:8].hex(" ")
        problem = (f"neither an ELF executable nor a script (it starts with bytes {shown}): not a "
                   "program this host can execute")
    else:
        problem = None  # text without #!: /bin/sh runs it as a shell script
    if problem is None and not os.access(path, os.X_OK):
        problem = "not executable (no execute permission): chmod +x it"
    return problem
