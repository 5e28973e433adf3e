"""The supervisor (targets/supervisor.py) between the harness and every process tree it starts: it
exits as the command did, and when the harness dies, even by SIGKILL, it ends everything it holds,
``setsid`` children included (issue 36, findings 2 and 3)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from fvp_harness.targets.supervise import dies_with_harness, stop_tree
from tests.helpers import REPO
from tests.proc_scan import processes_with_env

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the supervisor is Linux's")


def _gone_within(name: str, value: str, seconds: float) -> float | None:
    began = time.monotonic()
    while time.monotonic() - began < seconds:
        if not processes_with_env(name, value):
            return time.monotonic() - began
        time.sleep(0.01)
    return None


def _reap(name: str, value: str) -> list[int]:
    left = processes_with_env(name, value)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left


@pytest.mark.parametrize(("script", "status"), [("exit 3", 3), ("kill -TERM $$", -signal.SIGTERM),
                                                 ("kill -SEGV $$", -signal.SIGSEGV)])
def test_it_exits_as_the_command_did(tmp_path: Path, script: str, status: int) -> None:
    done = subprocess.run(dies_with_harness(["/bin/sh", "-c", script]), cwd=tmp_path, timeout=30)
    assert done.returncode == status
    assert not list(tmp_path.iterdir()), "no core file of the supervisor"


def test_a_command_that_cannot_start_is_127_with_the_reason() -> None:
    done = subprocess.run(dies_with_harness(["/nonexistent/runner"]), capture_output=True,
                          text=True, timeout=30)
    assert (done.returncode == 127 and
            "/nonexistent/runner: No such file or directory" in done.stderr)


def test_the_command_gets_default_signal_actions() -> None:
    """Python ignores SIGPIPE; a command must not inherit that (``yes | head`` would never end)."""
    done = subprocess.run(dies_with_harness(["/bin/sh", "-c",
                                             "yes | head -c 10 >/dev/null; echo ok"]),
                          capture_output=True, text=True, timeout=30)
    assert done.stdout == "ok\n"


def test_stop_ends_a_setsid_child_at_once() -> None:
    mark = uuid.uuid4().hex
    proc = subprocess.Popen(dies_with_harness(["/bin/sh", "-c", "setsid sleep 1000 & sleep 1000"]),
                            env={**os.environ, "T36_MARK": mark}, start_new_session=True)
    try:
        while len(processes_with_env("T36_MARK", mark)) < 4:  # supervisor, shell, two sleeps
            time.sleep(0.02)
        stop_tree(proc.pid)
        assert proc.wait(timeout=5) == -signal.SIGKILL
        assert _gone_within("T36_MARK", mark, 1.0) is not None
    finally:
        assert not _reap("T36_MARK", mark)


HARNESS = """\
import subprocess, sys, time
from fvp_harness.targets.children import ProcessTree
tree = ProcessTree.start(["/bin/sh", "-c",
                          "setsid sleep 1000 & (sleep 1000; echo late) & sleep 1000"],
                         label="runner", stdout=subprocess.DEVNULL)
print(tree.pid, flush=True)
time.sleep(1000)
"""


def test_a_sigkilled_harness_takes_every_descendant_with_it(tmp_path: Path) -> None:
    """The issue's runner (``setsid sleep 1000 & sleep 1000``): before, both sleeps and the shell
    lived on."""
    mark = uuid.uuid4().hex
    script = tmp_path / "harness.py"
    script.write_text(textwrap.dedent(HARNESS))
    harness = subprocess.Popen([sys.executable, str(script)], cwd=REPO, stdout=subprocess.PIPE,
                               text=True, env={**os.environ, "T36_MARK": mark})
    try:
        assert harness.stdout is not None and harness.stdout.readline().strip().isdigit()
        deadline = time.monotonic() + 10
        sleeps = 0
        # harness, supervisor, shell, subshell, three sleeps
        while sleeps < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
            sleeps = sum(Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sleep\0")
                         for pid in processes_with_env("T36_MARK", mark)
                         if Path(f"/proc/{pid}").exists())
        assert sleeps == 3
        harness.kill()
        harness.wait()
        took = _gone_within("T36_MARK", mark, 5.0)
        print(f"\nSIGKILL of the harness to the last descendant gone: {took} s")
        assert took is not None and took < 2.0, "processes outlived the SIGKILLed harness"
    finally:
        if harness.poll() is None:
            harness.kill()
        left = _reap("T36_MARK", mark)
        harness.communicate()
        assert not left
