"""Every fault of the simulator and of the emulated runner, through ``fvp-harness run`` and then
``--resume``.

Each fault must give the right exit code, name its log in every failure line, retry where the
platform failed (a fresh instance ``s0.2`` with logs of its own), never leave the manifest
``running``, write the report, and let a ``--resume`` run cleanly afterwards without overwriting
anything a stored record points at. Faults that break every instance are resumed with the fault
switched off (the run then completes); the others with the same options.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO, mounted_tmpfs

pytestmark = [pytest.mark.slow, pytest.mark.sim]

BASE = ("--set", "run.repetitions=1", "--set", "run.retries=1", "--set", "fvp.timeouts.boot=10",
        "--set", "fvp.timeouts.login=10", "--set", "fvp.timeouts.command=10", "--set",
        "fvp.timeouts.deploy=30", "--set", "fvp.timeouts.unit=15")
DROP_AT = 2
"""The second runner start (``fault_count_matching=--model_path``): a fault there strikes during the
second unit however many command lines the deploy and each unit take, and the fresh instance
finishes the run."""
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
    """An infrastructure failure during a unit: its attempt is recorded and retried on s0.2, which
    succeeds."""
    aborts: bool = False
    """Every instance fails before the units: retried once, then the session aborts (manifest
    ``aborted``)."""
    resume_exit: int | None = None
    """Exit of the ``--resume`` (None: the same as the run's); aborting faults are resumed without
    the fault."""


FAULTS = {
    "garbage": Fault(("--set", "fvp.sim.fault_garbage=0.05"), 3, "garbled", aborts=True,
                     resume_exit=0),
    "console_drop": Fault(("--set", f"fvp.sim.fault_console_drop={DROP_AT}", *AT_SECOND_UNIT), 0,
                          "ConsoleLost", during_unit=True),
    "panic_boot": Fault(("--set", "fvp.sim.fault_panic=boot"), 3, "Kernel panic", aborts=True,
                        resume_exit=0),
    "panic_n": Fault(("--set", f"fvp.sim.fault_panic={DROP_AT}", *AT_SECOND_UNIT), 0, "KernelPanic",
                     during_unit=True),
    "crash_boot": Fault(("--set", "fvp.sim.fault_crash=boot"), 3, "exit status 139", aborts=True,
                        resume_exit=0),
    "crash_n": Fault(("--set", f"fvp.sim.fault_crash={DROP_AT}", *AT_SECOND_UNIT), 0, "FvpDied",
                     during_unit=True),
    "boot_hang": Fault(("--set", "fvp.sim.fault_boot_hang=kernel", "--set", "fvp.timeouts.boot=4"),
                       3, "raise fvp.timeouts.boot", aborts=True, resume_exit=0),
    "slow_console": Fault(("--set", "fvp.sim.fault_slow_console=20000"), 0),
    "refuse_ssh": Fault(("--set", "fvp.sim.fault_refuse_ssh=true", "--set", "deploy.method=ssh",
                         "--set", "fvp.timeouts.deploy=4"), 3, "raise fvp.timeouts.deploy",
                        aborts=True, resume_exit=0),
    "busy_ports": Fault(("--set", "fvp.sim.fault_busy_ports=2"), 0),
    "runner_crash": Fault(("--set", "fvp.sim.runner_fault=crash=1"), 1, "status 139"),
    "runner_hang": Fault(("--set", "fvp.sim.runner_fault=hang=1", "--set", "fvp.timeouts.unit=3"),
                         1, "CommandTimeout"),
    "runner_truncate": Fault(("--set", "fvp.sim.runner_fault=truncate=1"), 1, "MetricMissing"),
    "runner_timeout": Fault(("--set", "fvp.sim.runner_fault=timeout=1"), 1, "status 134"),
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("faults")
    shutil.copytree(REPO / "scenarios", root / "scenarios")
    return root


def fvp_harness(workdir: Path, *args: str,
                timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return run_cli(workdir, *args, timeout=timeout)


def _records(out: Path) -> list[dict]:
    path = out / "records.jsonl"
    return ([json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            if path.exists() else [])


def _logs(out: Path) -> dict[str, str]:
    """Every log of the folder and its sha256: what a later run must leave alone."""
    return {path.relative_to(out).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted((out / "logs").rglob("*")) if path.is_file()}


def _check_messages(workdir: Path, done: subprocess.CompletedProcess[str], out: Path) -> None:
    """Every failure line names a log, and the log is there."""
    text = done.stdout + done.stderr
    failures = [line for line in text.splitlines()
                if ("FAILED" in line or "session aborted" in line or "retrying" in line) and
                not line.startswith(" ")]
    for line in failures:
        named = LOG_PATH.findall(line)
        assert named, f"a failure line names no log: {line}"
        for path in named:
            assert (workdir / path).is_file() or Path(path).is_file(), (
                f"{path} (named in: {line[:200]})")
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
    again = fvp_harness(workdir, "run", "scenarios/smoke.yaml", "-o", str(out), *resume_args,
                        "--resume")
    expected = fault.exit if fault.resume_exit is None else fault.resume_exit
    assert again.returncode == expected, again.stdout + again.stderr
    after = _logs(out)
    assert {path: after.get(path) for path in kept} == kept, (
        "a --resume overwrote logs of the earlier run")
    resumed = json.loads((out / "manifest.json").read_text())
    assert resumed["status"] != "running"
    assert set(manifest["instances"]) <= set(resumed["instances"]), (
        "the earlier instances stay in the manifest")
    _check_messages(workdir, again, out)
    oks = [r["unit_id"] for r in _records(out) if r["status"] == "ok" and r["key"] in {
        x["key"] for x in records if x["status"] == "ok"}]
    assert len(oks) == len(set(oks)), "a unit measured ok was measured again"


def test_target_host_with_simulator_runners_is_refused_before_any_unit(workdir: Path) -> None:
    out = workdir / "out" / "host"
    done = fvp_harness(workdir, "run", "scenarios/smoke.yaml", "-o", str(out), *BASE, "--set",
                       "target=host")
    assert done.returncode == 2, done.stdout + done.stderr
    assert ("builds.before.runner" in done.stderr and
            "cannot run on this host (target: host)" in done.stderr)
    assert "FVPSIMRN" in done.stderr and "Exec format error" not in done.stdout + done.stderr
    assert not _records(out), "no unit ran"
    # the runners were built by this run: refused after the build
    if (out / "manifest.json").exists():
        assert json.loads((out / "manifest.json").read_text())["status"] == "aborted"
    located = fvp_harness(workdir, "validate", "scenarios/smoke.yaml", "--set", "target=host")
    assert located.returncode == 2
    assert re.search(r"scenarios/smoke\.yaml:\d+:\d+: builds\.before\.runner: .*FVPSIMRN",
                     located.stderr), \
        located.stderr
    doctor = fvp_harness(workdir, "doctor", "scenarios/smoke.yaml", "--set", "target=host")
    assert (doctor.returncode == 2 and "FAIL  runner before" in doctor.stdout and
            "skip  model" in doctor.stdout)


# --- faults of the user's machine (issue 23): a runner's stray child, a flood of output, a full
# disk, SIGTERM ---

HOST_SCENARIO = """\
name: {name}
target: host
builds:
  a: {{runner: runner.sh}}
models:
  m1: {{file: m1.bin{build}}}
  m2: {{file: m2.bin}}
run:
  command: "{{runner}} {{model}}"
  warmup: 0
  iterations: 1
  repetitions: 1
  timeout: {timeout}
  env: {{FILL: "{fill}"}}
metrics: [{{name: t, regex: "t=([0-9.]+)", required: true}}]
"""

HOST_RUNNER = """\
#!/bin/sh
case "$(cat "$1")" in
  setsid) setsid sleep 100000 & echo started; sleep 100000 ;;
  flood) head -c 200000000 /dev/zero | tr '\\0' a; echo ;;
  fill) dd if=/dev/zero of="$FILL" bs=64k 2>/dev/null; i=0
        while [ $i -lt 5000 ]; do
          echo "t=1.0 line $i of a runner that goes on printing"; i=$((i+1))
        done ;;
  slow) echo "t=1.0"; sleep 100000 ;;
  *) echo "t=1.0" ;;
