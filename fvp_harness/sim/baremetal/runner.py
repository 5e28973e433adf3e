"""The emulated ``arm_executor_runner`` (Cortex-M + Ethos-U, bare metal) that the Corstone-300/320
platforms run.

What it prints, line for line (upstream's arm_executor_runner.cpp at cff6f4dd32, ``log.SITES``),
semihosting builds and failures: docs/simulator.md, "The whole sequence".
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NoReturn, Protocol

import numpy as np

from fvp_harness.sim.baremetal.artifact import (
    BareMetalArtifact,
    BareMetalFaults,
    fast_scratch_bytes,
    parse_faults,
)
from fvp_harness.sim.baremetal.cost import DEFAULT as COSTS
from fvp_harness.sim.baremetal.cost import PMU_EVENTS, InferenceCost, pmu_counters
from fvp_harness.sim.baremetal.layout import (
    DEBUG_BUFFER_BYTES,
    FILE_POOL,
    METHOD_POOL,
    METHOD_POOL_BYTES,
    MODEL_SECTION,
    TEMP_POOL_BYTES,
)
from fvp_harness.sim.baremetal.log import SITES, Measure, etdump_script, format_log, perf_block
from fvp_harness.sim.networks.accelerator import Accelerator
from fvp_harness.sim.networks.inference import run_model
from fvp_harness.sim.networks.modelfile import (
    CompiledModel,
    ModelFileError,
    decode_model,
    is_model_file,
    model_file_size,
)
from fvp_harness.sim.networks.partition import planned_edge_bytes
from fvp_harness.sim.npu.driver_cost import DriverSizes
from fvp_harness.sim.npu.partitions import partition_cycles
from fvp_harness.sim.workloads.etdump import DebugTensor, ProfileEvent, RunBlock, encode_etdump
from fvp_harness.sim.workloads.executor_runner import EtLog

__all__ = ["UNMAPPED", "BoardContext", "Exited", "application_faults", "run_application"]

_R = "arm_executor_runner.cpp"

# error codes (runtime/core/error.h)
OK, INVALID_STATE, INVALID_ARGUMENT, INVALID_PROGRAM = 0x0, 0x2, 0x12, 0x23
PROGRAM_IDENTIFIER = b"ET12"
ENOENT, EACCES, EISDIR = 2, 13, 21
"""newlib's errno values (what a failed semihosting fopen leaves in errno)."""

ADDRESS_PTE_SPAN = 0x10000000
"""An ET_MODEL_PTE_ADDR build does not know the model's size: it gives the loader this upper
bound."""
DEBUG_ALIGNMENT = 64
"""The ETDump data sink aligns each tensor it stores."""
ALIGNMENT = 16
UNMAPPED = bytes.fromhex("cfdfdfdf")
"""What an FVP's memory reads before anything was written there (0xDFDFDFCF, little-endian)."""

_FAULT_FRAMES = {
    # (pc, lr, xpsr, sp) the HardFault handler reports for the trap after a failed check and for the
    # injected bus fault: fixed, plausible values (code in the ITCM alias, stack in the DTCM), not
    # taken from a real trap
    "corstone300": ((0x1000A1F2, 0x1000A1E9, 0x61000000, 0x3001FEB8),
                    (0x100152C4, 0x10015117, 0x21000000, 0x3001FD70)),
    "corstone320": ((0x1100B3D6, 0x1100B3CD, 0x61000000, 0x3101FEB0),
                    (0x110168A8, 0x110166F3, 0x21000000, 0x3101FD68)),
}
CFSR_UNDEFINSTR = 0x00010000
CFSR_PRECISERR_BFARVALID = 0x00008200
PRODUCT = {"ethos-u55": 0, "ethos-u85": 2}
"""``ETHOSU_PRODUCT_U55`` / ``_U85`` of the core driver."""


