"""Host commands are process trees the harness ends whole: a ``setsid`` child holding stdout open, a
runner that prints without end, a second stop while a command runs (issue 23 items 1 and 5)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from fvp_harness.errors import CommandFailed, OutputLimitExceeded
from fvp_harness.targets.children import ProcessTree, marked_processes
from fvp_harness.targets.console import CommandTimeout
from fvp_harness.targets.host import HostTarget
from fvp_harness.targets.leftovers import OWNER_FILE
from tests.proc_scan import processes_with_env


def _no_strays(marker: str) -> None:
    deadline = time.monotonic() + 3
    while processes_with_env("T23_MARK", marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not processes_with_env("T23_MARK", marker), (
        "a process the command started is still alive")


def test_a_setsid_child_holding_stdout_open_is_ended_at_the_timeout(tmp_path: Path) -> None:
    with HostTarget(log_dir=tmp_path / "logs") as target:
        began = time.monotonic()
        with pytest.raises(CommandTimeout) as caught:
            target.run("export T23_MARK=a; setsid sleep 100000 & echo started; sleep 100000",
                       timeout=1.0)
        assert time.monotonic() - began < 6
    assert "did not finish after 1 s" in str(caught.value)
    assert str(caught.value).endswith("sleep 100000"), (
        "the command the user wrote comes last, whole")
    assert "host.log" in str(caught.value)
    assert "started" in caught.value.output
    _no_strays("a")


def test_a_finished_command_leaves_no_child_behind_even_one_that_keeps_its_stdout(
        tmp_path: Path) -> None:
    with HostTarget(log_dir=tmp_path / "logs") as target:
        began = time.monotonic()
        result = target.run("export T23_MARK=b; setsid sleep 100000 & echo done", timeout=30)
        assert time.monotonic() - began < 5, "the open pipe of the escaped child is not waited for"
    assert result.exit_status == 0 and "done" in result.output
    _no_strays("b")


def test_a_runner_printing_more_than_max_output_is_ended_and_the_log_is_bounded(
        tmp_path: Path) -> None:
    with HostTarget(log_dir=tmp_path / "logs", max_output=1 << 20) as target:
        with pytest.raises(OutputLimitExceeded) as caught:
            target.run("export T23_MARK=c; yes 0123456789abcdef", timeout=60)
        assert "more than 1048576 bytes (run.max_output)" in str(caught.value)
        assert len(caught.value.output) <= 4096
    assert (tmp_path / "logs" / "host.log").stat().st_size < 2 << 20
    _no_strays("c")


def test_output_streams_to_the_log_with_secrets_masked(tmp_path: Path) -> None:
    with HostTarget(log_dir=tmp_path / "logs", redact=("hunter2",)) as target:
        result = target.run("printf 'a hunter2 b\\nno newline'", timeout=10)
    assert result.output == "a hunter2 b\nno newline"
    log = (tmp_path / "logs" / "host.log").read_text()
    assert "hunter2" not in log and "a *** b" in log and "no newline\n[exit 0]" in log


def test_a_shell_that_cannot_start_leaves_no_file_holding_the_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command (secrets too) reaches the shell through its environment: no file holds it at any
    time."""
    def no_shell(*args: object, **kwargs: object) -> ProcessTree:
        raise FileNotFoundError(2, "No such file or directory", "/bin/sh")

    with HostTarget(log_dir=tmp_path / "logs") as target:
        monkeypatch.setattr(ProcessTree, "start", no_shell)
        with pytest.raises(CommandFailed, match="cannot start /bin/sh"):
            target.run("echo hunter2", timeout=10)
        assert target.workdir is not None
        assert [p.name for p in target.workdir.rglob("*") if p.is_file()] == [OWNER_FILE]


def test_closing_the_target_ends_a_command_in_flight(tmp_path: Path) -> None:
    target = HostTarget(log_dir=tmp_path / "logs")
    target.open()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            target.run("export T23_MARK=d; sleep 100000", timeout=100)
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    time.sleep(0.5)
    target.close()
    worker.join(timeout=5)
    assert not worker.is_alive(), "the command in flight was not ended by close()"
    _no_strays("d")


def test_a_setsid_child_is_ended_by_the_supervisor_when_the_command_exits(tmp_path: Path) -> None:
    """The supervisor (a subreaper) holds the escaped child and ends it before it exits with the
    command's status: once ``wait`` returns, nothing the command started runs."""
    tree = ProcessTree.start(["/bin/sh", "-c", "setsid sleep 100000 & exit 3"], label="test",
                             grace=0.5)
    try:
        assert tree.wait(10) == 3
        assert not marked_processes(tree.token), "the escaped child outlived the supervisor"
    finally:
        tree.end(0.5)


def test_the_harness_adopts_no_orphans_its_supervisors_do(tmp_path: Path) -> None:
    """The harness is no subreaper (a long-lived process, a pytest worker or the Python API, would
    collect as zombies the orphans of every child it has): each tree's supervisor is."""
    import os
    import subprocess
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_CHILD_SUBREAPER is Linux's")

    def orphan_parent() -> int:
        shell = subprocess.run(["/bin/sh", "-c", "sleep 2 >/dev/null 2>&1 & echo $!"],
                               capture_output=True, text=True, timeout=10, check=True)
        pid = int(shell.stdout)
        parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        os.kill(pid, 9)
        if parent == os.getpid():
            os.waitpid(pid, 0)  # adopted: ours to reap
        return parent

    tree = ProcessTree.start(["/bin/sh", "-c", "(sleep 30 &); sleep 31"], label="test tree")
    try:
        assert orphan_parent() != os.getpid(), (
            "the harness adopts nothing, even while a tree is live")
        deadline = time.monotonic() + 5
        adopted: list[int] = []
        while not adopted and time.monotonic() < deadline:
            adopted = [pid for pid in marked_processes(tree.token)
                       if int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
                       == tree.pid
                       and Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x0030\x00"]
            time.sleep(0.02)
        assert adopted, "the orphaned sleep is the supervisor's child"
    finally:
        tree.end(0.5)
    assert not marked_processes(tree.token)