esac
"""

FAULT_TIMINGS: dict[str, tuple[int, float | None]] = {}
"""fault -> (exit code, seconds from the fault to the harness's exit): the issue's table (printed
with ``-s``)."""


def _note(name: str, done: subprocess.CompletedProcess[str], seconds: float | None) -> None:
    import os

    FAULT_TIMINGS[name] = (done.returncode, seconds)
    line = f"FAULT {name}: exit {done.returncode}, {seconds} s to exit"
    print("\n" + line)
    table = os.environ.get("FVP_FAULT_TABLE")  # collect the table across xdist workers
    if table:
        with open(table, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def _host_scenario(root: Path, name: str, m1: str, *, m2: str = "ok", timeout: float = 30,
                   fill: str = "", build: str = "") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "runner.sh").write_text(HOST_RUNNER)
    (folder / "runner.sh").chmod(0o755)
    if not build:
        (folder / "m1.bin").write_text(m1)
    (folder / "m2.bin").write_text(m2)
    path = folder / f"{name}.yaml"
    path.write_text(HOST_SCENARIO.format(name=name, timeout=timeout, fill=fill,
                                         build=f", build: {json.dumps(build)}" if build else ""))
    return path


def _assert_records_valid(out: Path) -> list[dict]:
    path = out / "records.jsonl"
    if not path.exists():
        return []
    data = path.read_bytes()
    assert not data or data.endswith(b"\n"), "a partial record line"
    return [json.loads(line) for line in data.decode().splitlines()]


def _no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr + done.stdout, done.stderr


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 4 MiB tmpfs for a results folder, unmounted afterwards."""
    with mounted_tmpfs(tmp_path / "disk", "size=4m") as folder:
        yield folder


def _fill(folder: Path) -> None:
    """Fill the file system of ``folder`` to the last byte."""
    import os

    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for size in (1 << 20, 65536, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)


def test_a_host_runner_with_a_setsid_child_times_out_and_leaves_nothing(workdir: Path) -> None:
    path = _host_scenario(workdir / "host", "setsid", "setsid", timeout=3)
    out = workdir / "out" / "setsid"
    began = time.monotonic()
    done = run_cli(workdir, "run", str(path), "-o", str(out), timeout=120,
                   scratch=workdir / "scratch")
    _note("host runner with a setsid child (run.timeout 3)", done,
          round(time.monotonic() - began, 2))
    assert done.returncode == 1, done.stderr
    _no_traceback(done)
    records = _assert_records_valid(out)
    failed = next(r for r in records if r["model"] == "m1")
    assert failed["status"] == "failed" and "did not finish after 3 s" in failed["failure"]
    assert failed["failure"].rstrip().rstrip("'").endswith("m1.bin"), (
        "the message ends with the user's command, whole")
    assert "mkdir" not in failed["failure"], "not the framed shell line"
    assert next(r for r in records if r["model"] == "m2")["status"] == "ok"


def test_200_mb_of_runner_output_fail_the_unit_with_bounded_memory_and_logs(workdir: Path) -> None:
    import resource

    path = _host_scenario(workdir / "host", "flood", "flood")
    out = workdir / "out" / "flood"
    began = time.monotonic()
    done = run_cli(workdir, "run", str(path), "-o", str(out), timeout=300,
                   scratch=workdir / "scratch")
    _note("200 MB of host-runner output", done, round(time.monotonic() - began, 2))
    assert done.returncode == 1, done.stderr
    _no_traceback(done)
    failed = next(r for r in _assert_records_valid(out) if r["model"] == "m1")
    assert "OutputLimitExceeded" in failed["failure"] and "(run.max_output)" in failed["failure"]
    logs = sum(p.stat().st_size for p in (out / "logs").rglob("*") if p.is_file())
    assert logs < 80 * 1024 * 1024, f"logs hold {logs} bytes"
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert peak_kib < 700 * 1024, f"a child of the tests peaked at {peak_kib} KiB"


def test_a_full_disk_under_a_host_run_ends_it_at_once_with_one_line(
    workdir: Path, small_disk: Path
) -> None:
    path = _host_scenario(workdir / "host", "fill", "ok", m2="fill",
                          fill=str(small_disk / "filler"))
    out = small_disk / "out"
    began = time.monotonic()
    done = run_cli(workdir, "run", str(path), "-o", str(out), timeout=120,
                   scratch=workdir / "scratch")
    _note("full disk mid-run (target: host, tmpfs results folder)", done,
          round(time.monotonic() - began, 2))
    assert done.returncode == 3, done.stderr
    _no_traceback(done)
    lines = [line for line in done.stderr.splitlines() if "No space left on device" in line]
    assert len(lines) == 1 and f"cannot write {out}" in lines[0] and "(ENOSPC)" in lines[0], (
        done.stderr)
    records = _assert_records_valid(out)
    assert [(r["model"], r["status"]) for r in records] == [("m1", "ok")]
    _assert_state_recorded(workdir, out)


def test_a_full_disk_under_the_console_ends_the_run_within_seconds(
    workdir: Path, small_disk: Path
) -> None:
    out = small_disk / "out"
    began: list[float] = []

    def first_unit_logged() -> bool:
        return bool(list(out.glob("logs/s0/r0-*.log")))

    def fill(proc: subprocess.Popen[str]) -> None:
        began.append(time.monotonic())
        _fill(small_disk)

    # the units last a second or two (fvp.sim.speed), so the disk fills while the second one runs,
    # not after it
    done = run_cli(workdir, "run", "scenarios/smoke.yaml", "-o", str(out), *BASE, "--set",
                   "fvp.sim.speed=0.004",
                   timeout=300, scratch=workdir / "scratch", when=first_unit_logged, then=fill)
    _note("full disk mid-run (console, simulator)", done, done.acted_after)
    assert done.returncode == 3, done.stderr
    _no_traceback(done)
    assert done.acted_after is not None and done.acted_after < 20
    lines = [line for line in done.stderr.splitlines() if "No space left on device" in line]
    assert len(lines) == 1 and f"cannot write {out}" in lines[0], done.stderr
    assert "the manifest could not record it" not in done.stderr
    _assert_records_valid(out)
    _assert_state_recorded(workdir, out)


def _assert_state_recorded(workdir: Path, out: Path) -> None:
    """Issue 36, finding 6: the final manifest write failed on the full disk too (3 of 3 fills), so
    the run stayed ``running`` until someone resumed it. The room kept for it takes the final
    status; ``runs`` says so."""
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["status"] == "aborted" and
            "No space left on device" in " ".join(manifest["aborted"])), manifest
    assert not (out / ".manifest.reserve").exists()
    listed = run_cli(workdir, "runs", str(out), timeout=60)
    assert (listed.returncode == 0 and " aborted " in listed.stdout and
            " running " not in listed.stdout), listed


