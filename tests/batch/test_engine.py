"""The make-style batch engine's logic: graph, up-to-date rules, dry run, lanes and pools, -j/-k,
stop.

Nothing here boots a model: scenarios name plain files as artifacts and the lanes get their
instances from ``tests.fakes.FakeFleet`` (``LocalExecutor(..., opener=fleet.opener)``), whose
``FakeTarget`` runners print runner output. The same behaviour on the simulator, with real builds
and boots, is in test_make_on_sim.py.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from fvp_harness.batch.engine import (
    Action,
    MakeOptions,
    MakeResult,
    assign_lanes,
    make,
    plan_batch,
    scenario_files,
)
from fvp_harness.batch.stale import _why
from fvp_harness.cli.main import main
from fvp_harness.errors import ConfigurationError, ConsoleLost, Interrupted
from fvp_harness.run.lanes import JobSpec, LaneControl, LaneResult, LaneSpec, LocalExecutor
from fvp_harness.run.plan import KEY_PART_PREFIX, Unit
from fvp_harness.run.reporting import rebuild_report
from fvp_harness.scenario.model import Run
from fvp_harness.store.folder import REPORT_INPUTS_FILE
from fvp_harness.targets.base import CommandResult
from tests.batch.scenarios import (
    fake_artifacts,
    records,
    snapshot,
    write_fake_scenario,
    write_scenario,
)
from tests.fakes import FakeFleet
from tests.helpers import record

# --- pure parts -----------------------------------------------------------------------------------


def _job(node: int, session: int, units: int) -> JobSpec:
    from types import SimpleNamespace

    scenario = SimpleNamespace(run=Run(warmup=0, iterations=8))
    return JobSpec(node, scenario, "x.yaml", None, session, tuple(f"u{i}" for i in range(units)),  # type: ignore[arg-type]
                   tuple("k" for _ in range(units)))


def test_assign_lanes_balances_within_pools_and_is_deterministic() -> None:
    jobs = {"a": [_job(0, 0, 4), _job(1, 0, 4), _job(2, 0, 4), _job(3, 0, 4)], "b": [_job(4, 0, 1)]}
    lanes = assign_lanes(jobs, 2)
    assert lanes == assign_lanes(jobs, 2)
    pools = [pool for pool, _ in lanes]
    # the small pool still gets its own instance
    assert pools.count("a") == 2 and pools.count("b") == 1
    sizes = sorted(len(members) for pool, members in lanes if pool == "a")
    assert sizes == [2, 2]
    # never more lanes than jobs in a pool, whatever the capacity
    assert len(assign_lanes({"a": [_job(0, 0, 3)]}, 8)) == 1


def test_why_names_the_changed_key_parts() -> None:
    parts = {"model": "1" * 64, "runner": "2" * 64}
    unit = Unit("r0-before-m", "before", "m", 0, 0, 0, "new", parts)
    base = {"scenario": "s", "build": "before", "model": "m", "repetition": 0, "samples": {},
            "metric_units": {}, "started": "2024-01-01T00:00:00+00:00"}
    old = record(unit.id, key="old", extra={KEY_PART_PREFIX + "model": "0" * 16,
                                            KEY_PART_PREFIX + "runner": "2" * 16}, **base)
    assert _why(unit, old) == "changed: model"
    assert _why(unit, None) == "never run"
    failed = record(unit.id, status="failed", key="new", failure_class="test",
                    failure="CommandFailed: boom", log=None, **base)
    assert _why(unit, failed) == "failed last time (test: CommandFailed: boom)"
    assert "old -> new" in _why(unit, record(unit.id, key="old", **base))


def test_scenario_files_and_action_text(tmp_path: Path) -> None:
    write_scenario(tmp_path / "sc", "b", tmp_path)
    write_scenario(tmp_path / "sc", "a", tmp_path)
    assert [p.name for p in scenario_files([tmp_path / "sc"])] == ["a.yaml", "b.yaml"]
    with pytest.raises(ConfigurationError, match="no such scenario"):
        scenario_files([tmp_path / "nope"])
    assert (str(Action("run", "a", "r0-x-m", "never run")).split()
            == ["run", "a/r0-x-m", "(never", "run)"])


def test_dry_run_before_anything_exists_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    art = tmp_path / "art"
    write_scenario(tmp_path / "sc", "one", art)
    results = tmp_path / "results"
    code = main(["make", "-n", str(tmp_path / "sc"), "--results", str(results)])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    kinds = [line.split()[0] for line in out]
    assert kinds == ["build"] * 4 + ["run"] * 2 + ["report"]
    assert all("not built yet" in line for line in out if line.startswith("run"))
    assert any(line.startswith("report") for line in out)
    assert not results.exists() and not art.exists()


# --- lanes with fake instances --------------------------------------------------------------------


def fake_make(paths: Sequence[Path], fleet: FakeFleet, results: Path, *, jobs: int = 1,
              stop: threading.Event | None = None, **options: Any) -> MakeResult:
    """``make`` whose lanes open ``fleet``'s fake instances instead of booting models."""
    return make(paths, MakeOptions(jobs=jobs, results_base=results, **options),
                executor=LocalExecutor(jobs, opener=fleet.opener), stop=stop)


