"""``FvpTarget``: one booted, logged-in model instance (simulated or real) behind the ``Target``
protocol.

Why it is shaped so: docs/architecture.md, "Inside `targets/`"."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import shlex
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Literal

from fvp_harness.errors import ConfigurationError, DeployError, InfrastructureError, SshUnavailable
from fvp_harness.profiles import Profile
from fvp_harness.targets.base import CommandResult, FvpSettings
from fvp_harness.targets.console import BootWatch, Console
from fvp_harness.targets.deadline import Deadline, TimeoutBudget
from fvp_harness.targets.fvp import FvpProcess, LaunchSpec, build_launch, query_version
from fvp_harness.targets.ssh import SshTransport
from fvp_harness.targets.terminal import Terminal
from fvp_harness.targets.text import KERNEL_LINE
from fvp_harness.targets.transfer import (
    AUTO_SSH_TIMEOUT_S,
    guest_sha256,
    upload_console,
    upload_ssh,
)

__all__ = ["FvpTarget"]

log = logging.getLogger(__name__)

SSH_PORT_TURN_S = 3.0
"""With several forwarded SSH ports, how long each is tried before the next one gets its turn."""


class FvpTarget:
    """A model instance (simulated or real) behind the ``Target`` protocol; it also
    ``StreamsCommands``, ``CopiesOverSsh`` and ``NamesPhases``.

    ``timeout`` arguments are in scenario seconds and are multiplied by the session's scale like
    every configured timeout. ``metadata`` holds argv, ports, version banner, boot and login
    seconds, and after ``close`` the ``--stat`` block. ``transfer`` is how ``put`` and ``get`` move
    files: ``ssh`` through the forwarded port, ``console`` (base64 typed into the shell; ``get``
    then reads text files only), or ``auto``: ssh when the guest's sshd answers the first copy
    within ``AUTO_SSH_TIMEOUT_S``, else the console from then on (``transport`` says which, and
    why), as a run's ``deploy.method: auto`` chooses (``run.deploy``).
    """

    def __init__(
        self,
        fvp: FvpSettings,
        profile: Profile,
        *,
        log_dir: Path | str,
        name: str = "s0",
        timeout_scale: float = 1.0,
        binary: str | None = None,
        base_dir: Path | None = None,
        quiet_kernel: bool = True,
        ssh_port: int | None = None,
        kernel_line: str | None = "default",
        transfer: Literal["console", "ssh", "auto"] = "console",
        redact: Sequence[str] = (),
    ) -> None:
        self.profile = profile
        self.name = name
        self.log_dir = Path(log_dir)
        self.metadata: dict[str, object] = {}
        self.fvp = fvp
        self.transfer = transfer
        self.transport: str | None = transfer if transfer != "auto" else None
        """How ``put``/``get`` move files: ``ssh``, ``console``, or with ``auto`` ``console (<why
        not ssh>)``; None while ``auto`` has not copied yet."""
        self.redact = tuple(redact)
        """Secret texts the terminal logs show as ``***`` (``run.instances`` passes the
        scenario's)."""
        self.budget = TimeoutBudget.from_config(self.fvp.timeouts,
                                                scenario_scale=self.fvp.timeout_scale,
                                                cli_scale=timeout_scale)
        self.binary = binary
        self.base_dir = base_dir
        self.quiet_kernel = quiet_kernel
        self.ssh_port_request = ssh_port
        self._kernel_line = kernel_line
        self.spec: LaunchSpec | None = None
        self.process: FvpProcess | None = None
        self.terminals: dict[str, Terminal] = {}
        self.console: Console | None = None
        self.watch: BootWatch | None = None
        self._ssh: SshTransport | None = None
        self._session: Deadline | None = None
        self._lock = threading.RLock()
        self._version_thread: threading.Thread | None = None
        self._version_cancel = threading.Event()
        self.closed = False

    # -- lifecycle ---------------------------------------------------------------------------------

    def __enter__(self) -> FvpTarget:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Launch, find the ports, connect every terminal, wait for the login prompt, log in,
        prepare the shell."""
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def _open(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._session = self.budget.start("session")
        launched = time.monotonic()
        self.spec = spec = build_launch(self.profile, self.fvp, ssh_port=self.ssh_port_request,
                                        binary=self.binary, base_dir=self.base_dir)
        self.metadata.update(argv=spec.argv, simulated=spec.simulated, ssh_port=spec.ssh_port,
                             profile=self.profile.name, timeout_scale=self.budget.scale,
                             sim_knobs={k: v
                                        for k, v in spec.env.items() if k.startswith("FVP_SIM_")})
        version_thread = threading.Thread(target=self._read_version,
                                          args=(spec.argv[: 3 if spec.simulated else 1],),
                                          name="fvp-version", daemon=True)
        version_thread.start()
        self._version_thread = version_thread
        self.process = process = FvpProcess(spec, self.profile, log_path=self.log_dir / "fvp.log")
        process.start()
        self.metadata["pid"] = process.pid
        boot = self.budget.start("boot", parent=self._session)
        ports = process.wait_for_ports(boot, list(self.profile.terminals))
        self.metadata["ports"] = ports
        self.watch = watch = BootWatch(self.profile)
        for term_name, port in ports.items():
            terminal = Terminal(term_name, port, log_path=self.log_dir / f"{term_name}.log",
                                mode=self.profile.terminal_mode, redact=self.redact)
            watch.attach(terminal)
            terminal.connect(boot, alive=process.alive)
            self.terminals[term_name] = terminal
        console_terminal = self.terminals[self.profile.console]
        kernel_line = KERNEL_LINE if self._kernel_line == "default" else self._kernel_line
        self.console = console = Console(
            console_terminal, self.profile, watch, terminals=self.terminals, alive=process.alive,
            died_message=process.died_message, model_log=process.log_path, kernel_line=kernel_line)
        console.wait_for_login_prompt(boot)
        self.metadata["boot_seconds"] = round(time.monotonic() - launched, 3)
        self.metadata["boot_stages"] = dict(watch.stage_times)
        login = self.budget.start("login", parent=self._session)
        console.login(login)
        console.prepare_shell(login, quiet_kernel=self.quiet_kernel)
        self.metadata["login_seconds"] = round(login.elapsed(), 3)
        version_thread.join(timeout=10.0)
        log.info("%s ready after %.1f s (ports %s, ssh %s)", self.name, time.monotonic() - launched,
                 ports, spec.ssh_port)

    def _read_version(self, program: list[str]) -> None:
        status, text = query_version(program, self.spec.env if self.spec else {}, 30.0,
                                     cancel=self._version_cancel)
        match = re.search(self.profile.version_pattern, text)
        if match:
            self.metadata["version"] = match.group(1)
        else:
            self.metadata["version"] = (text.strip().splitlines() or
                                        [f"unknown (status {status})"])[0]
        self.metadata["version_banner"] = text.strip()

    def close(self) -> None:
        """Stop politely (SIGINT: the model prints --stat), then SIGTERM, then SIGKILL the group.
        Never raises."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
        if self._ssh is not None:
            with contextlib.suppress(Exception):
                self._ssh.close()
        try:
            if self.process is not None:
                stat = self.process.stop()
                if stat:
                    self.metadata["stat"] = stat
                if self.process.exit is not None:
                    self.metadata["exit"] = self.process.exit.describe()
        finally:
            for terminal in self.terminals.values():
                with contextlib.suppress(Exception):
                    terminal.close()
            if self.process is not None:
                self.process.kill_group()
            if self._version_thread is not None:
                self._version_cancel.set()  # a hung model's `--version` is killed, not waited for
                # its `--version` child must not outlive the session
                self._version_thread.join(timeout=5.0)

    # -- Target ------------------------------------------------------------------------------------

    def _deadline(self, timeout: float | None, phase: str) -> Deadline:
        seconds = None if timeout is None else timeout
        return self.budget.start(phase, parent=self._session, seconds=seconds)

    def _ready_console(self) -> Console:
        if self.console is None or self.console.state != "ready" or self.closed:
            state = (
                "closed" if self.closed else (self.console.state if self.console else "not open")
            )
            raise ConfigurationError(f"target {self.name} is not ready for commands (console "
                                     f"{state})")
        return self.console

    def run(self, command: str, timeout: float | None = None, *, phase: str = "command",
            strict: bool = True) -> CommandResult:
        """Run one shell command on the console; returns its exit status and exact output.

        ``phase`` names the timeout in messages (``command``, ``deploy`` or ``unit``). Raises
        CommandTimeout, ConsoleLost (ConsoleGarbled: line noise; ``strict=False`` keeps output with
        invalid bytes), KernelPanic, FvpDied.
        """
        return self._ready_console().run(command, deadline=self._deadline(timeout, phase),
                                         stage=phase, strict=strict)

    def redact_also(self, secrets: Sequence[str]) -> None:
        """Mask these texts in every terminal log too (``MasksSecrets``)."""
        self.redact = tuple(dict.fromkeys([*self.redact, *secrets]))
        for terminal in self.terminals.values():
            terminal.redact_also(secrets)

    def run_in_phase(self, command: str, timeout: float | None, phase: str) -> CommandResult:
        """``run`` with its timeout named after ``phase`` (``NamesPhases``)."""
        return self.run(command, timeout, phase=phase)

    def stream(self, commands: Iterator[str] | Iterable[str], *, timeout: float | None = None,
               window_bytes: int = 16384) -> int:
        """Run many short commands pipelined on the console (deploy's chunk lines); see
        Console.stream_commands."""
        return self._ready_console().stream_commands(
            iter(commands), deadline=self._deadline(timeout, "deploy"), window_bytes=window_bytes
        )

    @property
    def ssh(self) -> SshTransport:
        """The SSH transport, connected on first use (retrying until sshd answers or
        ``fvp.timeouts.deploy``).

        The forwarded ports of the network devices left switched on (``LaunchSpec.ssh_ports``,
        profile order) are tried in turn, a few seconds each, and the first whose sshd answers is
        kept for the session (which device carries the guest's network depends on the image:
        meta-arm forwards ssh on both). ``metadata["ssh_port"]`` then names it.
        """
        if self._ssh is not None:
            if not self._ssh.connected:  # the port chosen before (or the only one): connect again
                self._ssh.connect(self._deadline(None, "deploy"))
            return self._ssh
        ports = list(self.spec.ssh_ports) if self.spec is not None else []
        if not ports:
            raise SshUnavailable(f"profile {self.profile.name} forwards no SSH port on a network "
                                 "device that is switched on (see ssh_forward_params and "
                                 "ssh_forward_enabled_by)")
        transport = self._connect_ssh(ports, self._deadline(None, "deploy"))
        self.metadata["ssh_port"] = transport.port
        return transport

    def _connect_ssh(self, ports: list[int], deadline: Deadline) -> SshTransport:
        """Connect to the first of ``ports`` whose sshd answers, trying each for ``SSH_PORT_TURN_S``
        in turn."""
        transports = [SshTransport(port, user=self.profile.user, password=self.profile.password,
                                   log_path=self.log_dir / "fvp.log") for port in ports]
        if len(transports) == 1:
            # kept even if the connect fails: close() must stop its loop thread
            self._ssh = transports[0]
            transports[0].connect(deadline)
            return transports[0]
        winner: SshTransport | None = None
        last: SshUnavailable | None = None
        try:
            while winner is None:
                for transport in transports:
                    try:
                        transport.connect(deadline.child(deadline.phase, SSH_PORT_TURN_S))
                    except SshUnavailable as exc:
                        last = exc
                        continue
                    winner = transport
                    break
                if winner is None and deadline.expired:
                    tried = ", ".join(str(port) for port in ports)
                    raise SshUnavailable(
                        deadline.message("no SSH server answered on any of the forwarded ports "
                                         f"{tried}", log_path=self.log_dir / "fvp.log"),
                        log_path=self.log_dir / "fvp.log", stage="ssh") from last
        finally:
            for transport in transports:
                if transport is not winner:
                    transport.close()
        log.info("%s: ssh through forwarded port %s (of %s)", self.name, winner.port, ports)
        self._ssh = winner
        return winner

    def ssh_run(self, command: str, timeout: float | None = None) -> CommandResult:
        return self.ssh.run(command, self._deadline(timeout, "command"))

    def ssh_put(self, local: Path, remote: str, timeout: float | None = None) -> str:
        return self.ssh.put(local, remote, self._deadline(timeout, "deploy"))

    def put(self, local: Path, remote: str) -> None:
        """Copy a host file to a guest path by ``transfer`` (ssh, console, or ``auto``); sha256
        checked."""
        if self._by_ssh(lambda timeout: upload_ssh(self, Path(local), remote, timeout=timeout)):
            return
        upload_console(self, Path(local), remote)

    def _by_ssh(self, action: Callable[[float | None], object]) -> bool:
        """Do ``action`` over ssh when ``transfer`` says so (True), or return False for the console.
        With ``auto`` the first copy decides: an ssh that does not answer within
        ``AUTO_SSH_TIMEOUT_S`` (an infrastructure failure other than a hash mismatch) sends this and
        every later copy over the console."""
        if self.transfer == "ssh":
            action(None)
            return True
        if self.transfer != "auto" or (self.transport is not None and self.transport != "ssh"):
            return False
        first = self.transport is None
        try:
            action(AUTO_SSH_TIMEOUT_S if first else None)
        except InfrastructureError as exc:
            if not first or isinstance(exc, DeployError):
                raise
            log.warning("ssh did not answer (%s); copying over the console", str(exc).strip()[:200])
            self.transport = f"console (ssh did not answer: {str(exc).strip()[:120]})"
            return False
        self.transport = "ssh"
        return True

    def get(self, remote: str) -> bytes:
        """A guest file's bytes: by SSH when ``transfer`` is ssh, else ``cat`` on the console (text
        only: the bytes are checked against the guest's sha256sum and a binary file is refused with
        DeployError)."""
        fetched: list[bytes] = []
        if self._by_ssh(lambda timeout: fetched.append(self.ssh.get(remote,
                                                                    self._deadline(timeout,
                                                                                   "deploy")))):
            return fetched[0]
        # the sha256 decides
        result = self.run(f"cat {shlex.quote(remote)}", phase="deploy", strict=False)
        if not result.ok:
            raise FileNotFoundError(f"{remote}: {result.output.strip()}")
        data = result.output.encode("utf-8")
        expected = guest_sha256(self, remote)
        if expected is not None and hashlib.sha256(data).hexdigest() != expected:
            raise DeployError(f"{remote} cannot be read exactly over the console (binary or CR "
                              "bytes); use deploy.method ssh to fetch it",
                              log_path=self.console_log, stage="get")
        return data

    @property
    def console_log(self) -> Path | None:
        return self.console.log_path if self.console else None