def _sigterm(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)


@pytest.mark.parametrize(("signum", "code"),
                         [(signal.SIGTERM, 143), (signal.SIGHUP, 143), (signal.SIGINT, 130)],
                         ids=["SIGTERM", "SIGHUP", "Ctrl-C"])
@pytest.mark.parametrize("verb", ["run", "make"])
def test_a_signal_during_a_build_ends_it_at_once_and_leaves_no_artifact(
    workdir: Path, verb: str, signum: int, code: int
) -> None:
    name = f"build{verb}{signal.Signals(signum).name}"
    path = _host_scenario(
        workdir / "host",
        name,
        "",
        build="printf PART1 > {output}; sleep 100000; printf PART2 >> {output}",
    )
    out = workdir / "out" / name
    args = (
        ("run", str(path), "-o", str(out))
        if verb == "run"
        else ("make", str(path), "--results", str(out))
    )
    done = run_cli(workdir, *args, timeout=120, scratch=workdir / "scratch",
                   when=lambda: bool(list(out.glob("**/logs/build/*.log"))),
                   then=lambda proc: proc.send_signal(signum))
    _note(f"{signal.Signals(signum).name} during a build ({verb})", done, done.acted_after)
    assert done.returncode == code, done.stderr
    _no_traceback(done)
    if code == 143:
        assert f"stopped by {signal.Signals(signum).name}" in done.stderr
    assert done.acted_after is not None and done.acted_after < 15, (
        "the build is ended, not waited for")
    assert {p.name for p in path.parent.iterdir()} == {"m2.bin", "runner.sh", f"{name}.yaml"}, \
        "no artifact, no staged file, no build record"


