"""The emulated bare-metal ``arm_executor_runner``, in-process against an in-memory board, and its
artifact format.

Expected lines are upstream's printf format strings as they stand in pytorch/executorch at
cff6f4dd32 (2026-08-22), with the file, the line of the ``ET_LOG(`` (of the ``ET_CHECK_MSG(`` for a
failed check) and the function that the bare-metal PAL prints
(examples/arm/executor_runner/arm_executor_runner.cpp ``et_pal_emit_log_message``: ``"%c
[executorch:%s:%lu %s()] %s\\n"``). The perf block is built by formatting arm_perf_monitor.cpp's
format strings with C's rules (``c_format``), with numbers from the model of the work, and compared
character for character. Fixtures are written from reading those sources; no code is copied.
"""

from __future__ import annotations

import base64
import io
import json
import math
import re
import shutil
import struct
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile

from fvp_harness.sim import tools
from fvp_harness.sim.baremetal.artifact import (
    BareMetalArtifact,
    BareMetalFaults,
    artifact_info,
    decode_artifact,
    encode_artifact,
    fast_scratch_bytes,
    is_baremetal_artifact,
    parse_faults,
)
from fvp_harness.sim.baremetal.cost import DEFAULT as COSTS
from fvp_harness.sim.baremetal.cost import PMU_EVENTS, pmu_counters
from fvp_harness.sim.baremetal.log import SITES
from fvp_harness.sim.baremetal.runner import UNMAPPED, run_application
from fvp_harness.sim.guest.programs import ProgramInterrupted
from fvp_harness.sim.networks.accelerator import Accelerator, parse_accelerator
from fvp_harness.sim.networks.architectures import ARCHITECTURES, get_architecture
from fvp_harness.sim.networks.inference import run_model
from fvp_harness.sim.networks.modelfile import (
    CompiledModel,
    ModelFileError,
    compile_model,
    encode_model,
    make_input,
)
from fvp_harness.sim.npu.cycles import model_cycles
from fvp_harness.sim.npu.driver_cost import DriverSizes

R, PM = "arm_executor_runner.cpp", "arm_perf_monitor.cpp"  # examples/arm/executor_runner/
# runtime/platform/assert.h:21-39, ET_CHECK_MSG's prefix
ASSERT = "In function %s(), assert failed (%s): "
Expected = tuple[str, str, int, str, str]  # level, file, line, function, printf format

# --- arm_executor_runner.cpp at cff6f4dd32 --------------------------------------------------------
PTE_AT = ("I", R, 1523, "main", "PTE @ %p [----%c%c%c%c]")  # 1523-1530
PTE_LOADED = ("I", R, 677, "runner_init", "PTE Model data loaded. Size: %lu bytes.")  # 677-680
BUFFER_LOADED = ("I", R, 693, "runner_init", "Model buffer loaded, has %lu methods")  # 693-696
RUNNING_METHOD = ("I", R, 703, "runner_init", "Running method %s")
# 714-717
ALLOCATOR_POOL = ("I", R, 714, "runner_init", "Setup Method allocator pool. Size: %lu bytes.")
# 740-744
PLANNED = ("I", R, 740, "runner_init", "Setting up planned buffer with mem_id=%lu, size %lu.")
# backends/arm/runtime/EthosUBackend.cpp
DELEGATE_DATA = ("I", "EthosUBackend.cpp", 101, "init", "data:%p")
METHOD_LOADED = ("I", R, 877, "runner_init", "Method '%s' loaded.")
PREPARING = ("I", R, 879, "runner_init", "Preparing inputs...")
INPUT_PREPARED = ("I", R, 950, "runner_init", "Input prepared.")
STARTING = ("I", R, 1328, "run_model", "Starting running %d inferences...")
FINISHED = ("I", R, 1352, "run_model", "%d inferences finished")
OUTPUTS = ("I", R, 1059, "print_outputs", "%lu outputs: ")
MODEL_RUN = ("I", R, 1355, "run_model", "Model run: %d")
MODEL_RUN_MAIN = ("I", R, 1543, "main", "Model run: %d")
MEM_PROGRAM = ("I", R, 967, "log_mem_status", "model_pte_program_size:     %lu bytes.")
MEM_LOADED = ("I", R, 971, "log_mem_status", "model_pte_loaded_size:      %lu bytes.")
MEM_PROGRAM_ADDR = ("I", R, 958, "log_mem_status",
                    "model_pte_program_size:     %lu bytes. (pte size unknown when not baked into "
                    "elf)")  # fmt: skip
MEM_LOADED_ADDR = ("I", R, 962, "log_mem_status",
                   "model_pte_loaded_size:      %lu bytes. (pte size unknown when not baked into "
                   "elf)")  # fmt: skip
MEM_FILES = ("I", R, 979, "log_mem_status",
             "input_file_allocator_used: %lu / %lu free: %lu ( used: %lu %% ) ")
MEM_USED = ("I", R, 992, "log_mem_status",
            "method_allocator_used:     %lu / %lu  free: %lu ( used: %lu %% ) ")
MEM_PLANNED = ("I", R, 1000, "log_mem_status", "method_allocator_planned:  %lu bytes")
MEM_METHOD = ("I", R, 1021, "log_mem_status", "method_allocator_loaded:   %lu bytes")
MEM_INPUT = ("I", R, 1025, "log_mem_status", "method_allocator_input:    %lu bytes")
MEM_EXECUTOR = ("I", R, 1029, "log_mem_status", "method_allocator_executor: %lu bytes")
MEM_TEMP = ("I", R, 1035, "log_mem_status", "temp_allocator:            %lu")
MEM_ETDUMP = ("I", R, 1044, "log_mem_status",
              "ETDump_outputs_buffer:     %lu / %lu free: %lu ( used: %lu %% ) ")
COMPLETE = ("I", R, 1550, "main", "Program complete, exiting.")
EOT = ("I", R, 1554, "main", "\x04")
# PRIx32
EXECUTE_CHECK = ("F", R, 1346, "run_model",
                 ASSERT + "Execution of method %s failed with status 0x%lx")
PROGRAM_CHECK = ("F", R, 685, "runner_init", ASSERT + "Program loading failed @ %p: 0x%lx")
PREPARE_CHECK = ("F", R, 898, "runner_init", ASSERT + "Failed to prepare inputs 0x%lx")
SETUP_ETDUMP = ("I", R, 807, "runner_init", "Setting up ETDump")
ETDUMP_BUFFER = ("I", R, 827, "runner_init",
                 "ETDump: Allocated intermediate output buffer size: %d at 0x%p")