def unit_ids(results: Path, stem: str) -> list[str]:
    return [stored.unit_id for stored in records(results, stem)]


@pytest.fixture
def art(tmp_path: Path) -> Path:
    """Fake artifacts: the two runners and the models m, k and q."""
    return fake_artifacts(tmp_path / "art", "m", "k", "q")


def test_scenarios_of_one_pool_share_a_boot_and_another_pool_gets_its_own(
    art: Path, tmp_path: Path
) -> None:
    sc, results = tmp_path / "sc", tmp_path / "results"
    write_fake_scenario(sc, "a", art)
    write_fake_scenario(sc, "b", art, model="k")
    write_fake_scenario(sc, "c", art, model="q", boot_timeout=300)  # other timeouts: another pool
    fleet = FakeFleet()
    result = fake_make([sc], fleet, results, jobs=1)
    assert result.exit_code == 0 and result.units_run == 6
    assert result.lanes == 2 and result.boots == 2 and len(fleet.boots) == 2, (
        "one instance per pool, even at -j 1")
    shared = sorted(["r0-before-m", "r0-after-m", "r0-before-k", "r0-after-k"])
    assert (sorted(sorted(units) for units in fleet.units_by_instance)
            == [shared, ["r0-after-q", "r0-before-q"]])
    assert all(target.closed for target in fleet.targets)
    for stem in ("a", "b", "c"):
        assert {stored.status for stored in records(results, stem)} == {"ok"}
        assert (results / stem / "report.md").is_file() and (
            results / stem / REPORT_INPUTS_FILE
        ).is_file()


def test_more_jobs_give_a_pool_more_lanes_and_the_same_records(art: Path, tmp_path: Path) -> None:
    sc = tmp_path / "sc"
    write_fake_scenario(sc, "a", art)
    write_fake_scenario(sc, "b", art, model="k")
    serial = fake_make([sc], FakeFleet(), tmp_path / "r1", jobs=1)
    parallel = fake_make([sc], FakeFleet(), tmp_path / "r2", jobs=2)
    assert serial.exit_code == parallel.exit_code == 0
    assert (serial.lanes, serial.boots) == (1, 1) and (parallel.lanes, parallel.boots) == (2, 2)
    for stem in ("a", "b"):
        one, two = records(tmp_path / "r1", stem), records(tmp_path / "r2", stem)
        assert [(r.unit_id, r.key, r.status, r.outputs, r.samples) for r in one] == [
            (r.unit_id, r.key, r.status, r.outputs, r.samples) for r in two]


