"""``BaremetalTarget``: a Corstone-300/320 platform, where every unit is one model launch (no boot,
no login).

Otherwise it is this host (``HostTarget``): nothing is deployed. The launch (argv, supervision, when
it ends) and what its end means: docs/baremetal.md, "One launch" and "Failure classes".
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import shlex
import shutil
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Protocol, TextIO, runtime_checkable

import pexpect

from fvp_harness.errors import (
    ConfigurationError,
    FvpDied,
    FvpStartError,
    HardFault,
    InfrastructureError,
    TimeLimitExceeded,
)
from fvp_harness.files import file_sha256
from fvp_harness.profiles import Profile
from fvp_harness.targets.base import CommandResult, FvpSettings
from fvp_harness.targets.fvp import (
    OWNER_ENV,
    SIM_BINARY,
    dies_with_harness,
    format_param,
    parse_stat_block,
    resolve_binary,
    sim_environment,
)
from fvp_harness.targets.host import HostTarget
from fvp_harness.targets.supervise import stop_tree
from fvp_harness.targets.text import clean_text, mask

__all__ = [
    "EOT",
    "BaremetalLaunch",
    "BaremetalTarget",
    "LaunchEnding",
    "LaunchResult",
    "LaunchesModel",
    "baremetal_argv",
    "judge_launch",
    "model_program",
    "semihosting_params",
]

EOT = "\x04"
"""The byte a bare-metal program ends with (``ET_LOG(Info, "\\04")``); the model stops on it
(``shutdown_on_eot``)."""

SEARCH_WINDOW = 4096
"""Characters of already-read output searched again with each new chunk: enough for the longest
pattern, so a run that prints megabytes (an ETDump in base64) costs linear time."""

EOT_GRACE_S = 5.0
"""After EOT, how long the model may take to exit by itself (and print its --stat block) before it
is stopped."""

FAULT_GRACE_S = 0.5
"""After a hard fault line, how long the rest of the fault report is read before the model is
stopped."""

_SLICE_S = 0.25
"""How often the read loop looks at the deadline and at ``close`` from another thread."""

_SEMIHOSTING_FIXED = (("semihosting-enable", 1), ("semihosting-stack_base", 0),
                      ("semihosting-heap_limit", 0))
"""Semihosting parameters both upstream scripts set (run_fvp.sh, runner_utils.py), before ``-cwd``
and ``-cmd_line``: the heap and stack come from the ELF's own layout."""


@dataclass(frozen=True)
class BaremetalLaunch:
    """One unit's model launch, as ``run.launch_unit`` asks for it.

    ``cwd`` is the semihosting folder (the unit's folder) and ``cmd_line`` the runner's command
    line; both None when semihosting is off. ``files`` (name there -> host file) are linked into
    ``cwd`` before the launch (the model file and the inputs under the names the command line uses).
    ``data`` are ``--data FILE@ADDRESS`` placements; ``params`` the build's ``-C`` parameters, over
    the scenario's."""

    runner: Path
    label: str
    cwd: Path | None = None
    cmd_line: str | None = None
    files: Mapping[str, Path] = field(default_factory=dict)
    data: Sequence[tuple[Path, str]] = ()
    params: Mapping[str, str | int | float | bool] = field(default_factory=dict)


@dataclass(frozen=True)
class LaunchResult(CommandResult):
    """A launch's outcome (``command`` is the argv as one shell-quoted line) plus ``handed``: host
    path -> sha256 of every file the model was given (runner, ``--data`` files, the semihosting
    folder's files), hashed right before the launch: the provenance of the unit."""

    handed: Mapping[str, str] = field(default_factory=dict)
    stat: Mapping[str, str] = field(default_factory=dict)


@runtime_checkable
class LaunchesModel(Protocol):
    """A target whose units are model launches (bare-metal platforms) rather than guest commands."""

    def launch(self, request: BaremetalLaunch, timeout: float | None = None) -> LaunchResult:
        """Run one launch to its end; see the module docstring for what its end means."""
        ...


def model_program(binary: str, profile: Profile) -> list[str]:
    """The program part of argv: ``fvp.resolve_binary``, plus ``--platform <profile.sim_platform>``
    for the embedded simulator (it plays several platforms; a real binary is one platform)."""
    program = resolve_binary(binary, profile)
    if binary == SIM_BINARY and profile.sim_platform:
        program += ["--platform", profile.sim_platform]
    return program