BASE64_SIZE = ("I", R, 1171, "write_etdump", "[base64] buffer size: %d")
# semihosting (SEMIHOSTING builds)
SH_PARAMETERS = ("I", R, 1406, "main", "Running executor with parameter:")
SH_ARG0 = ("I", R, 1424, "main", "   %s")
SH_ARG_PAIR = ("I", R, 1426, "main", "   %s %s")
SH_READING_INPUT = ("I", R, 1461, "main", "Reading input tensor %lu from file %s")
SH_READING_PTE = ("I", R, 1480, "main", "Reading pte model from file %s")
SH_PTE_FAILED = ("E", R, 1484, "main", "Reading pte model from file %s failed.")
SH_OPEN_FAILED = ("F", R, 554, "read_binary_file",
                  "Could not open file %s (errno: %d) for reading, exiting!")
SH_WRITING_OUTPUT = ("I", R, 1104, "print_outputs", "Writing output to file: %s")
SH_WRONG_INPUTS = ("E", R, 463, "prepare_input_tensors",
                   "Wrong number of inputs allocated compared to method")
SH_SIZE_MISMATCH = ("E", R, 496, "prepare_input_tensors",
                    "input size (%lu) and tensor size (%lu) mismatch!")
# elsewhere
PROGRAM_IDENTIFIER = ("E", "program.cpp", 168, "load",
                      "Program identifier '%.4s' != expected '%.4s'")
RESERVE_FAILED = ("E", "EthosUBackend_Cortex_M.cpp", 91, "platform_execute",
                  "ethosu_reserve_driver_ex failed")
CALL_DELEGATE_FAILED = ("E", "method.cpp", 1528, "execute_instruction",
                        "CALL_DELEGATE execute failed at instruction %zu: 0x%lx")  # fmt: skip
# the ethos-u core driver's LOG_ERR ("E: " format) and the Corstone targets' HardFault_Handler and
# retarget _exit
NO_DRIVER = "E: No driver for product: %lu, log2_macs: %lu found!"
HARD_FAULT = "Hard fault. irq=%d, pc=0x%08lx, lr=0x%08lx, xpsr=0x%08lx, sp=0x%08lx"
FAULT_STATUS = "%11s cfsr=0x%08lx bfar=0x%08lx mmfar=0x%08lx"
EXIT_CODE = ["Application exit code: %d.", "\x04", "EXITTHESIM"]

# arm_perf_monitor.cpp StopMeasurements() at cff6f4dd32, format strings with PRIu32/PRIu64 expanded
# for arm-none-eabi
PERF_U85_EVENTS = ("Ethos-U PMU Events:[ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED, "
                   "ETHOSU_PMU_SRAM_WR_DATA_BEAT_WRITTEN, ETHOSU_PMU_EXT_RD_DATA_BEAT_RECEIVED, "
                   "ETHOSU_PMU_EXT_WR_DATA_BEAT_WRITTEN, ETHOSU_PMU_NPU_IDLE, "
                   "ETHOSU_PMU_MAC_ACTIVE, ETHOSU_PMU_WD_ACTIVE]")  # fmt: skip
PERF_U55_EVENTS = ("Ethos-U PMU Events:[ETHOSU_PMU_AXI0_RD_DATA_BEAT_RECEIVED, "
                   "ETHOSU_PMU_AXI1_RD_DATA_BEAT_RECEIVED, ETHOSU_PMU_AXI0_WR_DATA_BEAT_WRITTEN, "
                   "ETHOSU_PMU_NPU_IDLE]")  # fmt: skip


@dataclass
class Perf:
    """The perf monitor's totals (what StopMeasurements prints)."""

    n: int
    delegations: int
    backend: int
    runtime: int
    wait: int
    npu: int
    counters: list[int]


def perf_block(p: Perf, family: str) -> list[str]:
    """arm_perf_monitor.cpp:141-235 formatted with C's rules."""
    n = p.n

    def per(x: int) -> float:
        return x / n if n else (math.nan if x == 0 else math.inf)

    lines = [
        (150, c_format("NPU Inferences : %d", n)),
        (151,
         c_format("NPU delegations: %lu (%.2f per inference)", p.delegations, per(p.delegations))),
        (156, "Profiler report, CPU cycles per operator:"),
        (160,
         c_format("ethos-u : cycle_cnt : %llu cycles (%.2f per inference)", p.backend,
                  per(p.backend))),
        (168,
         c_format("Operator(s) total: %llu CPU cycles (%.2f per inference)", p.backend,
                  per(p.backend))),
        (175,
         c_format("Inference runtime: %llu CPU cycles total (%.2f per inference)", p.runtime,
                  per(p.runtime))),
        (181,
         "NOTE: CPU cycle values and ratio calculations require FPGA and identical CPU/NPU "
         "frequency"),
    ]
    if p.runtime == 0:
        lines += [(187, c_format("Inference CPU ratio: ?.?? %%")),
                  (188, c_format("Inference NPU ratio: ?.?? %%"))]
    else:
        lines += [(190,
                   c_format("Inference CPU ratio: %.2f %%",
                            100.0 * (p.runtime - p.wait) / p.runtime)),
                  (194,
                   c_format("Inference NPU ratio: %.2f %%",
                            100.0 * p.wait / p.runtime))]  # fmt: skip
    lines += [
        (203,
         c_format("cpu_wait_for_npu_cntr : %llu CPU cycles (%.2f per inference)", p.wait,
                  per(p.wait))),
        (209, "Ethos-U PMU report:"),
        (210, c_format("ethosu_pmu_cycle_cntr : % llu (%.2f per inference)", p.npu, per(p.npu))),
    ]
    lines += [(217, c_format("ethosu_pmu_cntr%zd : %llu (%.2f per inference)", i, c, per(c)))
              for i, c in enumerate(p.counters)]  # fmt: skip
    lines.append((225, PERF_U55_EVENTS) if family == "ethos-u55" else (229, PERF_U85_EVENTS))
    return [f"I [executorch:{PM}:{line} StopMeasurements()] {text}" for line, text in lines]


# --- C printf, for the fixtures -------------------------------------------------------------------

_SPEC = re.compile(
    r"%(?P<flags>[-+ "
    r"#0]*)(?P<width>\d*)(?:\.(?P<prec>\d+))?(?P<length>hh|h|ll|l|z)?(?P<conv>[diuxXfcsp%])"
)


def c_format(fmt: str, *args: object) -> str:
    """``printf(fmt, args...)`` with C's rules for the conversions upstream uses (the space flag
    only affects signed conversions; ``%p`` as newlib prints it; nan/inf as ``nan``/``inf``)."""
    values = list(args)
    out = []
    last = 0
    for m in _SPEC.finditer(fmt):
        out.append(fmt[last : m.start()])
        last = m.end()
        conv, flags, width = m["conv"], m["flags"], m["width"]
        if conv == "%":
            out.append("%")
            continue
        value = values.pop(0)
        if conv in "di":
            text = f"{int(value):{'+' if '+' in flags else ' ' if ' ' in flags else ''}d}"  # type: ignore[call-overload]
        elif conv == "u":
            text = str(int(value))  # type: ignore[call-overload]
        elif conv in "xX":
            text = f"{int(value):{conv}}"  # type: ignore[call-overload]
        elif conv == "f":
            number = float(value)  # type: ignore[arg-type]
            text = (
                "nan"
                if math.isnan(number)
                else ("inf" if math.isinf(number) else f"{number:.{m['prec'] or 6}f}")
            )
        elif conv == "p":
            text = f"0x{int(value):x}"  # type: ignore[call-overload]
        else:  # s, c
            text = str(value)[: int(m["prec"])] if m["prec"] else str(value)
        if width:
            fill = "0" if "0" in flags and conv not in "sc" else " "
            text = text.ljust(int(width)) if "-" in flags else text.rjust(int(width), fill)
        out.append(text)
    out.append(fmt[last:])
    assert not values, f"unused arguments {values}"
    return "".join(out)


