"""The bare-metal platforms: a simulated FVP_Corstone_SSE-300_Ethos-U55 or FVP_Corstone_SSE-320
running one application - an emulated ``arm_executor_runner`` (``baremetal/runner.py``) - with its
UART on stdout.

How it is launched, what it prints, how it stops and its time: docs/simulator.md, "Bare-metal
platforms".
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import traceback
from collections.abc import Mapping
from typing import BinaryIO, NoReturn

from fvp_harness.sim.baremetal.artifact import (
    BareMetalArtifact,
    decode_artifact,
    is_baremetal_artifact,
)
from fvp_harness.sim.baremetal.runner import UNMAPPED, application_faults, run_application
from fvp_harness.sim.clock import SimClock
from fvp_harness.sim.fvp.cmdline import Options
from fvp_harness.sim.fvp.lifecycle import StopRequests, stat_block, watch_limits, watch_parent
from fvp_harness.sim.fvp.params import BOARDS
from fvp_harness.sim.guest.programs import ProgramInterrupted
from fvp_harness.sim.knobs import Knobs
from fvp_harness.sim.networks.accelerator import Accelerator, parse_accelerator
from fvp_harness.sim.networks.modelfile import ModelFileError

__all__ = ["CMD_LINE_LIMIT", "STOP_TEXT", "BareMetalModel", "SetupError", "run_baremetal"]

_SYSTEMC = "\nInfo: /OSCI/SystemC: Simulation stopped by user.\n"
STOP_TEXT: dict[str, str] = {
    "eot": _SYSTEMC,
    "tag": _SYSTEMC,
    "exit": _SYSTEMC,
    "user": "Stopping simulation...\n" + _SYSTEMC,
    "timelimit": "\nInfo: Simulation is stopping. Reason: CPU time has been exceeded.\n" + _SYSTEMC,
    "simlimit": "\nInfo: Simulation is stopping. Reason: Simulated time has been exceeded.\n"
    + _SYSTEMC,
}
"""What the model prints on stdout for each polite way it stops (all followed by ``--stat``, exit
status 0)."""
EXIT_STATUS = {"parent": 1, "error": 1}
CMD_LINE_LIMIT = 256
"""The semihosting command line is cut after this many characters (runner_utils.py refuses longer
ones)."""
NPU_BANNER = "\n    Ethos-U rev sim --- simulated by fvp-harness (not an Arm product)\n\n"
HANG_STEP = 0.05
"""Wall seconds between checks while the CPU waits forever (hang fault, lock-up)."""


class SetupError(Exception):
    """The model cannot start: the message goes to stderr and the exit status is 1."""


class _SemihostingExit(ProgramInterrupted):
    """SYS_EXIT: the application ended the simulation."""


class BareMetalModel(StopRequests):
    """One bare-metal model instance; also the ``BoardContext`` its application runs against."""

    def __init__(self, opts: Options, knobs: Knobs, out: BinaryIO | None = None,
                 err: BinaryIO | None = None) -> None:
        self.opts, self.settings = opts, knobs
        self.knobs: Mapping[str, str] = knobs.raw  # what the application sees (BoardContext.knobs)
        self.spec = BOARDS[opts.platform]
        self.out = out or sys.stdout.buffer
        self.err = err or sys.stderr.buffer
        params = opts.params
        self.platform = self.spec.name
        self.npu: Accelerator = parse_accelerator(
            f"{self.spec.npu_family}-{params[f'{self.spec.ethosu}.num_macs']}")
        self.semihosting_enabled = params[f"{self.spec.cpu}.semihosting-enable"] == "1"
        self.cmd_line = params[f"{self.spec.cpu}.semihosting-cmd_line"][:CMD_LINE_LIMIT]
        self.cwd = params[f"{self.spec.cpu}.semihosting-cwd"] or os.getcwd()
        self.clock = SimClock(self.spec.cpu_clock_hz, knobs.speed, knobs.idle_ratio)
        self.stopping = threading.Event()
        self._lock = threading.Lock()  # one writer at a time on stdout; guards _halted
        self._halted = False
        self._eot = params[f"{self.spec.uart0}.shutdown_on_eot"] == "1"
        self._tag = params[f"{self.spec.uart0}.shutdown_tag"]
        self._recent = ""  # the UART's last characters, to find a shutdown_tag across writes
        self._uart_file: BinaryIO | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Future[str] | None = None
        self.artifact: BareMetalArtifact | None = None
        self.memory_map: list[tuple[int, bytes]] = []

    # -- set-up (before anything is printed) -------------------------------------------------------

    def setup(self) -> None:
        """Read the application and the data files; SetupError for anything the model refuses before
        starting."""
        apps = [text.split("=", 1)[1] if "=" in text else text for text in self.opts.applications]
        if apps:
            path = apps[0]
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError:
                raise SetupError(f"Error: -a: cannot open file '{path}'.") from None
            if not is_baremetal_artifact(data):
                raise SetupError(f"fvp-sim: {path} is not an emulated arm_executor_runner: the "
                                 "simulator runs only the artifacts of 'fvp-harness sim "
                                 "baremetal-runner', not a real ELF")  # fmt: skip
            try:
                self.artifact = decode_artifact(data)
                application_faults(self.knobs, self.artifact)
            except ModelFileError as exc:
                raise SetupError(f"fvp-sim: {path}: {exc}") from None
            except ValueError as exc:
                raise SetupError(f"Error: knob runner_fault: {exc}") from None
        for text in self.opts.data:
            spec = text.split("=", 1)[1] if "=" in text else text
            path, _, address = spec.rpartition("@")
            try:
                where = int(address, 0)
                with open(path, "rb") as fh:
                    self.memory_map.append((where, fh.read()))
            except ValueError:
                raise SetupError(f"Error: --data {text}: '{address}' is not an address.") from None
            except OSError:
                raise SetupError(f"Error: --data: cannot open file '{path}'.") from None
        target = self.opts.params[f"{self.spec.uart0}.out_file"]
        if target and target != "-":
            try:
                self._uart_file = open(target, "wb")  # noqa: SIM115  (closed when the model ends)
            except OSError as exc:
                raise SetupError(
                    f"Error: {self.spec.uart0}.out_file: cannot open '{target}': {exc.strerror}."
                ) from None

    # -- stdout ------------------------------------------------------------------------------------

    def _write(self, data: bytes, to: BinaryIO | None = None) -> None:
        # nobody reads our stdout any more: keep going
        with contextlib.suppress(OSError, ValueError):
            target = self.out if to is None else to
            target.write(data)
            target.flush()

    def say(self, text: str) -> None:
        """The model's own lines (banners, stop text, --stat)."""
        with self._lock:
            self._write(text.encode())

    # -- BoardContext ------------------------------------------------------------------------------

    def uart(self, text: str) -> None:
        data = text.replace("\n", "\r\n").encode("utf-8", "surrogateescape")
        stop = ""
        with self._lock:
            if self._halted:
                raise ProgramInterrupted
            if self._eot and b"\x04" in data:
                eot = data.index(b"\x04")
                newline = data.find(b"\n", eot)
                data = data[: newline + 1 if newline >= 0 else eot + 1]
                stop = "eot"
            if self._tag and not stop:
                seen = self._recent + data.decode("utf-8", "surrogateescape")
                at = seen.find(self._tag)
                if at >= 0:
                    keep = at + len(self._tag) - len(self._recent)
                    data = data.decode("utf-8", "surrogateescape")[:keep].encode(
                        "utf-8", "surrogateescape"
                    )
                    stop = "tag"
                self._recent = seen[-len(self._tag) :]
            target = self._uart_file if self._uart_file is not None else self.out
            if (self._uart_file is not None or
                self.opts.params[f"{self.spec.uart0}.out_file"] == "-"):
                self._write(data, target)
            if stop:
                self._halted = True
        if stop:
            self.request_stop(stop)
            raise ProgramInterrupted

    def semihost_write(self, text: str) -> None:
        with self._lock:
            if self._halted:
                raise ProgramInterrupted
            self._write(text.encode("utf-8", "surrogateescape"))

    def _host_path(self, path: str) -> str:
        return path if os.path.isabs(path) else os.path.join(self.cwd, path)

    def semihost_read(self, path: str) -> bytes:
        with open(self._host_path(path), "rb") as fh:
            return fh.read()

    def semihost_write_file(self, path: str, data: bytes) -> None:
        with open(self._host_path(path), "wb") as fh:
            fh.write(data)

    def semihost_exit(self, code: int) -> NoReturn:
        with self._lock:
            self._halted = True
        self.request_stop("exit")
        raise _SemihostingExit(code)

    def memory(self, address: int, size: int) -> bytes:
        for start, data in self.memory_map:
            if start <= address < start + len(data):
                return data[address - start : address - start + size]
        return UNMAPPED * 16

    def advance(self, instructions: int, npu_cycles: int = 0) -> None:
        self.check_interrupt()
        self.clock.advance((instructions + npu_cycles) / self.spec.cpu_clock_hz,
                           max(1, instructions))

    def hang(self) -> NoReturn:
        while not self.stopping.wait(HANG_STEP):
            # WFE: time passes, nothing retires
            self.clock.advance(HANG_STEP * self.settings.idle_ratio, 1, pace=False)
        raise ProgramInterrupted

    def check_interrupt(self) -> None:
        if self.stopping.is_set():
            raise ProgramInterrupted

    def note(self, text: str) -> None:
        self._write(f"fvp-sim: {text}\n".encode(), self.err)

    # -- running -----------------------------------------------------------------------------------


    def _application(self) -> None:
        """The CPU (its own thread: the application runs synchronously, as guest programs do)."""
        try:
            if self.artifact is None:
                self.hang()  # no application: nothing runs, nothing is printed
            with self.clock.working():
                run_application(self, self.artifact)
        except ProgramInterrupted:
            pass
        except Exception:
            self._write(("fvp-sim: the emulated application failed:\n"
                         + traceback.format_exc()).encode(), self.err)
            self.request_stop("error")
        finally:
            # the CPU spins in _exit (or has stopped): simulated time goes on
            self.clock.start_idle()

    async def run(self) -> int:
        """Run until a stop reason arrives; returns the exit status (negative: end by that
        signal)."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._stop = loop.create_future()
        for sig, reason in ((signal.SIGINT, "user"), (signal.SIGTERM, "term"),
                            (signal.SIGHUP, "term")):
            loop.add_signal_handler(sig, self._set_stop, reason)
        params = self.opts.params
        for terminal in self.spec.terminals:
            prefix = f"{self.spec.board}.{terminal}"
            if params[f"{prefix}.quiet"] != "1":
                self.say(f"{terminal}: Listening for serial connection on port "
                         f"{params[f'{prefix}.start_port']}\n")
        self.say(NPU_BANNER)
        tasks = [
            asyncio.create_task(watch_limits(self.clock, self.opts.timelimit, self.opts.simlimit,
                                             self._set_stop)),
            asyncio.create_task(watch_parent(self._set_stop, self.opts.parent_pid)),
        ]
        if "boot_seconds" in self.knobs and self.settings.boot_seconds > 0:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._stop), self.settings.boot_seconds)
        if not self._stop.done():
            threading.Thread(target=self._application, name="cortex-m", daemon=True).start()
        reason = await self._stop
        with self._lock:
            self._halted = True
        self.stopping.set()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._uart_file is not None:
            with contextlib.suppress(OSError):
                self._uart_file.close()
        if reason == "term":
            return -int(signal.SIGTERM)
        if reason in STOP_TEXT:
            with self._lock:
                self._write(STOP_TEXT[reason].encode())
                if self.opts.stat:
                    self._write(stat_block(self.opts.model_name, self.clock,
                                           cpu=self.spec.cpu).encode())
        return EXIT_STATUS.get(reason, 0)


def run_baremetal(opts: Options, knobs: Knobs) -> int:
    """The bare-metal model from parsed options: its exit status (negative: the signal that ends the
    process)."""
    model = BareMetalModel(opts, knobs)
    try:
        model.setup()
    except SetupError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    try:
        return asyncio.run(model.run())
    except KeyboardInterrupt:  # SIGINT before the loop's handler was installed
        return 0