def semihosting_params(profile: Profile, cwd: Path | str, cmd_line: str) -> dict[str, str]:
    """The ``-C`` parameters that turn semihosting on with this folder and command line (upstream's
    order)."""
    if not profile.semihosting:
        raise ConfigurationError(f"profile {profile.name} names no semihosting CPU (its "
                                 "`semihosting` field); set run.cmd_line: false for a runner that "
                                 "reads its model from memory")
    prefix = profile.semihosting
    params = {f"{prefix}.{name}": format_param(value) for name, value in _SEMIHOSTING_FIXED}
    params[f"{prefix}.semihosting-cwd"] = str(cwd)
    params[f"{prefix}.semihosting-cmd_line"] = cmd_line
    return params


def baremetal_argv(program: Sequence[str], profile: Profile, fvp: FvpSettings,
                   launch: BaremetalLaunch, *, timelimit: float | None) -> list[str]:
    """argv of one launch; see the module docstring for the order.
    Raises ConfigurationError for a semihosting command line over ``profile.cmd_line_limit``."""
    params: dict[str, str] = {name: format_param(value) for name, value in profile.params.items()}
    for source in (fvp.params, launch.params):
        for name, value in dict(source or {}).items():
            params[name] = format_param(value)
    if launch.cmd_line is not None:
        if len(launch.cmd_line) > profile.cmd_line_limit:
            raise ConfigurationError(
                f"run.cmd_line: the semihosting command line of {launch.label} is "
                f"{len(launch.cmd_line)} characters, over the {profile.cmd_line_limit} the model "
                "takes (it truncates longer ones; upstream's runner_utils.py refuses them): "
                f"{launch.cmd_line[:80]}...; shorten file names or run.cmd_line")
        params.update(semihosting_params(profile, launch.cwd or ".", launch.cmd_line))
    argv = list(program)
    for name, value in params.items():
        argv += ["-C", f"{name}={value}"]
    argv += list(profile.args)
    argv += [str(arg) for arg in fvp.args or []]
    argv += ["-a", str(launch.runner)]
    for path, address in launch.data:
        argv += ["--data", f"{path}@{address}"]
    if timelimit is not None and "--timelimit" not in argv:
        argv += ["--timelimit", f"{timelimit:g}"]
    if "--stat" not in argv:
        argv.append("--stat")
    return argv


@dataclass
class LaunchEnding:
    """How a launch's output ended, as the read loop saw it: the EOT byte, the first text each kind
    of pattern matched (a hard fault, the model's time-limit stop, a licence refusal), the unit's
    deadline, or ``close`` from another thread. ``chunks`` is the raw output."""

    chunks: list[str] = field(default_factory=list)
    eot: bool = False
    fault: str | None = None
    limit: str | None = None
    refused: str | None = None
    deadline: bool = False
    closed: bool = False


