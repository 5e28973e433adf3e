"""The Dask executor: how a task reads the batch's stop events and tells a lost scheduler from a bug
(fast, no cluster), and ``make`` on real Dask clusters of worker *processes* (slow): a
``LocalCluster`` started by ``--executor dask-local``, and a ``dask scheduler`` with two ``dask
worker`` processes that the test starts on the loopback interface (``python -m
distributed.cli.dask_scheduler`` / ``dask_worker``, each in a session of its own) and kills at the
end, checking by an environment marker that no process it started (nor a simulator they started) is
left. The same scenarios run with the local executor give the rows every Dask run must reproduce.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fvp_harness.batch.engine import MakeOptions, make
from fvp_harness.run.lanes import LaneResult, LaneSpec, LocalExecutor
from fvp_harness.store.folder import REPORT_INPUTS_FILE
from tests.batch.scenarios import records, write_scenario
from tests.helpers import REPO, eventually, wait_until
from tests.proc_scan import child_processes, process_group_members, processes_with_env

distributed = pytest.importorskip("distributed")
dask_module = pytest.importorskip("fvp_harness.batch.dask")

pytestmark = [pytest.mark.dask]

MARKER = "FVP_HARNESS_TEST_DASK"
"""Environment variable set (to a fresh id) on every process a test here starts: children inherit
it."""


# --- the task's watcher and the coordinator's verdicts, without a cluster -------------------------


class FakeRemote:
    """Stands in for ``dask._RemoteEvents``: ``answers`` are what successive polls return (a set of
    kinds) or raise (an exception); the last one repeats. ``worker``/``client``: the statuses
    ``lost`` looks at."""

    def __init__(self, *answers: set[str] | BaseException, worker: str = "running",
                 client: str = "running") -> None:
        self.answers = list(answers)
        self.worker, self.client = worker, client
        self.polls = 0

    def poll(self) -> set[str]:
        self.polls += 1
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def lost(self) -> str | None:
        if self.worker != "running":
            return f"the worker is {self.worker}"
        return None if self.client == "running" else f"the worker's client is {self.client}"


@dataclass
class Watched:
    drain: threading.Event
    stop: threading.Event
    abort: threading.Event
    trouble: list[str]


def watch(remote: FakeRemote, monkeypatch: pytest.MonkeyPatch, *, until_polls: int = 0) -> Watched:
    """Run the task's watcher on ``remote`` until it returns by itself or has polled ``until_polls``
    times."""
    monkeypatch.setattr(dask_module, "POLL_S", 0.005)
    monkeypatch.setattr(dask_module, "LOST_AFTER_S", 0.1)
    seen = Watched(threading.Event(), threading.Event(), threading.Event(), [])
    finished = threading.Event()
    thread = threading.Thread(
        target=dask_module._watch,
        args=(remote, 0, seen.drain, seen.stop, seen.abort, finished, seen.trouble),
    )
    thread.start()
    if until_polls:
        wait_until(lambda: remote.polls >= until_polls or not thread.is_alive(),
                   message="the watcher's polls")
        finished.set()
    thread.join(10)
    assert not thread.is_alive()
    return seen


def test_an_error_while_connected_is_a_bug_reported_as_such_not_a_lost_scheduler(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """What every lane of a process worker hit before: ``Event.is_set`` without a client raises
    RuntimeError."""
    remote = FakeRemote(RuntimeError("<class 'distributed.event.Event'> object not properly "
                                     "initialized"))
    with caplog.at_level(logging.WARNING, logger="fvp_harness.batch.dask"):
        seen = watch(remote, monkeypatch)
    assert seen.abort.is_set() and seen.drain.is_set(), (
        "a lane that cannot be stopped must not go on")
    assert seen.trouble == ["reading the batch's stop events failed on the worker: RuntimeError: "
                            "<class 'distributed.event.Event'> object not properly initialized"]
    assert not any("lost the Dask scheduler" in r.getMessage() for r in caplog.records)
    assert any(r.exc_info for r in caplog.records), "the traceback is logged"


def test_a_closing_worker_means_a_lost_scheduler(monkeypatch: pytest.MonkeyPatch) -> None:
    remote = FakeRemote(AttributeError("'NoneType' object has no attribute 'event_is_set'"),
                        worker="closing")
    seen = watch(remote, monkeypatch)
    assert (seen.abort.is_set() and
            seen.trouble == ["lost the Dask scheduler (the worker is closing)"])


def test_connection_errors_are_tolerated_for_a_while_then_count_as_lost(
        monkeypatch: pytest.MonkeyPatch) -> None:
    blip = watch(FakeRemote(OSError("comm closed"), OSError("comm closed"), {"stop"}), monkeypatch,
                 until_polls=4)
    assert blip.stop.is_set() and not blip.abort.is_set() and blip.trouble == []
    gone = watch(FakeRemote(ConnectionRefusedError("refused")), monkeypatch)
    assert (gone.abort.is_set() and
            gone.trouble[0].startswith("lost the Dask scheduler (no answer for"))


def test_the_named_events_reach_the_lane(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = watch(FakeRemote({"drain"}, {"drain", "abort"}), monkeypatch)
    assert (seen.drain.is_set() and seen.abort.is_set() and not seen.stop.is_set() and
            seen.trouble == [])


class FakeFuture:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    def result(self) -> Any:
        raise self.error


def test_the_coordinator_tells_a_lost_scheduler_from_a_dead_worker_and_a_failed_task(
        caplog: pytest.LogCaptureFixture) -> None:
    executor = dask_module.DaskExecutor(scheduler="tcp://127.0.0.1:1")
    lane = LaneSpec(3, "pool", ())
    executor._client = type("Client", (), {"status": "running"})()

    def verdict(error: BaseException) -> tuple[LaneResult, str | None]:
        result: tuple[LaneResult, str | None] = executor._lane_result(
            FakeFuture(error), lane, distributed
        )
        return result

    from types import SimpleNamespace

    killed, lost = verdict(
        distributed.KilledWorker("lane3", SimpleNamespace(address="tcp://127.0.0.1:2"), 3)
    )
    assert (lost is None and killed.error is not None and
            killed.error.startswith("its workers kept dying"))
    with caplog.at_level(logging.ERROR, logger="fvp_harness.batch.dask"):
        failed, lost = verdict(ValueError("a bug on the worker"))
    assert (lost is None and
            failed.error == "its task failed on the worker: ValueError: a bug on the worker")
    assert "Traceback" in caplog.text
    cancelled, lost = verdict(
        concurrent.futures.CancelledError("lane3 cancelled for reason: scheduler-connection-lost.")
    )
    assert lost == cancelled.error == "lost the Dask scheduler tcp://127.0.0.1:1"
    assert cancelled.error_class == "infrastructure"
    executor._client = None


# --- real clusters --------------------------------------------------------------------------------


def _deterministic(results: Path,
                   stem: str) -> dict[str, tuple[str, str, dict[str, str], list[float]]]:
    """Per unit: key, status, output hashes, NPU cycles (what any executor must reproduce; times
    differ)."""
    found: dict[str, tuple[str, str, dict[str, str], list[float]]] = {}
    for r in records(results, stem):
        assert r.unit_id not in found, f"{stem}/{r.unit_id} recorded twice"
        found[r.unit_id] = (r.key, r.status, r.outputs, r.samples.get("npu_cycles", []))
    return found


def _scenarios(art: Path, folder: Path, *, repetitions: int = 1) -> Path:
    write_scenario(folder, "a", art, repetitions=repetitions)
    write_scenario(folder, "b", art, model="resnet8", repetitions=repetitions)
    return folder


def _environment(tmp_path: Path, marker: str) -> dict[str, str]:
    """Ours, plus the marker, and every temporary file (worker scratch, shipped artifacts) under
    tmp_path."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {**os.environ, MARKER: marker, "TMPDIR": str(tmp_path / "tmp"),
            "FVP_HARNESS_ARTIFACT_CACHE": str(tmp_path / "artifact-cache")}