def test_c_format_follows_c() -> None:
    # no space: the flag is for signed conversions
    assert (c_format("ethosu_pmu_cycle_cntr : % llu (%.2f per inference)", 42, 21.0)
            == "ethosu_pmu_cycle_cntr : 42 (21.00 per inference)")
    assert (c_format("% d|%08lx|%11s|%.4s|%%", 5, 0x1F, "", "ABCDEF")
            == " 5|0000001f|           |ABCD|%")
    assert c_format("%.2f %.2f", math.nan, math.inf) == "nan inf"


# --- the printf-format matcher --------------------------------------------------------------------

_CONVERSIONS = {
    "%s": r".*?", "%.4s": r".{0,4}?", "%p": r"0x[0-9a-f]+", "%c": r".", "%d": r"-?\d+",
    "%lu": r"\d+",
    "%llu": r"\d+", "%zu": r"\d+", "%lx": r"[0-9a-f]+", "%08lx": r"[0-9a-f]{8}", "%11s": r".{11}",
    "%.2f": r"(?:-?\d+\.\d{2}|nan|inf)", "%%": "%",
}  # fmt: skip
_CONVERSION = re.compile("|".join(re.escape(c)
                                  for c in sorted(_CONVERSIONS, key=len, reverse=True)))
LOG = re.compile(r"^(?P<level>[DIWEF]) \[executorch:(?P<src>[^:]+):(?P<line>\d+) "
                 r"(?P<func>\w+)\(\)\] (?P<msg>.*)$")


def printf_regex(fmt: str) -> re.Pattern[str]:
    parts, last = [], 0
    for m in _CONVERSION.finditer(fmt):
        parts += [re.escape(fmt[last : m.start()]), _CONVERSIONS[m.group()]]
        last = m.end()
    return re.compile("".join([*parts, re.escape(fmt[last:])]) + "$", re.DOTALL)


def assert_lines(lines: Sequence[str], expected: Sequence[Expected | str]) -> None:
    """Each line in order: an ET_LOG line matching (level, file, line, function, format), or a
    literal (whose ``%`` conversions, if any, match any value)."""
    assert len(lines) == len(expected), "\n".join(lines)
    for number, (line, want) in enumerate(zip(lines, expected, strict=True), 1):
        if isinstance(want, str):
            assert printf_regex(want).match(line), f"line {number}: {line!r} != {want!r}"
            continue
        m = LOG.match(line)
        assert m, f"line {number}: no ET_LOG prefix: {line!r}"
        level, src, at, func, fmt = want
        got = (m["level"], m["src"], int(m["line"]), m["func"])
        assert got == (level, src, at, func), f"line {number}: {line!r} != {want}"
        assert printf_regex(fmt).match(m["msg"]), (
            f"line {number}: {m['msg']!r} does not match {fmt!r}")


# --- an in-memory board ---------------------------------------------------------------------------


class Stopped(ProgramInterrupted):
    """The board stopped the program (hang reached, semihosting exit)."""

    def __init__(self, why: str, code: int = 0) -> None:
        super().__init__(why)
        self.why, self.code = why, code


@dataclass
class FakeBoard:
    """Implements ``baremetal_runner.BoardContext`` over dicts; records what the program printed."""

    npu: Accelerator = field(default_factory=lambda: Accelerator("ethos-u85", 256))
    platform: str = "corstone320"
    knobs: Mapping[str, str] = field(default_factory=dict)
    semihosting_enabled: bool = False
    cmd_line: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    memory_map: dict[int, bytes] = field(default_factory=dict)
    text: list[str] = field(default_factory=list)
    channel: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    instructions: int = 0
    npu_cycles: int = 0

    def uart(self, text: str) -> None:
        self.text.append(text)
        self.channel.append("uart")

    def semihost_write(self, text: str) -> None:
        self.text.append(text)
        self.channel.append("semihosting")

    def semihost_read(self, path: str) -> bytes:
        try:
            return self.files[path]
        except KeyError:
            raise FileNotFoundError(2, "No such file or directory", path) from None

    def semihost_write_file(self, path: str, data: bytes) -> None:
        self.files[path] = data

    def semihost_exit(self, code: int) -> NoReturn:
        raise Stopped("exit", code)

    def memory(self, address: int, size: int) -> bytes:
        for start, data in self.memory_map.items():
            if start <= address < start + len(data):
                return data[address - start : address - start + size]
        return UNMAPPED * 16

    def advance(self, instructions: int, npu_cycles: int = 0) -> None:
        self.instructions += instructions
        self.npu_cycles += npu_cycles

    def hang(self) -> NoReturn:
        raise Stopped("hang")

    def check_interrupt(self) -> None:
        return None

    def note(self, text: str) -> None:
        self.notes.append(text)

    @property
    def lines(self) -> list[str]:
        return "".join(self.text).split("\n")


def run(board: FakeBoard, artifact: BareMetalArtifact) -> str:
    """Run the program; returns how it ended: ``spin`` (in _exit), ``exit N`` (semihosting) or
    ``hang``."""
    try:
        run_application(board, artifact)
    except Stopped as stop:
        return f"exit {stop.code}" if stop.why == "exit" else stop.why
    return "spin"


class _Models(dict[tuple[str, str], CompiledModel]):
    """(model, accelerator) -> the model compiled with seed 0, compiled on first use (compiling
    calibrates)."""

    def __missing__(self, key: tuple[str, str]) -> CompiledModel:
        self[key] = compile_model(get_architecture(key[0]), 0, accelerator=key[1])
        return self[key]


@pytest.fixture(scope="module")
def models() -> dict[tuple[str, str], CompiledModel]:
    return _Models()


def elf(model: CompiledModel, **kwargs: object) -> BareMetalArtifact:
    return BareMetalArtifact(target=model.accelerator.name, pte=encode_model(model), **kwargs)  # type: ignore[arg-type]


def board_for(model: CompiledModel, **kwargs: object) -> FakeBoard:
    acc = model.accelerator
    return FakeBoard(npu=acc,
                     platform="corstone300" if acc.family == "ethos-u55" else "corstone320",
                     **kwargs)  # type: ignore[arg-type]  # fmt: skip


