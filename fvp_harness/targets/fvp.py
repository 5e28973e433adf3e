"""The model process: argv, launch in its own process group, port banner, early-exit diagnosis,
stepwise stop.

Why it is shaped so: docs/architecture.md, "Inside `targets/`"."""

from __future__ import annotations

import atexit
import contextlib
import datetime
import logging
import os
import queue
import re
import select
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO, TypeVar

import pexpect

from fvp_harness.errors import ConfigurationError, FvpStartError, PortError
from fvp_harness.profiles import Profile
from fvp_harness.targets.deadline import Deadline
from fvp_harness.targets.launch import (
    OWNER_ENV,
    SIM_BINARY,
    SIM_ENV_PREFIX,
    LaunchSpec,
    find_free_port,
    format_param,
    port_is_free,
    resolve_binary,
    sim_environment,
)
from fvp_harness.targets.leftovers import collect
from fvp_harness.targets.qemu import qemu_launch
from fvp_harness.targets.supervise import dies_with_harness, stop_tree
from fvp_harness.targets.text import TextCleaner

__all__ = [
    "OWNER_ENV",
    "SIM_BINARY",
    "ExitInfo",
    "FvpProcess",
    "LaunchSpec",
    "build_launch",
    "dies_with_harness",
    "find_free_port",
    "format_param",
    "parse_stat_block",
    "port_is_free",
    "query_model",
    "query_version",
    "resolve_binary",
    "sim_environment",
    "stop_all",
]

log = logging.getLogger(__name__)
_T = TypeVar("_T")

SIM_ROOT_PATTERN = "fvp-sim-*"
"""The simulator's guest roots in its temporary folder (``sim/guest/fs.py``)."""

_STAT_HEADER = re.compile(r"^-{3} .*statistics:")
_STAT_LINE = re.compile(r"^(\S[^:]*?)\s*:\s*(.*?)\s*$")


# -- dying with the harness ------------------------------------------------------------------------
# ``dies_with_harness`` (targets/supervise.py) puts every process started here under a supervisor
# that ends it, and whatever it started, when the harness dies. ``PR_SET_PDEATHSIG`` follows the
# *thread* that forked the process (the supervisor acts only when its parent process is gone, but a
# model is still started from one long-lived thread, ``_Spawner``, so the signal never comes early);
# a query waits for its process in the thread that started it, so it may fork there.


class _Spawner:
    """Runs process launches on one daemon thread that lives as long as the harness process.

    ``PR_SET_PDEATHSIG`` fires when the thread that forked the child exits, not the process: a model
    started from a session or lane thread would be killed when that thread ends, even if another
    thread still uses it. Forking from this thread ties the signal to the harness process itself.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[tuple[Callable[[], object], dict[str, object],
                                            threading.Event]] = (
            queue.SimpleQueue())
        self._thread: threading.Thread | None = None

    def _serve(self) -> None:
        while True:
            job, box, done = self._jobs.get()
            try:
                box["value"] = job()
            except BaseException as exc:  # handed to the caller
                box["error"] = exc
            finally:
                done.set()

    def _reset_after_fork(self) -> None:
        self._lock = threading.Lock()
        self._jobs = queue.SimpleQueue()
        self._thread = None

    def call(self, job: Callable[[], _T]) -> _T:
        """Run ``job`` on the spawner thread and return its result (or raise its exception). A
        Ctrl-C while waiting is held back until the job is done, so a process it started is never
        lost unregistered."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="fvp-spawner", daemon=True)
                self._thread.start()
        box: dict[str, object] = {}
        done = threading.Event()
        self._jobs.put((job, box, done))
        interrupted: BaseException | None = None
        while True:
            try:
                done.wait()
                break
            except KeyboardInterrupt as exc:
                interrupted = exc
        if interrupted is not None:
            raise interrupted
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        return box["value"]  # type: ignore[return-value]


_SPAWNER = _Spawner()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_SPAWNER._reset_after_fork)


# -- argv ------------------------------------------------------------------------------------------


