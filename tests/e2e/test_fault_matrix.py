"""Every fault of the simulator and of the emulated runner, through ``fvp-harness run`` and then ``--resume``.

Each fault must give the right exit code, name its log in every failure line, retry where the platform failed (a
fresh instance ``s0.2`` with logs of its own), never leave the manifest ``running``, write the report, and let a
``--resume`` run cleanly afterwards without overwriting anything a stored record points at. Faults that break
every instance are resumed with the fault switched off (the run then completes); the others with the same options.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.sim]

BASE = ("--set", "run.repetitions=1", "--set", "run.retries=1", "--set", "fvp.timeouts.boot=10",
        "--set", "fvp.timeouts.login=10", "--set", "fvp.timeouts.command=10", "--set", "fvp.timeouts.deploy=30",
        "--set", "fvp.timeouts.unit=15")
DROP_AT = 2
"""The second runner start (``fault_count_matching=--model_path``): a fault there strikes during the second unit
however many command lines the deploy and each unit take, and the fresh instance finishes the run."""
AT_SECOND_UNIT = ("--set", "fvp.sim.fault_count_matching=--model_path")
UNITS = ("r0-before-ds_cnn", "r0-after-ds_cnn")
LOG_PATH = re.compile(r"([^\s\[\]()]+/logs/[\w.+-]+/[\w.+-]+\.log)")


@dataclass(frozen=True)
class Fault:
    args: tuple[str, ...]
    exit: int
    failure: str = ""
    """The exception class a failed record or the aborted session names ("" when nothing fails)."""
    during_unit: bool = False
    """An infrastructure failure during a unit: its attempt is recorded and retried on s0.2, which succeeds."""
    aborts: bool = False
    """Every instance fails before the units: retried once, then the session aborts (manifest ``aborted``)."""
    resume_exit: int | None = None
    """Exit of the ``--resume`` (None: the same as the run's); aborting faults are resumed without the fault."""


FAULTS = {
    "garbage": Fault(("--set", "fvp.sim.fault_garbage=0.05"), 3, "garbled", aborts=True, resume_exit=0),
    "console_drop": Fault(("--set", f"fvp.sim.fault_console_drop={DROP_AT}", *AT_SECOND_UNIT), 0, "ConsoleLost",
                          during_unit=True),
    "panic_boot": Fault(("--set", "fvp.sim.fault_panic=boot"), 3, "Kernel panic", aborts=True, resume_exit=0),
    "panic_n": Fault(("--set", f"fvp.sim.fault_panic={DROP_AT}", *AT_SECOND_UNIT), 0, "KernelPanic",
                     during_unit=True),
    "crash_boot": Fault(("--set", "fvp.sim.fault_crash=boot"), 3, "exit status 139", aborts=True, resume_exit=0),
    "crash_n": Fault(("--set", f"fvp.sim.fault_crash={DROP_AT}", *AT_SECOND_UNIT), 0, "FvpDied",
                     during_unit=True),
    "boot_hang": Fault(("--set", "fvp.sim.fault_boot_hang=kernel", "--set", "fvp.timeouts.boot=4"), 3,
                       "raise fvp.timeouts.boot", aborts=True, resume_exit=0),
    "slow_console": Fault(("--set", "fvp.sim.fault_slow_console=20000"), 0),
    "refuse_ssh": Fault(("--set", "fvp.sim.fault_refuse_ssh=true", "--set", "deploy.method=ssh",
                         "--set", "fvp.timeouts.deploy=4"), 3, "raise fvp.timeouts.deploy", aborts=True,
                        resume_exit=0),
    "busy_ports": Fault(("--set", "fvp.sim.fault_busy_ports=2"), 0),
    "runner_crash": Fault(("--set", "fvp.sim.runner_fault=crash=1"), 1, "status 139"),
    "runner_hang": Fault(("--set", "fvp.sim.runner_fault=hang=1", "--set", "fvp.timeouts.unit=3"), 1,
                         "CommandTimeout"),
    "runner_truncate": Fault(("--set", "fvp.sim.runner_fault=truncate=1"), 1, "MetricMissing"),
    "runner_timeout": Fault(("--set", "fvp.sim.runner_fault=timeout=1"), 1, "status 134"),
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("faults")
    shutil.copytree(REPO / "scenarios", root / "scenarios")
    return root


def fvp_harness(workdir: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return run_cli(workdir, *args, timeout=timeout)


def _records(out: Path) -> list[dict]:
    path = out / "records.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _logs(out: Path) -> dict[str, str]:
    """Every log of the folder and its sha256: what a later run must leave alone."""
    return {path.relative_to(out).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted((out / "logs").rglob("*")) if path.is_file()}


def _check_messages(workdir: Path, done: subprocess.CompletedProcess[str], out: Path) -> None:
    """Every failure line names a log, and the log is there."""
    text = done.stdout + done.stderr
    failures = [line for line in text.splitlines()
                if ("FAILED" in line or "session aborted" in line or "retrying" in line) and not line.startswith(" ")]
    for line in failures:
        named = LOG_PATH.findall(line)
        assert named, f"a failure line names no log: {line}"
        for path in named:
            assert (workdir / path).is_file() or Path(path).is_file(), f"{path} (named in: {line[:200]})"
    for record in _records(out):
        if record["status"] == "failed":
            assert record["log"] and (out / record["log"]).is_file(), record


@pytest.mark.parametrize("name", list(FAULTS))
def test_each_fault_is_classified_retried_logged_and_resumable(workdir: Path, name: str) -> None:
    fault = FAULTS[name]
    out = workdir / "out" / name
    done = fvp_harness(workdir, "run", "scenarios/smoke.yaml", "-o", str(out), *BASE, *fault.args)
    text = done.stdout + done.stderr
    assert done.returncode == fault.exit, text
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == ("aborted" if fault.aborts else "complete"), manifest["status"]
    assert (out / "report.md").is_file(), "the report is written whatever failed"
    records = _records(out)
    _check_messages(workdir, done, out)
    if fault.failure:
        assert fault.failure in text, text
    if fault.aborts:  # a failed boot, retried once on a fresh instance, then the session aborts
        assert sorted(manifest["instances"]) == ["s0", "s0.2"]
        assert all(entry["error"] for entry in manifest["instances"].values())
        assert "session aborted: s0: no usable instance after 2 tries" in done.stderr
        assert not records
    elif fault.during_unit:  # the unit's attempt is recorded and retried on s0.2, with its own log
        failed = [r for r in records if r["status"] == "failed"]
        assert [(r["unit_id"], r["instance"], r["failure_class"]) for r in failed] == \
            [(UNITS[1], "s0", "infrastructure")], records
        assert fault.failure in failed[0]["failure"]
        retried = [r for r in records if r["unit_id"] == UNITS[1] and r["status"] == "ok"]
        assert [(r["attempt"], r["instance"], r["log"]) for r in retried] == \
            [(2, "s0.2", f"logs/s0.2/{UNITS[1]}.a2.log")]
        assert failed[0]["log"] == f"logs/s0/{UNITS[1]}.log"
    elif fault.exit == 1:  # the runner's own failure: recorded as a test failure, never retried
        assert [(r["unit_id"], r["status"], r["failure_class"], r["attempt"]) for r in records] == \
            [(unit, "failed", "test", 1) for unit in UNITS]
        assert list(manifest["instances"]) == ["s0"]
    else:
        assert [r["status"] for r in records] == ["ok", "ok"]

    kept = _logs(out)
    resume_args = BASE if fault.aborts else (*BASE, *fault.args)
    again = fvp_harness(workdir, "run", "scenarios/smoke.yaml", "-o", str(out), *resume_args, "--resume")
    expected = fault.exit if fault.resume_exit is None else fault.resume_exit
    assert again.returncode == expected, again.stdout + again.stderr
    after = _logs(out)
    assert {path: after.get(path) for path in kept} == kept, "a --resume overwrote logs of the earlier run"
    resumed = json.loads((out / "manifest.json").read_text())
    assert resumed["status"] != "running"
    assert set(manifest["instances"]) <= set(resumed["instances"]), "the earlier instances stay in the manifest"
    _check_messages(workdir, again, out)
    oks = [r["unit_id"] for r in _records(out) if r["status"] == "ok" and r["key"] in {
        x["key"] for x in records if x["status"] == "ok"}]
    assert len(oks) == len(set(oks)), "a unit measured ok was measured again"


def test_target_host_with_simulator_runners_is_refused_before_any_unit(workdir: Path) -> None:
    out = workdir / "out" / "host"
    done = fvp_harness(workdir, "run", "scenarios/smoke.yaml", "-o", str(out), *BASE, "--set", "target=host")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "builds.before.runner" in done.stderr and "cannot run on this host (target: host)" in done.stderr
    assert "FVPSIMRN" in done.stderr and "Exec format error" not in done.stdout + done.stderr
    assert not _records(out), "no unit ran"
    if (out / "manifest.json").exists():  # the runners were built by this run: refused after the build
        assert json.loads((out / "manifest.json").read_text())["status"] == "aborted"
    located = fvp_harness(workdir, "validate", "scenarios/smoke.yaml", "--set", "target=host")
    assert located.returncode == 2
    assert re.search(r"scenarios/smoke\.yaml:\d+:\d+: builds\.before\.runner: .*FVPSIMRN", located.stderr), \
        located.stderr
    doctor = fvp_harness(workdir, "doctor", "scenarios/smoke.yaml", "--set", "target=host")
    assert doctor.returncode == 2 and "FAIL  runner before" in doctor.stdout and "skip  model" in doctor.stdout
