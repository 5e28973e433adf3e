"""The emulated ``arm_executor_runner`` "ELF": a simulator artifact that the bare-metal platforms
run with ``-a``.

Why our own artifact, where its model comes from and its ``.fvpsim`` section byte by byte:
docs/simulator.md, "The runner file, byte by byte".
"""

from __future__ import annotations

import argparse
import json
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from fvp_harness.sim.baremetal import layout
from fvp_harness.sim.baremetal.elf import (
    SHF_ALLOC,
    SHF_EXECINSTR,
    SHF_WRITE,
    SHT_NOBITS,
    SHT_PROGBITS,
    Section,
    read_sections,
    write_elf,
)
from fvp_harness.sim.networks.accelerator import parse_accelerator
from fvp_harness.sim.networks.modelfile import ModelFileError, decode_model, is_model_file

__all__ = [
    "BAREMETAL_MAGIC",
    "BAREMETAL_SECTION",
    "BAREMETAL_VERSION",
    "BareMetalArtifact",
    "BareMetalFaults",
    "add_tool_parser",
    "artifact_info",
    "decode_artifact",
    "encode_artifact",
    "fast_scratch_bytes",
    "is_baremetal_artifact",
    "make_tool_artifact",
    "parse_faults",
]

BAREMETAL_MAGIC = b"FVPSIMBM"
BAREMETAL_VERSION = 2
BAREMETAL_SECTION = ".fvpsim"
"""The ELF section holding the header and JSON (the harness repeats its name:
scenario/executable.py)."""
_FLAT_VERSION = 1
_HEADER = struct.Struct("<8sHHII12s")  # 32 bytes
FAULT_KINDS = ("hardfault", "hang")
PLATFORM_OF_FAMILY = {"ethos-u55": "corstone300", "ethos-u85": "corstone320"}
DEFAULT_MEMORY_MODE = {"ethos-u55": "Shared_Sram", "ethos-u85": "Dedicated_Sram_384KB"}
DEFAULT_SYSTEM_CONFIG = {"ethos-u55": "Ethos_U55_High_End_Embedded",
                         "ethos-u85": "Ethos_U85_SYS_DRAM_Mid"}
_MEMORY_MODE = re.compile(r"Shared_Sram|Sram_Only|Dedicated_Sram(?:_(\d+)(KB|MB))?")
DEDICATED_SRAM_DEFAULT = 0x60000
"""``set_ethosu_dedicated_sram_fast_scratch_size`` for plain ``Dedicated_Sram``
(corstone_utils.cmake): 384 KiB."""


def fast_scratch_bytes(memory_mode: str) -> int:
    """``ET_ARM_BAREMETAL_FAST_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE`` of a memory mode (0 unless
    Dedicated_Sram)."""
    match = _MEMORY_MODE.fullmatch(memory_mode)
    if not match or not memory_mode.startswith("Dedicated_Sram"):
        return 0
    if match.group(1) is None:
        return DEDICATED_SRAM_DEFAULT
    return int(match.group(1)) * (1024 if match.group(2) == "KB" else 1024 * 1024)


@dataclass(frozen=True)
class BareMetalFaults:
    """Injected faults: ``hardfault`` after N completed inferences (a bus fault inside the delegate:
    the HardFault handler's report, then ``exit(1)``); ``hang`` after N (the NPU never signals
    completion: the driver waits forever, so only ``--timelimit``, ``--simlimit`` or a signal end
    the model)."""

    hardfault: int | None = None
    hang: int | None = None


def parse_faults(spec: str) -> BareMetalFaults:
    """``hardfault=N,hang=N`` (``hang`` alone means ``hang=0``); ValueError names what is wrong."""
    found: dict[str, int] = {}
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        kind, sep, count = item.partition("=")
        kind = kind.strip()
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown bare-metal runner fault {kind!r} (known: "
                             f"{', '.join(FAULT_KINDS)}; e.g. hardfault=1 or hang)")  # fmt: skip
        try:
            found[kind] = int(count) if sep and count.strip() else 0
        except ValueError:
            raise ValueError(f"bare-metal runner fault {item!r}: the count must be an "
                             "integer") from None
        if found[kind] < 0:
            raise ValueError(f"bare-metal runner fault {item!r}: the count must not be negative")
    return BareMetalFaults(**found)


