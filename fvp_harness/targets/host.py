"""This machine as a target, for runs that need no model (VGF host runs).

Commands run under ``/bin/sh`` (the Target contract hands over one shell command line, already quoted) in a private
temporary working folder, each in its own process group so a timeout kills the whole command tree. Relative "guest"
paths are relative to that folder; deploy puts artifacts under ``guest_dir`` (``<workdir>/artifacts``), which the
deploy layer prefers over the scenario's guest folder, so nothing outside the working folder is written.

The command line reaches the shell as a script file (mode 0600, in the 0700 working folder), never as an argument:
it holds the scenario's environment values (``NAME='value' runner ...``), secrets included, and every process's
argv is world-readable (``ps``, ``/proc/PID/cmdline``). The runner then has the values in its environment, which
only the same user and root can read (``/proc/PID/environ``); ``docs/scenarios.md`` says so.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from fvp_harness.targets.base import CommandResult
from fvp_harness.targets.console import CommandTimeout
from fvp_harness.targets.text import mask

__all__ = ["HostTarget"]

log = logging.getLogger(__name__)


class HostTarget:
    """Runs commands on this host in a temporary working folder removed at close (``Target``, ``NamesPhases``,
    ``SharesHostFiles``)."""

    def __init__(self, *, log_dir: Path, name: str = "host", command_timeout: float = 120.0,
                 timeout_scale: float = 1.0, redact: Sequence[str] = ()) -> None:
        self.name = name
        self.redact = tuple(redact)
        """Secret texts ``host.log`` shows as ``***`` (``run.instances`` passes the scenario's)."""
        self.log_dir = Path(log_dir)
        self.metadata: dict[str, object] = {"kind": "host"}
        self.command_timeout = command_timeout
        self.timeout_scale = timeout_scale
        self.workdir: Path | None = None
        self._log: TextIO | None = None

    def open(self) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="fvp-harness-host-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._log = (self.log_dir / "host.log").open("a", encoding="utf-8")
        self.metadata.update({"workdir": str(self.workdir), "uname": " ".join(os.uname())})

    def close(self) -> None:
        if self._log is not None:
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
        """A "guest" path on this host: absolute paths as they are, relative ones inside the working folder."""
        assert self.workdir is not None, "open() the target first"
        path = Path(remote)
        return path if path.is_absolute() else self.workdir / path

    @property
    def guest_dir(self) -> str:
        """Where deploy puts artifacts on this target (inside the working folder, which exists once open)."""
        if self.workdir is None:  # AttributeError: `isinstance(target, SharesHostFiles)` is then simply False
            raise AttributeError("guest_dir: open() the host target first")
        return str(self.workdir / "artifacts")

    def redact_also(self, secrets: Sequence[str]) -> None:
        """Mask these texts in ``host.log`` too (``MasksSecrets``)."""
        self.redact = tuple(dict.fromkeys([*self.redact, *secrets]))

    def run(self, command: str, timeout: float | None = None) -> CommandResult:
        """Run ``/bin/sh -c command`` in the working folder; its process group is killed at the timeout."""
        return self.run_in_phase(command, timeout, "command")

    def run_in_phase(self, command: str, timeout: float | None, phase: str) -> CommandResult:
        """``run`` with its timeout message naming ``phase`` (``NamesPhases``)."""
        assert self.workdir is not None, "open() the target first"
        limit = (timeout if timeout is not None else self.command_timeout) * self.timeout_scale
        began = time.monotonic()
        script = _script_file(self.workdir, command)
        proc = subprocess.Popen(["/bin/sh", script], cwd=self.workdir, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired as exc:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            raise CommandTimeout(f"host command {command!r} did not finish after {limit:.4g} s (phase {phase}); "
                                 f"killed; pass --timeout-scale to allow more time", exit_status=124,
                                 output=(out or b"").decode("utf-8", "replace")) from exc
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            os.unlink(script)
        text = (out or b"").decode("utf-8", "replace").replace("\r\n", "\n")
        if self._log is not None:
            self._log.write(mask(f"$ {command}\n{text}[exit {proc.returncode}]\n", self.redact))
            self._log.flush()
        return CommandResult(command=command, exit_status=proc.returncode, output=text,
                             duration_s=time.monotonic() - began, log_path=self.log_dir / "host.log")

    def put(self, local: Path, remote: str) -> None:
        target = self.local_path(remote)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(local, target)
        shutil.copymode(local, target)

    def get(self, remote: str) -> bytes:
        return self.local_path(remote).read_bytes()


def _script_file(folder: Path, command: str) -> str:
    """``command`` in a new file only this user can read, for ``/bin/sh FILE``: no secret on a world-readable argv
    (see the module docstring). The caller removes it when the command has ended."""
    fd, path = tempfile.mkstemp(prefix=".command-", suffix=".sh", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(command + "\n")
    return path