class BoardContext(Protocol):
    """What the program sees of the platform (``baremetal/platform.py`` provides it; tests use an
    in-memory one)."""

    platform: str  # "corstone300" | "corstone320"
    npu: Accelerator  # the FVP's Ethos-U: family and <ethosu>.num_macs
    knobs: Mapping[str, str]
    semihosting_enabled: bool
    cmd_line: str  # the semihosting command line (already cut to the model's limit)

    def uart(self, text: str) -> None:
        """Send to UART0 (the retargeted stdout/stderr); may end the program (EOT with
        shutdown_on_eot)."""

    def semihost_write(self, text: str) -> None:
        """Write to the semihosting console (the model's stdout)."""

    def semihost_read(self, path: str) -> bytes:
        """Read a host file relative to the semihosting cwd; OSError like fopen."""

    def semihost_write_file(self, path: str, data: bytes) -> None:
        """Create or replace a host file relative to the semihosting cwd; OSError like fopen."""

    def semihost_exit(self, code: int) -> NoReturn:
        """SYS_EXIT: the simulation ends (raises; never returns)."""

    def memory(self, address: int, size: int) -> bytes:
        """The bytes at ``address``: at most ``size``, up to the end of the ``--data`` file loaded
        there; memory nothing was loaded into reads as a few bytes of the FVP's fill pattern
        (``UNMAPPED``)."""

    def advance(self, instructions: int, npu_cycles: int = 0) -> None:
        """The CPU retired ``instructions`` and waited ``npu_cycles`` for the NPU: simulated time
        passes."""

    def hang(self) -> NoReturn:
        """The CPU waits forever (no output); only a stop of the model ends it (raises)."""

    def check_interrupt(self) -> None:
        """Raise if the model is stopping."""

    def note(self, text: str) -> None:
        """A line of ours on the model's stderr (``fvp-sim: ...``), never on the UART."""