def test_sigterm_during_the_boot_stops_after_it_with_the_manifest_interrupted(
        workdir: Path) -> None:
    out = workdir / "out" / "termboot"
    done = run_cli(workdir, "run", "scenarios/smoke.yaml", "-o", str(out), *BASE, timeout=300,
                   scratch=workdir / "scratch",
                   when=lambda: (out / "logs" / "s0" / "fvp.log").is_file(), then=_sigterm)
    _note("SIGTERM during the boot", done, done.acted_after)
    assert done.returncode == 143, done.stderr
    _no_traceback(done)
    if (out / "manifest.json").exists():
        assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
    _assert_records_valid(out)


def test_sigterm_during_a_unit_stops_it_after_the_grace_period(workdir: Path) -> None:
    out = workdir / "out" / "termunit"

    def runner_hangs() -> bool:
        # the console log is written as the guest prints (a unit's own log only when the unit ends):
        # the runner printed its first iteration, and hangs before the second (runner_fault=hang=1)
        return "Iteration 1 of" in _read(out / "logs" / "s0" / "host_terminal_0.log")

    done = run_cli(workdir, "run", "scenarios/smoke.yaml", "-o", str(out), *BASE, "--set",
                   "fvp.sim.runner_fault=hang=1", "--set", "fvp.timeouts.unit=120", timeout=300,
                   scratch=workdir / "scratch", when=runner_hangs, then=_sigterm)
    _note("SIGTERM during a unit (runner hangs: the 10 s grace, then at once)", done,
          done.acted_after)
    assert done.returncode == 143, done.stderr
    _no_traceback(done)
    assert done.acted_after is not None and 9 < done.acted_after < 30
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
    _assert_records_valid(out)


