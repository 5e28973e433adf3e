"""The Linux console: boot watch, login, shell setup and framed commands.

Why it is shaped so: docs/architecture.md, "Inside `targets/`"."""

from __future__ import annotations

import logging
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pexpect

from fvp_harness.errors import (
    BootTimeout,
    CommandFailed,
    ConsoleLost,
    FvpDied,
    KernelPanic,
)
from fvp_harness.profiles import Profile
from fvp_harness.targets.base import CommandResult
from fvp_harness.targets.deadline import Deadline
from fvp_harness.targets.terminal import Terminal
from fvp_harness.targets.text import KERNEL_LINE, KernelNoiseFilter

__all__ = ["BootWatch", "CommandTimeout", "Console", "ConsoleGarbled", "Failure", "frame_command",
           "garbled"]

log = logging.getLogger(__name__)

POLL_S = 0.1
"""Longest single wait inside a loop: how late a panic, a dead model or a closed socket can be
noticed."""
PANIC_GRACE_S = 0.5
"""After a failure line, how long to keep collecting (the call trace follows the panic line) before
raising."""
START_HEAD = "__FH_S_"
END_HEAD = "__FH_E_"
ACK_HEAD = "__FH_A_"
PASSWORD_PROMPT = re.compile(r"[Pp]assword: ?$")
LOGIN_ATTEMPTS = 3
PROMPT_CHECK_S = 3.0
"""How long ``prepare_shell`` waits to see the guest show the harness's ``PS1`` after setting it."""


class CommandTimeout(CommandFailed):
    """A command did not finish within its timeout; it was interrupted with Ctrl-C and the console
    recovered.

    A test failure (the code under test hung), not an infrastructure one: the console still works.
    ``exit_status`` is 124, as coreutils' ``timeout`` reports.
    """


class ConsoleGarbled(ConsoleLost):
    """The console delivered text that is not what the guest printed (line noise, lost framing): an
    infrastructure failure, since no output read through it can be trusted. ``output`` keeps what
    was read, for the unit log."""

    def __init__(self, message: str, *, output: str = "", **kwargs: object) -> None:
        super().__init__(message, **kwargs)  # type: ignore[arg-type]
        self.output = output


_NOT_ASCII = re.compile(r"[^\x20-\x7e]")
_NOISE = re.compile(r"[\ufffd\x80-\x9f]")
"""What no text program prints: the decoder's replacement for bytes that are not UTF-8, and C1
control codes."""


def garbled(text: str) -> bool:
    """True when ``text`` holds characters line noise leaves and a program's text output never
    has."""
    return _NOISE.search(text) is not None


def _noisy_marker(text: str, marker: re.Pattern[str]) -> bool:
    """``marker`` is in ``text`` once everything but printable ASCII is taken out, but not as it
    arrived."""
    return marker.search(text) is None and marker.search(_NOT_ASCII.sub("", text)) is not None


@dataclass(frozen=True)
class Failure:
    """A failure pattern seen on a terminal."""

    terminal: str
    line: str
    pattern: str
    when: float