class BaremetalTarget(HostTarget):
    """A bare-metal platform: ``HostTarget`` for the harness's own steps, plus ``launch``
    (``LaunchesModel``).

    ``timeout`` arguments are scenario seconds, multiplied by ``timeout_scale`` (the scenario's and
    the CLI's); ``timelimit`` (the model's ``--timelimit``, default the profile's) is scaled the
    same way. ``close`` stops a model still running (another thread's Ctrl-C) and removes the
    working folder."""

    def __init__(self, fvp: FvpSettings, profile: Profile, *, log_dir: Path | str, name: str = "s0",
                 timeout_scale: float = 1.0, binary: str | None = None,
                 timelimit: float | None = None, redact: Sequence[str] = ()) -> None:
        scale = fvp.timeout_scale * timeout_scale
        super().__init__(log_dir=Path(log_dir), name=name, command_timeout=fvp.timeouts.command,
                         timeout_scale=scale, redact=redact)
        self.fvp = fvp
        self.profile = profile
        self.binary = binary or fvp.binary or SIM_BINARY
        limit = timelimit if timelimit is not None else profile.timelimit
        self.timelimit = None if limit is None else limit * scale
        self.unit_timeout = fvp.timeouts.unit
        self.metadata.update(kind="baremetal", profile=profile.name,
                             simulated=self.binary == SIM_BINARY)
        self._program: list[str] | None = None
        self._child: pexpect.spawn | None = None
        self._lock = threading.Lock()
        self._closing = False
        self._launches = 0

    def open(self) -> None:
        """Resolve the model binary (ConfigurationError when it is missing) and make the working
        folder."""
        self._program = model_program(self.binary, self.profile)
        super().open()
        self.metadata.update(program=self._program, timelimit=self.timelimit)

    def close(self) -> None:
        """Stop a model still running (its whole process group), then remove the working folder.
        Never raises."""
        with self._lock:
            self._closing = True
            child = self._child
        if child is not None:
            self._stop(child)
        super().close()

    # -- one launch --------------------------------------------------------------------------------

    def launch(self, request: BaremetalLaunch, timeout: float | None = None) -> LaunchResult:
        """Launch the model for one unit and return when the program has ended (see the module
        docstring). Raises HardFault, TimeLimitExceeded, FvpStartError, FvpDied (infrastructure) or
        ConfigurationError."""
        if self._program is None or self.workdir is None:
            raise ConfigurationError(f"target {self.name} is not open")
        argv = baremetal_argv(self._program, self.profile, self.fvp, request,
                              timelimit=self.timelimit)
        handed = self._prepare(request)
        limit = (timeout if timeout is not None else self.unit_timeout) * self.timeout_scale
        env = sim_environment(dict(self.fvp.sim or {}) if self.binary == SIM_BINARY else {})
        env[OWNER_ENV] = str(os.getpid())
        log_path = self.log_dir / "fvp.log"
        self._launches += 1
        self.metadata.update(argv=argv, launches=self._launches,
                             sim_knobs={k: v for k, v in env.items() if k.startswith("FVP_SIM_")})
        began = time.monotonic()
        with log_path.open("a", encoding="utf-8", errors="replace") as log:
            self._note(log, "#", f"launch {request.label}: {shlex.join(argv)}")
            child = self._spawn(argv, env, log_path)
            try:
                reading = self._read(child, log, began + limit)
            finally:
                exit_status, signal_status = self._stop(child)
                with self._lock:
                    self._child = None
            how = (f"killed by signal {signal_status}" if signal_status
                   else f"exit status {exit_status}")
            self._note(log, "#", f"{request.label} ended: {how}")
        output = clean_text("".join(reading.chunks))
        stat = parse_stat_block(output.split("\n"))
        self.metadata.update(exit=how, **({"stat": stat} if stat else {}))
        status = judge_launch(self.profile, request.label, reading, output, exit_status,
                              signal_status,
                              timelimit=self.timelimit, limit=limit, log_path=log_path)
        return LaunchResult(command=shlex.join(argv), exit_status=status, output=output,
                            duration_s=time.monotonic() - began, log_path=log_path, handed=handed,
                            stat=stat)

    def _prepare(self, request: BaremetalLaunch) -> dict[str, str]:
        """Link the semihosting files into the unit's folder; hash everything the model is handed. A
        file that vanished since the run started is ``FvpStartError`` (the retry's deploy check then
        names it)."""
        if request.files and request.cwd is None:
            raise ConfigurationError(f"{request.label}: semihosting files without a semihosting "
                                     "folder")
        handed: dict[str, str] = {}
        path = request.runner
        try:
            for path in [request.runner, *(data for data, _address in request.data)]:
                handed[str(path)] = file_sha256(path)
            if request.cwd is not None:
                request.cwd.mkdir(parents=True, exist_ok=True)
            for name, path in request.files.items():
                link = (request.cwd or Path(".")) / name
                with contextlib.suppress(FileNotFoundError):
                    link.unlink()
                try:
                    link.symlink_to(Path(path).resolve())
                except OSError:  # a file system without symbolic links: a copy reads the same
                    shutil.copyfile(path, link)
                handed[str(path)] = file_sha256(Path(path))
        except OSError as exc:
            raise FvpStartError(f"{request.label}: cannot hand {path} to the model: "
                                f"{exc.strerror or exc}", stage="launch") from exc
        return handed

    def _spawn(self, argv: list[str], env: dict[str, str], log_path: Path) -> pexpect.spawn:
        wrapped, *args = dies_with_harness(argv)
        with self._lock:
            if self._closing:
                raise FvpDied(f"target {self.name} is closing; no model started", log_path=log_path,
                              stage="launch")
            # pexpect forks through a pty: the child calls setsid, so the model leads its own
            # process group
            try:
                child = pexpect.spawn(wrapped, args, env=env, cwd=str(self.workdir), echo=False,
                                      encoding="utf-8",
                                      codec_errors="replace", timeout=None, maxread=65536,
                                      dimensions=(50, 250))
            except (pexpect.ExceptionPexpect, OSError) as exc:
                raise FvpStartError(f"could not start the model {argv[0]}: {exc}",
                                    log_path=log_path, stage="launch") from exc
            child.delaybeforesend = None
            self._child = child
        return child

    def _read(self, child: pexpect.spawn, log: TextIO, end: float) -> LaunchEnding:
        """Read the launch's output to its end (EOT, exit, a fault, the deadline, ``close``)."""
        profile = self.profile
        faults = [re.compile(pattern) for pattern in profile.failure_patterns]
        limits = [re.compile(pattern) for pattern in profile.timelimit_patterns]
        refusals = [re.compile(pattern) for pattern in profile.start_failure_patterns]
        patterns: list[object] = [re.compile(re.escape(EOT)), *faults, *limits, *refusals,
                                  pexpect.EOF, pexpect.TIMEOUT]
        first_limit, first_refusal = 1 + len(faults), 1 + len(faults) + len(limits)
        eof_index = len(patterns) - 2
        reading = LaunchEnding()
        pending = [""]
        # how much of pexpect's ``before`` (all text since the last match) is already taken
        taken = [0]
        stop_at: float | None = None  # set by EOT or a fault: read until then, then stop the model

        def take(text: str, *, matched: str = "", complete: bool = True) -> None:
            """Keep the new part of ``text`` (``before`` since the last match) and log its lines; a
            match (or the end) starts a new ``before``. ``complete=False`` takes only whole lines (a
            pattern may still come)."""
            new = text[taken[0]:]
            if not complete:
                # no pattern spans a line break: complete lines hold no match
                new = new[: new.rfind("\n") + 1]
                taken[0] += len(new)
            else:
                new += matched
                taken[0] = 0
            if not new:
                return
            reading.chunks.append(new)
            lines = (pending[0] + clean_text(new)).split("\n")
            pending[0] = lines.pop()
            for line in lines:
                self._note(log, "<", line)

        def text_of(value: object) -> str:
            return value if isinstance(value, str) else ""

        while True:
            now = time.monotonic()
            if self._closing:
                reading.closed = True
                break
            horizon = end if stop_at is None else min(end, stop_at)
            if now >= horizon:
                reading.deadline = stop_at is None or now >= end
                break
            try:
                index = child.expect_list(patterns, timeout=min(_SLICE_S, horizon - now),  # type: ignore[arg-type]
                                          searchwindowsize=SEARCH_WINDOW)
            except (OSError, ValueError):  # the pty went away under a close from another thread
                reading.closed = self._closing
                break
            # TIMEOUT: nothing decisive yet; complete lines go to the log now
            if index == len(patterns) - 1:
                take(text_of(child.before), complete=False)
                continue
            matched = text_of(child.after)
            take(text_of(child.before), matched=matched)
            if index == eof_index:
                break
            if index == 0:
                reading.eot = True
                stop_at = time.monotonic() + EOT_GRACE_S
            elif index < first_limit:
                reading.fault = reading.fault or matched
                stop_at = min(stop_at or float("inf"), time.monotonic() + FAULT_GRACE_S)
            elif index < first_refusal:
                reading.limit = reading.limit or matched
            else:
                reading.refused = reading.refused or matched
        # what came after the last match
        with contextlib.suppress(pexpect.ExceptionPexpect, OSError, ValueError):
            child.expect_list([pexpect.EOF, pexpect.TIMEOUT], timeout=0)
            take(text_of(child.before))
        if pending[0]:
            self._note(log, "+", pending[0])
        return reading

    def _stop(self, child: pexpect.spawn) -> tuple[int | None, int | None]:
        """Stop the model if it still runs (stop signal, SIGTERM, SIGKILL, each to its process
        group), reap it; (exit status, signal) of the model. Safe to call twice and from another
        thread."""
        pid = child.pid
        try:
            if self._wait_exit(child, 0.0) is False:
                for signum, grace in ((getattr(signal, self.profile.stop_signal),
                                       self.profile.stop_timeout),
                                      (signal.SIGTERM, 5.0)):
                    self._signal_group(pid, signum)
                    if self._wait_exit(child, grace):
                        break
        finally:
            # the supervisor ends what it started
            if pid is not None and self._wait_exit(child, 0.0) is False:
                stop_tree(pid)
                self._wait_exit(child, 3.0)
            self._signal_group(pid, signal.SIGKILL)
            with contextlib.suppress(pexpect.ExceptionPexpect, OSError):
                child.close(force=True)
        return child.exitstatus, child.signalstatus

    @staticmethod
    def _wait_exit(child: pexpect.spawn, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while True:
            try:
                if not child.isalive():
                    return True
            except pexpect.ExceptionPexpect:
                return True
            if time.monotonic() >= end:
                return False
            time.sleep(0.02)

    @staticmethod
    def _signal_group(pid: int | None, signum: int) -> None:
        if pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signum)

    def _note(self, log: TextIO, mark: str, text: str) -> None:
        stamp = datetime.datetime.now().isoformat(sep=" ", timespec="milliseconds")
        with contextlib.suppress(ValueError):
            log.write(mask(f"{stamp} {mark} {text}\n", self.redact))
            log.flush()