def test_sigterm_during_a_host_unit_ends_the_runner(workdir: Path) -> None:
    path = _host_scenario(workdir / "host", "termhost", "slow", timeout=120)
    out = workdir / "out" / "termhost"
    done = run_cli(workdir, "run", str(path), "-o", str(out), timeout=120,
                   scratch=workdir / "scratch",
                   when=lambda: "t=1.0" in _read(out / "logs" / "s0" / "host.log"), then=_sigterm)
    _note("SIGTERM during a host unit (runner sleeps: the 10 s grace, then at once)", done,
          done.acted_after)
    assert done.returncode == 143, done.stderr
    _no_traceback(done)
    assert done.acted_after is not None and done.acted_after < 25
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
    _assert_records_valid(out)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


# --- the kill matrix (issue 36, item 8): each signal in each phase, then the next run -------------

KILL_SIGNALS = {"SIGINT": (signal.SIGINT, 130), "SIGTERM": (signal.SIGTERM, 143),
                "SIGHUP": (signal.SIGHUP, 143), "SIGKILL": (signal.SIGKILL, -signal.SIGKILL)}
KILL_PHASES = ("build", "boot", "deploy", "unit", "report")
MATRIX_BASE = (*BASE, "--set", "run.warmup=1", "--set", "run.iterations=3")
MATRIX_SLEEP = "FVP_MATRIX_BUILD_SLEEP"
"""A build phase that lasts: the model's build command sleeps this many seconds (read through
``${env:...}``, so the next run, without it, rebuilds at once)."""
MATRIX_KNOBS = {
    "build": ("--set",
              "models.ds_cnn.build=sleep ${env:" + MATRIX_SLEEP
              + ":-0}; {fvp_harness} sim model ds_cnn "
              "--seed ${vars.seed} --macs 256 -o {output}"),
    "boot": ("--set", "fvp.sim.boot_seconds=4"),
    "deploy": ("--set", "fvp.sim.uart_rate=15000"),
    "unit": ("--set", "fvp.sim.speed=0.004"),
    "report": ("--set", "report.outputs=[markdown,csv,json,png]"),
}
"""Per phase, what makes it last long enough to be hit; the next run goes without (at full speed:
the simulator's knobs are part of the units' keys, so it measures its units afresh, beside the
records of the hit run)."""
NEEDS_SUPERVISOR = "needs the supervisor (w/reaper)"
SUPERVISED: set[tuple[str, str]] = set()
"""Cells that would need the supervisor and the collection of leftovers (issue 36 items 2 and 4) to
pass, marked as strict xfails; empty since both are in: a SIGKILLed build's ``sleep`` and the
simulator's guest root ``$TMPDIR/fvp-sim-*`` are ended and collected."""
KILL_TABLE: list[tuple[str, str, int, float | None, int, int, int, bool]] = []


