"""``make`` on the simulator: the real path of the batch engine (builds by ``fvp-harness sim``,
booted instances, incremental runs, -j, -k, --only, -B, Dask, Ctrl-C and stop).

The tests share one set of simulator artifacts (built once per module) and tiny scenarios (one
model, two builds, one repetition, two iterations), so each ``make`` boots the simulator once or
twice. The engine's logic is tested without any model in test_engine.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fvp_harness.batch.engine import MakeOptions, make, plan_batch
from fvp_harness.cli.main import main
from fvp_harness.run.lanes import LocalExecutor
from fvp_harness.run.plan import KEY_PART_PREFIX
from fvp_harness.store.folder import REPORT_INPUTS_FILE, ResultStore
from tests.batch.scenarios import copy_artifacts, records, snapshot, write_scenario

pytestmark = [pytest.mark.slow, pytest.mark.sim]


# --- end to end on the simulator ------------------------------------------------------------------


# ``art``: simulator artifacts built once for the folder (conftest.py)


def test_incremental_model_change_reruns_only_its_units_and_noop_writes_nothing(
        art: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    own = tmp_path / "art"
    copy_artifacts(art, own, {"a": "a", "b": "b"})
    sc = tmp_path / "sc"
    write_scenario(sc, "a", own)
    write_scenario(sc, "b", own, model="resnet8")
    results = tmp_path / "results"
    first = make([sc], MakeOptions(jobs=1, results_base=results))
    assert first.exit_code == 0 and first.units_run == 4
    assert first.boots == 1, (
        "both scenarios share platform and FVP settings: one instance serves them")
    stored = records(results, "a")
    assert all(KEY_PART_PREFIX + "model" in r.extra for r in stored)
    assert (results / "a" / REPORT_INPUTS_FILE).is_file()

    # no-op: nothing written, not even a lock file touched
    before = snapshot(results)
    noop = make([sc], MakeOptions(jobs=2, results_base=results))
    assert noop.nothing_to_do and noop.exit_code == 0 and noop.units_run == 0
    assert snapshot(results) == before
    assert noop.boots == 0 and noop.lanes == 0, "a no-op make boots nothing"

    # change b's model bytes: -n names exactly b's units (model changed) and b's report
    subprocess.run([sys.executable, "-m", "fvp_harness", "sim", "model", "resnet8", "--seed", "2",
                    "-o", str(own / "b.model")], check=True, capture_output=True)
    capsys.readouterr()
    assert main(["make", "-n", str(sc), "--results", str(results)]) == 0
    lines = capsys.readouterr().out.splitlines()
    runs = [line.split()[1] for line in lines if line.startswith("run ")]
    assert sorted(runs) == ["b/r0-after-resnet8", "b/r0-before-resnet8"]
    assert all("changed: model" in line for line in lines if line.startswith("run "))
    assert [line.split()[1] for line in lines if line.startswith("report")] == ["b/report"]
    assert any(line.startswith("up to date") and " a " in f" {line.split()[3]} " for line in lines)
    assert snapshot(results) == before  # -n writes nothing

    a_before = snapshot(results / "a")
    again = make([sc], MakeOptions(jobs=2, results_base=results))
    assert again.exit_code == 0 and again.units_run == 2
    assert snapshot(results / "a") == a_before
    # nothing lost: the records of the old model bytes are b's previous run, kept whole in
    # runs/<id>/ (a run's records hold one key set, issue 38 finding 4); the current run holds
    # the 2 new ones
    kept = [ResultStore(folder, create=False).records()
            for folder in (results / "b" / "runs").iterdir()]
    assert len(records(results, "b")) == 2 and [len(old) for old in kept] == [2]
    assert not {r.key for r in records(results, "b")} & {r.key for r in kept[0]}

    # change only the report section of a: only a's report re-renders, no unit runs
    write_scenario(sc, "a", own, title="Renamed")
    b_before = snapshot(results / "b")
    rec_before = (results / "a" / "records.jsonl").read_bytes()
    assert ([a.kind for a in make([sc], MakeOptions(dry_run=True, results_base=results)).actions]
            == [
        "report", "up-to-date"])
    report = make([sc], MakeOptions(jobs=2, results_base=results))
    assert report.units_run == 0 and report.reports == [results / "a"]
    assert (results / "a" / "records.jsonl").read_bytes() == rec_before
    assert "# Renamed" in (results / "a" / "report.md").read_text(encoding="utf-8")
    assert snapshot(results / "b") == b_before
    # and `fvp-harness report DIR` agrees with what make rendered
    md = (results / "a" / "report.md").read_bytes()
    capsys.readouterr()
    main(["report", str(results / "a"), "-q"])
    assert (results / "a" / "report.md").read_bytes() == md


def _deterministic(results: Path,
                   stem: str) -> dict[str, tuple[str, str, dict[str, str], list[float]]]:
    return {r.unit_id: (r.key, r.status, r.outputs, r.samples.get("npu_cycles", []))
            for r in records(results, stem)}


def test_parallel_gives_the_same_records_as_serial(art: Path, tmp_path: Path) -> None:
    sc = tmp_path / "sc"
    write_scenario(sc, "a", art)
    write_scenario(sc, "b", art, model="resnet8")
    serial = make([sc], MakeOptions(jobs=1, results_base=tmp_path / "r1"))
    parallel = make([sc], MakeOptions(jobs=2, results_base=tmp_path / "r2"))
    assert serial.exit_code == parallel.exit_code == 0
    assert serial.lanes == 1 and parallel.lanes == 2
    for stem in ("a", "b"):
        one, two = _deterministic(tmp_path / "r1", stem), _deterministic(tmp_path / "r2", stem)
        assert one == two and len(one) == 2


def test_keep_going_finishes_other_scenarios_and_exits_nonzero(art: Path, tmp_path: Path) -> None:
    sc = tmp_path / "sc"
    # provenance failure: a test failure
    write_scenario(sc, "a", art, after_id="not-the-build-that-runs")
    write_scenario(sc, "b", art, model="resnet8")
    results = tmp_path / "results"
    code = main(["make", "-q", "-k", "-j", "1", str(sc), "--results", str(results)])
    assert code == 1
    assert {r.status for r in records(results, "b")} == {"ok"} and len(records(results, "b")) == 2
    assert (results / "b" / "report.md").is_file() and (results / "a" / "report.md").is_file()
    failed = [r for r in records(results, "a") if r.status != "ok"]
    assert [r.failure_class for r in failed] == ["test"]
    # the failed unit is not up to date: the next make would run it again, and says why
    again = plan_batch([sc], MakeOptions(results_base=results))
    assert ([(u.id, why.split(" (")[0]) for u, why in again[0].todo]
            == [("r0-after-ds_cnn", "failed last time")])


def test_only_pattern_and_always(art: Path, tmp_path: Path) -> None:
    sc = tmp_path / "sc"
    write_scenario(sc, "a", art, repetitions=2)
    write_scenario(sc, "b", art, model="resnet8")
    results = tmp_path / "results"
    first = make([sc], MakeOptions(jobs=2, only=("a/r1-*",), results_base=results))
    assert first.units_run == 2 and not (results / "b").exists()
    assert {r.unit_id for r in records(results, "a")} == {"r1-before-ds_cnn", "r1-after-ds_cnn"}
    forced = make([sc],
                  MakeOptions(jobs=2, only=("a/r1-*",), always=True, dry_run=True,
                              results_base=results))
    # -B rebuilds artifacts too
    assert [a.kind for a in forced.actions] == ["build"] * 4 + ["run", "run", "report"]
    assert {a.reason for a in forced.actions if a.kind == "build"} == {"forced"}


@pytest.mark.dask
def _without_machine(path: Path) -> object:
    """A report without its machine record (``## Machine``, ``machine``): load averages differ from
    run to run."""
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data.pop("machine")["host"]["load_after"] is not None
        return data
    text = path.read_text(encoding="utf-8")
    assert "\n## Machine\n" in text
    return text.split("\n## Machine\n")[0]


def test_dask_local_cluster_gives_the_same_report_as_local(art: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    from fvp_harness.batch.dask import DaskExecutor

    sc = tmp_path / "sc"
    write_scenario(sc, "a", art)
    local = make([sc], MakeOptions(jobs=1, results_base=tmp_path / "local"),
                 executor=LocalExecutor(1))
    dask = make([sc], MakeOptions(jobs=1, results_base=tmp_path / "dask"),
                executor=DaskExecutor(workers=1, processes=False))
    assert local.exit_code == dask.exit_code == 0 and dask.units_run == 2
    assert _deterministic(tmp_path / "local", "a") == _deterministic(tmp_path / "dask", "a")
    # the same, but for each run's own machine record (its load)
    for name in ("report.md", "report.json"):
        assert (_without_machine(tmp_path / "local" / "a" / name)
                == _without_machine(tmp_path / "dask" / "a" / name))
    # logs came back from the worker into the one results folder
    logs = {r.log for r in records(tmp_path / "dask", "a")}
    assert all(log and (tmp_path / "dask" / "a" / log).is_file() for log in logs)


def test_ctrl_c_keeps_finished_records_and_the_next_make_continues(
    art: Path, tmp_path: Path
) -> None:
    from fvp_harness.errors import Interrupted
    from fvp_harness.events import Event

    sc = tmp_path / "sc"
    write_scenario(sc, "a", art, repetitions=4, iterations=40)
    results = tmp_path / "results"
    seen: list[str] = []

    def listener(event: Event) -> None:
        if event.kind == "unit_done":
            seen.append(event.unit or "")
            if len(seen) == 1:
                # a real SIGINT, as Ctrl-C sends: unlike _thread.interrupt_main() it also breaks the
                # main thread out of a blocking wait, so it cannot arrive only after the whole batch
                # has finished
                os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(Interrupted):
        make([sc], MakeOptions(jobs=1, results_base=results), listener=listener)
    kept = records(results, "a")
    # the unit in flight is not recorded
    assert 1 <= len(kept) < 8 and {r.status for r in kept} == {"ok"}
    manifest = json.loads((results / "a" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "interrupted"
    assert not (results / "a" / "report.md").exists()
    rest = make([sc], MakeOptions(jobs=1, results_base=results))
    assert rest.exit_code == 0 and rest.units_run == 8 - len(kept)
    assert len({r.unit_id for r in records(results, "a")}) == 8


def test_stop_finishes_the_units_in_flight_and_the_next_make_continues(
    art: Path, tmp_path: Path
) -> None:
    """The first Ctrl-C of ``make`` (a stop request): the unit in flight finishes and is kept,
    nothing new starts."""
    import threading

    from fvp_harness.errors import Interrupted
    from fvp_harness.events import Event

    sc = tmp_path / "sc"
    write_scenario(sc, "a", art, repetitions=3)
    results = tmp_path / "results"
    stop = threading.Event()
    started: list[str] = []

    def listener(event: Event) -> None:
        if event.kind == "unit":
            started.append(event.unit or "")
            if len(started) == 2:
                stop.set()  # while the second unit runs

    with pytest.raises(Interrupted):
        make([sc], MakeOptions(jobs=1, results_base=results), listener=listener, stop=stop)
    kept = records(results, "a")
    assert [r.unit_id for r in kept] == started and len(kept) == 2, (
        "the unit in flight is recorded, no other starts")
    assert {r.status for r in kept} == {"ok"}
    manifest = json.loads((results / "a" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "interrupted"
    assert not (results / "a" / "report.md").exists()
    rest = make([sc], MakeOptions(jobs=1, results_base=results))
    assert rest.exit_code == 0 and rest.units_run == 4


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fvp_harness", *args], capture_output=True,
                          text=True, check=False, timeout=600)


def _history(results: Path, stem: str) -> dict[str, object]:
    done = _cli("history", str(results / stem), "--no-charts")
    assert done.returncode in (0, 1), done.stderr
    written = results / stem / "history" / "history.json"
    history: dict[str, object] = json.loads(written.read_text("utf-8"))
    return history


def test_make_after_a_run_with_another_setting_keeps_that_run_and_its_history_point(
        art: Path, tmp_path: Path) -> None:
    """Issue 38, finding 4: ``run`` with a changed ``--set``, then ``make``: the run's records were
    made under other keys, so ``make`` keeps that run whole in ``runs/<id>/`` (as ``run`` does) and
    starts a new one; the old run's history point does not move (it moved from 1.22 to 0.94 ms when
    make re-ran into it)."""
    own, sc, results = tmp_path / "art", tmp_path / "sc", tmp_path / "results"
    copy_artifacts(art, own, {"h": "a"})
    write_scenario(sc, "h", own)
    slow = _cli("run", str(sc / "h.yaml"), "-o", str(results / "h"), "--set",
                "fvp.sim.runner_slowdown=reuse:ds_cnn=1.5")
    assert slow.returncode == 0, slow.stderr
    first = json.loads((results / "h" / "manifest.json").read_text("utf-8"))["run"]["id"]
    old_records = (results / "h" / "records.jsonl").read_bytes()
    before = _history(results, "h")
    assert [run["run_id"] for run in before["runs"]] == [first]  # type: ignore[index]

    made = _cli("make", str(sc / "h.yaml"), "--results", str(results))
    assert made.returncode == 0, made.stderr
    kept = results / "h" / "runs" / first
    assert (kept / "records.jsonl").read_bytes() == old_records, "the old run is kept whole"
    assert (kept / "manifest.json").is_file() and (kept / "report.md").is_file()
    current = json.loads((results / "h" / "manifest.json").read_text("utf-8"))["run"]["id"]
    assert current != first
    keys = {r.key for r in records(results, "h")}
    old_keys = {json.loads(line)["key"] for line in old_records.splitlines()}
    assert not keys & old_keys, "one key set per run"
    after = _history(results, "h")
    assert [run["run_id"] for run in after["runs"]] == [first, current]  # type: ignore[index]
    series_before = before["series"]["ds_cnn"]  # type: ignore[index]
    series_after = after["series"]["ds_cnn"]  # type: ignore[index]
    assert series_after[0] == series_before[0], "the old run's history point is unchanged"
    assert series_after[1]["median"] < series_before[0]["median"], "the new run: the faster runner"
