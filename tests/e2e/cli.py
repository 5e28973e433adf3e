"""Running ``fvp-harness`` as a user does, a separate process, and proving it left no model behind.

Every end-to-end test drives the CLI through ``run_cli``: the process is killed if it outlives ``timeout``, and the
models it started (each carries the harness's pid in ``FVP_HARNESS_OWNER_PID``) must be gone within ``grace``
seconds; strays are killed so one leak does not poison the next test, and the test fails naming them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from tests.helpers import eventually
from tests.proc_scan import processes_with_env

__all__ = ["assert_no_models_left", "run_cli"]


def assert_no_models_left(pid: int, grace: float = 5.0) -> None:
    """Fail (after killing them) if processes the harness process ``pid`` started are alive after ``grace``
    seconds."""
    eventually(lambda: not processes_with_env("FVP_HARNESS_OWNER_PID", str(pid)), timeout=grace, interval=0.1)
    left = processes_with_env("FVP_HARNESS_OWNER_PID", str(pid))
    for stray in left:
        os.kill(stray, signal.SIGKILL)
    assert not left, f"simulator processes left running: {left}"


def run_cli(cwd: Path, *args: str, timeout: float = 300,
            env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m fvp_harness ARGS`` in ``cwd``; its output, once the process and every model it started are
    gone."""
    proc = subprocess.Popen([sys.executable, "-m", "fvp_harness", *args], cwd=cwd, text=True, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            out, err = proc.communicate()
        assert_no_models_left(proc.pid)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