@dataclass(frozen=True)
class BareMetalArtifact:
    """One build of the emulated arm_executor_runner (see the module docstring for each field's
    CMake setting)."""

    target: str = "ethos-u55-128"
    pte: bytes = b""
    pte_addr: int | None = None
    semihosting: bool = False
    num_inferences: int = 1
    etdump: bool = False
    log_dump_output: bool = True
    memory_mode: str = ""
    system_config: str = ""
    build_id: str = ""
    fault: str = ""

    def __post_init__(self) -> None:
        accelerator = parse_accelerator(self.target)  # ValueError for an unknown target
        if self.target != accelerator.name:
            object.__setattr__(self, "target", accelerator.name)
        if not self.memory_mode:
            object.__setattr__(self, "memory_mode", DEFAULT_MEMORY_MODE[accelerator.family])
        if not self.system_config:
            object.__setattr__(self, "system_config", DEFAULT_SYSTEM_CONFIG[accelerator.family])
        if not _MEMORY_MODE.fullmatch(self.memory_mode):
            raise ValueError(f"memory mode {self.memory_mode!r}: expected Shared_Sram, Sram_Only, "
                             "Dedicated_Sram or Dedicated_Sram_<size>KB|MB")  # fmt: skip
        if self.pte and self.pte_addr is not None:
            raise ValueError("ET_MODEL_PTE_ADDR and ET_COMPILED_PTE are mutually exclusive: give "
                             "--pte or --pte-addr")
        if not self.pte and self.pte_addr is None and not self.semihosting:
            raise ValueError("One of ET_MODEL_PTE_ADDR, ET_COMPILED_PTE, or SEMIHOSTING must be "
                             "defined: give --pte MODEL, --pte-addr ADDR or "
                             "--semihosting")  # fmt: skip
        if self.pte_addr is not None and not 0 <= self.pte_addr < 1 << 64:
            raise ValueError(f"PTE address {self.pte_addr:#x} is larger than 64 bits")
        if self.num_inferences < 1:
            raise ValueError("the number of inferences (ET_NUM_INFERENCES) must be at least 1")
        parse_faults(self.fault)

    @property
    def family(self) -> str:
        return parse_accelerator(self.target).family

    @property
    def platform(self) -> str:
        """The platform the ELF is linked for (``corstone300`` or ``corstone320``)."""
        return PLATFORM_OF_FAMILY[self.family]

    @property
    def model_source(self) -> str:
        """``elf`` (compiled in), ``address`` (ET_MODEL_PTE_ADDR) or ``semihosting`` (``-m
        FILE``)."""
        if self.pte:
            return "elf"
        return "address" if self.pte_addr is not None else "semihosting"


def _build_settings(artifact: BareMetalArtifact) -> dict[str, object]:
    """The build's settings under the names the artifact file gives them, in ``sim info``'s order:
    one table, so the file and what ``sim info`` shows of it cannot drift apart when a setting is
    added."""
    return {
        "semihosting": artifact.semihosting,
        "num_inferences": artifact.num_inferences,
        "etdump": artifact.etdump,
        "log_dump_output": artifact.log_dump_output,
        "memory_mode": artifact.memory_mode,
        "system_config": artifact.system_config,
        "id": artifact.build_id,
        "fault": artifact.fault,
    }


def _settings_body(artifact: BareMetalArtifact) -> bytes:
    body = json.dumps(
        {
            "format": "fvp-sim-arm-executor-runner",
            "target": artifact.target,
            "pte_addr": artifact.pte_addr,
            **_build_settings(artifact),
        },
        sort_keys=True,
    ).encode()
    return body + b" " * (-len(body) % 16)


def _align(value: int, to: int = 16) -> int:
    return value + (-value % to)


