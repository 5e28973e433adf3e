"""This machine as a target, for runs that need no model (VGF host runs).

Why it is shaped so: docs/architecture.md, "Inside `targets/`"."""

from __future__ import annotations

import codecs
import contextlib
import logging
import os
import select
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, TextIO

from fvp_harness.errors import CommandFailed, OutputLimitExceeded, storage_error
from fvp_harness.targets.base import CommandResult
from fvp_harness.targets.children import ProcessTree
from fvp_harness.targets.console import CommandTimeout
from fvp_harness.targets.leftovers import collect, write_owner
from fvp_harness.targets.text import held_back, mask

__all__ = ["COMMAND_ENV", "DEFAULT_MAX_OUTPUT", "MAX_COMMAND", "STRAY_OUTPUT_S", "HostTarget"]

COMMAND_ENV = "FVP_HARNESS_COMMAND"
"""The environment variable a host command reaches ``/bin/sh`` in (see the module docstring)."""

MAX_COMMAND = 100_000
"""Longest command line (characters) passed: Linux refuses one environment string over 128 KiB."""

WORKDIR_PREFIX = "fvp-harness-host-"

_SHELL_LINE = ('__fvp_harness_command=$FVP_HARNESS_COMMAND; unset FVP_HARNESS_COMMAND; '
               'eval "$__fvp_harness_command"')
"""``/bin/sh -c`` text: the command from the environment, which the runner does not inherit."""

DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024
"""Bytes of one host command's output kept in memory (``run.max_output``'s default): a runner's
metrics lines are kilobytes; a runner printing more than this is broken, and is ended rather than
allowed to take the host's memory."""

STRAY_OUTPUT_S = 1.0
"""After the command exited: how long a process it started may still hold its output open before it
is ended."""

_CHUNK = 65536
_LOG_PIECE = 1 << 20

log = logging.getLogger(__name__)


class HostTarget:
    """Runs commands on this host in a temporary working folder removed at close (``Target``,
    ``NamesPhases``, ``SharesHostFiles``)."""

    def __init__(self, *, log_dir: Path, name: str = "host", command_timeout: float = 120.0,
                 timeout_scale: float = 1.0, redact: Sequence[str] = (),
                 max_output: int = DEFAULT_MAX_OUTPUT) -> None:
        self.name = name
        self.redact = tuple(redact)
        """Secret texts ``host.log`` shows as ``***`` (``run.instances`` passes the scenario's)."""
        self.log_dir = Path(log_dir)
        self.metadata: dict[str, object] = {"kind": "host"}
        self.command_timeout = command_timeout
        self.timeout_scale = timeout_scale
        self.max_output = max_output
        """Bytes of one command's output kept; more ends the command (``OutputLimitExceeded``,
        ``run.max_output``)."""
        self.workdir: Path | None = None
        self._log: TextIO | None = None
        self._trees: set[ProcessTree] = set()
        self._trees_lock = threading.Lock()

    def open(self) -> None:
        collect([Path(tempfile.gettempdir())], WORKDIR_PREFIX + "*")
        self.workdir = Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX))
        try:
            write_owner(self.workdir)
            self.log_dir.mkdir(parents=True, exist_ok=True)
            self._log = self.log_path.open("a", encoding="utf-8")
        except OSError as exc:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None
            raise storage_error(self.log_path, exc, "open") from exc
        self.metadata.update({"workdir": str(self.workdir), "uname": " ".join(os.uname())})

    def close(self) -> None:
        """End every command still running (a second Ctrl-C closes targets under the units in
        flight), then remove the working folder. Never raises."""
        with self._trees_lock:
            trees = list(self._trees)
        for tree in trees:
            tree.end(0.5)
        if self._log is not None:
            with contextlib.suppress(OSError):  # a full disk: the log loses its last buffered line
                self._log.close()
            self._log = None
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self) -> HostTarget:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def local_path(self, remote: str) -> Path:
        """A "guest" path on this host: absolute paths as they are, relative ones inside the working
        folder."""
        assert self.workdir is not None, "open() the target first"
        path = Path(remote)
        return path if path.is_absolute() else self.workdir / path

    @property
    def guest_dir(self) -> str:
        """Where deploy puts artifacts on this target (inside the working folder, which exists once
        open)."""
        # AttributeError: `isinstance(target, SharesHostFiles)` is then simply False
        if self.workdir is None:
            raise AttributeError("guest_dir: open() the host target first")
        return str(self.workdir / "artifacts")

    def redact_also(self, secrets: Sequence[str]) -> None:
        """Mask these texts in ``host.log`` too (``MasksSecrets``)."""
        self.redact = tuple(dict.fromkeys([*self.redact, *secrets]))

    def run(self, command: str, timeout: float | None = None) -> CommandResult:
        """Run ``/bin/sh -c command`` in the working folder; its whole process tree is ended at the
        timeout."""
        return self.run_in_phase(command, timeout, "command")

    def run_in_phase(self, command: str, timeout: float | None, phase: str) -> CommandResult:
        """``run`` with its timeout message naming ``phase`` (``NamesPhases``).

        The output is streamed to ``host.log`` as it comes and kept in memory up to ``max_output``
        bytes; a command that prints more is ended and raises ``OutputLimitExceeded``. Every read
        has the command's deadline: a child that keeps stdout open after the command ended (``setsid
        ... &``) gets ``STRAY_OUTPUT_S`` more, then is ended with the rest of the tree
        (``children.ProcessTree``)."""
        assert self.workdir is not None, "open() the target first"
        limit = (timeout if timeout is not None else self.command_timeout) * self.timeout_scale
        began = time.monotonic()
        deadline = began + limit
        if len(command) > MAX_COMMAND:
            raise CommandFailed(f"the host command is {len(command)} characters long; at most "
                                f"{MAX_COMMAND} can be passed to /bin/sh", exit_status=126)
        self._log_write(f"$ {command}\n")
        try:
            tree = ProcessTree.start(["/bin/sh", "-c", _SHELL_LINE],
                                     label=f"{self.name}: host command",
                                     cwd=self.workdir, env={**os.environ, COMMAND_ENV: command},
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     grace=STRAY_OUTPUT_S)
        except OSError as exc:
            raise CommandFailed(f"cannot start /bin/sh on this host: {exc}",
                                exit_status=127) from exc
        with self._trees_lock:
            self._trees.add(tree)
        sink = _OutputSink(self, self.max_output)
        status: int | None = None
        try:
            assert tree.proc.stdout is not None
            fd = tree.proc.stdout.fileno()
            ended = _read_until(fd, sink, deadline, exited=lambda: tree.proc.poll() is not None)
            # the command is done, but a process it started holds its output open
            if ended == "exited":
                _read_until(fd, sink, time.monotonic() + STRAY_OUTPUT_S)
            status = tree.wait(max(0.0, deadline - time.monotonic()))
            # the deadline passed (or it closed its output and did not exit in time)
            if status is None:
                tree.end()
                # what was in the pipe when it was ended
                _read_until(fd, sink, time.monotonic() + 0.2)
                self._log_write(sink.flush() + f"[ended after {limit:.4g} s]\n")
                raise CommandTimeout(
                    f"host command did not finish after {limit:.4g} s (phase {phase}) and was "
                    "ended with every process it started; pass --timeout-scale to allow more time "
                    f"(log: {self.log_path}): {command}", exit_status=124, output=sink.text(),
                    log_path=self.log_path)
        except OutputLimitExceeded:
            tree.end()
            self._log_write(sink.flush()
                            + f"[ended: more than {self.max_output} bytes of output]\n")
            raise
        finally:
            tree.end()  # strays of a finished command too: nothing it started outlives it
            with self._trees_lock:
                self._trees.discard(tree)
            if tree.proc.stdout is not None:
                tree.proc.stdout.close()
        text = sink.text()
        self._log_write(sink.flush() + f"[exit {status}]\n")
        return CommandResult(command=command, exit_status=status, output=text,
                             duration_s=time.monotonic() - began, log_path=self.log_path)

    @property
    def log_path(self) -> Path:
        return self.log_dir / "host.log"

    def _log_write(self, text: str) -> None:
        """Append to ``host.log`` (secrets masked); a write that fails is the host's storage
        failing: raised as ``StorageError`` naming the file (the run ends at once)."""
        if self._log is None or not text:
            return
        try:
            self._log.write(mask(text, self.redact))
            self._log.flush()
        except OSError as exc:
            raise storage_error(self.log_path, exc, "write") from exc

    def put(self, local: Path, remote: str) -> None:
        target = self.local_path(remote)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(local, target)
        shutil.copymode(local, target)

    def get(self, remote: str) -> bytes:
        return self.local_path(remote).read_bytes()