def test_an_infrastructure_failure_gets_the_lane_a_fresh_instance(
    art: Path, tmp_path: Path
) -> None:
    def lose_console(unit: str, build: str, calls: int) -> CommandResult | None:
        if unit == "r0-after-m" and calls == 1:
            raise ConsoleLost("console closed (fake)")
        return None

    sc, results = tmp_path / "sc", tmp_path / "results"
    write_fake_scenario(sc, "a", art)
    fleet = FakeFleet(lose_console)
    result = fake_make([sc], fleet, results)
    assert (result.boots == 2 and
            fleet.units_by_instance == [["r0-before-m", "r0-after-m"], ["r0-after-m"]])
    assert fleet.targets[0].closed, "the instance that failed under the unit is closed"
    attempts = [(r.unit_id, r.attempt, r.status, r.failure_class) for r in records(results, "a")]
    assert attempts == [("r0-before-m", 1, "ok", None),
                        ("r0-after-m", 1, "failed", "infrastructure"),
                        ("r0-after-m", 2, "ok", None)]
    assert result.exit_code == 0 and result.units_run == 2 and result.units_failed == 0, (
        "a unit counts by its last attempt, as in `run`")


def test_a_retried_infrastructure_failure_does_not_drain_the_batch(
    art: Path, tmp_path: Path
) -> None:
    def lose_console(unit: str, build: str, calls: int) -> CommandResult | None:
        if unit == "r0-after-m" and calls == 1:
            raise ConsoleLost("console closed (fake)")
        return None

    sc, results = tmp_path / "sc", tmp_path / "results"
    write_fake_scenario(sc, "a", art)
    write_fake_scenario(sc, "b", art, model="k")
    result = fake_make([sc], FakeFleet(lose_console), results, jobs=1)
    assert result.exit_code == 0 and unit_ids(results, "b") == ["r0-before-k", "r0-after-k"]


def test_without_keep_going_the_first_failure_drains_the_batch(art: Path, tmp_path: Path) -> None:
    sc, results = tmp_path / "sc", tmp_path / "results"
    # provenance failure: a test failure
    write_fake_scenario(sc, "a", art, after_id="not-the-build-that-runs")
    write_fake_scenario(sc, "b", art, model="k")
    fleet = FakeFleet()
    result = fake_make([sc], fleet, results, jobs=1)
    assert result.exit_code == 1 and result.units_failed == 1
    assert [unit for _, unit in fleet.ran] == ["r0-before-m", "r0-after-m"], (
        "a's job finishes, b's never starts")
    assert unit_ids(results, "b") == []
    b = result.nodes[1]
    assert sorted(b.not_run) == ["r0-after-k", "r0-before-k"] and result.units_not_run == 2
    assert {why for _cause, why in b.not_run.values()} == {
        "not started: an earlier failure stopped the batch (-k keeps going)"}
    report = (results / "b" / "report.md").read_text(encoding="utf-8")
    assert "2 of 2 planned unit(s) did not run" in report, (
        "b's report says it never ran, it does not look complete")
    assert (json.loads((results / "b" / "manifest.json").read_text(encoding="utf-8"))["status"]
            == "complete"), (
        "not started because of a test failure: not the platform's doing (exit 1, not 3)")
    failed = [r for r in records(results, "a") if r.status != "ok"]
    assert [(r.unit_id, r.failure_class) for r in failed] == [("r0-after-m", "test")]
    # what the next make would do, and why
    planned = {(a.kind, a.scenario, a.target): a.reason
               for a in make([sc], MakeOptions(dry_run=True, results_base=results)).actions}
    assert planned[("run", "a", "r0-after-m")].startswith("failed last time (test: ProvenanceError")
    assert (planned[("run", "b", "r0-before-k")] == planned[("run", "b", "r0-after-k")]
            == "never run")
    assert ("run", "a", "r0-before-m") not in planned, "a unit that passed is up to date"