def expected_perf(model: CompiledModel, n: int, board: FakeBoard) -> Perf:
    sizes = DriverSizes.from_mapping(model.sizes.to_dict())
    cost = COSTS.inference(sizes)
    cycles = model_cycles(model)
    counters = pmu_counters(model.arch.layers, sizes, cycles, board.npu.num_macs, board.npu.family)
    return Perf(n, n, n * cost.backend, n * cost.total, n * cost.wait, n * cycles,
                [n * c for c in counters])


def outputs_of(lines: Sequence[str]) -> list[int]:
    return [int(m[1])
            for line in lines if (m := re.fullmatch(r"Output\[0\]\[\d+\]: \(char\) (-?\d+)", line))]


# --- a successful run -----------------------------------------------------------------------------

LOAD = [PTE_AT, PTE_LOADED, BUFFER_LOADED, RUNNING_METHOD, ALLOCATOR_POOL, PLANNED, DELEGATE_DATA,
        METHOD_LOADED, PREPARING, INPUT_PREPARED, STARTING]  # fmt: skip
MEMORY = [MEM_PROGRAM, MEM_LOADED, MEM_USED, MEM_PLANNED, MEM_METHOD, MEM_INPUT, MEM_EXECUTOR,
          MEM_TEMP]


def test_compiled_in_model_prints_upstreams_sequence(
    models: dict[tuple[str, str], CompiledModel],
) -> None:
    model = models["resnet8", "ethos-u85-256"]
    board = board_for(model)
    assert run(board, elf(model, num_inferences=3)) == "spin"
    lines = board.lines
    assert lines[-1] == "" and set(board.channel) == {"uart"}
    block = perf_block(expected_perf(model, 3, board), "ethos-u85")
    outputs = [f"Output[0][{j}]: (char) %d" for j in range(10)]
    assert_lines(lines[:-1],
                 [*LOAD, *block, FINISHED, OUTPUTS, *outputs, MODEL_RUN, MODEL_RUN_MAIN, *MEMORY,
                  COMPLETE,
                              EOT, *EXIT_CODE])  # fmt: skip
    msgs = [m["msg"] for line in lines if (m := LOG.match(line))]
    assert msgs[0] == "PTE @ 0x70000000 [----IMMD]"  # the simulator model file's bytes 4..7
    assert msgs[1] == f"PTE Model data loaded. Size: {len(encode_model(model))} bytes."
    # 3072 B input + 10 B output, 16-aligned
    assert msgs[5] == "Setting up planned buffer with mem_id=1, size 3088."
    assert msgs[10] == "Starting running 3 inferences..."
    assert "1 outputs: " in msgs and "3 inferences finished" in msgs
    assert lines[-4:-1] == ["Application exit code: 0.", "\x04", "EXITTHESIM"]
    assert lines[-5] == f"I [executorch:{R}:1554 main()] \x04"  # ET_LOG(Info, "\04"): the EOT
    # the perf block is printed once, after the loop, with totals and per-inference figures (exact
    # text)
    text = "\n".join(lines)
    assert text.count("NPU Inferences :") == 1 and "\n".join(block) in text
    # the outputs are the int8 inference of the all-ones input the runner fills in
    want = run_model(model.arch, model.quant,
                     np.ones(model.arch.input_shape, np.int8)).reshape(-1).tolist()
    assert outputs_of(lines) == want


def test_perf_block_numbers_follow_the_work(models: dict[tuple[str, str], CompiledModel]) -> None:
    model = models["mobilenet_v1_025", "ethos-u85-256"]
    board = board_for(model)
    run(board, elf(model, num_inferences=4))
    text = "".join(board.text)
    npu = model_cycles(model)
    assert f"ethosu_pmu_cycle_cntr : {4 * npu} ({npu}.00 per inference)" in text
    m = re.search(r"ethos-u : cycle_cnt : (\d+) cycles \((\d+)\.00 per inference\)", text)
    assert m and int(m[1]) == 4 * int(m[2])
    runtime = re.search(r"Inference runtime: (\d+) CPU cycles total", text)
    assert runtime and int(runtime[1]) > int(m[1])  # the loop costs more than the delegate alone
    # a bigger model costs the CPU more inside execute() (bytes copied, cache lines maintained)
    small = board_for(models["ds_cnn", "ethos-u85-256"])
    run(small, elf(models["ds_cnn", "ethos-u85-256"]))
    small_cnt = re.search(r"cycle_cnt : \d+ cycles \((\d+)\.00", "".join(small.text))
    assert small_cnt and int(small_cnt[1]) < int(m[2])


def test_a_partitioned_model_counts_each_delegate_call_in_the_one_perf_block() -> None:
    """Bare metal prints nothing per delegate call: ethosu_inference_end() adds each call's PMU
    cycles and counts it (arm_perf_monitor.cpp:101-112), so K partitions show as ``NPU delegations:
    K x n (K.00 per inference)`` (line 151-155) and a PMU cycle count that is the partitions'
    sum."""
    from fvp_harness.sim.networks.partition import choose_cpu_layers
    from fvp_harness.sim.npu.partitions import partition_cycles

    arch = get_architecture("ds_cnn")
    model = compile_model(arch, 0, accelerator="ethos-u85-256",
                          cpu_layers=choose_cpu_layers(arch, 3))
    board = board_for(model)
    run(board, elf(model, num_inferences=2))
    text = "".join(board.text)
    npu = sum(partition_cycles(model))
    assert "NPU delegations: 6 (3.00 per inference)" in text
    assert f"ethosu_pmu_cycle_cntr : {2 * npu} ({npu}.00 per inference)" in text