def _read_until(fd: int, sink: _OutputSink, deadline: float,
                exited: Callable[[], bool] | None = None) -> Literal["eof", "deadline", "exited"]:
    """Read ``fd`` into ``sink`` until EOF, ``deadline``, or (checked whenever the pipe is quiet)
    ``exited()``; never blocks past the deadline."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "deadline"
        readable, _, _ = select.select([fd], [], [], min(remaining, 0.1))
        if not readable:
            if exited is not None and exited():
                return "exited"
            continue
        data = os.read(fd, _CHUNK)
        if not data:
            return "eof"
        sink.feed(data)


class _OutputSink:
    """A command's output: streamed into ``host.log`` in pieces (never splitting a secret), the
    first ``limit`` bytes kept for the result; more raises ``OutputLimitExceeded``."""

    def __init__(self, target: HostTarget, limit: int) -> None:
        self._target = target
        self._limit = limit
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._kept: list[str] = []
        self._size = 0
        self._pending = ""

    def feed(self, data: bytes) -> None:
        self._size += len(data)
        text = self._decoder.decode(data)
        if self._size > self._limit:
            self._pending += text
            raise OutputLimitExceeded(
                f"the command printed more than {self._limit} bytes (run.max_output) and was "
                f"ended; the output so far is in {self._target.log_path}", exit_status=1,
                output=self.text()[-4096:], log_path=self._target.log_path)
        self._kept.append(text)
        self._pending += text
        if len(self._pending) >= _LOG_PIECE or "\n" in text:
            cut = (self._pending.rfind("\n") + 1 if len(self._pending) < _LOG_PIECE
                   else len(self._pending))
            cut -= (held_back(self._pending[:cut], self._target.redact) if cut == len(self._pending)
                    else 0)
            piece, self._pending = self._pending[:cut], self._pending[cut:]
            self._target._log_write(piece)

    def flush(self) -> str:
        """What is not in the log yet (the unfinished last line), for the caller's last log
        write."""
        self._pending += self._decoder.decode(b"", final=True)
        rest, self._pending = self._pending, ""
        return rest if not rest or rest.endswith("\n") else rest + "\n"

    def text(self) -> str:
        return "".join(self._kept).replace("\r\n", "\n")