def query_model(program: Sequence[str], option: str, env: Mapping[str, str], timeout: float,
                cancel: threading.Event | None = None) -> tuple[int | None, str]:
    """Run ``program option`` (``--version``, ``--list-params``) to completion: (exit status or
    None, output).

    The query runs in its own process group, killed whole when it gives no answer within ``timeout``
    or ``cancel`` is set (a hung model, or a wrapper script whose child would otherwise outlive it
    and hold the pipes open), and dies with the harness (``dies_with_harness``).
    """
    try:
        proc = subprocess.Popen(dies_with_harness([*program, option]), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE,
                                text=True, errors="replace", env=dict(env),
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        return None, str(exc)
    end = time.monotonic() + timeout
    try:
        while True:
            try:
                out, err = proc.communicate(timeout=max(0.0, min(0.2, end - time.monotonic())))
                return proc.returncode, out + err
            except subprocess.TimeoutExpired:
                if time.monotonic() >= end:
                    return None, f"no answer within {timeout:.0f} s"
                if cancel is not None and cancel.is_set():
                    return None, "cancelled"
    finally:
        # the supervisor is not reaped yet, so its pid still names it and the group
        if proc.returncode is None:
            stop_tree(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=3.0)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()


_BANNERS: dict[tuple[object, ...], str] = {}
"""``--version`` answers already given in this process, by program, its file's identity and the
simulator knobs."""
_BANNERS_LOCK = threading.Lock()


def _identity_of(program: str) -> tuple[int, int] | None:
    try:
        stat = Path(program).stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def query_version(program: Sequence[str], env: Mapping[str, str], timeout: float,
                  cancel: threading.Event | None = None) -> tuple[int | None, str]:
    """``query_model(program, "--version", ...)``, asked once per process per binary (its path and
    file identity) and simulator knobs (``FVP_SIM_*``): a model's banner does not change while its
    file does not, and each query costs a model start-up, which every boot paid again beside its own
    (two simulators starting per lane). Only a clean answer (exit status 0, some text) is kept: a
    failing or silent model is asked again."""
    knobs = tuple(sorted((name, value)
                         for name, value in env.items() if name.startswith(SIM_ENV_PREFIX)))
    key = (tuple(program), _identity_of(program[0]) if program else None, knobs)
    with _BANNERS_LOCK:
        known = _BANNERS.get(key)
    if known is not None:
        return 0, known
    status, text = query_model(program, "--version", env, timeout, cancel=cancel)
    if status == 0 and text.strip():
        with _BANNERS_LOCK:
            _BANNERS[key] = text
    return status, text


def _forward_value(existing: str, host_port: int, guest_port: int) -> str:
    """``userNetPorts`` with the mapping to ``guest_port`` replaced by ``host_port=guest_port``
    (others kept)."""
    kept = [item for item in existing.split(",") if item.strip() and
            item.split("=")[-1].strip() != str(guest_port)]
    return ",".join([*kept, f"{host_port}={guest_port}"])


def build_launch(
    profile: Profile,
    fvp: object,
    *,
    ssh_port: int | None = None,
    binary: str | None = None,
    base_dir: Path | None = None,
    extra_params: Mapping[str, object] | None = None,
    environ: Mapping[str, str] | None = None,
) -> LaunchSpec:
    """argv + environment for ``profile`` and a scenario's ``fvp`` section (a
    ``scenario.FvpConfig``).

    Order: program, profile -C params overridden by scenario params (one -C each, sorted as given),
    firmware inputs (``-C`` or ``--data``), profile args, scenario args (a list: options can
    repeat), then ``--stat`` unless already present. In every one of the profile's
    ``ssh_forward_params`` the mapping to the guest's sshd gets a host port of its own: ``ssh_port``
    for the first (None: a free one), a free one for each other. Firmware paths and relative
    scenario paths are resolved against ``base_dir`` (the scenario's folder). A ``kind: qemu``
    profile is QEMU's own command line instead (``targets.qemu.qemu_launch``).
    """
    if profile.qemu:
        return qemu_launch(profile, fvp, ssh_port=ssh_port, binary=binary, base_dir=base_dir,
                           environ=environ)
    chosen = binary or getattr(fvp, "binary", SIM_BINARY) or SIM_BINARY
    program = resolve_binary(chosen, profile)
    simulated = chosen == SIM_BINARY
    params: dict[str, str] = {name: format_param(value) for name, value in profile.params.items()}
    for name, value in dict(getattr(fvp, "params", {}) or {}).items():
        params[name] = format_param(value)
    for name, value in dict(extra_params or {}).items():
        params[name] = format_param(value)
    forwards: dict[str, int] = {}
    for index, forward in enumerate(profile.ssh_forward_params):
        host_port = ssh_port if index == 0 and ssh_port is not None else find_free_port()
        while host_port in forwards.values():  # two devices must never share a host port
            host_port = find_free_port()
        forwards[forward] = host_port
        params[forward] = _forward_value(params.get(forward, ""), host_port, profile.ssh_guest_port)
    ssh_ports = [port for name, port in forwards.items() if profile.ssh_forward_live(name, params)]
    firmware: dict[str, str] = {}
    for name, path in dict(getattr(fvp, "firmware", {}) or {}).items():
        resolved = Path(path).expanduser()
        if not resolved.is_absolute() and base_dir is not None:
            resolved = base_dir / resolved
        firmware[name] = str(resolved)
    unknown = sorted(set(firmware) - set(profile.firmware))
    if unknown:
        raise ConfigurationError(
            f"fvp.firmware names {', '.join(unknown)}, which profile {profile.name} does not know "
            f"(known: {', '.join(profile.firmware) or 'none'})"
        )
    argv = list(program)
    for name, value in params.items():
        argv += ["-C", f"{name}={value}"]
    argv += profile.firmware_args(firmware)
    argv += list(profile.args)
    argv += [str(arg) for arg in getattr(fvp, "args", []) or []]
    if "--stat" not in argv:
        argv.append("--stat")
    env = sim_environment(dict(getattr(fvp, "sim", {}) or {}) if simulated else {}, environ)
    # who started this model: lets a leak check find exactly our processes
    env[OWNER_ENV] = str(os.getpid())
    return LaunchSpec(argv=argv, env=env, params=params,
                      ssh_port=ssh_ports[0] if ssh_ports else None,
                      simulated=simulated, ssh_ports=ssh_ports, ssh_forwards=forwards)


def parse_stat_block(lines: Sequence[str]) -> dict[str, str]:
    """The ``--stat`` block printed at exit (``label : value`` lines between dashed rules) as a
    dict."""
    stats: dict[str, str] = {}
    inside = False
    for line in lines:
        text = line.strip()
        if _STAT_HEADER.match(text):
            inside = True
            stats = {}
            continue
        if not inside:
            continue
        if text.startswith("---") and set(text) == {"-"}:
            inside = False
            continue
        match = _STAT_LINE.match(text)
        if match:
            stats[match.group(1).strip()] = match.group(2)
    return stats


# -- the process -----------------------------------------------------------------------------------


_LIVE: set[FvpProcess] = set()
_LIVE_LOCK = threading.Lock()
_COLLECTED: set[str] = set()


def _collect_sim_leftovers(env: Mapping[str, str]) -> None:
    """Once per process and temporary folder: remove the guest roots (``fvp-sim-*``) whose simulator
    died without removing its own (SIGKILL); a live model's, or one without the simulator's owner
    record, stays."""
    folder = env.get("TMPDIR") or tempfile.gettempdir()
    with _LIVE_LOCK:
        if folder in _COLLECTED:
            return
        _COLLECTED.add(folder)
    collect([Path(folder)], SIM_ROOT_PATTERN)
_HANDLERS_INSTALLED = False
_ATEXIT_INSTALLED = False


def stop_all(grace: float = 2.0) -> None:
    """Stop every model this harness process started and has not stopped (atexit / fatal signal
    path).

    SIGTERM to each group first, so models can remove their temp files, then SIGKILL whatever is
    left after ``grace`` seconds in total.
    """
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        proc._signal_group(signal.SIGTERM)
    end = time.monotonic() + grace
    for proc in live:
        proc._wait_exit(max(0.0, end - time.monotonic()))
        proc.kill_group()


def _on_fatal_signal(signum: int, frame: object) -> None:
    stop_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_handlers() -> None:
    """Once: atexit, and SIGTERM/SIGHUP handlers that kill our models first (only where nobody else
    set one).

    SIGINT needs nothing: Python raises KeyboardInterrupt and the ``finally`` around every session
    stops the model, which, living in its own session, never sees the terminal's Ctrl-C itself.
    """
    global _ATEXIT_INSTALLED, _HANDLERS_INSTALLED
    if not _ATEXIT_INSTALLED:
        _ATEXIT_INSTALLED = True
        atexit.register(stop_all)
    # signal handlers can only be set from the main thread: a model started first from another
    # thread (an early boot) must not mark them done, or they are never set (the CLI sets its own
    # before anything starts)
    if _HANDLERS_INSTALLED or threading.current_thread() is not threading.main_thread():
        return
    _HANDLERS_INSTALLED = True
    for signum in (signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(signum) in (signal.SIG_DFL, None):
                signal.signal(signum, _on_fatal_signal)
        except (ValueError, OSError):
            pass


@dataclass
class ExitInfo:
    """How the process ended."""

    status: int | None = None
    signal: int | None = None

    def describe(self) -> str:
        if self.signal is not None:
            return f"killed by signal {self.signal} ({signal.Signals(self.signal).name})"
        return f"exit status {self.status}"


@dataclass
class _Banner:
    pattern: re.Pattern[str]
    ports: dict[str, int] = field(default_factory=dict)


class FvpProcess:
    """One running model: launched, its stdout drained into ``<log_dir>/fvp.log``, stopped in
    steps."""

    def __init__(self, spec: LaunchSpec, profile: Profile, *, log_path: Path,
                 tail_size: int = 200) -> None:
        self.spec = spec
        self.profile = profile
        self.log_path = Path(log_path)
        self._banner = _Banner(pattern=re.compile(profile.port_banner))
        self._lines: deque[str] = deque(maxlen=tail_size)
        self._all_stat_lines: list[str] = []
        self._cond = threading.Condition()
        self._wait_lock = threading.RLock()
        self._child: pexpect.spawn | None = None
        self._thread: threading.Thread | None = None
        self._eof = False
        self._log_file: TextIO | None = None
        self.exit: ExitInfo | None = None
        self.started_at: float | None = None
        self.stopped = False

    # -- start -------------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._child.pid if self._child is not None else None

    def start(self) -> None:
        """Spawn the model (own session and process group, via the pty fork) and start draining its
        stdout. The first start of a process removes the simulator guest roots of models that died
        (``leftovers.collect``)."""
        _install_handlers()
        _collect_sim_leftovers(self.spec.env)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = self.log_path.open("a", encoding="utf-8", errors="replace")
        self._log("#", "argv: " + " ".join(self.spec.argv))
        program = self.spec.argv[0]
        wrapped, *args = dies_with_harness(self.spec.argv)

        # on the spawner thread (see dies_with_harness); registered there too
        def spawn() -> pexpect.spawn:
            child = pexpect.spawn(wrapped, args, env=self.spec.env, cwd=self.spec.cwd, echo=False,
                                  encoding=None, timeout=None, dimensions=(50, 250))
            child.delaybeforesend = None
            self._child = child
            self.started_at = time.monotonic()
            with _LIVE_LOCK:
                _LIVE.add(self)
            return child

        try:
            child = _SPAWNER.call(spawn)
        except pexpect.ExceptionPexpect as exc:
            self._close_log()
            raise FvpStartError(f"could not start the model {program}: {exc}",
                                log_path=self.log_path, stage="launch") from exc
        self._thread = threading.Thread(target=self._drain, name=f"fvp-stdout-{child.pid}",
                                        daemon=True)
        self._thread.start()
        log.info("started model pid %s: %s", child.pid, " ".join(self.spec.argv))

    def _drain(self) -> None:
        """Read the pty directly (not through pexpect's read, which may call waitpid concurrently
        with ``alive``)."""
        child = self._child
        assert child is not None
        fd = child.child_fd
        cleaner = TextCleaner()
        pending = ""
        while True:
            try:
                readable, _, _ = select.select([fd], [], [], 0.2)
                if not readable:
                    continue
                data = os.read(fd, 65536)
            # EIO: the pty's other side is gone (Linux EOF); EBADF: closed
            except (OSError, ValueError):
                break
            if not data:
                break
            text = pending + cleaner.feed(data)
            *lines, pending = text.split("\n")
            for line in lines:
                self._on_line(line)
        tail = pending + cleaner.flush()
        if tail:
            self._on_line(tail)
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def _on_line(self, line: str) -> None:
        self._log("<", line)
        with self._cond:
            self._lines.append(line)
            if _STAT_HEADER.match(line.strip()) or self._all_stat_lines:
                self._all_stat_lines.append(line)
            match = self._banner.pattern.search(line)
            if match:  # one group: the port of the platform's one terminal (QEMU names none)
                if self._banner.pattern.groups >= 2:
                    name, port = match.group(1), int(match.group(2))
                else:
                    name, port = self.profile.console, int(match.group(1))
                self._banner.ports[name] = port
            self._cond.notify_all()

    def _log(self, mark: str, text: str) -> None:
        if self._log_file is None:
            return
        stamp = datetime.datetime.now().isoformat(sep=" ", timespec="milliseconds")
        try:
            self._log_file.write(f"{stamp} {mark} {text}\n")
            self._log_file.flush()
        except ValueError:  # closed during shutdown
            pass
        # disk full, ...: stop logging, keep draining (a full pty would stall the model);
        except OSError as exc:
            log.info("cannot write %s: %s; the model's output is no longer logged", self.log_path,
                     exc)
            self._close_log()  # the terminals' logs fail too and end the run (targets.terminal)
            self._log_file = None

    def _close_log(self) -> None:
        if self._log_file is not None:
            with contextlib.suppress(OSError):
                self._log_file.close()
            self._log_file = None

    # -- state -------------------------------------------------------------------------------------

    def alive(self) -> bool:
        """True while the model process runs (reaps it and records its exit otherwise)."""
        child = self._child
        if child is None:
            return False
        with self._wait_lock:
            if self.exit is not None:
                return False
            try:
                running = child.isalive()
            except pexpect.ExceptionPexpect:
                running = False
            if not running:
                self.exit = ExitInfo(status=child.exitstatus, signal=child.signalstatus)
            return running

    def tail(self, count: int = 200) -> list[str]:
        with self._cond:
            return list(self._lines)[-count:]

    def wait_output_end(self, timeout: float) -> bool:
        """Wait until the model's stdout reached EOF (everything it printed is logged)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._eof, timeout)

    def died_message(self, what: str) -> str:
        """``<what>: the model exited (exit status 1): <its last words>``."""
        self.wait_output_end(1.0)
        self.alive()
        how = self.exit.describe() if self.exit else "exited"
        words = [line for line in self.tail(20) if line.strip()]
        said = " | ".join(words[-6:]) if words else "(it printed nothing)"
        return f"{what}: the model {how}; it said: {said}"

    def wait_for_ports(self, deadline: Deadline, expected: Sequence[str]) -> dict[str, int]:
        """Wait until every terminal in ``expected`` was announced; return every announced
        terminal's port.

        Raises FvpStartError (with the model's own words) if it exits first, PortError at the
        deadline.
        """
        wanted = set(expected)
        while True:
            with self._cond:
                ports = dict(self._banner.ports)
                if wanted <= set(ports):
                    return ports
                self._cond.wait(deadline.slice(0.1))
            if not self.alive():
                with self._cond:
                    ports = dict(self._banner.ports)
                if wanted <= set(ports):
                    return ports
                raise FvpStartError(
                    self.died_message("the model stopped before announcing its terminal ports"),
                    log_path=self.log_path,
                    last_lines=self.tail(),
                    stage="launch",
                )
            if deadline.expired:
                missing = ", ".join(sorted(wanted - set(ports)))
                raise PortError(
                    deadline.message(f"no port banner for {missing} (pattern "
                                     f"{self.profile.port_banner!r}; seen: {ports or 'none'})",
                                     log_path=self.log_path),
                    log_path=self.log_path, last_lines=self.tail(), stage="ports")

    @property
    def ports(self) -> dict[str, int]:
        with self._cond:
            return dict(self._banner.ports)

    # -- stop --------------------------------------------------------------------------------------

    def stop(self, polite_timeout: float | None = None,
             term_timeout: float = 5.0) -> dict[str, str]:
        """Stop in steps and return the ``--stat`` block (empty if the model printed none).

        1. the profile's stop signal (SIGINT: the model prints its statistics and exits) to the
           process group, as a terminal's Ctrl-C would (so a model started by a wrapper script gets
           it too), wait ``polite_timeout``;
        2. SIGTERM to the process group, wait ``term_timeout`` (skipped when the stop signal was
           SIGTERM: then the sequence is meta-arm's, SIGTERM, ``stop_timeout`` (10 s), SIGKILL:
           meta-arm/lib/fvp/runner.py:112-121);
        3. SIGKILL to the process group. Never raises; safe to call twice.
        """
        if self._child is None or self.stopped:
            return self.stat()
        polite = self.profile.stop_timeout if polite_timeout is None else polite_timeout
        try:
            if self.alive():
                self._signal_group(getattr(signal, self.profile.stop_signal))
                if not self._wait_exit(polite):
                    if self.profile.stop_signal == "SIGTERM":
                        log.warning("model pid %s ignored SIGTERM for %.3g s; killing its group",
                                    self.pid, polite)
                    else:
                        log.warning("model pid %s ignored %s for %.3g s; sending SIGTERM to its "
                                    "group", self.pid, self.profile.stop_signal, polite)
                        self._signal_group(signal.SIGTERM)
                        if not self._wait_exit(term_timeout):
                            log.warning("model pid %s ignored SIGTERM; killing its group", self.pid)
        finally:
            self.kill_group()
        return self.stat()

    def stat(self) -> dict[str, str]:
        with self._cond:
            return parse_stat_block(self._all_stat_lines)

    def kill_group(self) -> None:
        """End the whole tree (the supervisor SIGKILLs everything it holds, ``setsid`` children
        included), SIGKILL the process group (also what is left after the leader exited), reap,
        close the log."""
        child = self._child
        if child is None or self.stopped:
            return
        if self.alive() and child.pid is not None:
            stop_tree(child.pid)
            self._wait_exit(3.0)
        self._signal_group(signal.SIGKILL)
        exited = self._wait_exit(2.0)
        self.wait_output_end(1.0)
        # reaped: ptyprocess's close need not sleep its 0.1 s "for the kernel" before looking (each
        # close)
        if exited:
            ptyproc = getattr(child, "ptyproc", None)  # not in pexpect's stubs
            if ptyproc is not None:
                ptyproc.delayafterclose = 0.0
        with contextlib.suppress(pexpect.ExceptionPexpect, OSError):
            child.close(force=True)
        self.alive()
        if self.exit is None:
            self.exit = ExitInfo(status=child.exitstatus, signal=child.signalstatus)
        self.stopped = True
        with _LIVE_LOCK:
            _LIVE.discard(self)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)
        self._log("#", f"stopped: {self.exit.describe()}")
        self._close_log()

    def _signal_group(self, signum: int) -> None:
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signum)

    def _wait_exit(self, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while self.alive():
            if time.monotonic() >= end:
                return False
            time.sleep(0.02)
        return True