def test_a_partitioned_model_plans_the_tensors_its_partitions_hand_over() -> None:
    """The planned buffer holds the input, the output and the activations the partitions and CPU
    layers hand each other (the network's activation plan); the memory lines and the harness's
    parsers agree on it."""
    from fvp_harness.run.scrape import scrape
    from fvp_harness.scenario.model import MetricSpec
    from fvp_harness.sim.networks.partition import choose_cpu_layers, planned_edge_bytes

    arch = get_architecture("resnet8")
    sizes = {}
    for partitions in (1, 2, 3):
        cpu_layers = choose_cpu_layers(arch, partitions) if partitions > 1 else ()
        model = compile_model(arch, 0, accelerator="ethos-u85-256", cpu_layers=cpu_layers)
        board = board_for(model)
        run(board, elf(model))
        specs = [MetricSpec(name=name) for name in ("planned_memory", "method_allocator_planned")]
        scraped = scrape("".join(board.text), specs)
        edges = planned_edge_bytes(model.arch, model.delegation)
        planned = -(-model.sizes.input // 16) * 16 + -(-model.sizes.output // 16) * 16 + edges
        assert scraped.samples == {"planned_memory": [planned],
                                   "method_allocator_planned": [planned]}
        sizes[partitions] = planned
    assert sizes[1] < sizes[2] < sizes[3]


def test_deterministic(models: dict[tuple[str, str], CompiledModel]) -> None:
    model = models["ds_cnn", "ethos-u85-128"]
    first, second = board_for(model), board_for(model)
    run(first, elf(model, num_inferences=2))
    run(second, elf(model, num_inferences=2))
    assert first.text == second.text  # the FVP is deterministic: NPU and CPU cycles alike


def test_npu_cycles_fall_as_macs_grow_and_outputs_stay_identical(
        models: dict[tuple[str, str], CompiledModel]) -> None:
    for name in ARCHITECTURES:
        cycles, outputs = [], []
        for acc in ("ethos-u85-128", "ethos-u85-256", "ethos-u85-512"):
            model = models[name, acc]
            board = board_for(model)
            run(board, elf(model))
            m = re.search(r"ethosu_pmu_cycle_cntr : (\d+) ", "".join(board.text))
            assert m
            cycles.append(int(m[1]))
            outputs.append(outputs_of(board.lines))
        # same seed, same quantisation
        assert outputs[0] == outputs[1] == outputs[2] and outputs[0], name
        assert cycles[0] >= cycles[1] >= cycles[2], (name, cycles)
        # the analytic model keeps a weight-decode bound FC network flat; Vela does
        if name != "deep_autoencoder":
            # not (test_platform.py checks it)
            assert cycles[0] > cycles[1] > cycles[2], (name, cycles)


def test_u55_on_corstone300_has_four_pmu_counters(
    models: dict[tuple[str, str], CompiledModel],
) -> None:
    model = models["ds_cnn", "ethos-u55-128"]
    board = board_for(model)
    assert board.platform == "corstone300"
    run(board, elf(model, num_inferences=2))
    block = perf_block(expected_perf(model, 2, board), "ethos-u55")
    assert "\n".join(block) in "\n".join(board.lines)
    assert [e.rsplit("_PMU_", 1)[1] for e in PMU_EVENTS["ethos-u55"]] == [
        "AXI0_RD_DATA_BEAT_RECEIVED", "AXI1_RD_DATA_BEAT_RECEIVED", "AXI0_WR_DATA_BEAT_WRITTEN",
        "NPU_IDLE"]


def test_without_output_dump_and_with_build_id(
    models: dict[tuple[str, str], CompiledModel],
) -> None:
    model = models["deep_autoencoder", "ethos-u85-256"]
    board = board_for(model)
    run(board, elf(model, log_dump_output=False, build_id="b-7"))
    lines = board.lines
    # ours, not upstream
    assert lines[0] == f"I [executorch:{R}:1433 main()] arm_executor_runner build id: b-7"
    assert not outputs_of(lines)


# --- where the model comes from -------------------------------------------------------------------


def test_model_at_an_address_from_data(models: dict[tuple[str, str], CompiledModel]) -> None:
    model = models["ds_cnn", "ethos-u85-256"]
    data = encode_model(model)
    board = board_for(model, memory_map={0x70000000: data})
    artifact = BareMetalArtifact(target="ethos-u85-256", pte_addr=0x70000000)
    assert run(board, artifact) == "spin"
    msgs = [m["msg"] for line in board.lines if (m := LOG.match(line))]
    assert msgs[:2] == ["PTE @ 0x70000000 [----IMMD]",
                        "PTE Model data loaded. Size: 268435456 bytes."]
    assert_lines([line for line in board.lines if "log_mem_status" in line][:2],
                 [MEM_PROGRAM_ADDR, MEM_LOADED_ADDR])


def test_nothing_at_the_address_fails_program_load(
    models: dict[tuple[str, str], CompiledModel],
) -> None:
    board = FakeBoard()
    assert run(board, BareMetalArtifact(target="ethos-u85-256", pte_addr=0x70000000)) == "spin"
    lines = board.lines
    assert_lines(lines[:-1],
                 [PTE_AT, PTE_LOADED, PROGRAM_IDENTIFIER, PROGRAM_CHECK, HARD_FAULT, FAULT_STATUS,
                              *EXIT_CODE])  # fmt: skip
    assert lines[3].endswith("(program_result.ok()): Program loading failed @ 0x70000000: 0x23")
    assert "cfsr=0x00010000" in lines[5]  # __builtin_trap(): UNDEFINSTR
    assert lines[-4] == "Application exit code: 1."


def test_a_real_pte_is_noted_and_refused(models: dict[tuple[str, str], CompiledModel]) -> None:
    fake_pte = b"\x1c\x00\x00\x00ET12" + b"\0" * 200
    board = FakeBoard(memory_map={0x60000000: fake_pte})
    run(board, BareMetalArtifact(target="ethos-u85-256", pte_addr=0x60000000))
    assert board.notes and "real ExecuTorch program" in board.notes[0]
    assert any("Program loading failed @ 0x60000000: 0x23" in line for line in board.lines)


# --- failures -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("compiled", "npu", "product", "log2"), [
    ("ethos-u85-256", Accelerator("ethos-u85", 128), 2, 8),   # MACs differ
    ("ethos-u55-128", Accelerator("ethos-u85", 128), 0, 7),   # family differs
])  # fmt: skip
def test_npu_mismatch_fails_in_the_driver(models: dict[tuple[str, str], CompiledModel],
                                          compiled: str,
                                          npu: Accelerator, product: int,
                                          log2: int) -> None:  # fmt: skip
    model = models["resnet8", compiled]
    board = FakeBoard(npu=npu)
    assert (run(board,
               BareMetalArtifact(target=f"ethos-u85-{npu.num_macs}", pte=encode_model(model)))
            == "spin")
    lines = board.lines
    runtime = int(re.search(r"Inference runtime: (\d+)", "".join(board.text))[1])  # type: ignore[index]
    backend = int(re.search(r"cycle_cnt : (\d+)", "".join(board.text))[1])  # type: ignore[index]
    block = perf_block(Perf(0, 0, backend, runtime, 0, 0, [0] * 7), "ethos-u85")
    assert_lines(lines[:-1],
                 [*LOAD, NO_DRIVER, RESERVE_FAILED, CALL_DELEGATE_FAILED, *block, EXECUTE_CHECK,
                              HARD_FAULT, FAULT_STATUS, *EXIT_CODE])  # fmt: skip
    assert lines[11] == c_format(NO_DRIVER, product, log2)
    assert lines[13].endswith("CALL_DELEGATE execute failed at instruction 0: 0x2")
    assert lines[-7].endswith("(status == Error::Ok): Execution of method forward failed with "
                              "status 0x2")
    assert "NPU Inferences : 0" in lines[14] and "(nan per inference)" in lines[15]