def _reached(phase: str, out: Path) -> Callable[[], bool]:
    console = out / "logs" / "s0" / "host_terminal_0.log"

    # the log is written as the command starts: a second later its shell runs the sleep
    def build() -> bool:
        log = out / "logs" / "build" / "models.ds_cnn.file.log"
        try:
            return log.stat().st_mtime < time.time() - 1.0
        except OSError:
            return False

    def boot() -> bool:
        return "Booting Linux" in _read(console) or "Linux version" in _read(console)

    def deploy() -> bool:
        return "sha256sum /tmp/fvp-harness/" in _read(console)

    def unit() -> bool:
        return "Iteration 1 of" in _read(console)

    def report() -> bool:
        try:
            return json.loads((out / "manifest.json").read_text())["status"] == "complete"
        except (OSError, ValueError, KeyError):
            return False

    return {"build": build, "boot": boot, "deploy": deploy, "unit": unit, "report": report}[phase]


def _leftover_files(*folders: Path) -> list[str]:
    """What an ended run may leave: temp files, staging folders, the manifest's reserve, probes,
    partial lines."""
    found = []
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            name = path.name
            if (name.startswith(".") and not (name.endswith(".build") or name == ".lock")) \
                    or name.startswith("records.jsonl.partial-"):
                found.append(str(path))
    return found


def _marked(token: str, grace: float = 5.0) -> list[int]:
    """Processes carrying the cell's mark ``grace`` seconds after the harness exited; they are
    killed."""
    from tests.e2e.cli import MARK
    from tests.helpers import eventually
    from tests.proc_scan import processes_with_env

    eventually(lambda: not processes_with_env(MARK, token), timeout=grace, interval=0.1)
    left = processes_with_env(MARK, token)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return left


@pytest.fixture(scope="module")
def matrix_artifacts(workdir: Path) -> Path:
    """The smoke artifacts built once, the reference every cell's next run must reproduce byte for
    byte."""
    folder = workdir / "matrix-artifacts"
    done = run_cli(workdir, "run", "scenarios/smoke.yaml", "-o",
                   str(workdir / "out" / "matrix-ref"), *MATRIX_BASE,
                   "--set", f"vars.artifacts={folder}", timeout=120)
    assert done.returncode == 0, done.stderr
    return folder