class Exited(Exception):
    """The program called ``exit()`` without semihosting: the core platform printed its exit code
    and an EOT and the CPU spins in ``while (1) {}``."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _HardFault(Exception):
    """A HardFault: the trap of an abort (``bus=False``) or the injected bus fault."""

    def __init__(self, bus: bool, address: int = 0) -> None:
        super().__init__("bus fault" if bus else "undefined instruction")
        self.bus, self.address = bus, address


def application_faults(knobs: Mapping[str, str], artifact: BareMetalArtifact) -> BareMetalFaults:
    """The faults to inject: the ``runner_fault`` knob when given, else the build's; ValueError if
    malformed."""
    return parse_faults(knobs.get("runner_fault") or artifact.fault)


def _align(n: int, to: int = ALIGNMENT) -> int:
    return (n + to - 1) // to * to


def _cstring(data: bytes) -> str:
    """Bytes printed with ``%c``/``%.4s``: raw bytes (undecodable ones kept as surrogates), NUL ends
    ``%.4s``."""
    return data.decode("utf-8", "surrogateescape")


@dataclass
class _Loaded:
    """What runner_init set up."""

    model: CompiledModel
    address: int
    size: int
    planned: int
    method_loaded: int
    inputs: list[bytes] | None
    x: np.ndarray
    debug_buffer: int | None = None


class _Program:
    """One run of the runner against a board."""

    def __init__(self, board: BoardContext, artifact: BareMetalArtifact,
                 faults: BareMetalFaults) -> None:
        self.board, self.artifact, self.faults = board, artifact, faults
        self.cycles = 0  # the Cortex-M PMU cycle counter: instructions retired
        self.blocks: list[RunBlock] = []
        self.debug_used = 0
        self.file_pool_used = 0
        self.output: np.ndarray | None = None

    # -- the C library -----------------------------------------------------------------------------

    def out(self, text: str) -> None:
        """printf / fprintf(stderr): UART0, or semihosting in a semihosting build (each character
        costs the polling write loop)."""
        if self.artifact.semihosting:
            self.board.semihost_write(text)
        else:
            self.board.uart(text)
        self.spend(COSTS.uart_per_char * len(text))

    def log(self, level: str, key: str, message: str) -> None:
        self.out(format_log(level, SITES[key], message))

    def spend(self, instructions: int, npu_cycles: int = 0) -> None:
        self.cycles += instructions
        self.board.advance(instructions, npu_cycles)

    def exit(self, status: int) -> NoReturn:
        """``exit()``/``_exit()``: SYS_EXIT with semihosting, else the core platform's retarget
        ``_exit``."""
        if self.artifact.semihosting:
            self.board.semihost_exit(status)
        self.out(f"Application exit code: {status}.\n\x04\nEXITTHESIM\n")
        raise Exited(status)

    def check(self, key: str, condition: str, message: str) -> NoReturn:
        """A failed ET_CHECK_MSG: the Fatal line, then ``runtime_abort()`` -> ``et_pal_abort()``."""
        function = SITES[key][2]
        self.log("F", key, f"In function {function}(), assert failed ({condition}): {message}")
        if self.artifact.semihosting:
            self.board.semihost_exit(-1)
        raise _HardFault(bus=False)  # __builtin_trap(): an undefined instruction

    def hard_fault(self, fault: _HardFault) -> None:
        """The Corstone targets' ``HardFault_Handler`` report (then ``exit(1)``)."""
        pc, lr, xpsr, sp = _FAULT_FRAMES[self.board.platform][1 if fault.bus else 0]
        cfsr = CFSR_PRECISERR_BFARVALID if fault.bus else CFSR_UNDEFINSTR
        self.out(f"Hard fault. irq=-13, pc=0x{pc:08x}, lr=0x{lr:08x}, xpsr=0x{xpsr:08x}, "
                 f"sp=0x{sp:08x}\n")
        self.out(f"{'':>11} cfsr=0x{cfsr:08x} bfar=0x{fault.address:08x} mmfar=0x{0:08x}\n")

    # -- main() ------------------------------------------------------------------------------------

    def main(self) -> int:
        a, board = self.artifact, self.board
        self.spend(COSTS.startup)
        if a.build_id:
            self.log("I", "build_id", f"arm_executor_runner build id: {a.build_id}")
        inputs: list[bytes] | None = None
        model: tuple[bytes, int, int] | None = None  # data, address, size
        if a.pte_addr is not None:
            model = (board.memory(a.pte_addr, ADDRESS_PTE_SPAN), a.pte_addr, ADDRESS_PTE_SPAN)
        elif a.pte:
            model = (a.pte, MODEL_SECTION, len(a.pte))
        output_base: str | None = None
        if a.semihosting:
            argv = board.cmd_line.split()
            self.log("I", "sh_parameters", "Running executor with parameter:")
            self._check_argc(argv)
            self.log("I", "sh_arg0", f"   {argv[0] if argv else '(null)'}")
            for i in range(1, len(argv), 2):
                self.log("I", "sh_arg_pair",
                         f"   {argv[i]} {argv[i + 1] if i + 1 < len(argv) else '(null)'}")
            inputs, model, output_base = self._parse_semihosting_args(argv, model)
        if model is None or model[2] == 0:
            self.log("F", "no_model", "Model data is not initialized")
            return 1
        if a.semihosting and output_base is None:
            self.log("F", "missing_o", "Missing required -o output_basename")
            return 1
        data, address, size = model
        self.log("I", "pte_at", f"PTE @ 0x{address:x} [----{_cstring(data[4:8])}]")
        loaded = self._runner_init(data, address, size, inputs)
        ok = self._run_model(loaded, output_base)
        self.log("I", "model_run_main", f"Model run: {int(ok)}")
        self._log_mem_status(loaded)
        self._write_etdump(loaded)
        self.log("I", "complete", "Program complete, exiting.")
        if a.semihosting:
            board.semihost_exit(0)
        self.log("I", "eot", "\x04")
        return 0

    def _check_argc(self, argv: list[str]) -> None:
        """main()'s argument count check: three Fatal lines and ``_exit(1)`` (1409-1412 with a
        compiled-in model, 1416-1421 without)."""
        compiled = bool(self.artifact.pte)  # ET_COMPILED_PTE
        if len(argv) >= (5 if compiled else 7):
            return
        first = SITES["sh_argc_compiled" if compiled else "sh_argc"][1]
        usage = ("app -o output_basename -i input.bin [-i input2.bin]" if compiled
                 else "app -m model.pte -i input.bin [-i input2.bin] -o "
                      "output_basename")  # fmt: skip
        lines = ((first, "Not right number of parameters!"), (first + 1, usage),
                 (first + (2 if compiled else 4), "Exiting!"))  # fmt: skip
        for line, text in lines:
            self.out(format_log("F", (_R, line, "main"), text))
        self.exit(1)

    def _read_binary_file(self, name: str) -> bytes | None:
        try:
            data = self.board.semihost_read(name)
        except OSError as exc:
            code = {FileNotFoundError: ENOENT, IsADirectoryError: EISDIR,
                    PermissionError: EACCES}.get(
                type(exc), ENOENT)
            self.log("F", "open_failed",
                     f"Could not open file {name} (errno: {code}) for reading, exiting!")
            return None
        self.file_pool_used += _align(len(data))
        self.spend(COSTS.file_read)
        return data

    def _parse_semihosting_args(self, argv: list[str], model: tuple[bytes, int, int] | None
                                ) -> tuple[list[bytes], tuple[bytes, int, int] | None,
                                           str | None]:  # fmt: skip
        inputs: list[bytes] = []
        output_base: str | None = None
        i = 0
        while i < len(argv):
            word = argv[i]
            value = argv[i + 1] if i + 1 < len(argv) else "(null)"
            if word == "-i":
                i += 1
                self.log("I", "sh_reading_input",
                         f"Reading input tensor {len(inputs) + 1} from file {value}")
                data = self._read_binary_file(value)
                if data is None:
                    self.log("E", "sh_input_failed",
                             f"Reading input tensor {len(inputs) + 1} from file {value} "
                             "failed.")  # fmt: skip
                    self.exit(1)
                inputs.append(data)
            elif word == "-m":
                i += 1
                self.log("I", "sh_reading_pte", f"Reading pte model from file {value}")
                address = FILE_POOL + self.file_pool_used
                data = self._read_binary_file(value)
                if data is None:
                    self.log("E", "sh_pte_failed", f"Reading pte model from file {value} failed.")
                    self.exit(1)
                model = (data, address, len(data))
            elif word == "-o":
                i += 1
                output_base = value
            elif word == "--server_mode":
                i += 1
                if i >= len(argv):
                    self.log("F", "sh_server_requires", "--server_mode requires true or false")
                    self.exit(1)
                if value not in ("true", "false"):
                    self.log("F", "sh_server_invalid", f"Invalid --server_mode value: {value}")
                    self.exit(1)
                if value == "true":
                    self.board.note("--server_mode true is not emulated: the simulated semihosting "
                                    "stdin is empty, so the server loop reads no line")  # fmt: skip
            i += 1
        return inputs, model, output_base

    # -- runner_init() -----------------------------------------------------------------------------

    def _load_program(self, data: bytes, address: int) -> CompiledModel:
        """Program::load on the buffer (the check at runner_init:685 on failure)."""
        fail = (f"Program loading failed @ 0x{address:x}: 0x{INVALID_PROGRAM:x}",)
        if not is_model_file(data):
            ident = data[4:8]
            if ident == PROGRAM_IDENTIFIER:
                self.board.note("the model is a real ExecuTorch program (ET12): this simulated "
                                "arm_executor_runner runs only simulator model files (magic "
                                "FVPSIMMD); make one with 'fvp-harness sim model NAME "
                                "--accelerator CONFIG -o FILE'")  # fmt: skip
            else:
                shown = _cstring(ident.split(b"\0", 1)[0])
                self.log("E", "program_identifier",
                         f"Program identifier '{shown}' != expected 'ET12'")
            self.check("program_check", "program_result.ok()", fail[0])
        expected = model_file_size(data)
        if expected is not None and expected > len(data):
            self.log("E", "file_too_small",
                     "File size is too small. Expected file size from extended header is "
                     f"{expected}, actual file size from data loader is {len(data)}")  # fmt: skip
            self.check("program_check", "program_result.ok()", fail[0])
        try:
            return decode_model(data[:expected] if expected is not None else data)
        except (ModelFileError, KeyError, ValueError, TypeError) as exc:
            self.board.note(f"the model file is damaged: {exc}")
            self.check("program_check", "program_result.ok()", fail[0])

    def _runner_init(self, data: bytes, address: int, size: int,
                     inputs: list[bytes] | None) -> _Loaded:
        self.log("I", "pte_loaded", f"PTE Model data loaded. Size: {size} bytes.")
        model = self._load_program(data, address)
        sizes = DriverSizes.from_mapping(model.sizes.to_dict())
        load = COSTS.load(sizes, fills_inputs=inputs is None)
        self.spend(load.program)
        self.log("I", "buffer_loaded", "Model buffer loaded, has 1 methods")
        self.log("I", "running_method", "Running method forward")
        self.log("I", "allocator_pool",
                 f"Setup Method allocator pool. Size: {METHOD_POOL_BYTES} bytes.")
        # the program's input and output, and for a partly delegated one the tensors its partitions
        # and CPU layers hand each other (the activation plan: networks/partition.py), as the Linux
        # runner plans them
        planned = (_align(model.sizes.input) + _align(model.sizes.output)
                   + planned_edge_bytes(model.arch, model.delegation, ALIGNMENT))
        self.log("I", "planned_buffer", f"Setting up planned buffer with mem_id=1, size {planned}.")
        debug_buffer = None
        if self.artifact.etdump:
            self.log("I", "etdump_setup", "Setting up ETDump")
            debug_buffer = METHOD_POOL + planned
            self.log("I", "etdump_buffer",
                     f"ETDump: Allocated intermediate output buffer size: {DEBUG_BUFFER_BYTES} "
                     f"at 0x0x{debug_buffer:x}")  # fmt: skip
        method_start = self.cycles
        # the model file's JSON header length (offset 16)
        header_bytes = struct.unpack_from("<I", data, 16)[0]
        self.log("I", "delegate_data", f"data:0x{address + 64 + _align(header_bytes):x}")
        self.spend(load.method)
        self.blocks.append(
            RunBlock("Default", (ProfileEvent(method_start, self.cycles, name="Method::init"),))
        )
        self.log("I", "method_loaded", "Method 'forward' loaded.")
        self.log("I", "preparing", "Preparing inputs...")
        x = self._prepare_inputs(model, inputs)
        self.spend(load.inputs)
        self.log("I", "input_prepared", "Input prepared.")
        dims = len(model.arch.input_shape) + len(model.arch.output_shape) + 2
        # values, two TensorImpls with sizes/dim order, the plan
        method_loaded = 48 + 2 * (48 + 8 * dims) + 256
        return _Loaded(model, address, size, planned, _align(method_loaded), inputs, x,
                       debug_buffer)

    def _prepare_inputs(self, model: CompiledModel, inputs: list[bytes] | None) -> np.ndarray:
        status = OK
        if self.artifact.semihosting and (not inputs or len(inputs) != 1):
            self.log("E", "wrong_inputs", "Wrong number of inputs allocated compared to method")
            status = INVALID_ARGUMENT
        elif inputs and len(inputs[0]) != model.sizes.input:
            self.log("E", "size_mismatch",
                     f"input size ({len(inputs[0])}) and tensor size ({model.sizes.input}) "
                     "mismatch!")  # fmt: skip
            status = INVALID_ARGUMENT
        if status != OK:
            self.check("prepare_check", "status == Error::Ok",
                       f"Failed to prepare inputs 0x{status:x}")
        if inputs:
            return np.frombuffer(inputs[0], dtype=np.int8).reshape(model.arch.input_shape)
        # "If there are no input buffers, fill inputs with 1s"
        return np.ones(model.arch.input_shape, dtype=np.int8)

    # -- run_model() and the Ethos-U backend -------------------------------------------------------

    def _run_model(self, loaded: _Loaded, output_base: str | None) -> bool:
        total = self.artifact.num_inferences
        self.log("I", "starting", f"Starting running {total} inferences...")
        model = loaded.model
        sizes = DriverSizes.from_mapping(model.sizes.to_dict())
        cost = COSTS.inference(sizes)
        # a partly delegated model (sim model --partitions K) makes K delegate calls per inference:
        # the PMU callbacks add each call's counters (ethosu_inference_end,
        # arm_perf_monitor.cpp:101-112) and count it in "NPU delegations" (line 151); no line is
        # printed per call on bare metal
        calls = len(model.delegation.partitions)
        npu_cycles = sum(partition_cycles(model))
        per_counter = pmu_counters(model.arch.layers, sizes, npu_cycles, self.board.npu.num_macs,
                                   self.board.npu.family)  # fmt: skip
        measure = Measure(start=self.cycles, counters=[0] * len(PMU_EVENTS[self.board.npu.family]))
        status = OK
        done = 0
        for n in range(total):
            self.board.check_interrupt()
            status = self._execute(loaded, n, cost, npu_cycles, per_counter, measure, calls)
            if status != OK:
                break
            done += 1
        self._stop_measurements(done, measure)
        if status != OK:
            self.check("execute_check", "status == Error::Ok",
                       f"Execution of method forward failed with status "
                       f"0x{status:x}")  # fmt: skip
        self.log("I", "finished", f"{total} inferences finished")
        self._print_outputs(loaded, output_base)
        self.log("I", "model_run", "Model run: 1")
        return True

    def _mismatch(self, model: CompiledModel) -> bool:
        npu = self.board.npu
        return (model.family, model.num_macs) != (npu.family, npu.num_macs)

    def _execute(self, loaded: _Loaded, n: int, cost: InferenceCost, npu_cycles: int,
                 per_counter: list[int], measure: Measure, calls: int = 1) -> int:  # fmt: skip
        """One ``method->execute()`` making ``calls`` delegate calls (their NPU cycles summed in
        ``npu_cycles``; the CPU cost of the backend is charged as for one call): returns the Error
        it returns."""
        model = loaded.model
        start = self.cycles
        before = cost.total - cost.backend
        self.spend(before // 2)
        backend_start = self.cycles
        if self._mismatch(model):
            log2 = int(math.log2(model.num_macs))
            self.out(f"E: No driver for product: {PRODUCT[model.family]}, log2_macs: {log2} "
                     "found!\n")
            self.log("E", "reserve_failed", "ethosu_reserve_driver_ex failed")
            self.spend(COSTS.backend_fixed // 2)
            measure.backend += self.cycles - backend_start
            self.log("E", "call_delegate_failed",
                     f"CALL_DELEGATE execute failed at instruction 0: 0x{INVALID_STATE:x}")
            return INVALID_STATE
        if self.faults.hardfault is not None and n >= self.faults.hardfault:
            self.spend(COSTS.backend_fixed // 2)
            # past the end of the pool
            raise _HardFault(bus=True, address=METHOD_POOL + METHOD_POOL_BYTES + 0x40)
        setup = (cost.backend - cost.wait) // 2
        self.spend(setup)  # handles, scratch, copy in, cache clean, driver reserve and invoke
        if self.faults.hang is not None and n >= self.faults.hang:
            # the NPU never raises its interrupt: ethosu_semaphore_take waits forever
            self.board.hang()
        wait_start = self.cycles
        output = run_model(model.arch, model.quant, loaded.x)
        self.spend(cost.wait, npu_cycles)
        measure.wait += self.cycles - wait_start
        measure.delegations += calls
        measure.npu += npu_cycles
        measure.counters = [a + b for a, b in zip(measure.counters, per_counter, strict=True)]
        self.spend(cost.backend - cost.wait - setup)  # cache invalidate, copy out, release
        backend_end = self.cycles
        measure.backend += backend_end - backend_start
        self.spend(before - before // 2)
        self.output = output
        if self.artifact.etdump:
            offset = self.debug_used
            self.debug_used += _align(model.sizes.output, DEBUG_ALIGNMENT)
            self.blocks.append(RunBlock("Execute", (
                ProfileEvent(start, self.cycles, name="Method::execute"),
                ProfileEvent(backend_start - 40, backend_end + 20, name="DELEGATE_CALL",
                             instruction_id=0),
                ProfileEvent(backend_start, backend_end, instruction_id=0,
                             delegate_debug_id_str="EthosUBackend::execute()"),
                DebugTensor((1, *model.arch.output_shape), offset, instruction_id=0),
            )))  # fmt: skip
        return OK

    def _stop_measurements(self, n: int, m: Measure) -> None:
        """StopMeasurements(n): the perf block, printed once per run."""
        for key, message in perf_block(n, self.cycles - m.start, m, self.board.npu.family):
            self.log("I", key, message)

    # -- after the loop ----------------------------------------------------------------------------

    def _print_outputs(self, loaded: _Loaded, output_base: str | None) -> None:
        self.log("I", "outputs", "1 outputs: ")
        values = self.output if self.output is not None else np.zeros(
            loaded.model.arch.output_shape, np.int8)
        flat = values.astype(np.int8).reshape(-1)
        if self.artifact.semihosting:
            name = EtLog.cut(f"{output_base}-0.bin")[:254]  # snprintf(out_filename, 255, ...)
            self.log("I", "writing_output", f"Writing output to file: {name}")
            try:
                self.board.semihost_write_file(name, flat.tobytes())
            except OSError as exc:
                code = EACCES if isinstance(exc, PermissionError) else ENOENT
                self.log("E", "output_open_failed",
                         f"Could not open output file {name} (errno: {code})")
        elif self.artifact.log_dump_output:
            self.out("".join(f"Output[0][{j}]: (char) {int(v)}\n" for j, v in enumerate(flat)))

    def _log_mem_status(self, loaded: _Loaded) -> None:
        a = self.artifact
        if a.pte_addr is not None:
            note = " (pte size unknown when not baked into elf)"
            self.log("I", "mem_program_addr",
                     f"model_pte_program_size:     {loaded.size} bytes.{note}")
            self.log("I", "mem_loaded_addr",
                     f"model_pte_loaded_size:      {loaded.size} bytes.{note}")
        else:
            self.log("I", "mem_program", f"model_pte_program_size:     {loaded.size} bytes.")
            self.log("I", "mem_loaded", f"model_pte_loaded_size:      {loaded.size} bytes.")
        if a.semihosting:
            used, pool = self.file_pool_used, METHOD_POOL_BYTES
            self.log("I", "mem_input_files",
                     f"input_file_allocator_used: {used} / {pool} free: {pool - used} "
                     f"( used: {100 * used // pool} % ) ")  # fmt: skip
        inputs = _align(16)  # allocateList<EValue>(num_inputs)
        used = (
            loaded.planned + loaded.method_loaded + inputs + (DEBUG_BUFFER_BYTES if a.etdump else 0)
        )
        pool = METHOD_POOL_BYTES
        self.log("I", "mem_method_used",
                 f"method_allocator_used:     {used} / {pool}  free: {pool - used} "
                 f"( used: {100 * used // pool} % ) ")  # fmt: skip
        self.log("I", "mem_method_planned", f"method_allocator_planned:  {loaded.planned} bytes")
        self.log("I", "mem_method_loaded",
                 f"method_allocator_loaded:   {loaded.method_loaded} bytes")
        self.log("I", "mem_method_input", f"method_allocator_input:    {inputs} bytes")
        self.log("I", "mem_method_executor", "method_allocator_executor: 0 bytes")
        temp = TEMP_POOL_BYTES[fast_scratch_bytes(a.memory_mode) > 0]
        self.log("I", "mem_temp", f"temp_allocator:            {temp}")
        if a.etdump:
            used, pool = self.debug_used, DEBUG_BUFFER_BYTES
            self.log("I", "mem_etdump",
                     f"ETDump_outputs_buffer:     {used} / {pool} free: {pool - used} "
                     f"( used: {100 * used // pool} % ) ")  # fmt: skip

    def _debug_buffer(self, loaded: _Loaded) -> bytes:
        chunk = _align(loaded.model.sizes.output, DEBUG_ALIGNMENT)
        one = (self.output.astype(np.int8).tobytes() if self.output is not None
               else b"").ljust(chunk, b"\0")
        return one * (self.debug_used // chunk) if chunk else b""

    def _write_etdump(self, loaded: _Loaded) -> None:
        if not self.artifact.etdump:
            return
        etdump = encode_etdump(self.blocks)
        debug = self._debug_buffer(loaded)
        if self.artifact.semihosting:
            if debug:
                self.log("I", "sh_etdump_debug",
                         "Writing etdump debug_buffer to file: debug_buffer.bin")
                self._write_host_file("debug_buffer.bin", debug)
            self.log("I", "sh_etdump", "Writing etdump to file: etdump.bin")
            self._write_host_file("etdump.bin", etdump)
            return
        encoded = base64.b64encode(etdump).decode()
        encoded_debug = base64.b64encode(debug).decode()
        self.log("I", "base64_size",
                 f"[base64] buffer size: {max(len(encoded), len(encoded_debug))}")
        for line in etdump_script(encoded, encoded_debug):
            self.out(line)

    def _write_host_file(self, name: str, data: bytes) -> None:
        try:
            self.board.semihost_write_file(name, data)
        except OSError:
            self.board.note(f"cannot write {name} in the semihosting directory")


def run_application(board: BoardContext, artifact: BareMetalArtifact) -> None:
    """Run the program from reset until it ends: returns when it spins in ``_exit`` (the model keeps
    running); ``board.semihost_exit`` and a stopping board raise out of it."""
    if artifact.platform != board.platform:
        board.note(f"the application is linked for {artifact.platform} ({artifact.target}), not "
                   f"this {board.platform}: its vector table and memory map do not fit, so the CPU "
                   "locks up with no output")  # fmt: skip
        board.hang()
    if artifact.semihosting and not board.semihosting_enabled:
        board.note("the application is a semihosting build but semihosting is off "
                   "(cpu0.semihosting-enable=0): its first semihosting call is a fault it cannot "
                   "report, so the CPU locks up with no output")
        board.hang()
    program = _Program(board, artifact, application_faults(board.knobs, artifact))
    try:
        try:
            status = program.main()
        except _HardFault as fault:
            program.hard_fault(fault)
            status = 1
        program.exit(status)
    except Exited:
        return