def test_injected_hard_fault_and_hang(models: dict[tuple[str, str], CompiledModel]) -> None:
    model = models["resnet8", "ethos-u85-256"]
    board = board_for(model)
    assert run(board, elf(model, num_inferences=3, fault="hardfault=1")) == "spin"
    assert_lines(board.lines[:-1], [*LOAD, HARD_FAULT, FAULT_STATUS, *EXIT_CODE])
    # PRECISERR | BFARVALID: a bus fault with its address
    assert "cfsr=0x00008200" in board.lines[-5]
    # the knob overrides the build's fault
    board = board_for(model, knobs={"runner_fault": "hang=0"})
    assert run(board, elf(model, num_inferences=3, fault="hardfault=1")) == "hang"
    assert_lines(board.lines[:-1], LOAD)  # nothing after "Starting running 3 inferences..."


def test_wrong_platform_or_no_semihosting_locks_up(
    models: dict[tuple[str, str], CompiledModel],
) -> None:
    model = models["resnet8", "ethos-u85-256"]
    board = FakeBoard(platform="corstone300", npu=Accelerator("ethos-u55", 128))
    assert run(board, elf(model)) == "hang" and board.text == []
    assert "linked for corstone320" in board.notes[0]
    board = FakeBoard(semihosting_enabled=False)
    assert run(board, BareMetalArtifact(target="ethos-u85-256", semihosting=True)) == "hang"
    assert "semihosting is off" in board.notes[0]


# --- semihosting ----------------------------------------------------------------------------------


def semihosting_board(model: CompiledModel, cmd_line: str, **files: bytes) -> FakeBoard:
    return board_for(model, semihosting_enabled=True, cmd_line=cmd_line, files=dict(files))


def test_semihosting_run_as_runner_utils_starts_it(
    models: dict[tuple[str, str], CompiledModel],
) -> None:
    model = models["ds_cnn", "ethos-u55-128"]
    x = make_input(model.arch, 5)
    # backends/arm/test/runner_utils.py's command line
    cmd = "executor_runner -m program.pte -o out -i i0.bin"
    board = semihosting_board(model, cmd,
                              **{"program.pte": encode_model(model), "i0.bin": x.tobytes()})
    assert run(board, BareMetalArtifact(target="ethos-u55-128", semihosting=True)) == "exit 0"
    assert set(board.channel) == {"semihosting"}
    lines = board.lines
    block = perf_block(expected_perf(model, 1, board), "ethos-u55")
    assert_lines(lines[:-1], [
        SH_PARAMETERS, SH_ARG0, SH_ARG_PAIR, SH_ARG_PAIR, SH_ARG_PAIR, SH_READING_PTE,
        SH_READING_INPUT,
        *LOAD, *block, FINISHED, OUTPUTS, SH_WRITING_OUTPUT, MODEL_RUN, MODEL_RUN_MAIN, MEM_PROGRAM,
        MEM_LOADED, MEM_FILES, *MEMORY[2:], COMPLETE,
    ])  # fmt: skip  (semihosting: _exit(0) before the EOT line, outputs in files)
    assert lines[1:5] == [f"I [executorch:{R}:1424 main()]    executor_runner",
                          f"I [executorch:{R}:1426 main()]    -m program.pte",
                          f"I [executorch:{R}:1426 main()]    -o out",
                          f"I [executorch:{R}:1426 main()]    -i i0.bin"]  # fmt: skip
    assert (board.files["out-0.bin"]
            == run_model(model.arch, model.quant, x).astype(np.int8).tobytes())


def test_semihosting_failures(models: dict[tuple[str, str], CompiledModel]) -> None:
    model = models["ds_cnn", "ethos-u85-256"]
    artifact = BareMetalArtifact(target="ethos-u85-256", semihosting=True)
    # too few arguments: three Fatal lines and _exit(1)
    board = semihosting_board(model, "executor_runner -m program.pte")
    assert run(board, artifact) == "exit 1"
    assert_lines(board.lines[:-1],
                 [SH_PARAMETERS, ("F", R, 1416, "main", "Not right number of parameters!"),
        ("F", R, 1417, "main", "app -m model.pte -i input.bin [-i input2.bin] -o output_basename"),
        ("F", R, 1420, "main", "Exiting!")])  # fmt: skip
    # a missing model file
    board = semihosting_board(model, "executor_runner -m gone.pte -o out -i i0.bin")
    assert run(board, artifact) == "exit 1"
    assert_lines(board.lines[5:-1], [SH_READING_PTE, SH_OPEN_FAILED, SH_PTE_FAILED])
    assert board.lines[6].endswith("Could not open file gone.pte (errno: 2) for reading, exiting!")
    # an input of the wrong size: prepare_input_tensors fails, the check aborts with _exit(-1)
    board = semihosting_board(model, "executor_runner -m p.pte -o out -i i0.bin",
                              **{"p.pte": encode_model(model), "i0.bin": b"\0" * 7})  # fmt: skip
    assert run(board, artifact) == "exit -1"
    assert_lines(board.lines[-3:-1], [SH_SIZE_MISMATCH, PREPARE_CHECK])
    assert board.lines[-2].endswith("(status == Error::Ok): Failed to prepare inputs 0x12")
    # no input at all in a semihosting build
    board = semihosting_board(model, "executor_runner -m p.pte -o out -x y",
                              **{"p.pte": encode_model(model)})
    assert run(board, artifact) == "exit -1"
    assert_lines(board.lines[-3:-1], [SH_WRONG_INPUTS, PREPARE_CHECK])


# --- ETDump ---------------------------------------------------------------------------------------


def test_etdump_block_as_run_fvp_sh_extracts_it(
    models: dict[tuple[str, str], CompiledModel],
) -> None:
    model = models["resnet8", "ethos-u85-256"]
    board = board_for(model)
    run(board, elf(model, num_inferences=2, etdump=True))
    lines = board.lines
    start, end = lines.index("#[RUN THIS]"), lines.index("#[END]")
    block = lines[start : end + 1]
    assert_lines(block, [  # arm_executor_runner.cpp:1176-1213, printf
        "#[RUN THIS]", "# Writing debug_buffer.bin [base64]",
        'echo "%s" | base64 -d >debug_buffer.bin',
        "# Writing etdump.bin [base64]", 'echo "%s" | base64 -d >etdump.bin',
        "# Generate cpu cycle table with:",
        "python3 -m devtools.inspector.inspector_cli --etdump_path etdump.bin --debug_buffer_path "
        "debug_buffer.bin --source_time_scale cycles --target_time_scale cycles", "#[END]",
    ])  # fmt: skip
    assert_lines([lines[start - 1]], [BASE64_SIZE])
    setup = next(i for i, line in enumerate(lines) if line.endswith("Setting up ETDump"))
    assert_lines(lines[setup - 1 : setup + 3],
                 [PLANNED, SETUP_ETDUMP, ETDUMP_BUFFER, DELEGATE_DATA])
    assert_lines([line for line in lines if "ETDump_outputs_buffer" in line], [MEM_ETDUMP])
    # what run_fvp.sh does: grep ">etdump.bin" | cut -d\" -f2 | base64 -d
    etdump = base64.b64decode(next(line for line in block if ">etdump.bin" in line).split('"')[1])
    debug = base64.b64decode(next(line
                                  for line in block if ">debug_buffer.bin" in line).split('"')[1])
    # size-prefixed
    assert struct.unpack_from("<I", etdump)[0] == len(etdump) - 4 and etdump[8:12] == b"ED00"
    out = np.array(outputs_of(lines), dtype=np.int8).tobytes()
    assert debug == (out.ljust(64, b"\0")) * 2  # one output per execution, 64-byte aligned
    assert (b"Method::execute" in etdump and b"EthosUBackend::execute()" in etdump and
            b"Default" in etdump)