def _cells() -> list[object]:
    cells = []
    for name in KILL_SIGNALS:
        for phase in KILL_PHASES:
            marks = ([pytest.mark.xfail(strict=True, reason=NEEDS_SUPERVISOR)]
                     if (name, phase) in SUPERVISED else [])
            cells.append(pytest.param(name, phase, marks=marks, id=f"{name}-{phase}"))
    return cells


@pytest.mark.parametrize(("fault", "phase"), _cells())
def test_kill_matrix(workdir: Path, matrix_artifacts: Path, fault: str, phase: str) -> None:
    """One cell: the run is hit by ``fault`` in ``phase``; exit code, seconds to exit, processes
    left, then the next run (``--resume``): files left, records lost (every line stored before is
    still there, whole, once), and a correct report of every unit from artifacts equal to the
    reference."""
    import uuid

    from tests.e2e.cli import MARK

    signum, code = KILL_SIGNALS[fault]
    cell = workdir / "matrix" / f"{fault}-{phase}"
    out, artifacts, tmp = cell / "out", cell / "artifacts", cell / "tmp"
    tmp.mkdir(parents=True)
    if phase == "build":
        artifacts.mkdir()
    else:
        shutil.copytree(matrix_artifacts, artifacts)
    token = uuid.uuid4().hex
    env = {**os.environ, MARK: token, "TMPDIR": str(tmp)}
    args = ("run", "scenarios/smoke.yaml", "-o", str(out), *MATRIX_BASE, *MATRIX_KNOBS[phase],
            "--set", f"vars.artifacts={artifacts}")
    first_env = {**env, MATRIX_SLEEP: "30"} if phase == "build" else env
    proc = subprocess.Popen([sys.executable, "-m", "fvp_harness", *args], cwd=workdir,
                            env=first_env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    reached = _reached(phase, out)
    deadline = time.monotonic() + 90
    try:
        while proc.poll() is None and time.monotonic() < deadline and not reached():
            time.sleep(0.05)
        assert proc.poll() is None, (
            f"the run ended before its {phase} phase: {proc.communicate()[1][-2000:]}")
        assert reached(), f"the {phase} phase was not reached in 90 s"
        proc.send_signal(signum)
        hit = time.monotonic()
        _stdout, stderr = proc.communicate(timeout=90)
        seconds = round(time.monotonic() - hit, 2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    processes = len(_marked(token))
    records_path = out / "records.jsonl"
    stored = records_path.read_bytes() if records_path.exists() else b""
    # a SIGKILL may cut the last line: that unit was never recorded
    whole = stored[: stored.rfind(b"\n") + 1]
    status = (json.loads((out / "manifest.json").read_text())["status"]
              if (out / "manifest.json").exists() else None)

    plain = ("run", "scenarios/smoke.yaml", "-o", str(out), *MATRIX_BASE, "--set",
             f"vars.artifacts={artifacts}")
    if phase == "build":  # the same build command, without the sleep
        plain = (*plain, *MATRIX_KNOBS["build"])
    again = subprocess.run([sys.executable, "-m", "fvp_harness", *plain, "--resume"], cwd=workdir,
                           env=env, text=True, capture_output=True, timeout=180)
    processes += len(_marked(token))
    files = [*_leftover_files(out, artifacts), *(str(path) for path in tmp.iterdir())]
    after = records_path.read_bytes() if records_path.exists() else b""
    kept = set(whole.splitlines())
    lost = len(kept - set(after.splitlines()))
    rows = [json.loads(line) for line in after.splitlines()]
    oks = [(row["unit_id"], row["key"]) for row in rows if row["status"] == "ok"]
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
    correct = (again.returncode == 0 and after.endswith(b"\n") and len(oks) == len(set(oks))
               and report.get("verdict", {}).get("status") == "PASS" and not report.get("not_run")
               and report.get("planned_units") == 2
               and json.loads((out / "manifest.json").read_text())["status"] == "complete"
               and all((artifacts / path.name).read_bytes() == path.read_bytes()
                       for path in matrix_artifacts.iterdir() if not path.name.startswith(".")))
    _kill_row(fault, phase, proc.returncode, seconds, processes, len(files), lost, correct)

    assert proc.returncode == code, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    if signum != signal.SIGKILL:
        assert status in (None, "interrupted"), status
        assert seconds < (25 if phase in ("deploy", "unit") else 15), seconds
    assert processes == 0, "processes left"
    assert not files, files
    assert lost == 0, "records lost"
    assert correct, again.stdout[-2000:] + again.stderr[-3000:]


def _kill_row(fault: str, phase: str, code: int, seconds: float | None, processes: int, files: int,
              lost: int, correct: bool) -> None:
    row = (fault, phase, code, seconds, processes, files, lost, correct)
    KILL_TABLE.append(row)
    line = "KILL " + json.dumps(row)
    print("\n" + line)
    # collected across xdist workers (benchmarks/fault_matrix.py)
    table = os.environ.get("FVP_FAULT_TABLE")
    if table:
        with open(table, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


# --- a closed output pipe, and make's reports (issue 36, "Also" and finding 7) --------------------


def test_a_closed_output_pipe_ends_the_run_interrupted_with_its_report(
        workdir: Path, matrix_artifacts: Path) -> None:
    """``fvp-harness run scenarios/smoke.yaml 2>&1 | head -2``: rich's console raised SystemExit(1)
    on EPIPE from a session's thread; the run died ``running``, with no report. Now: exit 141 (128 +
    SIGPIPE, as a shell reports a writer ended by a closed pipe), the manifest ``interrupted``, the
    report of what was measured written, and ``--resume`` completes the run."""
    out = workdir / "out" / "pipe"
    args = ("run", "scenarios/smoke.yaml", "-o", str(out), *MATRIX_BASE, "--set",
            f"vars.artifacts={matrix_artifacts}")
    line = " ".join(shlex.quote(part) for part in (sys.executable, "-m", "fvp_harness", *args))
    done = subprocess.run(["bash", "-c", f"set -o pipefail; {line} 2>&1 | head -2"], cwd=workdir,
                          text=True, capture_output=True, timeout=120)
    assert done.returncode == 141, done.stdout + done.stderr
    assert len(done.stdout.splitlines()) == 2
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
    assert (out / "report.md").is_file() and (out / "report.json").is_file()
    assert not _leftover_files(out), "the manifest's reserve, temp files"
    _assert_records_valid(out)
    again = run_cli(workdir, *args, "--resume", timeout=120)
    assert again.returncode == 0, again.stderr
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    assert json.loads((out / "report.json").read_text())["verdict"]["status"] == "PASS"


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)],
                         ids=["SIGTERM", "Ctrl-C"])
