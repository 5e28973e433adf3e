"""Only good runs are baselines (issue 38, findings 3 and 5): a stored run whose every unit failed
still says ``complete`` in its manifest, and a killed run stays ``running``. A baseline ref passes
over the first and says so, ``--baseline-from`` refuses it before anything boots, ``runs`` shows
both for what they are (``failed``, ``interrupted``), ``history`` does not go green on a newest run
that measured nothing, ``report`` says why it exits 3, and ``make report`` renders every folder
before it fails. Synthetic stored runs (``write_run``) and the real command line (child
processes); a real process holds the folder lock, and is killed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fvp_harness.cli.main import main
from fvp_harness.errors import ConfigurationError
from fvp_harness.store.folder import LOCK_FILE, ResultStore, StoredRun
from fvp_harness.store.locate import find_run
from fvp_harness.store.state import run_state
from tests.e2e.cli import run_cli
from tests.helpers import REPO
from tests.report.stored_runs import write_run

VALUES = {("before", "m1"): 2.0, ("after", "m1"): 1.0, ("before", "m2"): 4.0, ("after", "m2"): 2.0}
REPS = 20  # 2 builds x 2 models x 20 repetitions: the 80 units
ALL_UNITS = tuple(f"r{rep}-{build}-{model}" for rep in range(REPS) for build, model in VALUES)
GOOD, FAILED = "20260301-100000-good", "20260302-100000-fail"


def _main_runs(folder: Path) -> None:
    """A good run of main, then a newer one in which all 80 units failed (manifest: complete)."""
    write_run(
        folder, VALUES, run_id=GOOD, commit="a" * 40, branch="main", started="2026-03-01T10:00:00Z"
    )
    write_run(
        folder,
        VALUES,
        run_id=FAILED,
        commit="b" * 40,
        branch="main",
        started="2026-03-02T10:00:00Z",
        reps=REPS,
        failed=ALL_UNITS,
    )


def test_a_baseline_ref_passes_over_a_run_whose_80_units_all_failed_and_says_so(
    tmp_path: Path,
) -> None:
    base = tmp_path / "results"
    _main_runs(base / "demo")
    assert len(ResultStore(base / "demo").records()) == 80
    for ref in ("demo@main", "demo@latest"):
        skipped: list[str] = []
        assert (
            find_run(ref, results_base=base, builds=["before"], skipped=skipped).run_id == GOOD
        ), ref
        assert len(skipped) == 1 and FAILED in skipped[0], skipped
        assert "no ok record of build 'before' (failed" in skipped[0], skipped
    skipped = []
    assert (
        find_run("demo@main", results_base=base, builds=(), skipped=skipped).run_id == GOOD
    )  # compare's rule
    assert FAILED in skipped[0] and "no ok record of any build" in skipped[0]
    assert (
        find_run("demo@main", results_base=base).run_id == FAILED
    )  # no numbers needed: the newest, as before
    with pytest.raises(
        ConfigurationError
    ) as caught:  # the failed run's own commit: nothing to fall back on
        find_run(f"demo@{'b' * 7}", results_base=base, builds=["before"])
    assert "measured anything to use" in str(caught.value) and f"skipped run {FAILED}" in str(
        caught.value
    )
    assert (
        find_run(f"demo@{FAILED}", results_base=base, builds=["before"]).run_id == FAILED
    )  # named exactly


@pytest.mark.slow  # CLI processes: over a second each
def test_baseline_from_a_run_without_ok_baseline_samples_is_refused_before_anything_boots(
    tmp_path: Path,
) -> None:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    folder = tmp_path / "results" / "smoke"
    _main_runs(folder)
    named = run_cli(
        tmp_path,
        "run",
        "scenarios/smoke.yaml",
        "--baseline-from",
        "results/smoke",
        "-q",
        timeout=120,
    )
    assert named.returncode == 2, named.stdout + named.stderr
    assert (
        f"run {FAILED}" in named.stderr
        and "has no ok record of build 'before' (failed" in named.stderr
    )
    refused = run_cli(
        tmp_path,
        "run",
        "scenarios/smoke.yaml",
        "--baseline-from",
        f"smoke@{'b' * 8}",
        "-q",
        timeout=120,
    )
    assert refused.returncode == 2 and f"skipped run {FAILED}" in refused.stderr, refused.stderr
    # nothing was booted, built or archived: the folder holds the failed run as it was
    assert not (folder / "logs").exists() and not (tmp_path / ".artifacts").exists()
    assert json.loads((folder / "manifest.json").read_text())["run"]["id"] == FAILED
    assert sorted(path.name for path in (folder / "runs").iterdir()) == [GOOD]


@pytest.mark.slow  # CLI processes: over a second each
def test_at_ref_in_a_scenario_means_its_own_results_folder_whatever_o_says(tmp_path: Path) -> None:
    """``compare.baseline_from: "@main"`` with ``-o results/pr-42`` looks in results/smoke, and a
    typo gets the closest ref and the runs there are (it said "results/pr-42 does not exist")."""
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    write_run(
        tmp_path / "results" / "smoke",
        VALUES,
        run_id=FAILED,
        branch="main",
        reps=2,
        failed=tuple(f"r{rep}-{b}-{m}" for rep in range(2) for b, m in VALUES),
    )
    typo = run_cli(
        tmp_path,
        "run",
        "scenarios/smoke.yaml",
        "--set",
        'compare.baseline_from="@mian"',
        "-o",
        "results/pr-42",
        "-q",
        timeout=120,
    )
    assert typo.returncode == 2, typo.stderr
    assert "did you mean 'main'?" in typo.stderr and f"run {FAILED}" in typo.stderr, typo.stderr
    assert "the refs it knows: latest, main" in typo.stderr, typo.stderr
    assert "results/smoke" in typo.stderr and "does not exist" not in typo.stderr
    # the ref finds the scenario's own folder: its only run of main measured nothing: refused
    spaced = run_cli(
        tmp_path,
        "run",
        "scenarios/smoke.yaml",
        "--set",
        'compare.baseline_from="@main"',
        "-o",
        "results/pr-42",
        "-q",
        timeout=120,
    )
    assert spaced.returncode == 2 and f"skipped run {FAILED}" in spaced.stderr, spaced.stderr
    assert not (tmp_path / "results" / "pr-42").exists()


def _hold_lock(folder: Path) -> subprocess.Popen[str]:
    """A live process holding the folder's lock as a run does (``ResultStore.lock``: flock)."""
    code = (
        "import fcntl, sys, time\nhandle = open(sys.argv[1], 'a+')\n"
        "fcntl.flock(handle, fcntl.LOCK_EX)\n"
        "print('locked', flush=True)\ntime.sleep(120)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(folder / LOCK_FILE)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


def test_runs_shows_failed_interrupted_and_complete_under_a_header(tmp_path: Path) -> None:
    folder = tmp_path / "results" / "demo"
    write_run(folder, VALUES, run_id="20260301-100000-aaaa", started="2026-03-01T10:00:00Z")
    write_run(
        folder,
        VALUES,
        run_id="20260302-100000-bbbb",
        started="2026-03-02T10:00:00Z",
        reps=2,
        failed=tuple(f"r{rep}-{b}-{m}" for rep in range(2) for b, m in VALUES),
    )
    write_run(
        folder,
        VALUES,
        run_id="20260303-100000-cccc",
        started="2026-03-03T10:00:00Z",
        changes={"status": "running"},
    )
    holder = _hold_lock(folder)
    try:
        assert run_state(StoredRun.of(folder, current=True)) == "running"
        live = run_cli(tmp_path, "runs", "demo")
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        assert holder.stdout is not None
        holder.stdout.close()
    assert live.returncode == 0, live.stderr
    header, *rows = live.stdout.splitlines()
    assert header.split() == ["run", "started", "status", "commit", "units", "folder"], live.stdout
    assert [row.split()[-4] for row in rows] == ["complete", "failed", "running"]
    killed = run_cli(tmp_path, "runs", "demo")  # the writer was SIGKILLed: its lock went with it
    assert [row.split()[-4] for row in killed.stdout.splitlines()[1:]] == [
        "complete",
        "failed",
        "interrupted",
    ]
    assert (
        run_state(StoredRun.of(folder / "runs" / "20260301-100000-aaaa", current=False))
        == "complete"
    )


def test_history_exits_1_when_the_newest_run_measured_nothing(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "results" / "demo"
    write_run(folder, VALUES, run_id="20260301-100000-aaaa", started="2026-03-01T10:00:00Z", seed=1)
    write_run(folder, VALUES, run_id="20260302-100000-bbbb", started="2026-03-02T10:00:00Z", seed=2)
    assert main(["history", str(folder), "--no-charts"]) == 0, capsys.readouterr()
    write_run(
        folder,
        VALUES,
        run_id="20260303-100000-cccc",
        started="2026-03-03T10:00:00Z",
        reps=2,
        failed=tuple(f"r{rep}-{b}-{m}" for rep in range(2) for b, m in VALUES),
    )
    capsys.readouterr()
    assert main(["history", str(folder), "--no-charts"]) == 1
    err = capsys.readouterr().err
    newest = "error: the newest run 20260303-100000-cccc (failed) measured no cpu_time of build"
    assert f"{newest} after" in err, err


def _killed_run(folder: Path, run_id: str) -> None:
    """A run killed before it measured anything: manifest running, no record, no lock held."""
    write_run(folder, VALUES, run_id=run_id, changes={"status": "running"})
    folder.joinpath("records.jsonl").unlink()


@pytest.mark.slow  # CLI processes: over a second each
def test_report_says_why_it_exits_3_on_a_killed_run_that_measured_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "results" / "demo"
    _killed_run(folder, "20260301-100000-dead")
    done = run_cli(tmp_path, "report", "-q", "demo")
    assert done.returncode == 3, done.stdout + done.stderr
    err = done.stderr
    assert (
        "exit 3 (infrastructure): the run ended interrupted (its manifest still says running "
        "and no process writes it: killed) with 12 planned unit(s) not run, nothing measured"
    ) in err, err


@pytest.mark.slow  # three report processes: 24 s on the loaded 2-core machine
def test_make_report_renders_every_folder_and_fails_at_the_end(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_run(results / "a", VALUES, run_id="20260301-100000-aaaa")
    _killed_run(results / "b", "20260301-100000-bbbb")
    write_run(results / "c", VALUES, run_id="20260301-100000-cccc")
    done = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-f",
            str(REPO / "Makefile"),
            "report",
            f"RESULTS={results}",
            f"PYTHON={sys.executable}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ | {"PYTHONPATH": str(REPO)},
    )
    assert done.returncode != 0, done.stdout + done.stderr
    assert f"make report: {results}/b/ exited 3" in done.stderr, done.stderr
    assert (results / "a" / "report.md").is_file() and (results / "c" / "report.md").is_file()


def test_compare_at_main_passes_over_a_run_that_measured_nothing_and_says_so(
    tmp_path: Path, capsys
) -> None:
    folder = tmp_path / "results" / "demo"
    _main_runs(folder)
    write_run(folder, VALUES, run_id="20260303-100000-feat", branch="feature",
              started="2026-03-03T10:00:00Z", seed=3)
    code = main(["compare", f"{folder}@main", f"{folder}@feature", "-o", str(tmp_path / "cmp")])
    out, err = capsys.readouterr()
    assert code in (0, 1) and f"A: run {GOOD}" in out, out + err
    assert f"skipped run {FAILED}" in err and "no ok record of any build" in err, err
