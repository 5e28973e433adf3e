"""One simulated model instance: terminals, boot, console, sshd, kernel noise and faults on one
event loop.

Threads: the event loop (asyncio; sockets, boot pacing, noise, watchers, asyncssh) runs in the main
thread; the console runs in its own thread and ssh exec sessions in a pool, because guest programs
run synchronously. Every cross-thread hand-off goes through ``call_soon_threadsafe`` or a
thread-safe queue/event; nothing polls busily.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import random
import signal
import socket
import sys
from typing import TYPE_CHECKING, BinaryIO

from fvp_harness.sim.clock import SimClock
from fvp_harness.sim.corstone1000 import boot as bootmod
from fvp_harness.sim.corstone1000 import faults
from fvp_harness.sim.corstone1000.console import Console
from fvp_harness.sim.corstone1000.forwarding import listening_socket, parse_user_net_ports
from fvp_harness.sim.corstone1000.machine import Machine
from fvp_harness.sim.corstone1000.releases import image_of
from fvp_harness.sim.corstone1000.terminal import TerminalServer
from fvp_harness.sim.fvp.cmdline import MODEL_NAME, Options
from fvp_harness.sim.fvp.lifecycle import (
    EXIT_STATUS,
    PRINTS_STAT,
    STOP_TEXT,
    StopRequests,
    stat_block,
    watch_limits,
    watch_parent,
)
from fvp_harness.sim.fvp.params import MMC_CARDS, NETWORK_DEVICES, TERMINALS
from fvp_harness.sim.guest.fs import GuestFS
from fvp_harness.sim.knobs import Knobs
from fvp_harness.sim.workloads.programs import preload as preload_workloads
from fvp_harness.sim.workloads.programs import register as register_workloads

if TYPE_CHECKING:  # the sshd loads asyncssh: imported while the boot plays (``_start_sshd``)
    from fvp_harness.sim.corstone1000.sshd import GuestSSHServer

__all__ = ["SimulatedModel"]


class SimulatedModel(StopRequests):
    """Build with the parsed command line and knobs; ``run()`` returns the exit status (or ends the
    process)."""

    def __init__(self, opts: Options, knobs: Knobs, out: BinaryIO | None = None) -> None:
        self.opts = opts
        self.knobs = knobs
        self.out = out or sys.stdout.buffer
        self.rng = random.Random(knobs.seed)
        params = opts.params
        self.clock = SimClock(int(params["host.cpu0.clock_hz"]), knobs.speed, knobs.idle_ratio)
        release = image_of(knobs)  # the release's row with the kas options the knobs add
        self.dropbear = release.dropbear
        self.fs = GuestFS(release.hostname, devices=[release.npu_device], os_version=release.poky,
                          files=[release.loader,
                                 *(["/usr/sbin/dropbear"] if self.dropbear else [])])
        self.machine = Machine(self.fs, self.clock, dict(params), knobs)
        register_workloads()  # the guest executes the emulated runners
        self.console = Console(self.machine,
                               login_fail_delay=min(1.0, max(0.2, knobs.boot_seconds / 2)))
        self.terminals: dict[str, TerminalServer] = {}
        self.sshd: GuestSSHServer | None = None
        self._sshd_start: asyncio.Task[None] | None = None
        self._ssh_sockets: dict[int, socket.socket] = {}
        """Forwarded ssh ports listened on and not yet handed to the sshd."""
        self._stop: asyncio.Future[str] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._files: list[BinaryIO] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._matching_commands = 0

    # -- output on the model's stdout --------------------------------------------------------------

    def say(self, text: str) -> None:
        try:
            self.out.write(text.encode())
            self.out.flush()
        except (OSError, ValueError):
            pass  # nobody reads our stdout any more; keep running until told to stop

    # -- stopping ----------------------------------------------------------------------------------

            self.machine.stopping.set()

    def crash(self) -> None:
        """Die now, with no stop text and no statistics, but remove the guest's temp files (any
        thread)."""
        self.fs.cleanup()
        with contextlib.suppress(Exception):
            self.out.flush()
        os._exit(EXIT_STATUS["crash"])

    # -- running -----------------------------------------------------------------------------------

    async def run(self) -> int:
        """Serve until a stop reason arrives; returns the exit status. SIGTERM ends the process by
        that signal."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._stop = loop.create_future()
        for sig, reason in ((signal.SIGINT, "user"), (signal.SIGTERM, "term"),
                            (signal.SIGHUP, "term")):
            loop.add_signal_handler(sig, self._set_stop, reason)
        self.machine.request_stop = self.request_stop
        self.machine.crash = self.crash
        try:
            await self._start_terminals()
            await self._start_sshd()
            self.console.on_command = self._on_command
            self.console.start()
            self._tasks = [
                asyncio.create_task(self._boot(), name="boot"),
                asyncio.create_task(watch_limits(self.clock, self.opts.timelimit,
                                                 self.opts.simlimit,
                                                 self._set_stop), name="limits"),
                asyncio.create_task(watch_parent(self._set_stop, self.opts.parent_pid),
                                    name="parent"),
            ]
            if self.knobs.kernel_noise_rate > 0:
                self._tasks.append(asyncio.create_task(self._noise(), name="noise"))
            # the runners load while the boot waits (a guest that runs one would load them in its
            # first unit)
            self._tasks.append(
                asyncio.create_task(asyncio.to_thread(preload_workloads), name="preload")
            )
            reason = await self._stop
        except OSError as exc:
            self.say(f"Error: {exc}\n")
            reason = "error"
        self.machine.stopping.set()
        await self._shutdown()
        if reason in STOP_TEXT:
            self.say(STOP_TEXT[reason])
        if self.opts.stat and reason in PRINTS_STAT:
            self.say(stat_block(MODEL_NAME, self.clock))
        if reason == "term":
            return -int(signal.SIGTERM)
        return EXIT_STATUS.get(reason, 1)

    async def _shutdown(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for term in self.terminals.values():
            await term.close()
        if self._sshd_start is not None:
            self._sshd_start.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._sshd_start
        for sock in self._ssh_sockets.values():  # never handed to the sshd
            sock.close()
        if self.sshd is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.sshd.close(), 3)
        for fh in self._files:
            with contextlib.suppress(OSError):
                fh.close()
        self.fs.cleanup()

    async def _start_terminals(self) -> None:
        params = self.opts.params
        uart_files = {"host_terminal_0": "host.uart0.out_file",
                      "host_terminal_1": "host.uart1.out_file",
                      "secenc_terminal": "se.uart.out_file"}
        for term in TERMINALS:
            p = term.prefix
            is_console = term.name == "host_terminal_0"
            copy_to = self._open_copy(params[uart_files[term.name]])
            server = TerminalServer(
                term.name,
                mode=params[f"{p}.mode"],
                backlog_bytes=self.knobs.backlog_bytes,
                rate=self.knobs.fault_slow_console if is_console else 0.0,
                garbage=self.knobs.fault_garbage if is_console else 0.0,
                rng=self.rng,
                copy_to=copy_to,
                on_input=self.console.feed if is_console else None,
                uart_rate=self.knobs.uart_rate if is_console else 0.0,
            )
            start = int(params[f"{p}.start_port"])
            busy = range(start, start + self.knobs.fault_busy_ports)
            port = await server.start(start, busy)
            self.terminals[term.name] = server
            if params[f"{p}.quiet"] != "1":
                self.say(f"{term.name}: Listening for serial connection on port {port}\n")
        console = self.terminals["host_terminal_0"]
        self.machine.console_write = console.write
        self.machine.console_inject = console.inject
        self.machine.drop_console = lambda: self.request_drop()

    def request_drop(self) -> None:
        """Console-drop fault (any thread)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self.terminals["host_terminal_0"].drop)

    def _open_copy(self, target: str) -> BinaryIO | None:
        if not target:
            return None
        if target == "-":
            return self.out
        try:
            fh = open(target, "ab")  # noqa: SIM115  (kept open for the model's life, closed in _shutdown)
        except OSError as exc:
            self.say(f"Warning: cannot open UART output file '{target}': {exc.strerror}\n")
            return None
        self._files.append(fh)
        return fh

    def _user_networks(self) -> list[str]:
        """The ``userNetPorts`` values of the network devices that are enabled with user-mode
        networking."""
        params = self.opts.params
        return [params[dev.ports] for dev in NETWORK_DEVICES
                if params[dev.enabled] == "1" and params[dev.user_networking] == "1"]

    async def _start_sshd(self) -> None:
        """Listen on every port forwarded to guest port 22 now (as the real model does from its
        start) and start the sshd on them while the boot plays: importing asyncssh takes about half
        a second, which the model's start (up to "Listening for serial connection") no longer waits
        for. A client that connects meanwhile waits in the backlog and then meets the sshd as it is
        then (closed at once until the guest booted)."""
        networks = self._user_networks()
        if not networks or not self.dropbear:
            return  # no network, or an image without Dropbear: the forwarded port reaches nothing
        for ports in networks:
            for host_port, guest_port in parse_user_net_ports(ports):
                if guest_port != 22:
                    # no other guest service exists; the real model forwards to nothing there either
                    continue
                if host_port in self._ssh_sockets:
                    # the same host port on both devices (meta-arm's 2222=22): one listener serves
                    # it
                    continue
                try:
                    self._ssh_sockets[host_port] = listening_socket(host_port)
                except OSError as exc:
                    sys.stderr.write("Warning: user-mode networking cannot forward host port "
                                     f"{host_port}: {exc.strerror or exc}\n")
        if self._ssh_sockets:
            self._sshd_start = asyncio.create_task(self._serve_ssh(), name="sshd")

    async def _serve_ssh(self) -> None:
        """Load the sshd (asyncssh) on a thread, so the boot's lines keep their pace, and serve
        every socket."""
        module = await asyncio.to_thread(importlib.import_module,
                                         "fvp_harness.sim.corstone1000.sshd")
        self.sshd = sshd = module.GuestSSHServer(self.machine, refuse=self.knobs.fault_refuse_ssh)
        for port, sock in list(self._ssh_sockets.items()):
            try:
                await sshd.listen(port, sock=sock)
            except OSError as exc:
                sys.stderr.write(f"Warning: user-mode networking cannot forward host port {port}: "
                                 f"{exc.strerror or exc}\n")
                continue
            del self._ssh_sockets[port]

    def _card_bytes(self) -> int | None:
        """Size of the first MMC slot's image, or None when it has none; warn about images that
        cannot be opened (the slot stays empty, as meta-arm's ``invalid.dat`` expects)."""
        size = None
        for card in MMC_CARDS:
            path = self.opts.params[f"{card}.p_mmc_file"]
            if not path:
                continue
            try:
                bytes_ = os.path.getsize(path) if os.path.isfile(path) else None
            except OSError:
                bytes_ = None
            if bytes_ is None:
                self.say(f"Warning: {card}: cannot open MMC image '{path}'; the slot is empty.\n")
            elif card == MMC_CARDS[0]:
                size = bytes_
        return size

    # -- boot, noise, faults -----------------------------------------------------------------------

    async def _boot(self) -> None:
        steps = bootmod.boot_steps(self.knobs, mmc_bytes=self._card_bytes(),
                                   num_macs=self.machine.npu_macs,
                                   ssh=bool(self._user_networks()) and self.dropbear)
        plan = faults.boot_plan(self.knobs, steps)

        async def on_stage(stage: str) -> bool:
            if stage == "kernel":
                self.machine.kernel_t0 = self.clock.now()
            return True

        def write(terminal: str, text: str) -> None:
            self.terminals[terminal].write(text.encode("utf-8", "surrogateescape"))

        await bootmod.play(
            plan.steps,
            write=write,
            advance=lambda s: self.clock.advance(s, pace=False),
            kernel_now=self.machine.kernel_time,
            wall_seconds=self.knobs.boot_seconds * plan.fraction,
            sim_seconds=self.knobs.boot_sim_seconds * plan.fraction,
            on_stage=on_stage,
            record_kernel=self.machine.kernel_log.append,
        )
        if plan.ending == "panic":
            self.console.panic()
            return
        if plan.ending == "crash":
            self.crash()
        if plan.ending == "hang":
            return  # the boot stops here; the model keeps running until it is stopped
        self.clock.start_idle()
        self.machine.booted.set()

    async def _noise(self) -> None:
        rate = self.knobs.kernel_noise_rate
        while True:
            await asyncio.sleep(self.rng.expovariate(rate))
            if self.machine.kernel_t0 and not self.machine.halted.is_set():
                self.machine.printk(self.rng.choice(bootmod.KERNEL_NOISE), level=4, inject=True)

    def _on_command(self, n: int, text: str) -> None:
        """Console command faults, checked as the Nth command line starts (console thread); with
        ``fault_count_matching`` N counts only the lines that contain its text."""
        k = self.knobs
        if k.fault_count_matching is not None:
            if k.fault_count_matching not in text:
                return
            self._matching_commands += 1
            n = self._matching_commands
        if k.fault_crash == n:
            self.crash()
        if k.fault_panic == n:
            self.console.panic()
        if k.fault_console_drop == n:
            self.request_drop()