def test_a_signal_while_make_writes_the_reports_is_honoured(
    workdir: Path, matrix_artifacts: Path, signum: int, code: int
) -> None:
    """``make`` swallowed a signal in its report phase (exit 0): the first stage's stop was never
    looked at again. Now the report being written is finished, no other starts, exit 143/130, and
    the next make writes the rest."""
    base = workdir / "out" / f"make-{signal.Signals(signum).name}"
    folder = base / "smoke"
    args = ("make", "scenarios/smoke.yaml", "--results", str(base), *MATRIX_BASE, "--set",
            f"vars.artifacts={matrix_artifacts}", "--set", "report.outputs=[markdown,csv,json,png]")

    def reporting() -> bool:
        try:
            return json.loads((folder / "manifest.json").read_text())["status"] == "complete"
        except (OSError, ValueError, KeyError):
            return False

    done = run_cli(workdir, *args, timeout=120, when=reporting,
                   then=lambda proc: proc.send_signal(signum))
    _note(f"{signal.Signals(signum).name} while make writes the reports", done, done.acted_after)
    assert done.returncode == code, done.stderr
    _no_traceback(done)
    again = run_cli(workdir, *args, timeout=120)
    assert again.returncode == 0, again.stderr
    assert (folder / "report.md").is_file() and (folder / "report.inputs").is_file()