def _start(argv: Sequence[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", *argv], env=env, cwd=REPO,
                                stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _stop(processes: Sequence[subprocess.Popen[bytes]], marker: str) -> None:
    """Stop the processes (their whole sessions: SIGTERM, then SIGKILL) and make sure nothing
    carrying the marker is left, killing stragglers by pid; fails the test if any was."""
    for proc in processes:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for proc in processes:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        try:  # members of its session that outlived its leader
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if not eventually(lambda: not processes_with_env(MARKER, marker), timeout=20):
        left = processes_with_env(MARKER, marker)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        raise AssertionError(f"processes left behind: {left}")


@dataclass
class Cluster:
    address: str
    scheduler: subprocess.Popen[bytes]
    workers: list[subprocess.Popen[bytes]]
    env: dict[str, str]
    logs: Path


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A ``dask scheduler`` and two single-threaded ``dask worker`` processes on 127.0.0.1, stopped
    at the end."""
    marker = uuid.uuid4().hex
    env = _environment(tmp_path, marker)
    logs = tmp_path / "cluster-logs"
    logs.mkdir()
    file = tmp_path / "scheduler.json"
    local = ["--host", "127.0.0.1", "--no-dashboard", "--dashboard-address", "127.0.0.1:0"]
    started: list[subprocess.Popen[bytes]] = []
    try:
        scheduler = _start(["distributed.cli.dask_scheduler", *local, "--port", "0",
                            "--scheduler-file", str(file)],
                           env, logs / "scheduler.log")
        started.append(scheduler)
        wait_until(lambda: file.is_file() and file.stat().st_size > 0, timeout=60,
                   message="the scheduler file")
        workers = [_start(["distributed.cli.dask_worker", "--scheduler-file", str(file), *local,
                           "--nthreads", "1",
                           "--nworkers", "1", "--death-timeout", "60", "--name", f"w{i}",
                           "--local-directory", str(tmp_path / f"w{i}")], env, logs / f"w{i}.log")
                   for i in range(2)]
        started += workers
        client = distributed.Client(scheduler_file=str(file), timeout="30s")
        try:
            client.wait_for_workers(2, timeout=60)
            address = client.scheduler.address
        finally:
            client.close()
        yield Cluster(address, scheduler, workers, env, logs)
    finally:
        _stop(started, marker)


def _make_argv(sc: Path, results: Path, *extra: str) -> list[str]:
    return ["fvp_harness", "make", str(sc), "--results", str(results), *extra]


def _sims_under(proc: subprocess.Popen[bytes]) -> list[int]:
    """Simulator processes started by a member of ``proc``'s session (a worker process of that
    ``dask worker``)."""
    found = []
    for member in process_group_members(proc.pid):
        for child in child_processes(member):
            try:
                if b"fvp_harness.sim" in Path(f"/proc/{child}/cmdline").read_bytes():
                    found.append(child)
            except OSError:
                continue
    return found


def _mid_lane(cluster: Cluster, tmp: Path) -> subprocess.Popen[bytes]:
    """Wait until a lane is running on a worker and has finished a unit; that worker."""
    def busy() -> subprocess.Popen[bytes] | None:
        if not any(tmp.glob("fvp-harness-lane-*/*/logs/*/r[0-9]*-*.log")):  # a unit log
            return None
        return next((worker for worker in cluster.workers if _sims_under(worker)), None)

    found: subprocess.Popen[bytes] | None = wait_until(
        busy, timeout=120, message="a lane with a finished unit on a worker"
    )
    assert found is not None
    return found


@pytest.mark.slow
@pytest.mark.sim
def test_dask_local_cluster_of_processes_runs_every_unit_like_local(
    art: Path, tmp_path: Path
) -> None:
    """``make --executor dask-local``: LocalCluster worker processes (the lanes used to abort at
    once there)."""
    sc = _scenarios(art, tmp_path / "sc")
    local = make([sc], MakeOptions(jobs=2, results_base=tmp_path / "local"),
                 executor=LocalExecutor(2))
    assert local.exit_code == 0
    marker = uuid.uuid4().hex
    proc = _start(_make_argv(sc, tmp_path / "dask", "--executor", "dask-local", "-j", "2"),
                  _environment(tmp_path, marker), tmp_path / "make.log")
    try:
        code = proc.wait(timeout=240)
    finally:
        _stop([proc], marker)
    out = (tmp_path / "make.log").read_text(encoding="utf-8")
    assert code == 0, out
    assert "make: 4 units run (0 failed) on 2 lane(s)" in out
    assert "INFO" not in out and "lost the Dask scheduler" not in out, (
        "dask.distributed's INFO lines only with -v")
    for stem in ("a", "b"):
        assert _deterministic(tmp_path / "dask", stem) == _deterministic(tmp_path / "local", stem)
        assert len(_deterministic(tmp_path / "dask", stem)) == 2
        assert (tmp_path / "dask" / stem / "report.md").is_file()


@pytest.mark.slow
@pytest.mark.sim
def test_scheduler_and_two_worker_processes_give_the_local_rows(
    art: Path, tmp_path: Path, cluster: Cluster
) -> None:
    sc = _scenarios(art, tmp_path / "sc")
    local = make([sc], MakeOptions(jobs=2, results_base=tmp_path / "local"),
                 executor=LocalExecutor(2))
    assert local.exit_code == 0
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            *_make_argv(
                sc, tmp_path / "dask", "--executor", "dask", "--scheduler", cluster.address
            ),
        ],
        env=cluster.env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "make: 4 units run (0 failed) on 2 lane(s)" in done.stdout, (
        "-j defaults to the cluster's 2 threads")
    for stem in ("a", "b"):
        dask_rows = _deterministic(tmp_path / "dask", stem)
        assert dask_rows == _deterministic(tmp_path / "local", stem) and len(dask_rows) == 2
        assert (tmp_path / "dask" / stem / REPORT_INPUTS_FILE).is_file()
        logs = {r.log for r in records(tmp_path / "dask", stem)}
        assert all(log and (tmp_path / "dask" / stem / log).is_file() for log in logs), (
            "logs came back")


SLOW_UNITS = ("--set", "fvp.sim.speed=0.01")
"""Simulated work takes wall time: a lane of the test scenarios runs for seconds, so it can be hit
mid-lane."""


@pytest.mark.slow
@pytest.mark.sim
def test_a_worker_killed_mid_lane_gets_its_lane_run_elsewhere_and_nothing_counted_twice(
        art: Path, tmp_path: Path, cluster: Cluster) -> None:
    sc = _scenarios(art, tmp_path / "sc", repetitions=2)
    proc = _start(_make_argv(sc, tmp_path / "dask", "--executor", "dask", "--scheduler",
                             cluster.address, *SLOW_UNITS), cluster.env, tmp_path / "make.log")
    try:
        victim = _mid_lane(cluster, tmp_path / "tmp")
        # the dask worker, its nanny and worker processes at once
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)
        code = proc.wait(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    out = (tmp_path / "make.log").read_text(encoding="utf-8")
    assert code == 0, out
    assert "make: 8 units run (0 failed) on 2 lane(s)" in out, out
    local = make([sc],
                 MakeOptions(jobs=2, overrides=(SLOW_UNITS[1],), results_base=tmp_path / "local"),
                 executor=LocalExecutor(2))
    assert local.exit_code == 0
    # every unit exactly once (_deterministic checks), the same rows as locally
    for stem in ("a", "b"):
        assert _deterministic(tmp_path / "dask", stem) == _deterministic(tmp_path / "local", stem)
        assert len(records(tmp_path / "dask", stem)) == 4


@pytest.mark.slow
@pytest.mark.sim
def test_killing_the_scheduler_mid_run_exits_3_and_lists_the_units_not_run(
        art: Path, tmp_path: Path, cluster: Cluster) -> None:
    sc = _scenarios(art, tmp_path / "sc", repetitions=2)
    results = tmp_path / "dask"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            *_make_argv(
                sc, results, "--executor", "dask", "--scheduler", cluster.address, *SLOW_UNITS
            ),
        ],
        env=cluster.env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _mid_lane(cluster, tmp_path / "tmp")
        os.killpg(cluster.scheduler.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 3, out + err
    assert "NOT RUN" in out and "every unit" not in out + err
    for stem in ("a", "b"):
        stored = ({r.unit_id for r in records(results, stem)}
                  if (results / stem / "records.jsonl").exists() else set())
        missing = sorted({f"r{rep}-{build}-{model}" for rep in range(2)
                          for build in ("before", "after")
                          for model in (("ds_cnn",) if stem == "a" else ("resnet8",))} - stored)
        assert missing, (
            "a lane returns its records when it ends: the killed run stored none of this scenario")
        listed = [line for line in err.splitlines() if line.startswith(f"{stem}: ") and
                  "not run (lost the Dask " "scheduler" in line]
        assert len(listed) == 1 and all(unit in listed[0] for unit in missing), err
        report = (results / stem / "report.md").read_text(encoding="utf-8")
        assert f"{len(missing)} of 4 planned unit(s) did not run" in report, (
            "the report says so, not 'all ran'")
    # the lanes noticed: their instances are closed rather than left running unsupervised
    assert eventually(lambda: not any(_sims_under(worker) for worker in cluster.workers),
                      timeout=30)
    # and the next make knows those units never ran
    again = make([sc], MakeOptions(dry_run=True, overrides=(SLOW_UNITS[1],), results_base=results))
    reasons = {(a.scenario, a.target): a.reason for a in again.actions if a.kind == "run"}
    assert len(reasons) == 8 and set(reasons.values()) == {"never run"}
