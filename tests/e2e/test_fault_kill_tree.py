"""SIGKILL of ``fvp-harness run`` in the build and unit phases (issue 36, findings 1-5), the CLI as
a subprocess.

After each kill: no process the run started is left (every one carries a test mark in its
environment; the time from the SIGKILL to the last one gone is noted), no byte of a secret rests in
any file, and the next run is correct: its artifact is whole (no writer of the killed attempt
appended to it), the leftovers of the killed run (host working folder, simulator guest root, build
staging folder) are removed and counted, and nothing else is touched. A file the harness did not
make is refused before anything builds or boots. Rows of the fault table are written like
``test_fault_matrix.py``'s (``FVP_FAULT_TABLE``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.proc_scan import processes_with_env

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not sys.platform.startswith("linux"), reason="the supervisor and /proc are Linux's"
    ),
]

MARK = "T36_KILL_MARK"
SECRET = "s3cr3t-" + uuid.uuid4().hex
"""A secret environment value, from the harness's environment (``${env:API_TOKEN}``): no file may
ever hold it."""

HOST_SCENARIO = """\
name: {name}
target: host
builds:
  a: {{runner: runner.sh}}
models:
  m1: {{file: m1.bin{build}}}
run:
  command: "{{runner}} {{model}}"
  warmup: 0
  iterations: 1
  repetitions: 1
  timeout: 120
  env: {{API_TOKEN: {{value: "${{env:API_TOKEN}}", secret: true}}}}
metrics: [{{name: t, regex: "t=([0-9.]+)", required: true}}]
"""

RUNNER = """\
#!/bin/sh
test -n "$API_TOKEN" || { echo "the secret did not reach the runner"; exit 9; }
case "$(cat "$1")" in
  setsid) setsid sleep 1000 & sleep 1000 ;;
  slow) sleep 1000 ;;
  *) echo "t=1.0" ;;