def judge_launch(profile: Profile, label: str, ending: LaunchEnding, output: str,
                 exit_status: int | None,
                 signal_status: int | None, *, timelimit: float | None, limit: float,
                 log_path: Path | None = None) -> int:
    """What a launch's end means (the module docstring's rules, in order): its exit status (0 ok,
    else a test failure: the program printed an error line), or raise its infrastructure failure.
    ``output`` is the clean text, ``timelimit`` the ``--timelimit`` given and ``limit`` the unit's
    timeout (both for messages)."""
    lines = output.split("\n")
    if ending.refused is None and not ending.closed and _program_error(profile, lines):
        # the program's own error: a test failure, whatever came after (ET_CHECK traps)
        return exit_status or 1
    if ending.eot and ending.fault is None and ending.limit is None:
        return 0
    if (ending.fault is None and ending.limit is None and ending.refused is None and
        not ending.closed
            and not ending.deadline and exit_status == 0 and signal_status is None):
        return 0
    tail = [line for line in lines if line.strip()][-200:]
    raise _failure(profile, label, ending, lines, tail, exit_status, signal_status, timelimit,
                   limit)(
        log_path=log_path, last_lines=tail, stage=label)


def _program_error(profile: Profile, lines: list[str]) -> bool:
    """A line of the program (from its first ``program_pattern`` line on: before it, an ``Error:
    ...`` is the model's refusal to start) that matches ``error_patterns`` and none of
    ``benign_patterns`` (run_fvp.sh:241's timing-adapter lines)."""
    errors = [re.compile(pattern) for pattern in profile.error_patterns]
    benign = [re.compile(pattern) for pattern in profile.benign_patterns]
    started = re.compile(profile.program_pattern) if profile.program_pattern else None
    seen = started is None
    for line in lines:
        seen = seen or bool(started is not None and started.search(line))
        if seen and any(p.search(line) for p in errors) and not any(p.search(line) for p in benign):
            return True
    return False