class BootWatch:
    """Watches every terminal's lines for failure patterns and boot stages (called from the drain
    threads).

    ``failure_patterns`` apply for the instance's whole life; ``boot_failure_patterns`` only until
    ``boot_done`` (the console is ready): after that, text such as ``ERROR: ...`` is a program's
    output, judged with its unit."""

    def __init__(self, profile: Profile, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._failures = [(p, re.compile(p)) for p in profile.failure_patterns]
        self._boot_failures = [(p, re.compile(p)) for p in profile.boot_failure_patterns]
        self.booted = False
        self._benign = [re.compile(p) for p in profile.benign_patterns]
        self._stages = [(s.name, re.compile(s.pattern), s.terminal) for s in profile.boot_stages]
        self._clock = clock
        self._start = clock()
        self._lock = threading.Lock()
        self.failure: Failure | None = None
        self.last_stage: str | None = None
        self.last_stage_terminal: str | None = None
        self.stage_times: dict[str, float] = {}
        self.failed = threading.Event()

    def attach(self, terminal: Terminal) -> None:
        terminal.add_line_listener(self.on_line)

    def on_line(self, terminal: str, line: str) -> None:
        for name, pattern, only in self._stages:
            if (only is None or only == terminal) and pattern.search(line):
                with self._lock:
                    self.last_stage = name
                    self.last_stage_terminal = terminal
                    self.stage_times.setdefault(name, self._clock() - self._start)
        if self.failure is not None:
            return
        patterns = self._failures if self.booted else [*self._failures, *self._boot_failures]
        for text, pattern in patterns:
            if pattern.search(line) and not self._is_benign(line):
                with self._lock:
                    if self.failure is None:
                        self.failure = Failure(terminal, line, text, self._clock())
                        self.failed.set()
                log.debug("failure pattern %r on %s: %s", text, terminal, line)
                return

    def _is_benign(self, line: str) -> bool:
        """A benign line, also when line noise landed in it (the noise is the console's, not a
        firmware error)."""
        cleaned = _NOT_ASCII.sub("", line) if garbled(line) else line
        return any(b.search(line) or b.search(cleaned) for b in self._benign)

    def boot_done(self) -> None:
        """The shell is ready: boot-only failure patterns stop applying."""
        self.booted = True

    def stage_text(self) -> str:
        if self.last_stage is None:
            return "no boot stage recognised"
        return f"last boot stage seen: {self.last_stage} on {self.last_stage_terminal}"


def frame_command(command: str, token: str) -> str:
    """The text typed for ``command``: start marker, the command, end marker with ``$?``.

    A one-line command becomes one line (a trailing ``;`` is dropped: ``;;`` is a syntax error in
    sh). A command of several lines (a here-document, a quoted newline) keeps its lines; the start
    marker goes before its first line and the end marker on a line of its own after the last, where
    ``$?`` is still the command's status.
    """
    if "\r" in command:
        raise ValueError("a console command must not contain carriage returns")
    body = command.strip()
    start = f"printf '%s%s\\n' {START_HEAD} {token}"
    end = f"printf '\\n%s%s:%s\\n' {END_HEAD} {token} $?"
    if "\n" in body:
        return f"{start}; {body}\n{end}"
    while body.endswith(";") and not body.endswith("\\;"):
        body = body[:-1].rstrip()
    if not body:
        body = ":"
    return f"{start}; {body}; {end}"


class Console:
    """The Linux console on one terminal, with every terminal watched for failures."""

    def __init__(
        self,
        terminal: Terminal,
        profile: Profile,
        watch: BootWatch,
        *,
        terminals: dict[str, Terminal] | None = None,
        alive: Callable[[], bool] = lambda: True,
        died_message: Callable[[str], str] | None = None,
        model_log: Path | None = None,
        kernel_line: str | None = KERNEL_LINE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.terminal = terminal
        self.spawn = terminal.spawn
        self.profile = profile
        self.watch = watch
        self.terminals = terminals or {terminal.name: terminal}
        self._alive = alive
        self._died_message = died_message or (lambda what: f"{what}: the model exited")
        self._model_log = model_log
        self._kernel_line = kernel_line
        self._clock = clock
        self._filter = KernelNoiseFilter(kernel_line)
        self._prompts = [re.compile(p) for p in profile.login_prompts]
        self._incorrect = re.compile(re.escape(profile.login_incorrect))
        self._shell_prompt = re.compile(profile.shell_prompt)
        self.state = "booting"
        self.ps1 = ""
        self.ps2 = ""
        self.prompt_seen = ""
        """The prompt the guest showed after ``prepare_shell`` (``ps1`` when the guest honours
        ``PS1``)."""
        self.commands_run = 0
        self.kernel_lines_removed = 0

    @property
    def log_path(self) -> Path:
        return self.terminal.log_path

    # -- health ------------------------------------------------------------------------------------

    def check_health(self, stage: str) -> None:
        """Raise at once if a failure pattern was seen, the model died, or the console closed."""
        failure = self.watch.failure
        if failure is not None:
            remaining = PANIC_GRACE_S - (self._clock() - failure.when)
            if remaining > 0:
                time.sleep(remaining)  # let the call trace arrive so the 200 lines show it
            self.state = "lost"
            term = self.terminals.get(failure.terminal, self.terminal)
            raise KernelPanic(
                f"{failure.terminal} reported a failure during {stage}: {failure.line.strip()!r} "
                f"(pattern {failure.pattern!r}); see {term.log_path}",
                log_path=term.log_path, last_lines=term.tail(200), stage=stage,
            )
        if not self._alive():
            self.state = "lost"
            raise FvpDied(self._died_message(f"the model died during {stage}"),
                          log_path=self._model_log, last_lines=self.terminal.tail(200), stage=stage)
        if self.terminal.closed and self.terminal.storage_failure is not None:
            self.state = "lost"  # its log cannot be written (disk full, ...): no retry can help
            raise self.terminal.storage_failure
        if self.terminal.closed:
            # A crashing model closes its sockets a moment before it can be reaped: tell the two
            # apart.
            end = time.monotonic() + 1.0
            while time.monotonic() < end and self._alive():
                time.sleep(0.05)
            self.state = "lost"
            if not self._alive():
                raise FvpDied(self._died_message(f"the model died during {stage}"),
                              log_path=self._model_log,
                              last_lines=self.terminal.tail(200), stage=stage)
            raise ConsoleLost(
                f"console {self.terminal.name} closed during {stage} "
                f"({self.terminal.close_reason}); see {self.log_path}", log_path=self.log_path,
                last_lines=self.terminal.tail(200), stage=stage)

    def _read(self, deadline: Deadline, stage: str, most: float = POLL_S) -> list[str]:
        """One poll: health check, then up to ``most`` seconds of console text, returned as complete
        clean lines (kernel noise removed); the unfinished line stays in
        ``self._filter.pending``."""
        self.check_health(stage)
        try:
            text = self.spawn.read_nonblocking(65536, timeout=deadline.slice(most))
        except pexpect.TIMEOUT:
            return []
        except pexpect.EOF:
            self.check_health(stage)  # raises: the terminal is closed
            raise ConsoleLost(f"console {self.terminal.name} ended during {stage}",
                              log_path=self.log_path, stage=stage) from None
        before = len(self._filter.removed)
        lines = self._filter.feed(text)
        self.kernel_lines_removed += len(self._filter.removed) - before
        if len(self._filter.removed) > 1000:
            del self._filter.removed[:-100]
        return lines

    # -- boot and login ----------------------------------------------------------------------------

    def _prompt_in(self, lines: Sequence[str]) -> bool:
        tail = self._filter.visible_tail()
        candidates = [tail] if tail else []
        candidates += [line.rstrip("\n") for line in lines[-3:]]
        if any(p.search(c) for p in self._prompts for c in candidates):
            return True
        noisy = [c for c in candidates if garbled(c)]
        if any(p.search(_NOT_ASCII.sub("", c)) for p in self._prompts for c in noisy):
            raise self._garbled("the login prompt", "boot")  # rather than wait for the boot timeout
        return False

    def wait_for_login_prompt(self, deadline: Deadline) -> float:
        """Wait for a login prompt (any of the profile's regexes) on the console; returns seconds
        waited.

        Raises KernelPanic / FvpDied / ConsoleLost as soon as they happen, BootTimeout naming the
        last stage seen.
        """
        while True:
            lines = self._read(deadline, "boot")
            if self._prompt_in(lines):
                self._filter.pending = ""
                self.state = "login"
                log.info("login prompt on %s after %.1f s", self.terminal.name, deadline.elapsed())
                return deadline.elapsed()
            if deadline.expired:
                self.state = "lost"
                raise BootTimeout(
                    deadline.message(f"no login prompt on {self.terminal.name}",
                                     log_path=self.log_path, extra=self.watch.stage_text()),
                    log_path=self.log_path, last_lines=self.terminal.tail(200),
                    stage=self.watch.last_stage or "launch")

    def login(self, deadline: Deadline) -> None:
        """Log in at the prompt just seen, retrying ``Login incorrect``; returns when a shell prompt
        shows."""
        attempts = 1
        self.spawn.sendline(self.profile.user)
        while True:
            lines = self._read(deadline, "login")
            tail = self._filter.visible_tail()
            if any(self._incorrect.search(line) for line in lines):
                attempts += 1
                log.warning("login incorrect on %s (attempt %s)", self.terminal.name, attempts - 1)
                if attempts > LOGIN_ATTEMPTS:
                    self.state = "lost"
                    raise BootTimeout(
                        f"login as {self.profile.user!r} refused {LOGIN_ATTEMPTS} times on "
                        f"{self.terminal.name}; check the profile's user/password; see "
                        f"{self.log_path}",
                        log_path=self.log_path, last_lines=self.terminal.tail(200), stage="login")
                continue
            if PASSWORD_PROMPT.search(tail):
                self._filter.pending = ""
                self.spawn.sendline(self.profile.password or "")
                continue
            if any(p.search(tail) for p in self._prompts):
                # A fresh prompt: after Login incorrect, or our user name was lost in boot noise.
                self._filter.pending = ""
                self.spawn.sendline(self.profile.user)
                continue
            if tail and self._shell_prompt.search(tail):
                self._filter.pending = ""
                self.state = "shell"
                return
            if garbled(tail) and self._shell_prompt.search(_NOT_ASCII.sub("", tail)):
                raise self._garbled("the shell prompt", "login")
            if deadline.expired:
                self.state = "lost"
                raise BootTimeout(
                    deadline.message(f"no shell prompt on {self.terminal.name} after logging in as "
                                     f"{self.profile.user!r}", log_path=self.log_path),
                    log_path=self.log_path, last_lines=self.terminal.tail(200), stage="login")

    def prepare_shell(self, deadline: Deadline, *, quiet_kernel: bool = True) -> None:
        """Make the shell machine-friendly: no echo, unique prompts, kernel messages off the
        console.

        The prompts are typed split (``'fh-''TOKEN# '``) so an echoed line never shows them;
        afterwards the guest must show ``PS1`` (``prompt_seen``). A shell that ignores it is logged:
        its one-line commands still work, but the output of a multi-line command would keep that
        shell's prompts.
        """
        token = secrets.token_hex(4)
        self.ps1, self.ps2 = f"fh-{token}# ", f"fh-{token}> "
        setup = ["stty -echo", f"export PS1='fh-''{token}# ' PS2='fh-''{token}> '"]
        if quiet_kernel:
            setup.append("dmesg -n 1")
        for command in setup:
            try:
                result = self.run(command, deadline=deadline.child("login"), stage="login")
            # the shell is not usable: the platform's failure, like a lost console
            except CommandTimeout as exc:
                self.state = "lost"
                raise ConsoleLost(f"the shell on {self.terminal.name} did not complete {command!r} "
                                  f"while being set up: {exc.message}", log_path=self.log_path,
                                  last_lines=self.terminal.tail(200), stage="login") from exc
            if not result.ok:
                log.warning("shell setup %r exited %s: %s", command, result.exit_status,
                            result.output.strip())
        self._check_prompt(deadline)
        self.watch.boot_done()
        self.state = "ready"

    def _check_prompt(self, deadline: Deadline) -> None:
        """Wait (briefly) for the prompt after the last setup command and record what the guest
        shows."""
        check = Deadline.after(min(PROMPT_CHECK_S, max(deadline.remaining(), 0.5)), "login",
                               clock=self._clock)
        while True:
            tail = self._filter.visible_tail()
            if tail.endswith(self.ps1):
                self.prompt_seen = self.ps1
                return
            if check.expired:
                break
            self._read(check, "login")
        tail = self._filter.visible_tail()
        self.prompt_seen = tail if self._shell_prompt.search(tail) else ""
        log.warning("the guest shell on %s does not show the PS1 the harness set (%r); it shows %r",
                    self.terminal.name, self.ps1, tail)

    def _strip_prompts(self, text: str) -> str:
        """Multi-line command output without the (unique) prompts the shell printed between its
        lines."""
        for prompt in (self.ps1, self.ps2):
            if prompt:
                text = text.replace(prompt, "")
        return text

    # -- commands ----------------------------------------------------------------------------------

    def run(self, command: str, *, deadline: Deadline, stage: str = "command",
            strict: bool = True) -> CommandResult:
        """Run one framed command and return its exact output and exit status.

        Raises CommandTimeout (it started and did not finish; the console recovered), ConsoleLost
        (it did not recover, or the command never started), ConsoleGarbled (line noise hit a marker,
        or with ``strict`` the output), KernelPanic, FvpDied. ``strict=False`` keeps output with
        invalid bytes (``get`` of a file whose sha256 then decides).
        """
        return self._run(command, deadline=deadline, stage=stage, strict=strict)

    def _garbled(self, what: str, stage: str, output: str = "") -> ConsoleGarbled:
        """``what`` was damaged by line noise (``the end marker of 'ls'``): the console can no
        longer be trusted."""
        self.state = "lost"
        return ConsoleGarbled(
            f"console {self.terminal.name} garbled {what} during {stage} (line noise: the text is "
            f"not what the guest printed); see {self.log_path}", output=output,
            log_path=self.log_path, last_lines=self.terminal.tail(200), stage=stage)

    def _run(self, command: str, *, deadline: Deadline, stage: str, strict: bool = True,
             resync: bool = False) -> CommandResult:
        token = secrets.token_hex(6)
        line = frame_command(command, token)
        several_lines = "\n" in line
        start_re = re.compile(re.escape(START_HEAD + token) + r"$")
        end_re = re.compile(re.escape(END_HEAD + token) + r":(\d+)$")
        self.spawn.discard_pending()
        self._filter.pending = ""
        began = self._clock()
        self.commands_run += 1
        self._send_line(line, stage)
        started = False
        noise = False
        out: list[str] = []
        while True:
            lines = self._read(deadline, stage)
            for text in lines:
                body = text[:-1]
                dirty = garbled(body)
                noise = noise or dirty
                if not started:
                    started = bool(start_re.search(body))
                    if (strict and dirty) or (not started and _noisy_marker(body, start_re)):
                        raise self._garbled(f"the start of {command!r}", stage)
                    continue
                match = end_re.search(body)
                if (strict and dirty) or (match is None and _noisy_marker(body, end_re)):
                    at_end = match is not None or _noisy_marker(body, end_re)
                    raise self._garbled(f"{'the end marker' if at_end else 'the output'} of "
                                        f"{command!r}", stage, "".join(out) + body)
                if match:
                    if match.start() > 0:
                        out.append(body[: match.start()])
                    output = "".join(out)
                    if several_lines:
                        output = self._strip_prompts(output)
                    if output.endswith("\n"):
                        output = output[:-1]  # the LF the end marker's printf added
                    return CommandResult(command=command, exit_status=int(match.group(1)),
                                         output=output,
                                         duration_s=self._clock() - began, log_path=self.log_path)
                out.append(text)
            if deadline.expired and not resync and (noise or not started):
                self.state = "lost"
                kind = ConsoleGarbled if noise else ConsoleLost
                extra = "the console garbles text" if noise else "the shell did not answer"
                if not started:
                    # No start marker: the command did not run as typed (input lost or garbled, a
                    # shell that does not answer). Not the command's failure: the console cannot be
                    # trusted.
                    raise kind(deadline.message(f"command {command!r} never started (no start "
                                                f"marker on {self.terminal.name})",
                                                log_path=self.log_path, extra=extra),
                               log_path=self.log_path, last_lines=self.terminal.tail(200),
                               stage=stage)
                # started, but noise may have garbled the end marker beyond recognition: the
                # console's failure
                raise kind(deadline.message(f"no end marker for command {command!r} on "
                                            f"{self.terminal.name}",
                                            log_path=self.log_path, extra=extra),
                           log_path=self.log_path, last_lines=self.terminal.tail(200), stage=stage)
            if deadline.expired:
                partial = "".join(out)
                if not resync:
                    self._interrupt_and_resync(command, deadline, stage)
                # what expired first, the command last: a runner's command line is long, and the one
                # line a failure gets in a CI log must still say after how long and which setting to
                # raise
                raise CommandTimeout(
                    deadline.message("command did not finish", log_path=self.log_path,
                                     extra="interrupted with Ctrl-C; the console recovered")
                    + f": {command}", exit_status=124, output=partial, log_path=self.log_path,
                    last_lines=self.terminal.tail(50), stage=stage)

    def _send_line(self, line: str, stage: str) -> None:
        try:
            self.spawn.sendline(line)
        except OSError as exc:
            self.check_health(stage)
            self.state = "lost"
            raise ConsoleLost(f"cannot write to console {self.terminal.name}: {exc}",
                              log_path=self.log_path, stage=stage) from exc

    def _interrupt_and_resync(self, command: str, deadline: Deadline, stage: str) -> None:
        """Ctrl-C, then a framed no-op must come back within a short grace; otherwise the console is
        lost."""
        grace = max(5.0, min(30.0, deadline.seconds * 0.25))
        for _attempt in range(2):
            self._send_line("\x03", stage)
            time.sleep(0.1)
            try:
                self._run(":", deadline=Deadline.after(grace / 2, "resync", clock=self._clock),
                          stage="resync", resync=True)
                return
            except CommandTimeout:
                continue
        self.state = "lost"
        raise ConsoleLost(
            f"console {self.terminal.name} did not recover after interrupting {command!r} "
            f"(no answer to Ctrl-C within {grace:.3g} s); see {self.log_path}",
            log_path=self.log_path, last_lines=self.terminal.tail(200), stage=stage)

    def stream_commands(self, commands: Iterable[str], *, deadline: Deadline,
                        window_bytes: int = 16384, stage: str = "deploy") -> int:
        """Run many short commands back to back, keeping at most ``window_bytes`` of typed input
        unanswered.

        Each line carries an acknowledgement (``printf`` of a token, the line number and ``$?``), so
        the host can type ahead a bounded amount (the guest's tty buffers are finite) and still
        learn each line's status. Returns how many commands ran; raises CommandFailed on the first
        non-zero status (after waiting for the lines already typed), CommandTimeout / ConsoleLost
        like ``run``.
        """
        token = secrets.token_hex(6)
        ack_re = re.compile(re.escape(ACK_HEAD + token) + r":(\d+):(\d+)$")
        self.spawn.discard_pending()
        self._filter.pending = ""
        inflight: list[tuple[int, int, str]] = []  # (index, bytes, command)
        inflight_bytes = 0
        failed: tuple[int, int, str] | None = None
        source = iter(commands)
        held: str | None = None
        exhausted = False
        index = 0
        done = 0
        while True:
            while not exhausted and failed is None:
                if held is not None:
                    command, held = held, None
                else:
                    try:
                        command = next(source)
                    except StopIteration:
                        exhausted = True
                        break
                line = f"{command}; printf '%s%s:%s:%s\\n' {ACK_HEAD} {token} {index} $?"
                size = len(line) + 1
                if inflight and inflight_bytes + size > window_bytes:
                    held = command
                    break
                self._send_line(line, stage)
                inflight.append((index, size, command))
                inflight_bytes += size
                index += 1
            if not inflight:
                if failed is not None:
                    number, status, command = failed
                    raise CommandFailed(f"command {number} of a stream ({command[:60]!r}...) "
                                        f"exited {status}",
                                        exit_status=status, log_path=self.log_path, stage=stage)
                return done
            lines = self._read(deadline, stage)
            for text in lines:
                match = ack_re.search(text[:-1])
                if not match:
                    if garbled(text) or _noisy_marker(text[:-1], ack_re):
                        raise self._garbled(f"the acknowledgement of streamed line {done + 1} of "
                                            f"{index}", stage)
                    continue
                number, status = int(match.group(1)), int(match.group(2))
                while inflight and inflight[0][0] <= number:
                    entry = inflight.pop(0)
                    inflight_bytes -= entry[1]
                    done += 1
                    if entry[0] == number and status != 0 and failed is None:
                        failed = (number, status, entry[2])
            if deadline.expired:
                self._interrupt_and_resync("stream of commands", deadline, stage)
                raise CommandTimeout(
                    deadline.message(f"streamed commands stalled after {done} of {index} sent",
                                     log_path=self.log_path),
                    exit_status=124, log_path=self.log_path, last_lines=self.terminal.tail(50),
                    stage=stage)