def _sections(artifact: BareMetalArtifact, payload: bytes) -> list[Section]:
    """The build's sections: code and constants of the parts it links, its static RAM and pools, the
    model."""
    parts = [layout.PARTS[name]
             for name in ("runtime", "portable_kernels", "ethosu_delegate", "runner")]
    parts += [layout.PARTS["semihosting"]] if artifact.semihosting else []
    parts += [layout.PARTS["etdump"]] if artifact.etdump else []
    text, rodata, data = (sum(getattr(part, field) for part in parts)
                          for field in ("text", "rodata", "data"))
    code, ram = layout.code_base(artifact.platform), layout.ram_base(artifact.platform)
    rw = SHF_WRITE | SHF_ALLOC
    sections = [
        Section(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, code, bytes(text)),
        Section(".rodata", SHT_PROGBITS, SHF_ALLOC, _align(code + text), bytes(rodata)),
    ]
    if artifact.pte:
        sections.append(Section("network_model_sec", SHT_PROGBITS, SHF_ALLOC, layout.MODEL_SECTION,
                                artifact.pte, align=16))  # fmt: skip
    sections += [
        Section(".data", SHT_PROGBITS, rw, ram, bytes(data),
                load=_align(code + text) + _align(rodata)),
        Section(".bss", SHT_NOBITS, rw, _align(ram + data), size=layout.RUNTIME_STATIC_RAM - data),
        Section(".bss.method_allocator_sec", SHT_NOBITS, rw, layout.METHOD_POOL,
                size=layout.METHOD_POOL_BYTES, align=16),
    ]  # fmt: skip
    pools = ([(".bss.input_file_allocator_sec", layout.METHOD_POOL_BYTES)] if artifact.semihosting
             else [])
    fast = fast_scratch_bytes(artifact.memory_mode)
    pools.append((".bss.ethosu_scratch", layout.TEMP_POOL_BYTES[fast > 0]))
    pools += [(".bss.ethosu_fast_scratch", fast)] if fast else []
    pools += [(".bss.etdump_buffer", layout.DEBUG_BUFFER_BYTES)] if artifact.etdump else []
    address = layout.FILE_POOL
    for name, size in pools:
        sections.append(Section(name, SHT_NOBITS, rw, address, size=size, align=16))
        address = _align(address + size)
    sections.append(Section(BAREMETAL_SECTION, SHT_PROGBITS, 0, data=payload, align=16))
    return sections


def encode_artifact(artifact: BareMetalArtifact) -> bytes:
    """The build as an ELF: the layout's sections, the settings in ``.fvpsim``."""
    body = _settings_body(artifact)
    header = _HEADER.pack(BAREMETAL_MAGIC, BAREMETAL_VERSION, 0, len(body), len(artifact.pte),
                          b"\0" * 12)
    return write_elf(_sections(artifact, header + body),
                     entry=layout.code_base(artifact.platform) | 1)


def _payload(data: bytes) -> tuple[bytes, bytes | None]:
    """The header + JSON and (ELF) the compiled-in model of an artifact, or (b"", None) for another
    file."""
    if data[:8] == BAREMETAL_MAGIC:
        return data, None
    try:
        sections = read_sections(data)
    except ValueError:
        return b"", None
    found = sections.get(BAREMETAL_SECTION)
    if found is None or found[2][:8] != BAREMETAL_MAGIC:
        return b"", None
    model = sections.get("network_model_sec")
    return found[2], b"" if model is None else model[2]


def is_baremetal_artifact(data: bytes) -> bool:
    """Whether ``data`` (a whole file) is an emulated runner: an ELF with a ``.fvpsim`` section, or
    a version 1 file."""
    return bool(_payload(data)[0])