def _failure(profile: Profile, label: str, ending: LaunchEnding, lines: list[str], tail: list[str],
             exit_status: int | None, signal_status: int | None, timelimit: float | None,
             limit: float) -> Callable[..., InfrastructureError]:
    """The infrastructure failure of a launch that did not end well, ready to be given its log."""
    output = "\n".join(lines)
    said = " | ".join(tail[-6:]) or "(it printed nothing)"

    # the whole (clean) line a pattern matched in: what messages quote
    def line_of(matched: str) -> str:
        text = clean_text(matched).strip()
        return next((line.strip() for line in lines if text and text in line), text)

    if ending.refused is not None:
        return partial(FvpStartError,
                       f"the model refused to run {label}: {line_of(ending.refused)}")
    if ending.closed:
        return partial(FvpDied, f"{label}: the model was stopped (the instance was closed)")
    if ending.fault is not None:
        return partial(HardFault,
                       f"{label}: the program hit a hard fault ({line_of(ending.fault)}); the "
                       "model was stopped instead of spinning until its time limit", output=output)
    if ending.limit is not None:
        given = f"--timelimit {timelimit:g} s" if timelimit is not None else "its --timelimit"
        return partial(TimeLimitExceeded,
                       f"{label}: the model stopped at its time limit ({given}) before the "
                       f"program ended: {line_of(ending.limit)}; raise fvp.timelimit (or pass "
                       "--timeout-scale) if the program is only slow", output=output)
    if ending.deadline:
        return partial(TimeLimitExceeded,
                       f"{label}: the program did not end within {limit:.4g} s (phase unit) "
                       "and was stopped; raise fvp.timeouts.unit or run.timeout, or pass "
                       "--timeout-scale", output=output)
    how = (f"was killed by signal {signal_status}" if signal_status
           else f"exited with status {exit_status}")
    pattern = profile.program_pattern
    if pattern is not None and not any(re.search(pattern, line) for line in lines):
        return partial(FvpStartError,
                       f"{label}: the model {how} before the program printed anything; it "
                       f"said: {said}")
    return partial(FvpDied, f"{label}: the model {how} while the program ran; it said: {said}")