def test_keep_going_runs_everything_else_and_exits_nonzero(art: Path, tmp_path: Path) -> None:
    sc, results = tmp_path / "sc", tmp_path / "results"
    write_fake_scenario(sc, "a", art, after_id="not-the-build-that-runs")
    write_fake_scenario(sc, "b", art, model="k")
    fleet = FakeFleet()
    result = fake_make([sc], fleet, results, jobs=1, keep_going=True)
    assert result.exit_code == 1 and result.units_run == 4 and result.units_failed == 1
    assert {r.status for r in records(results, "b")} == {"ok"} and len(records(results, "b")) == 2
    assert (results / "a" / "report.md").is_file() and (results / "b" / "report.md").is_file()
    assert ([(r.unit_id, r.status) for r in records(results, "a")]
            == [("r0-before-m", "ok"), ("r0-after-m", "failed")])


def test_a_stop_request_finishes_the_unit_in_flight_and_the_next_make_continues(
        art: Path, tmp_path: Path) -> None:
    """The first Ctrl-C of ``make``: the unit in flight finishes and is kept, nothing new starts."""
    sc, results = tmp_path / "sc", tmp_path / "results"
    write_fake_scenario(sc, "a", art, repetitions=3)
    stop = threading.Event()

    def second_unit(unit: str, build: str, calls: int) -> CommandResult | None:
        if len(fleet.ran) == 2:
            stop.set()  # while the second unit runs
        return None

    fleet = FakeFleet(second_unit)
    with pytest.raises(Interrupted):
        fake_make([sc], fleet, results, stop=stop)
    started = [unit for _, unit in fleet.ran]
    kept = records(results, "a")
    assert [r.unit_id for r in kept] == started and len(kept) == 2, (
        "the unit in flight is recorded, no other starts")
    assert {r.status for r in kept} == {"ok"} and all(target.closed for target in fleet.targets)
    manifest = json.loads((results / "a" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "interrupted"
    assert not (results / "a" / "report.md").exists()

    rest = FakeFleet()
    again = fake_make([sc], rest, results)
    assert again.exit_code == 0 and again.units_run == 4
    assert not {unit for _, unit in rest.ran} & set(started), "nothing measured twice"
    assert sorted(unit_ids(results, "a")) == sorted(
        f"r{rep}-{build}-m" for rep in range(3) for build in ("before", "after"))


def test_a_second_make_runs_nothing_boots_nothing_and_writes_nothing(
    art: Path, tmp_path: Path
) -> None:
    sc, results = tmp_path / "sc", tmp_path / "results"
    write_fake_scenario(sc, "a", art)
    write_fake_scenario(sc, "b", art, model="k")
    assert fake_make([sc], FakeFleet(), results).units_run == 4
    before = snapshot(results)
    idle = FakeFleet()
    noop = fake_make([sc], idle, results, jobs=2)
    assert noop.nothing_to_do and noop.exit_code == 0 and noop.units_run == 0
    assert idle.boots == [] and noop.lanes == 0
    assert ([(a.kind, a.scenario) for a in noop.actions]
            == [("up-to-date", "a"), ("up-to-date", "b")])
    assert snapshot(results) == before, "a no-op writes nothing, not even a lock file"


def test_changed_inputs_rerun_exactly_the_units_they_feed(art: Path, tmp_path: Path) -> None:
    sc, results = tmp_path / "sc", tmp_path / "results"
    write_fake_scenario(sc, "a", art)
    write_fake_scenario(sc, "b", art, model="k")
    fake_make([sc], FakeFleet(), results)
    before = snapshot(results)

    (art / "k.model").write_text("other model bytes", encoding="utf-8")  # b's model
    dry = make([sc], MakeOptions(dry_run=True, results_base=results))
    assert ([(a.kind, f"{a.scenario}/{a.target}") for a in dry.actions if a.kind != "up-to-date"]
            == [
        ("run", "b/r0-before-k"), ("run", "b/r0-after-k"), ("report", "b/report")])
    assert {a.reason for a in dry.actions if a.kind == "run"} == {"changed: model"}
    assert [a.scenario for a in dry.actions if a.kind == "up-to-date"] == ["a"]
    assert snapshot(results) == before, "-n writes nothing"

    a_before = snapshot(results / "a")
    fleet = FakeFleet()
    again = fake_make([sc], fleet, results)
    assert (again.units_run == 2 and
            sorted(unit for _, unit in fleet.ran) == ["r0-after-k", "r0-before-k"])
    assert snapshot(results / "a") == a_before

    # every scenario's after build
    (art / "runner-after").write_text("a new runner", encoding="utf-8")
    runs = {(a.scenario, a.target): a.reason
            for a in make([sc], MakeOptions(dry_run=True, results_base=results))
            .actions if a.kind == "run"}
    assert runs == {("a", "r0-after-m"): "changed: runner", ("b", "r0-after-k"): "changed: runner"}


def test_a_changed_report_section_renders_only_that_report(art: Path, tmp_path: Path) -> None:
    sc, results = tmp_path / "sc", tmp_path / "results"
    write_fake_scenario(sc, "a", art)
    write_fake_scenario(sc, "b", art, model="k")
    fake_make([sc], FakeFleet(), results)
    write_fake_scenario(sc, "a", art, title="Renamed")
    b_before, a_records = snapshot(results / "b"), (results / "a" / "records.jsonl").read_bytes()
    planned = make([sc], MakeOptions(dry_run=True, results_base=results)).actions
    assert [(a.kind, a.scenario, a.reason) for a in planned] == [
        ("report", "a", "changed: settings"), ("up-to-date", "b", "2 units and the report")]
    fleet = FakeFleet()
    rendered = fake_make([sc], fleet, results)
    assert rendered.units_run == 0 and fleet.boots == [] and rendered.reports == [results / "a"]
    assert "# Renamed" in (results / "a" / "report.md").read_text(encoding="utf-8")
    assert ((results / "a" / "records.jsonl").read_bytes() == a_records and
            snapshot(results / "b") == b_before)

    # `report DIR` works on what make wrote (its manifest keeps the scenario wrapped) and agrees
    # byte for byte
    report_md = (results / "a" / "report.md").read_bytes()
    assert rebuild_report(results / "a").exit_code == 0
    assert (results / "a" / "report.md").read_bytes() == report_md


def test_always_and_only_choose_what_runs(art: Path, tmp_path: Path) -> None:
    sc, results = tmp_path / "sc", tmp_path / "results"
    write_fake_scenario(sc, "a", art, repetitions=2)
    write_fake_scenario(sc, "b", art, model="k")
    fleet = FakeFleet()
    first = fake_make([sc], fleet, results, only=("a/r1-*",))
    assert (first.units_run == 2 and
            sorted(unit for _, unit in fleet.ran) == ["r1-after-m", "r1-before-m"])
    assert not (results / "b").exists()
    forced = make([sc],
                  MakeOptions(always=True, only=("a/r1-*",), dry_run=True,
                              results_base=results)).actions
    assert sorted((a.kind, a.target, a.reason) for a in forced) == [
        ("report", "report", "-B: rebuild everything"),
        ("run", "r1-after-m", "-B: rebuild everything"),
        ("run", "r1-before-m", "-B: rebuild everything")], (
        "plain files without a build command are not rebuilt")


def test_two_scenarios_building_one_file_with_different_commands_are_refused(
        art: Path, tmp_path: Path) -> None:
    """Sharing an artifact is fine (it is built once); two commands for one file would rebuild it in
    turn and measure bytes the other scenario never planned."""
    sc = tmp_path / "sc"
    for name, text in (("a", "one"), ("b", "two")):
        path = write_fake_scenario(sc, name, art, model="m" if name == "a" else "k")
        path.write_text(
            path.read_text().replace(
                "{runner: " + str(art) + "/runner-after,",
                "{runner: " + str(art) + f"/runner-after, build: 'echo {text}>{{output}}',",
            ),
            encoding="utf-8",
        )
    nodes = plan_batch([sc], MakeOptions(results_base=tmp_path / "results"))
    assert nodes[0].error is None
    assert (nodes[1].error is not None and
            "which scenario a builds with another command" in str(nodes[1].error))


# --- units that did not run: never counted as done ------------------------------------------------


class LosingExecutor:
    """Runs lanes on a ``LocalExecutor`` of fake instances, except the lanes holding a scenario
    named in ``lose``: those come back as a lane error, as when Dask loses their worker
    (``silently``: they never come back)."""

    name = "losing"
    ships_artifacts = False

    def __init__(self, fleet: FakeFleet, lose: set[str], *, jobs: int = 2,
                 silently: bool = False) -> None:
        self.inner = LocalExecutor(jobs, opener=fleet.opener)
        self.lose = lose
        self.silently = silently
        self.lost: list[int] = []

    def capacity(self) -> int:
        return self.inner.capacity()

    def run(self, lanes: Sequence[LaneSpec], control: LaneControl) -> None:
        lost = [lane for lane in lanes if {job.scenario.name for job in lane.jobs} & self.lose]
        self.lost = [lane.index for lane in lost]
        self.inner.run([lane for lane in lanes if lane not in lost], control)
        if not self.silently:
            for lane in lost:
                control.on_lane_done(LaneResult(lane.index, error="lost its Dask worker (fake)"))


def _pools_apart(sc: Path, art: Path) -> None:
    """Scenario a (model m) and b (model k) in different pools: each gets a lane of its own."""
    write_fake_scenario(sc, "a", art)
    write_fake_scenario(sc, "b", art, model="k", boot_timeout=300)


def test_a_lost_lane_leaves_its_units_not_run_exit_3_no_report_and_the_next_make_runs_them(
        art: Path, tmp_path: Path) -> None:
    sc, results = tmp_path / "sc", tmp_path / "results"
    _pools_apart(sc, art)
    executor = LosingExecutor(FakeFleet(), {"b"})
    result = make([sc], MakeOptions(jobs=2, results_base=results, keep_going=True),
                  executor=executor)
    assert len(executor.lost) == 1 and result.lanes == 2
    assert result.exit_code == 3, (
        "units that did not run for an infrastructure reason exit 3, never 0")
    a, b = result.nodes
    assert not a.not_run and (results / "a" / "report.md").is_file()
    assert b.not_run == {
        unit: ("infrastructure", "lost its Dask worker (fake)")
        for unit in ("r0-before-k", "r0-after-k")
    }
    assert result.units_run == 2 and result.units_not_run == 2
    assert records(results, "b") == []
    manifest = json.loads((results / "b" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "aborted" and "lost its Dask worker (fake)" in manifest["aborted"]
    assert "2 of 2 planned unit(s) did not run" in (results / "b" / "report.md").read_text(
        encoding="utf-8"
    )
    assert json.loads((results / "b"
                       / REPORT_INPUTS_FILE).read_text(encoding="utf-8"))["exit_code"] == 3

    # the next make: b's units are stale ("never run"), never done; running them brings everything
    # up to date
    stale = {(a.kind, a.scenario, a.target): a.reason
             for a in make([sc], MakeOptions(dry_run=True, results_base=results)).actions}
    assert stale[("run", "b", "r0-before-k")] == stale[("run", "b", "r0-after-k")] == "never run"
    assert ("up-to-date", "a", "") in stale
    again = fake_make([sc], FakeFleet(), results, jobs=2)
    assert again.exit_code == 0 and again.units_run == 2 and again.units_not_run == 0
    assert ("None: all 2 planned units ran." in (results / "b"
                                                 / "report.md").read_text(encoding="utf-8"))


def test_a_lane_that_never_comes_back_counts_as_not_run(art: Path, tmp_path: Path) -> None:
    sc, results = tmp_path / "sc", tmp_path / "results"
    _pools_apart(sc, art)
    result = make(
        [sc],
        MakeOptions(jobs=2, results_base=results),
        executor=LosingExecutor(FakeFleet(), {"a", "b"}, silently=True),
    )
    assert result.exit_code == 3 and result.units_run == 0 and result.units_not_run == 4
    assert ({why for node in result.nodes for _cause, why in node.not_run.values()}
            == {"its lane returned no result"})
    for stem in ("a", "b"):
        assert "2 of 2 planned unit(s) did not run" in (results / stem / "report.md").read_text(
            encoding="utf-8"
        )


def test_units_not_started_after_a_failed_build_get_no_report_that_looks_complete(
        art: Path, tmp_path: Path) -> None:
    """The manifest on disk is the previous make's: a report made from it would not know the new
    keys."""
    sc, results = tmp_path / "sc", tmp_path / "results"
    _pools_apart(sc, art)
    assert fake_make([sc], FakeFleet(), results, jobs=2).exit_code == 0
    before = (results / "b" / "report.md").read_bytes()
    (art / "k.model").write_text("new bytes\n", encoding="utf-8")  # b is stale now
    path = sc / "a.yaml"  # and a's model has to be built, which fails
    path.write_text(path.read_text(encoding="utf-8").replace(
        "{file: " + str(art) + "/m.model}", "{file: " + str(art) + "/m.model, build: 'exit 1'}"),
                    encoding="utf-8")
    (art / "m.model").unlink()
    result = fake_make([sc], FakeFleet(), results, jobs=2)
    assert result.exit_code == 1 and result.units_run == 0 and result.nodes[0].error is not None
    assert (result.nodes[1].not_run
            == {unit: ("drained", "not started: a build failed (-k runs the others)")
                                       for unit in ("r0-before-k", "r0-after-k")})
    assert (results / "b" / "report.md").read_bytes() == before, "not re-rendered from the old plan"


def test_the_cli_lists_units_that_did_not_run(art: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from fvp_harness.cli import verb_make

    sc, results = tmp_path / "sc", tmp_path / "results"
    _pools_apart(sc, art)
    monkeypatch.setattr(verb_make, "_executor",
                        lambda args, jobs: LosingExecutor(FakeFleet(), {"b"}))
    assert main(["make", "-j", "2", "-k", str(sc), "--results", str(results)]) == 3
    captured = capsys.readouterr()
    assert ("b: 2 unit(s) not run (lost its Dask worker (fake)): r0-before-k, "
            "r0-after-k" in captured.err)
    assert (f"b: 0 units run (0 failed, 2 NOT RUN), report {results / 'b' / 'report.md'} [exit "
            "3]" in captured.out)
    assert "make: 2 units run (0 failed, 2 NOT RUN)" in captured.out
    assert "every unit" not in captured.out + captured.err


def test_an_instance_lent_to_several_scenarios_masks_each_ones_secrets(tmp_path: Path) -> None:
    """A pool's instance serves job after job: the secrets of every scenario it served stay out of
    its logs."""
    import contextlib
    import threading

    from fvp_harness.profiles import load_profile
    from fvp_harness.run.lanes import _InstanceLease
    from fvp_harness.scenario.model import Scenario
    from fvp_harness.targets.host import HostTarget

    def scenario(token: str) -> Scenario:
        return Scenario.model_validate(
            {
                "name": "s",
                "target": "host",
                "builds": {"a": {"runner": "r"}},
                "models": {"m": {"file": "m"}},
                "run": {"env": {"API_TOKEN": {"value": token, "secret": True}}},
            }
        )

    host = HostTarget(log_dir=tmp_path / "logs")
    lease = _InstanceLease(lambda *args: contextlib.nullcontext(host), threading.Event(), 1.0)
    profile = load_profile("corstone1000-a320")
    with host:
        for token in ("first-secret-1", "second-secret-2"):
            with lease.factory(scenario(token), profile)("s0", tmp_path / "logs"):
                host.run(f"echo {token}")
        log = (tmp_path / "logs" / "host.log").read_text()
    assert "first-secret-1" not in log and "second-secret-2" not in log and log.count("***") >= 2