def test_etdump_reads_back_as_a_flatbuffer(models: dict[tuple[str, str], CompiledModel]) -> None:
    flatbuffers = pytest.importorskip("flatbuffers")
    from flatbuffers.table import Table

    model = models["ds_cnn", "ethos-u85-256"]
    board = board_for(model)
    run(board, elf(model, num_inferences=2, etdump=True))
    line = next(line for line in board.lines if ">etdump.bin" in line)
    buf = bytearray(base64.b64decode(line.split('"')[1])[4:])
    root = Table(buf, flatbuffers.encode.Get(flatbuffers.packer.uoffset, buf, 0))
    runs = root.Offset(6)
    names = []
    for i in range(root.VectorLen(runs)):
        run_data = Table(buf, root.Indirect(root.Vector(runs) + 4 * i))
        names.append(run_data.String(run_data.Offset(4) + run_data.Pos).decode())
    # Program::load_method's block, then one per execute()
    assert names == ["Default", "Execute", "Execute"]


# --- the artifact ---------------------------------------------------------------------------------


def test_artifact_round_trip_and_defaults(models: dict[tuple[str, str], CompiledModel]) -> None:
    artifact = elf(models["resnet8", "ethos-u85-256"], num_inferences=4, etdump=True, build_id="x",
                   fault="hang=2")
    data = encode_artifact(artifact)
    # an ELF32 little-endian EM_ARM executable, the model in network_model_sec (the container
    # changed from the flat FVPSIMBM file to an ELF deliberately: the harness reads a runner's flash
    # and RAM from its sections)
    assert is_baremetal_artifact(data) and data[:8] == b"\x7fELF\x01\x01\x01\x00"
    assert (int.from_bytes(data[16:18], "little") == 2 and
            int.from_bytes(data[18:20], "little") == 40)
    assert (section(data, "network_model_sec") == artifact.pte and
            section(data, ".fvpsim")[:8] == b"FVPSIMBM")
    assert decode_artifact(data) == artifact
    assert (artifact.platform, artifact.model_source) == ("corstone320", "elf")
    assert (artifact.memory_mode, artifact.system_config) == (
        "Dedicated_Sram_384KB",
        "Ethos_U85_SYS_DRAM_Mid",
    )
    u55 = BareMetalArtifact(pte_addr=0x70000000)
    assert (u55.target, u55.platform, u55.model_source, u55.memory_mode) == (
        "ethos-u55-128", "corstone300", "address", "Shared_Sram")
    assert BareMetalArtifact(semihosting=True).model_source == "semihosting"
    assert (fast_scratch_bytes("Dedicated_Sram_384KB") == 384 * 1024 and
            fast_scratch_bytes("Dedicated_Sram") == 0x60000)
    assert (fast_scratch_bytes("Shared_Sram") == 0 and
            fast_scratch_bytes("Dedicated_Sram_2MB") == 2 << 20)