def decode_artifact(data: bytes) -> BareMetalArtifact:
    """Read an artifact; ModelFileError says what is wrong."""
    payload, model = _payload(data)
    if len(payload) < _HEADER.size:
        raise ModelFileError(f"not a simulator bare-metal runner artifact (no {BAREMETAL_SECTION} "
                             "section starting with FVPSIMBM)")  # fmt: skip
    _magic, version, _flags, json_len, pte_len, _ = _HEADER.unpack_from(payload)
    if version != (_FLAT_VERSION if model is None else BAREMETAL_VERSION):
        raise ModelFileError(f"bare-metal runner artifact version {version} is not supported (this "
                             f"simulator reads {BAREMETAL_VERSION}, and {_FLAT_VERSION} without "
                             "ELF)")  # fmt: skip
    end = _HEADER.size + json_len + (pte_len if model is None else 0)
    if len(payload) < end:
        raise ModelFileError(f"bare-metal runner artifact truncated: {len(payload)} bytes, header "
                             f"says {end}")
    pte = bytes(payload[_HEADER.size + json_len : end]) if model is None else model
    if len(pte) != pte_len:
        raise ModelFileError("bare-metal runner artifact is corrupt: network_model_sec holds "
                             f"{len(pte)} bytes, the header says {pte_len}")  # fmt: skip
    try:
        info = json.loads(payload[_HEADER.size : _HEADER.size + json_len])
        addr = info.get("pte_addr")
        return BareMetalArtifact(
            target=str(info["target"]),
            pte=pte,
            pte_addr=None if addr is None else int(addr),
            semihosting=bool(info.get("semihosting", False)),
            num_inferences=int(info.get("num_inferences", 1)),
            etdump=bool(info.get("etdump", False)),
            log_dump_output=bool(info.get("log_dump_output", True)),
            memory_mode=str(info.get("memory_mode", "")),
            system_config=str(info.get("system_config", "")),
            build_id=str(info.get("id", "")),
            fault=str(info.get("fault", "")),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ModelFileError(f"bare-metal runner artifact is corrupt: {exc}") from exc


# --- fvp-harness sim baremetal-runner -------------------------------------------------------------


def _address(text: str) -> int:
    try:
        return int(text, 16 if text.lower().startswith("0x") else 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an address (e.g. 0x70000000)") from None


def add_tool_parser(sub: Any) -> None:
    """``sim baremetal-runner``: the sub-command ``tools.build_parser`` adds (kept next to the
    format it writes)."""
    parser = sub.add_parser(
        "baremetal-runner",
        help="an emulated arm_executor_runner ELF for the Corstone-300/320 bare-metal platforms",
        description="Write an emulated examples/arm/executor_runner build (what run.sh builds). "
                    "The bare-metal "
        "platforms (fvp-sim --platform corstone300|corstone320) run it with -a FILE.",
    )
    parser.add_argument("-o", "--output", required=True, type=Path, help="file to write")
    parser.add_argument("--pte", type=Path, metavar="MODEL",
                        help="compile this simulator model file into the ELF (ET_COMPILED_PTE; "
                             "run.sh's default)")
    parser.add_argument("--pte-addr", type=_address, metavar="ADDR", dest="pte_addr",
                        help="read the model from memory at ADDR (ET_MODEL_PTE_ADDR; give the FVP "
                             "--data "
                        "MODEL@ADDR)")
    parser.add_argument("--semihosting", action="store_true",
                        help="a SEMIHOSTING build: -m/-i/-o from cpu0.semihosting-cmd_line, files "
                             "relative to "
                        "semihosting-cwd")
    parser.add_argument("--target", default=None, metavar="CONFIG",
                        help="ETHOSU_TARGET_NPU_CONFIG, e.g. ethos-u55-128 or ethos-u85-256 "
                             "(default: the --pte "
                        "model's, else ethos-u55-128 as run.sh)")
    parser.add_argument("--iterations", "--num-inferences", type=int, default=1, dest="iterations",
                        metavar="N", help="ET_NUM_INFERENCES: inferences per run (default 1)")
    parser.add_argument("--etdump", action="store_true",
                        help="run.sh --etdump: print a base64 ETDump between '#[RUN THIS]' and "
                             "'#[END]'")
    parser.add_argument("--no-output-dump", dest="log_dump_output", action="store_false",
                        help="ET_LOG_DUMP_OUTPUT=OFF: no 'Output[i][j]: (char) v' lines")
    parser.add_argument("--memory-mode", default="",
                        help="MEMORY_MODE (default per target, as run.sh)")
    parser.add_argument("--system-config", default="",
                        help="SYSTEM_CONFIG (default per target, as run.sh)")
    parser.add_argument("--build-id", "--id", default="", dest="build_id", metavar="TEXT",
                        help="add the line 'arm_executor_runner build id: TEXT' (not upstream)")
    parser.add_argument("--fault", default="",
                        help="injected faults: hardfault=N, hang[=N] (N = inferences "
                        "completed before the fault)")  # fmt: skip


def make_tool_artifact(args: Any, out: TextIO, err: TextIO) -> int:
    """Handle ``sim baremetal-runner``: write the artifact atomically and say what it is. Returns
    the exit status (2 for a build upstream's CMake would refuse, 1 when a file cannot be read or
    written)."""
    pte = b""
    model_text = ""
    target = args.target
    if args.pte is not None:
        try:
            pte = args.pte.read_bytes()
        except OSError as exc:
            err.write(f"fvp-harness sim baremetal-runner: {args.pte}: {exc.strerror or exc}\n")
            return 1
        if not is_model_file(pte):
            err.write(f"fvp-harness sim baremetal-runner: {args.pte} is not a simulator model file "
                      "(make one with 'fvp-harness sim model NAME --accelerator CONFIG -o "
                      "FILE')\n")  # fmt: skip
            return 2
        try:
            model = decode_model(pte)
        except ModelFileError as exc:
            err.write(f"fvp-harness sim baremetal-runner: {args.pte}: {exc}\n")
            return 2
        target = target or model.accelerator.name
        model_text = f", model {model.arch.name} for {model.accelerator} compiled in"
    try:
        artifact = BareMetalArtifact(
            target=target or "ethos-u55-128", pte=pte, pte_addr=args.pte_addr,
            semihosting=args.semihosting,
            num_inferences=args.iterations, etdump=args.etdump,
            log_dump_output=args.log_dump_output,
            memory_mode=args.memory_mode, system_config=args.system_config, build_id=args.build_id,
            fault=args.fault,
        )  # fmt: skip
    except ValueError as exc:
        err.write(f"fvp-harness sim baremetal-runner: {exc}\n")
        return 2
    data = encode_artifact(artifact)
    path: Path = args.output
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        tmp.write_bytes(data)
        tmp.chmod(0o755)
        tmp.replace(path)
    except OSError as exc:
        err.write(f"fvp-harness sim baremetal-runner: {path}: {exc.strerror or exc}\n")
        return 1
    where = {"elf": "", "address": f", model at {artifact.pte_addr or 0:#x}",
             "semihosting": ", model from -m"}
    extras = [f"{artifact.num_inferences} inference(s)", artifact.memory_mode]
    extras += ["semihosting"] if artifact.semihosting else []
    extras += ["ETDump"] if artifact.etdump else []
    extras += [f"build id {artifact.build_id}"] if artifact.build_id else []
    extras += [f"fault {artifact.fault}"] if artifact.fault else []
    out.write(f"{path}: arm_executor_runner for {artifact.target} ({artifact.platform}{model_text}"
              f"{where[artifact.model_source]}; {', '.join(extras)}), {len(data)} "
              "bytes\n")  # fmt: skip
    return 0


def artifact_info(path: Path, data: bytes) -> dict[str, object]:
    """What ``sim info`` shows for a bare-metal runner artifact."""
    artifact = decode_artifact(data)
    info: dict[str, object] = {
        "file": str(path),
        "kind": "baremetal-runner",
        "target": artifact.target,
        "platform": artifact.platform,
        "model_source": artifact.model_source,
        "pte_addr": None if artifact.pte_addr is None else f"{artifact.pte_addr:#x}",
        **_build_settings(artifact),
    }
    if artifact.pte:
        model = decode_model(artifact.pte)
        info["model"] = {"name": model.arch.name, "npu": model.accelerator.name,
                         "bytes": len(artifact.pte)}
    return info