esac
"""


@dataclass
class Killed:
    """A run SIGKILLed once ``when()`` held: seconds from the kill to the last marked process
    gone."""

    seconds_to_gone: float | None
    left: list[int]


class Runs:
    """``fvp-harness`` runs of one test: a private TMPDIR, a mark in the environment of every
    process."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tmp = root / "tmp"
        self.tmp.mkdir(parents=True)
        self.token = uuid.uuid4().hex

    def env(self) -> dict[str, str]:
        return {**os.environ, MARK: self.token, "TMPDIR": str(self.tmp), "API_TOKEN": SECRET}

    def marked(self) -> list[int]:
        return processes_with_env(MARK, self.token)

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "fvp_harness", *args], cwd=self.root,
                              env=self.env(), capture_output=True, text=True, timeout=timeout)
        assert not self._gone_or_reap(5.0)[1], "processes left after a finished run"
        return done

    def kill_when(self, when: Callable[[], bool], *args: str, timeout: float = 120,
                  after: float = 0.0) -> Killed:
        proc = subprocess.Popen([sys.executable, "-m", "fvp_harness", *args], cwd=self.root,
                                env=self.env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            end = time.monotonic() + timeout
            while not when():
                assert proc.poll() is None, (
                    f"the run ended before the kill point: {proc.communicate()[1]}")
                assert time.monotonic() < end, "the kill point never came"
                time.sleep(0.02)
            time.sleep(after)
            proc.kill()  # SIGKILL: no handler, no atexit, no finally
            killed = time.monotonic()
            proc.communicate(timeout=30)
            seconds, left = self._gone_or_reap(10.0, since=killed)
            return Killed(seconds, left)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()

    def _gone_or_reap(self, grace: float,
                      since: float | None = None) -> tuple[float | None, list[int]]:
        began = time.monotonic() if since is None else since
        while time.monotonic() - began < grace:
            if not self.marked():
                return round(time.monotonic() - began, 3), []
            time.sleep(0.01)
        left = self.marked()
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        return None, left


def _note(fault: str, phase: str, killed: Killed, files_left: int, next_ok: bool) -> None:
    line = (f"FAULT SIGKILL in {phase} ({fault}): exit -9, processes left {len(killed.left)}, last "
            f"descendant gone {killed.seconds_to_gone} s after the kill, files left after the next "
            f"run {files_left}, next run correct {next_ok}")
    print("\n" + line)
    table = os.environ.get("FVP_FAULT_TABLE")
    if table:
        with open(table, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def _host_scenario(folder: Path, m1: str = "ok", build: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "runner.sh").write_text(RUNNER)
    (folder / "runner.sh").chmod(0o755)
    if not build:
        (folder / "m1.bin").write_text(m1)
    path = folder / "k.yaml"
    path.write_text(HOST_SCENARIO.format(name="k",
                                         build=f", build: {json.dumps(build)}" if build else ""))
    return path


def _holding(folders: list[Path], needle: bytes) -> list[Path]:
    """Every file under ``folders`` whose bytes hold ``needle``."""
    found = []
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and not path.is_symlink():
                try:
                    if needle in path.read_bytes():
                        found.append(path)
                except OSError:
                    pass
    return found


def _sleeps(runs: Runs, count: int) -> Callable[[], bool]:
    def seen() -> bool:
        return sum(Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sleep\0")
                   for pid in runs.marked() if Path(f"/proc/{pid}").exists()) >= count
    return seen


def test_a_build_killed_mid_write_never_corrupts_the_next_artifact(tmp_path: Path) -> None:
    """The issue's repro: the build writes AAAA, sleeps, appends BBBB; a SIGKILL of the harness
    mid-build used to leave the subshell writing, and the next run measured a 12-byte artifact."""
    runs = Runs(tmp_path)
    path = _host_scenario(tmp_path / "s",
                          build="(printf AAAA > m1.bin; sleep 4; printf BBBB >> m1.bin)")
    artifact = path.parent / "m1.bin"
    out = tmp_path / "out"
    began = time.monotonic()
    killed = runs.kill_when(lambda: artifact.exists() and time.monotonic() - began >= 2.5,
                            "run", str(path), "-o", str(out))
    assert not killed.left, f"processes of the killed build live on: {killed.left}"
    assert artifact.read_bytes() == b"AAAA", "nothing wrote after the kill"
    again = runs.run("run", str(path), "-o", str(out))
    assert again.returncode == 0, again.stderr
    time.sleep(2.0)  # a stray writer of the killed attempt would append now
    assert artifact.read_bytes() == b"AAAABBBB"
    assert json.loads((path.parent / ".m1.bin.build").read_text()) == {
        "command": "(printf AAAA > m1.bin; sleep 4; printf BBBB >> m1.bin)"}
    files_left = len(list(runs.tmp.iterdir())) + len(list(path.parent.glob(".*.building-*")))
    _note("build writing its artifact itself", "build", killed, files_left, True)
    assert files_left == 0


def test_a_host_runner_with_a_setsid_child_dies_with_the_harness_and_its_folder_is_collected(
        tmp_path: Path) -> None:
    """The issue's runner, ``setsid sleep 1000 & sleep 1000``: both sleeps and the shell used to
    live on."""
    runs = Runs(tmp_path)
    path = _host_scenario(tmp_path / "s", m1="setsid")
    out = tmp_path / "out"
    killed = runs.kill_when(_sleeps(runs, 2), "run", str(path), "-o", str(out))
    assert not killed.left, f"the runner's processes outlived the harness: {killed.left}"
    assert killed.seconds_to_gone is not None and killed.seconds_to_gone < 2.0
    leftovers = sorted(p.name for p in runs.tmp.iterdir())
    assert len(leftovers) == 1 and leftovers[0].startswith("fvp-harness-host-"), leftovers
    (path.parent / "m1.bin").write_text("ok")
    again = runs.run("run", str(path), "-o", str(out))
    assert again.returncode == 0, again.stderr
    assert "removed 1 leftover folder" in again.stderr and leftovers[0] in again.stderr
    files_left = len(list(runs.tmp.iterdir()))
    _note("host runner with a setsid child", "unit", killed, files_left, True)
    assert files_left == 0, (
        "the dead run's working folder was collected, the new one removed at its end")


@pytest.mark.parametrize("moment", ["start", "build", "unit"])
def test_no_byte_of_a_secret_reaches_the_disk_under_a_sigkill(tmp_path: Path, moment: str) -> None:
    """The host command's text (``API_TOKEN='...' runner.sh ...``) used to rest in a script file in
    TMPDIR."""
    runs = Runs(tmp_path)
    build = "(sleep 3; printf ok > {output})" if moment == "build" else ""
    path = _host_scenario(tmp_path / "s", m1="slow" if moment == "unit" else "ok", build=build)
    out = tmp_path / "out"
    began = time.monotonic()
    when: Callable[[], bool] = {
        "start": lambda: time.monotonic() - began > 0.6,
        "build": _sleeps(runs, 1),
        "unit": _sleeps(runs, 1),
    }[moment]
    killed = runs.kill_when(when, "run", str(path), "-o", str(out))
    assert not killed.left
    folders = [tmp_path]  # the scenario's folder, the results, TMPDIR: every file the run made
    assert not _holding(folders, SECRET.encode()), "a secret rests on disk"
    if moment == "unit":
        (path.parent / "m1.bin").write_text("ok")
    again = runs.run("run", str(path), "-o", str(out))
    assert again.returncode == 0, again.stderr
    assert not _holding(folders, SECRET.encode())
    assert SECRET not in again.stdout + again.stderr
    _note(f"secret in run.env, kill at {moment}", {"start": "start-up"}.get(moment, moment), killed,
          len(list(runs.tmp.iterdir())), True)


def _smoke(root: Path) -> Path:
    shutil.copytree(REPO / "scenarios", root / "scenarios",
                    ignore=shutil.ignore_patterns("qemu", "vela_check"))
    return root / "scenarios" / "smoke.yaml"


SMOKE = ("--set", "run.repetitions=1", "--set", "run.iterations=1", "--set", "run.warmup=0")


@pytest.mark.sim
def test_a_simulator_run_killed_in_its_unit_leaves_a_guest_root_the_next_run_removes(
        tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    path = _smoke(tmp_path)
    out = tmp_path / "out"
    hang = ("--set", "fvp.sim.runner_fault=hang=0", "--set", "fvp.timeouts.unit=120")  # units hang
    def in_unit() -> bool:  # the guest root holds the hanging unit's folder
        return any(root.is_dir() and any(root.rglob("r0-before-ds_cnn"))
                   for root in runs.tmp.glob("fvp-sim-*"))

    killed = runs.kill_when(in_unit, "run", str(path), "-o", str(out), *SMOKE, *hang, timeout=240,
                            after=0.5)
    assert not killed.left, f"the model or its children outlived the harness: {killed.left}"
    roots = sorted(p.name for p in runs.tmp.glob("fvp-sim-*") if (p / ".fvp-owner").is_file())
    assert roots, "the SIGKILLed model left its guest root (it is collected by the next run)"
    again = runs.run("run", str(path), "-o", str(out), *SMOKE, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"removed {len(roots)} leftover folder" in again.stderr, again.stderr
    files_left = len([p for p in runs.tmp.glob("fvp-sim-*") if p.name in roots])
    _note("simulator model with its guest root", "unit", killed, files_left, True)
    assert files_left == 0


@pytest.mark.sim
def test_a_run_killed_in_its_builds_leaves_staging_folders_the_next_build_removes(
        tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    path = _smoke(tmp_path)
    artifacts = tmp_path / ".artifacts" / "smoke"
    out = tmp_path / "out"
    killed = runs.kill_when(lambda: any(artifacts.glob(".*.building-*")), "run", str(path), "-o",
                            str(out), *SMOKE, timeout=240)
    assert not killed.left
    staged = sorted(p.name for p in artifacts.glob(".*.building-*"))
    assert staged, "the killed builds left their staging folders"
    again = runs.run("run", str(path), "-o", str(out), *SMOKE, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "leftover folder" in again.stderr and staged[0] in again.stderr, again.stderr
    files_left = len(list(artifacts.glob(".*.building-*")))
    built = {p.name for p in artifacts.iterdir() if not p.name.startswith(".")}
    assert built == {"executor_runner-before", "executor_runner-after", "ds_cnn.model",
                     "ds_cnn.input.bin"}
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    _note("simulator artifacts built with {output}", "build", killed, files_left,
          all(r["status"] == "ok" for r in records))
    assert files_left == 0 and all(r["status"] == "ok" for r in records)


def test_a_file_the_harness_did_not_make_is_refused_before_anything_builds_or_boots(
        tmp_path: Path) -> None:
    """The issue's ``builds.X.runner: /etc/passwd``, with a file of this test's own."""
    runs = Runs(tmp_path)
    path = _smoke(tmp_path)
    victim = tmp_path / "etc" / "passwd"
    victim.parent.mkdir()
    victim.write_text("root:x:0:0:root:/root:/bin/sh\n")
    out = tmp_path / "out"
    done = runs.run("run", str(path), "-o", str(out), "--set", f"builds.before.runner={victim}",
                    *SMOKE)
    assert done.returncode == 2, done.stderr
    assert f"builds.before.runner: {victim} exists and was not built by fvp-harness" in done.stderr
    assert "--rebuild" in done.stderr and "Traceback" not in done.stderr
    assert victim.read_text() == "root:x:0:0:root:/root:/bin/sh\n"
    assert sorted(p.name for p in victim.parent.iterdir()) == ["passwd"], (
        "no .passwd.build* beside it")
    assert not (tmp_path / ".artifacts").exists(), "nothing was built"
    assert not list(runs.tmp.iterdir()) and not (out / "logs" / "s0").exists(), "nothing booted"
    outside = runs.run("validate", str(path), "--set", "builds.before.runner=../../../../x")
    assert outside.returncode == 0, outside.stderr
    assert ("builds.before.runner: warning:" in outside.stderr and
            "outside the scenario's tree" in outside.stderr)