def test_artifact_file_and_info_name_the_build_settings() -> None:
    """The file's JSON body (sorted keys, padded to 16 bytes) and what ``sim info`` shows, in its
    order: both name a build's settings alike, from one table."""
    artifact = BareMetalArtifact(pte_addr=0x70000000, num_inferences=3, etdump=True,
                                 log_dump_output=False, build_id="b7", fault="hang=1")
    # the JSON body, byte for byte as in the flat file
    body = section(encode_artifact(artifact), ".fvpsim")
    # version 2: in an ELF
    assert body[:32] == b"FVPSIMBM" + struct.pack("<HHII", 2, 0, 288, 0) + b"\0" * 12
    assert body[32:] == (
        b'{"etdump": true, "fault": "hang=1", "format": "fvp-sim-arm-executor-runner", "id": "b7", '
        b'"log_dump_output": false, "memory_mode": "Shared_Sram", "num_inferences": 3, "pte_addr": '
        b'1879048192, "semihosting": false, "system_config": "Ethos_U55_High_End_Embedded", '
        b'"target": "ethos-u55-128"}  ')
    assert list(artifact_info(Path("r.elf"), encode_artifact(artifact)).items()) == [
        ("file", "r.elf"), ("kind", "baremetal-runner"), ("target", "ethos-u55-128"),
        ("platform", "corstone300"),
        ("model_source", "address"), ("pte_addr", "0x70000000"), ("semihosting", False),
        ("num_inferences", 3),
        ("etdump", True), ("log_dump_output", False), ("memory_mode", "Shared_Sram"),
        ("system_config", "Ethos_U55_High_End_Embedded"), ("id", "b7"), ("fault", "hang=1")]


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({}, "One of ET_MODEL_PTE_ADDR, ET_COMPILED_PTE, or SEMIHOSTING"),
    ({"pte": b"x", "pte_addr": 1}, "mutually exclusive"),
    ({"semihosting": True, "target": "ethos-u65-256"}, "unknown accelerator"),
    ({"semihosting": True, "target": "ethos-u55-512"}, "no 512-MAC configuration"),
    ({"semihosting": True, "num_inferences": 0}, "at least 1"),
    ({"semihosting": True, "memory_mode": "Lots_Of_Sram"}, "memory mode"),
    ({"semihosting": True, "fault": "crash=1"}, "unknown bare-metal runner fault"),
])  # fmt: skip
def test_artifact_refuses_builds_cmake_would_refuse(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(ValueError, match=re.escape(needle)):
        BareMetalArtifact(**kwargs)  # type: ignore[arg-type]


def section(data: bytes, name: str) -> bytes:
    """A section's contents, read with pyelftools (not the simulator's own reader)."""
    found = ELFFile(io.BytesIO(data)).get_section_by_name(name)
    assert found is not None, f"no section {name}"
    return bytes(found.data())


def test_decode_refuses_other_files() -> None:
    with pytest.raises(ModelFileError, match="FVPSIMBM"):
        decode_artifact(b"\x7fELF" + b"\0" * 60)
    data = encode_artifact(BareMetalArtifact(semihosting=True))
    at = data.index(b"FVPSIMBM")
    with pytest.raises(ModelFileError,
                       match="network_model_sec holds 0 bytes, the header says 4294967295"):
        # the compiled-in model's length
        decode_artifact(data[: at + 16] + b"\xff" * 4 + data[at + 20 :])
    with pytest.raises(ModelFileError, match="truncated"):
        decode_artifact(data[: at + 12] + b"\xff" * 4 + data[at + 16 :])  # the JSON's length
    with pytest.raises(ModelFileError, match="FVPSIMBM"):
        # an ELF without the simulator's section
        decode_artifact(data.replace(b".fvpsim", b".other"))


def test_version_1_files_are_still_read(models: dict[tuple[str, str], CompiledModel]) -> None:
    """A flat file of the previous format (header, JSON, model) still runs: builds made before are
    not lost."""
    artifact = elf(models["resnet8", "ethos-u55-128"], num_inferences=2)
    body = section(encode_artifact(artifact), ".fvpsim")[32:]
    flat = b"FVPSIMBM" + struct.pack("<HHII", 1, 0, len(body),
                                     len(artifact.pte)) + b"\0" * 12 + body + artifact.pte
    assert is_baremetal_artifact(flat) and decode_artifact(flat) == artifact


def sizes(data: bytes) -> dict[str, int]:
    return {sec.name: sec["sh_size"]
            for sec in ELFFile(io.BytesIO(data)).iter_sections() if sec.name}


def test_the_runner_elf_is_well_formed_and_its_sections_model_the_build(
        models: dict[tuple[str, str], CompiledModel], tmp_path: Path) -> None:
    """binutils' readelf reads the file without a warning, and each section follows the build: the
    pools the runner reports as .bss, the event tracer and its buffer with --etdump, the file pool
    with --semihosting, the fast scratch of a Dedicated_Sram mode, the model's bytes in
    network_model_sec."""
    plain = BareMetalArtifact(semihosting=True)
    path = tmp_path / "r.elf"
    path.write_bytes(encode_artifact(plain))
    if shutil.which("readelf"):
        done = subprocess.run(["readelf", "-W", "-h", "-S", "-l", str(path)], capture_output=True,
                              text=True, check=True)  # fmt: skip
        assert done.stderr == "" and "Machine:                           ARM" in done.stdout
        assert "EXEC (Executable file)" in done.stdout and "ELF32" in done.stdout
        for name in (".text", ".rodata", ".data", ".bss.method_allocator_sec",
                     ".bss.input_file_allocator_sec"):
            assert f" {name} " in done.stdout
    base = sizes(path.read_bytes())
    assert (base[".bss.method_allocator_sec"] == 60 << 20 and
            base[".bss.input_file_allocator_sec"] == 60 << 20)
    assert base[".bss.ethosu_scratch"] == 2 << 20 and base[".data"] + base[".bss"] == 53_469
    assert "network_model_sec" not in base and ".fvpsim" in base
    traced = sizes(encode_artifact(BareMetalArtifact(semihosting=True, etdump=True)))
    assert traced[".text"] > base[".text"] and traced[".bss.etdump_buffer"] == 2 << 20
    model = models["resnet8", "ethos-u85-256"]
    u85 = sizes(encode_artifact(elf(model)))
    # no semihosting
    assert u85["network_model_sec"] == len(elf(model).pte) and u85[".text"] < base[".text"]
    assert u85[".bss.ethosu_scratch"] == 64 << 20 and u85[".bss.ethosu_fast_scratch"] == 384 << 10
    assert ".bss.input_file_allocator_sec" not in u85


def test_parse_faults() -> None:
    assert parse_faults("") == BareMetalFaults()
    assert parse_faults("hardfault=2") == BareMetalFaults(hardfault=2)
    assert parse_faults("hang") == BareMetalFaults(hang=0)
    assert parse_faults("hang=1, hardfault=3") == BareMetalFaults(hardfault=3, hang=1)
    for bad in ("crash=1", "hang=x", "hardfault=-1"):
        with pytest.raises(ValueError):
            parse_faults(bad)


def tool(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return tools.main(list(argv), out, err), out.getvalue(), err.getvalue()


def test_sim_baremetal_runner_command(tmp_path: Path,
                                      models: dict[tuple[str, str], CompiledModel]) -> None:
    model_file = tmp_path / "m.bin"
    model_file.write_bytes(encode_model(models["ds_cnn", "ethos-u55-128"]))
    status, out, _ = tool("baremetal-runner", "--pte", str(model_file), "--iterations", "3",
                          "--build-id", "b1",
                          "-o", str(tmp_path / "out" / "runner.elf"))  # fmt: skip
    assert (status == 0 and
            "ethos-u55-128 (corstone300, model ds_cnn for ethos-u55-128 compiled in" in out)
    artifact = decode_artifact((tmp_path / "out" / "runner.elf").read_bytes())
    assert (artifact.target, artifact.num_inferences, artifact.build_id) == (
        "ethos-u55-128",
        3,
        "b1",
    )
    assert artifact.pte == model_file.read_bytes()
    status, out, _ = tool("info", str(tmp_path / "out" / "runner.elf"))
    info = json.loads(out)
    assert (info["kind"], info["model"]["name"], info["platform"]) == (
        "baremetal-runner",
        "ds_cnn",
        "corstone300",
    )
    status, out, _ = tool("baremetal-runner", "--pte-addr", "0x70000000", "--target",
                          "ethos-u85-512", "-o", str(tmp_path / "addr.elf"))  # fmt: skip
    assert status == 0 and "model at 0x70000000" in out
    assert decode_artifact((tmp_path / "addr.elf").read_bytes()).pte_addr == 0x70000000
    # refused: no model source, a model file that is not ours, a bad fault spec
    assert tool("baremetal-runner", "-o", str(tmp_path / "x.elf"))[0] == 2
    (tmp_path / "real.pte").write_bytes(b"\x1c\0\0\0ET12" + b"\0" * 56)
    status, _, err = tool("baremetal-runner", "--pte", str(tmp_path / "real.pte"), "-o",
                          str(tmp_path / "x.elf"))
    assert status == 2 and "not a simulator model file" in err
    assert tool("baremetal-runner", "--semihosting", "--fault", "boom", "-o",
                str(tmp_path / "x.elf"))[0] == 2
    assert not (tmp_path / "x.elf").exists() and not list(tmp_path.rglob(".*tmp*"))


def test_log_lines_are_cut_like_log_cpp() -> None:
    from fvp_harness.sim.baremetal.log import format_log

    line = format_log("I", SITES["sh_arg0"], "x" * 400)
    assert line == f"I [executorch:{R}:1424 main()] " + "x" * 255 + "\n"


def test_every_site_is_a_known_upstream_file() -> None:
    files = {site[0] for site in SITES.values()}
    assert files == {R, PM, "EthosUBackend.cpp", "EthosUBackend_Cortex_M.cpp", "method.cpp",
                     "program.cpp"}
    assert parse_accelerator("ethos-u85-256").num_macs == 256
