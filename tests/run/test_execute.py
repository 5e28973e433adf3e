"""execute / pipeline logic against a fake target: order, warmup, retries, provenance, resume,
failures in reports.

The instances are the library's ``FakeTarget`` (``tests.fakes.FakeFleet``): its guest shell runs
execute's own commands (prepare, ls, sha256sum, rm) on an in-memory file system, and the runner
builds are programs that print runner output in the simulator's shape and write their outputs into
the unit folder, so these tests run in milliseconds without a model. The end-to-end behaviour on the
simulator is in tests/e2e/test_run_e2e.py.
"""

from __future__ import annotations

import hashlib
import io
import json
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from fvp_harness.cli.progress import ProgressView
from fvp_harness.errors import ConfigurationError, ConsoleLost, Interrupted, UnitFailure
from fvp_harness.events import Event
from fvp_harness.run.artifacts import NOT_OURS, build_artifacts, pending_builds, stale_reason
from fvp_harness.run.pipeline import RunOptions, RunOutcome, run_scenario
from fvp_harness.run.plan import build_plan
from fvp_harness.run.reporting import rebuild_report
from fvp_harness.run.unit_command import render_unit_command
from fvp_harness.scenario import load_scenario
from fvp_harness.store.folder import ResultStore
from fvp_harness.targets.base import CommandResult
from fvp_harness.targets.console import CommandTimeout
from tests.fakes import FakeFleet, runner_output

SCENARIO = """
name: fake
fvp: {{binary: sim}}
builds:
  before: {{runner: bin/runner-before, id: id-before}}
  after: {{runner: bin/runner-after, id: id-after}}
models:
  m1: {{file: m1.model, inputs: [{{file: m1.in}}]}}
  m2: {{file: m2.model}}
run:
  warmup: 1
  iterations: 3
  repetitions: 2
  order: {order}
  retries: {retries}
{extra}
metrics: [{{name: cpu_time, required: true}}, npu_cycles]
compare: {{baseline: before, candidate: after, min_effect: 5}}
report: {{outputs: [markdown, csv, json]}}
"""


@pytest.fixture
def scenario_file(tmp_path: Path) -> Callable[..., Path]:
    def make(order: str = "interleaved", retries: int = 1, extra: str = "") -> Path:
        (tmp_path / "bin").mkdir(exist_ok=True)
        for name in ("bin/runner-before", "bin/runner-after", "m1.model", "m1.in", "m2.model"):
            (tmp_path / name).write_text(name)
        path = tmp_path / "fake.yaml"
        command = ("  command: \"{runner} --model_path={model} --num_executions={iterations} "
                   "--unit={unit} --output_file={output}\"\n")
        path.write_text(SCENARIO.format(order=order, retries=retries, extra=command + extra))
        return path

    return make


def run(path: Path, fleet: FakeFleet, tmp_path: Path, *, overrides: tuple[str, ...] = (),
        stop: threading.Event | None = None, **options: Any) -> RunOutcome:
    loaded = load_scenario(path, list(overrides))
    options.setdefault("output_dir", tmp_path / "out")
    return run_scenario(loaded, RunOptions(**options), factory=fleet.factory, deploy=fleet.deploy,
                        stop=stop)


def stored(tmp_path: Path) -> list[Any]:
    return ResultStore(tmp_path / "out").records()


# --- order, warmup, samples -----------------------------------------------------------------------


@pytest.mark.parametrize("order", ["interleaved", "blocked"])
def test_units_run_in_plan_order_on_one_boot(scenario_file, tmp_path, order):
    fleet = FakeFleet()
    path = scenario_file(order=order)
    outcome = run(path, fleet, tmp_path)
    plan = build_plan(load_scenario(path))
    assert [unit for _, unit in fleet.ran] == [unit.id for unit in plan.units]
    assert [record.unit_id for record in stored(tmp_path)] == [unit.id for unit in plan.units]
    assert fleet.boots == ["s0"], "one boot serves the whole matrix"
    assert len(fleet.deployed) == 1 and sorted(fleet.deployed[0][1]) == sorted(
        ["runner-before", "runner-after", "m1.model", "m1.in", "m2.model"])
    assert outcome.exit_code == 0 and outcome.units_run == 8


def test_warmup_samples_are_dropped_and_iterations_include_warmup(scenario_file, tmp_path):
    fleet = FakeFleet()
    run(scenario_file(), fleet, tmp_path)
    runner_commands = [c for c in fleet.commands if "--num_executions=" in c]
    assert all("--num_executions=4" in c for c in runner_commands), "warmup 1 + iterations 3"
    for record in stored(tmp_path):
        assert record.status == "ok"
        assert len(record.samples["cpu_time"]) == 3
        assert 100.0 not in record.samples["cpu_time"], (
            "the warmup execution's sample must be dropped")
        assert record.samples["npu_cycles"] == [4242.0] * 3
        assert record.outputs == {"out-0.bin": hashlib.sha256(b"same").hexdigest()}
        assert record.build_id_seen is not None and f"id-{record.build}" in record.build_id_seen
        assert record.log and (tmp_path / "out" / record.log).is_file()


def test_report_shows_the_saving_and_rebuilds_identically(scenario_file, tmp_path):
    fleet = FakeFleet()
    outcome = run(scenario_file(), fleet, tmp_path)
    comparison = outcome.analysis.comparison
    assert comparison is not None
    assert [round(m.saved_pct or 0) for m in comparison.models] == [50, 50]
    out = tmp_path / "out"
    before = {name: (out / name).read_bytes()
              for name in ("report.md", "report.csv", "report.json")}
    again = rebuild_report(out)
    assert again.exit_code == 0
    assert {name: (out / name).read_bytes() for name in before} == before
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["finished"]
    assert set(manifest["artifacts"]) >= {"builds.before.runner", "models.m1.inputs[0].file"}
    assert manifest["instances"]["s0"]["units"] == 8


def test_env_and_args_reach_the_runner_as_prefixes():
    from fvp_harness.run.plan import Unit
    from fvp_harness.scenario.model import Scenario

    scenario = Scenario.model_validate({
        "name": "x",
        "builds": {"b": {"runner": "/r", "env": {"A": "1 2"}, "args": ["--x", "y z"]}},
        "models": {"m": {"file": "/m"}},
        "run": {"command": "{runner} --model_path={model} --inputs={inputs} --output_file={output}",
                "env": {"B": "$HOME"}},
    })
    unit = Unit("r0-b-m", "b", "m", 0, 0, 0, "k")
    rendered = render_unit_command(scenario, unit, runner="/g/r", model="/g/m m",
                                   inputs=["/g/i1", "/g/i2"], guest_root="/g")
    assert rendered.command == ("B='$HOME' A='1 2' /g/r --x 'y z' --model_path='/g/m m' "
                                "--inputs=/g/i1,/g/i2 --output_file=/g/units/r0-b-m/out")
    complex_scenario = scenario.model_copy(update={"run": scenario.run.model_copy(
        update={"command": "cd {unit_dir} && {runner} --model_path={model}"})})
    rendered = render_unit_command(complex_scenario, unit, runner="/g/r", model="/g/m", inputs=[],
                                   guest_root="/g")
    assert rendered.command == ("export B='$HOME' A='1 2'; cd /g/units/r0-b-m && /g/r --x 'y z' "
                                "--model_path=/g/m")


# --- failures -------------------------------------------------------------------------------------


def test_runner_crash_is_a_recorded_test_failure_not_retried(scenario_file, tmp_path):
    def crash(unit: str, build: str, calls: int) -> CommandResult | None:
        if unit == "r0-after-m1":
            return CommandResult("x", 139, runner_output(build, 2)[:200] + "\nSegmentation fault")
        return None

    fleet = FakeFleet(crash)
    outcome = run(scenario_file(), fleet, tmp_path)
    assert fleet.calls["r0-after-m1"] == 1, "a test failure is not retried"
    assert fleet.boots == ["s0"], "the same instance goes on after a test failure"
    failed = [r for r in stored(tmp_path) if r.status == "failed"]
    assert [(r.unit_id, r.failure_class) for r in failed] == [("r0-after-m1", "test")]
    assert ("status 139" in (failed[0].failure or "") and
            "Segmentation fault" in (failed[0].failure or ""))
    assert outcome.exit_code == 1
    report = (tmp_path / "out" / "report.md").read_text()
    assert "r0-after-m1" in report and "139" in report


def test_wrong_build_is_a_provenance_error(scenario_file, tmp_path):
    def impostor(unit: str, build: str, calls: int) -> CommandResult | None:
        if unit == "r1-before-m2":
            return CommandResult("x", 0, runner_output("before", 4, build_id="id-after"))
        return None

    fleet = FakeFleet(impostor)
    outcome = run(scenario_file(), fleet, tmp_path)
    failed = [r for r in stored(tmp_path) if r.status == "failed"]
    assert [r.unit_id for r in failed] == ["r1-before-m2"]
    assert (failed[0].failure or
            "").startswith("ProvenanceError") and "id-before" in (failed[0].failure or "")
    assert outcome.exit_code == 1


def test_every_record_carries_the_runner_hash_the_guest_computed(scenario_file, tmp_path):
    path = scenario_file()
    run(path, FakeFleet(), tmp_path)
    digests = {build: hashlib.sha256(f"bin/runner-{build}".encode()).hexdigest()
               for build in ("before", "after")}
    assert {(r.build, r.extra["runner_sha256"]) for r in stored(tmp_path)} == set(digests.items())


def test_a_runner_changed_in_the_guest_does_not_run(scenario_file, tmp_path):
    """Provenance needs nothing printed: the guest's sha256 of the deployed runner must be the
    artifact's."""
    fleet = FakeFleet()
    deploy = fleet.deploy

    # the after runner arrives, then something replaces it in the guest
    def tampered(target, files):
        placed, root = deploy(target, files)
        target.write("/guest/runner-after", b"another binary")
        return placed, root

    loaded = load_scenario(scenario_file(), ["builds.before.id=null", "builds.after.id=null"])
    # -k: every after unit must fail the same way (fail-fast would stop after two of them)
    outcome = run_scenario(loaded, RunOptions(output_dir=tmp_path / "out", keep_going=True),
                           factory=fleet.factory, deploy=tampered)
    failed = [r for r in stored(tmp_path) if r.status == "failed"]
    assert {r.build for r in failed} == {"after"} and len(failed) == 4
    assert all((r.failure or "").startswith("ProvenanceError") and
               "runner of build after" in (r.failure or "") for r in failed)
    assert not [unit for _, unit in fleet.ran if "-after-" in unit], "the wrong binary never ran"
    assert outcome.exit_code == 1


def test_missing_required_metric_and_truncated_output_fail_the_unit(scenario_file, tmp_path):
    def short(unit: str, build: str, calls: int) -> CommandResult | None:
        if unit == "r0-before-m1":
            return CommandResult("x", 0,
                                 "I 00:00:00.000100 executorch:executor_runner.cpp:60] "
                                 "executor_runner build id: id-before\n")
        if unit == "r0-before-m2":
            return CommandResult("x", 0, runner_output("before", 2))  # 2 of 4 executions printed
        return None

    fleet = FakeFleet(short)
    run(scenario_file(), fleet, tmp_path)
    failed = {r.unit_id: r.failure or "" for r in stored(tmp_path) if r.status == "failed"}
    assert set(failed) == {"r0-before-m1", "r0-before-m2"}
    assert (failed["r0-before-m1"].startswith("MetricMissing") and
            "cpu_time" in failed["r0-before-m1"])
    assert "2 of 4" in failed["r0-before-m2"]


def test_unit_timeout_is_a_test_failure_on_the_same_instance(scenario_file, tmp_path):
    def hang(unit: str, build: str, calls: int) -> CommandResult | None:
        if unit == "r0-before-m2":
            raise CommandTimeout("command did not finish after 5 s (phase unit)", exit_status=124)
        return None

    fleet = FakeFleet(hang)
    outcome = run(scenario_file(), fleet, tmp_path)
    failed = [r for r in stored(tmp_path) if r.status == "failed"]
    assert [(r.unit_id, r.failure_class) for r in failed] == [("r0-before-m2", "test")]
    assert fleet.boots == ["s0"] and outcome.exit_code == 1


def test_infrastructure_failure_is_retried_on_a_fresh_instance(scenario_file, tmp_path):
    def lose_console(unit: str, build: str, calls: int) -> CommandResult | None:
        if unit == "r0-after-m2" and calls == 1:
            raise ConsoleLost("console host_terminal_0 closed (fake)")
        return None

    fleet = FakeFleet(lose_console)
    outcome = run(scenario_file(), fleet, tmp_path)
    assert fleet.boots == ["s0", "s0.2"]
    assert fleet.targets[0].closed
    records = stored(tmp_path)
    attempts = [(r.unit_id, r.attempt, r.status, r.failure_class)
                for r in records if r.unit_id == "r0-after-m2"]
    assert attempts == [("r0-after-m2", 1, "failed", "infrastructure"),
                        ("r0-after-m2", 2, "ok", None)]
    assert outcome.exit_code == 0, "a retried unit that succeeded leaves nothing failed"
    assert len(fleet.deployed) == 2, "the fresh instance gets the artifacts again"
    assert {r.instance for r in records if r.unit_id == "r1-before-m1"} == {"s0.2"}


def test_infrastructure_failure_beyond_retries_fails_the_unit_with_exit_3(scenario_file, tmp_path):
    def always(unit: str, build: str, calls: int) -> CommandResult | None:
        if unit == "r0-after-m2":
            raise ConsoleLost("console closed (fake)")
        return None

    fleet = FakeFleet(always)
    outcome = run(scenario_file(retries=1), fleet, tmp_path)
    assert fleet.calls["r0-after-m2"] == 2
    latest = [r for r in stored(tmp_path) if r.unit_id == "r0-after-m2"]
    assert [r.attempt for r in latest] == [1, 2] and all(r.status == "failed" for r in latest)
    assert len({r.unit_id for r in stored(tmp_path)}) == 8, "the other units still ran"
    assert outcome.exit_code == 3


def test_an_instance_that_never_boots_aborts_the_session(scenario_file, tmp_path):
    fleet = FakeFleet(boot_fails=lambda number: True)
    outcome = run(scenario_file(retries=1), fleet, tmp_path)
    assert fleet.boots == ["s0", "s0.2"]
    assert outcome.aborted and "8 unit(s) not run" in outcome.aborted[0]
    assert stored(tmp_path) == [], "units that never ran are not recorded (resume runs them)"
    assert outcome.exit_code == 3
    assert len(outcome.analysis.not_run) == 8, "the report lists what did not run"
    report = (tmp_path / "out" / "report.md").read_text()
    assert "every unit ran" not in report and "not run" in report
    assert rebuild_report(tmp_path / "out").exit_code == 3, "`report DIR` tells the same truth"


def test_fresh_boot_per_unit_boots_once_per_unit(scenario_file, tmp_path):
    fleet = FakeFleet()
    outcome = run(scenario_file(), fleet, tmp_path, fresh_boot_per_unit=True)
    assert len(fleet.boots) == 8 and outcome.exit_code == 0
    assert all(len(files) == (3 if "m1" in str(files) else 2) for _, files in fleet.deployed), \
        "each instance gets only what its unit needs"


def test_parallel_sessions_each_get_their_own_instance(scenario_file, tmp_path):
    fleet = FakeFleet()
    outcome = run(scenario_file(), fleet, tmp_path, overrides=("fvp.instances=2",))
    assert sorted(fleet.boots) == ["s0", "s1"]
    assert len({r.unit_id for r in stored(tmp_path)}) == 8 and outcome.exit_code == 0
    assert {record.instance for record in stored(tmp_path)} <= {"s0", "s1"}
    assert (sorted(unit for _, unit in fleet.ran)
            == sorted(record.unit_id for record in stored(tmp_path))), \
        "every unit ran exactly once, on whichever instance took it"


def _groups(plan: Any) -> dict[str, tuple[int, str]]:
    return {unit.id: (unit.repetition, unit.model) for unit in plan.units}


def test_an_idle_instance_steals_whole_groups_from_a_busy_one(scenario_file, tmp_path):
    """s1 is stuck in its first unit; s0 runs out of its own units and takes s1's last (repetition,
    model) group (both builds), never the unit in flight nor the rest of its group."""
    path = scenario_file()
    plan = build_plan(load_scenario(path, ["fvp.instances=2"]))
    dealt = {unit.id: unit.session for unit in plan.units}
    stuck = next(unit.id for unit in plan.units if unit.session == 1)
    stolen = threading.Event()

    def slow(unit: str, build: str, calls: int) -> None:
        if unit == stuck:
            assert stolen.wait(10), "s0 never stole while s1 was busy"
        return None

    def listener(event: Event) -> None:
        if event.kind == "stolen":
            stolen.set()

    fleet = FakeFleet(slow)
    loaded = load_scenario(path, ["fvp.instances=2"])
    outcome = run_scenario(loaded, RunOptions(output_dir=tmp_path / "out"), factory=fleet.factory,
                           deploy=fleet.deploy, listener=listener)
    assert outcome.exit_code == 0 and stolen.is_set()
    where = {record.unit_id: record.instance for record in stored(tmp_path)}
    assert sorted(where) == sorted(dealt) and len(fleet.ran) == len(dealt), "each unit ran once"
    moved = sorted(unit for unit, instance in where.items() if instance != f"s{dealt[unit]}")
    assert moved and all(dealt[unit] == 1 and where[unit] == "s0" for unit in moved)
    groups = _groups(plan)
    assert stuck not in moved and groups[stuck] not in {groups[unit] for unit in moved}
    for group in {groups[unit] for unit in moved}:  # a group moves whole: every build of that round
        assert {unit for unit, g in groups.items() if g == group} <= set(moved)
    assert all(record.extra.get("runner_sha256") for record in stored(tmp_path)), (
        "stolen units ran proven runners")


def test_a_thief_deploys_the_files_it_lacks_before_running_stolen_units(scenario_file, tmp_path):
    """Three instances, one group each but s0 with two: s0 is stuck, so another instance takes s0's
    last group and gets that model's files first."""
    path = scenario_file()
    overrides = ["fvp.instances=3"]
    plan = build_plan(load_scenario(path, overrides))
    assert len({unit.session for unit in plan.units}) == 3
    stuck = next(unit.id for unit in plan.units if unit.session == 0)
    stolen = threading.Event()

    def slow(unit: str, build: str, calls: int) -> None:
        if unit == stuck:
            assert stolen.wait(10)
        return None

    fleet = FakeFleet(slow)
    outcome = run_scenario(load_scenario(path, overrides), RunOptions(output_dir=tmp_path / "out"),
                           factory=fleet.factory, deploy=fleet.deploy,
                           listener=lambda event: event.kind == "stolen" and stolen.set())
    assert outcome.exit_code == 0
    dealt = {unit.id: unit.session for unit in plan.units}
    records = stored(tmp_path)
    moved = [r for r in records if r.instance != f"s{dealt[r.unit_id]}"]
    assert moved and {dealt[r.unit_id] for r in moved} == {0}
    thief = moved[0].instance
    files = {name for instance, names in fleet.deployed if instance == thief for name in names}
    needs = {"m1.model", "m1.in"} if moved[0].model == "m1" else {"m2.model"}
    assert needs | {f"runner-{r.build}" for r in moved} <= files


def test_no_steal_keeps_the_plans_deal_while_an_instance_is_stuck(scenario_file, tmp_path):
    """``--no-steal`` (``RunOptions.steal``): s1 is stuck in its first unit until s0 ran every unit
    dealt to it; s0 then ends instead of taking s1's groups, so every unit runs on the instance the
    plan dealt it to."""
    path = scenario_file()
    plan = build_plan(load_scenario(path, ["fvp.instances=2"]))
    dealt = {unit.id: unit.session for unit in plan.units}
    stuck = next(unit.id for unit in plan.units if unit.session == 1)
    s0_done = threading.Event()
    done: list[str] = []
    events: list[str] = []

    def slow(unit: str, build: str, calls: int) -> None:
        if unit == stuck:
            assert s0_done.wait(10), "s0 never finished its own units"
        return None

    def listener(event: Event) -> None:
        events.append(event.kind)
        if event.kind == "unit_done" and dealt.get(event.unit or "") == 0:
            done.append(event.unit or "")
            if len(done) == sum(1 for session in dealt.values() if session == 0):
                s0_done.set()

    fleet = FakeFleet(slow)
    outcome = run_scenario(load_scenario(path, ["fvp.instances=2"]),
                           RunOptions(output_dir=tmp_path / "out", steal=False),
                           factory=fleet.factory, deploy=fleet.deploy, listener=listener)
    assert outcome.exit_code == 0 and "stolen" not in events
    assert {record.unit_id: record.instance for record in stored(tmp_path)} == {
        unit: f"s{session}" for unit, session in dealt.items()}


# --- resume and interrupt -------------------------------------------------------------------------


def test_interrupt_keeps_what_was_measured_and_resume_runs_only_the_rest(scenario_file, tmp_path):
    path = scenario_file()

    def ctrl_c(unit: str, build: str, calls: int) -> CommandResult | None:
        if len(first.ran) == 4:
            raise KeyboardInterrupt
        return None

    first = FakeFleet(ctrl_c)
    with pytest.raises(Interrupted):
        run(path, first, tmp_path)
    kept = stored(tmp_path)
    assert len(kept) == 3 and all(r.status == "ok" for r in kept), (
        "the unit in flight is not recorded")
    assert all(t.closed for t in first.targets)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"

    second = FakeFleet()
    outcome = run(path, second, tmp_path, resume=True)
    assert outcome.units_skipped == 3 and outcome.units_run == 5
    assert not ({u for _, u in second.ran} & {r.unit_id for r in kept}), "nothing measured twice"
    records = stored(tmp_path)
    assert len(records) == 8 and len({r.unit_id for r in records}) == 8
    assert records[:3] == kept, "nothing lost"
    assert outcome.exit_code == 0


def test_resume_refuses_results_from_other_artifacts(scenario_file, tmp_path):
    path = scenario_file()
    run(path, FakeFleet(), tmp_path)
    (tmp_path / "m2.model").write_text("changed")
    with pytest.raises(ConfigurationError, match="different setup"):
        run(path, FakeFleet(), tmp_path, resume=True)


def test_only_build_and_model_select_units(scenario_file, tmp_path):
    fleet = FakeFleet()
    run(scenario_file(), fleet, tmp_path, only_builds=("after",), only_models=("m2",))
    assert [u for _, u in fleet.ran] == ["r0-after-m2", "r1-after-m2"]
    with pytest.raises(ConfigurationError,
                       match=r"no model named 'nope'; the models there are: m1, m2"):
        run(scenario_file(), FakeFleet(), tmp_path, only_models=("nope",))


# --- artifacts ------------------------------------------------------------------------------------


def test_artifacts_are_built_when_missing_or_stale_and_failures_name_the_log(tmp_path):
    (tmp_path / "src.c").write_text("int main;")
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: b\n"
        "builds:\n"
        "  a: {runner: out/runner, sources: [src.c], build: \"cp src.c {output} && echo "
        "built-runner\"}\nmodels:\n"
        "  m: {file: out/m.model, build: \"printf model > {output}\"}\n"
    )
    loaded = load_scenario(path)
    assert [step.reason for step in pending_builds(loaded)] == ["missing", "missing"]
    logs = tmp_path / "logs"
    logs.mkdir()
    built, states = build_artifacts(loaded, log_path_for=lambda step: logs / step.log_name)
    assert sorted(result.step.name for result in built) == ["builds.a.runner", "models.m.file"]
    assert "built-runner" in (logs / "builds.a.runner.log").read_text()
    assert states["models.m.file"].sha256 == hashlib.sha256(b"model").hexdigest()
    assert pending_builds(loaded) == []
    import os

    later = (tmp_path / "out/runner").stat().st_mtime_ns + 10**9
    os.utime(tmp_path / "src.c", ns=(later, later))
    assert (stale_reason(tmp_path / "out/runner", [tmp_path / "src.c"])
            == f"older than {tmp_path / 'src.c'}")
    assert [step.name for step in pending_builds(loaded)] == ["builds.a.runner"]

    broken = load_scenario(path,
                           ["builds.a.build=echo compiler says no; exit 3",
                            "builds.a.runner=out/other"])
    with pytest.raises(UnitFailure, match="exit status 3") as info:
        build_artifacts(broken, log_path_for=lambda step: logs / step.log_name)
    assert info.value.log_path == logs / "builds.a.runner.log"
    assert "compiler says no" in "\n".join(info.value.last_lines)
    lazy = load_scenario(path, ["builds.a.build=echo nothing written", "builds.a.runner=out/never"])
    with pytest.raises(ConfigurationError, match="did not write"):
        build_artifacts(lazy)


def test_a_changed_build_command_rebuilds_its_artifact(tmp_path):
    """The file is newer than its sources, but it was built by another command (e.g. a scenario that
    now asks for the CPU-time instrumentation): it is stale, and `-n` says why."""
    path = tmp_path / "s.yaml"
    path.write_text("name: b\nbuilds:\n  a: {runner: out/runner, build: \"printf one > "
                    "{output}\"}\nmodels:\n  m: {file: m.model}\n")
    (tmp_path / "m.model").write_text("m")
    build_artifacts(load_scenario(path))
    assert (tmp_path / "out/.runner.build").is_file() and pending_builds(load_scenario(path)) == []
    changed = load_scenario(path, ["builds.a.build=printf two > {output}"])
    assert [step.reason for step in pending_builds(changed)] == ["build command changed"]
    build_artifacts(changed)
    assert (tmp_path / "out/runner").read_text() == "two" and pending_builds(changed) == []
    (tmp_path / "out/.runner.build").unlink()  # built by hand, or by an older fvp-harness
    assert [step.reason for step in pending_builds(changed)] == [NOT_OURS]


# --- progress -------------------------------------------------------------------------------------


def test_progress_view_prints_plain_lines_when_not_a_terminal():
    buffer = io.StringIO()
    console = Console(file=buffer, width=200, force_terminal=False)
    with ProgressView(console, clock=lambda: 0.0) as view:
        view(Event("plan", total=2, skipped=1, sessions=1))
        view(Event("boot", session="s0"))
        view(Event("booted", session="s0", seconds=1.5))
        view(Event("unit_done", session="s0", unit="r0-a-m", status="ok", seconds=0.25))
        view(Event("unit_done", session="s0", unit="r0-b-m", status="failed",
                   detail="CommandFailed: boom"))
    text = buffer.getvalue()
    assert "2 units to run on 1 instance(s), 1 already stored" in text
    assert "s0: ready after 1.5 s" in text
    assert "[1/2] s0: r0-a-m ok (0.25 s)" in text
    assert "r0-b-m FAILED: CommandFailed: boom" in text
    assert view.counts == (2, 1, 2)


def test_progress_view_on_a_terminal_uses_a_live_bar():
    buffer = io.StringIO()
    console = Console(file=buffer, width=120, force_terminal=True)
    with ProgressView(console, clock=lambda: 0.0) as view:
        assert not view.plain
        view(Event("plan", total=1, skipped=0, sessions=1))
        view(Event("unit_done", session="s0", unit="u", status="ok", seconds=0.1))
    assert "1/1" in buffer.getvalue()


# --- key parts, fetched files, stop, forced builds ------------------------------------------------


def test_records_from_run_carry_key_parts_so_make_n_names_the_changed_input(
    scenario_file, tmp_path, capsys
):
    from fvp_harness.cli.main import main
    from fvp_harness.run.plan import KEY_PART_PREFIX

    def crash(unit: str, build: str, calls: int) -> CommandResult | None:
        return CommandResult("x", 1, "boom") if unit == "r0-after-m1" else None

    path = scenario_file()
    results = tmp_path / "results"
    run(path, FakeFleet(crash), tmp_path, output_dir=None, results_base=results)
    kept = ResultStore(results / "fake").records()
    assert len(kept) == 8
    for record in kept:  # ok and failed records alike
        assert {KEY_PART_PREFIX + "model", KEY_PART_PREFIX + "runner"} <= set(record.extra), (
            record.extra)
    (tmp_path / "m2.model").write_text("other bytes")
    capsys.readouterr()
    assert main(["make", "-n", str(path), "--results", str(results)]) == 0
    runs = {line.split()[1]: line
            for line in capsys.readouterr().out.splitlines() if line.startswith("run ")}
    assert sorted(runs) == ["fake/r0-after-m1", "fake/r0-after-m2", "fake/r0-before-m2",
                            "fake/r1-after-m2", "fake/r1-before-m2"]
    assert all("changed: model)" in runs[f"fake/{unit}"] for unit in
               ("r0-after-m2", "r0-before-m2", "r1-after-m2", "r1-before-m2")), runs
    assert "failed last time" in runs["fake/r0-after-m1"]


def test_files_named_by_run_fetch_are_kept_but_not_hashed_as_outputs(scenario_file, tmp_path):
    fleet = FakeFleet(outputs={"out-0.bin": b"same", "perf.json": b'{"kept": true}',
                               "../{unit}.side.json": b'{"kept": true}'})
    path = scenario_file(extra='  fetch: ["{unit_dir}/perf.json", '
                               '"{unit_dir}/../{unit}.side.json"]\n')
    outcome = run(path, fleet, tmp_path)
    assert outcome.exit_code == 0
    digest = hashlib.sha256(b"same").hexdigest()
    for record in stored(tmp_path):
        assert record.outputs == {"out-0.bin": digest}, "a fetched report is not a model output"
        folder = tmp_path / "out" / "fetched" / record.unit_id
        assert (folder / "perf.json").read_bytes() == b'{"kept": true}'
        assert (folder / f"{record.unit_id}.side.json").is_file()
    assert len(fleet.fetched) == 16


def test_stop_finishes_the_unit_in_flight_records_it_and_starts_nothing_more(
    scenario_file, tmp_path
):
    path = scenario_file()
    stop = threading.Event()

    def third(unit: str, build: str, calls: int) -> CommandResult | None:
        if len(fleet.ran) == 3:
            stop.set()  # what the first Ctrl-C does, while the third unit runs
        return None

    fleet = FakeFleet(third)
    with pytest.raises(Interrupted, match="stopped after the units in flight"):
        run(path, fleet, tmp_path, stop=stop)
    kept = stored(tmp_path)
    assert [r.unit_id for r in kept] == [u for _, u in fleet.ran] and len(kept) == 3, (
        "the unit in flight is kept")
    assert all(r.status == "ok" for r in kept)
    assert fleet.boots == ["s0"] and all(t.closed for t in fleet.targets)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["instances"]["s0"]["units"] == 3
    outcome = run(path, FakeFleet(), tmp_path, resume=True)
    assert outcome.units_skipped == 3 and outcome.units_run == 5 and outcome.exit_code == 0


def test_stop_with_parallel_sessions_records_every_unit_that_started(scenario_file, tmp_path):
    stop = threading.Event()

    def second(unit: str, build: str, calls: int) -> CommandResult | None:
        if len(fleet.ran) == 2:
            stop.set()
        return None

    fleet = FakeFleet(second)
    with pytest.raises(Interrupted):
        run(scenario_file(), fleet, tmp_path, overrides=("fvp.instances=2",), stop=stop)
    kept = stored(tmp_path)
    assert {r.unit_id for r in kept} == {u for _, u in fleet.ran} and 2 <= len(kept) < 8
    assert all(r.status == "ok" for r in kept) and all(t.closed for t in fleet.targets)


@pytest.mark.parametrize("presses", [1, 2])
def test_two_stage_ctrl_c_first_finishes_the_unit_second_interrupts(
    scenario_file, tmp_path, presses
):
    from fvp_harness.cli.scenario_args import stop_on_first_interrupt

    noticed = threading.Event()

    def ctrl_c(unit: str, build: str, calls: int) -> CommandResult | None:
        if len(fleet.ran) == 3:
            for _ in range(presses):
                signal.raise_signal(signal.SIGINT)
        return None

    fleet = FakeFleet(ctrl_c)
    before = signal.getsignal(signal.SIGINT)
    with stop_on_first_interrupt(threading.Event(),
                                 noticed.set) as stop, pytest.raises(Interrupted) as info:
        run(scenario_file(), fleet, tmp_path, stop=stop)
    assert signal.getsignal(signal.SIGINT) is before, "the previous handler is back"
    assert noticed.wait(5), "the first Ctrl-C says that the units in flight finish"
    kept = stored(tmp_path)
    if presses == 1:
        assert "stopped after the units in flight" in str(info.value)
        assert len(kept) == 3, "the unit in flight finished and was recorded"
    else:
        assert "stopped after" not in str(info.value)
        assert len(kept) == 2, "the second Ctrl-C interrupts the unit in flight: it is not recorded"
    assert all(r.status == "ok" for r in kept) and all(t.closed for t in fleet.targets)


def test_forced_builds_rebuild_up_to_date_artifacts(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: b\n"
        "builds:\n"
        "  a: {runner: out/runner, build: \"printf runner > {output}\"}\n"
        "models:\n"
        "  m: {file: out/m.model, build: \"printf model > {output}\"}\n"
    )
    loaded = load_scenario(path)
    first, _ = build_artifacts(loaded)
    assert len(first) == 2 and pending_builds(loaded) == []
    assert [step.reason for step in pending_builds(loaded, force=True)] == ["forced", "forced"]
    again, states = build_artifacts(loaded, force=True)
    assert sorted(result.step.name for result in again) == ["builds.a.runner", "models.m.file"]
    assert states["models.m.file"].sha256 == hashlib.sha256(b"model").hexdigest()
    once, _ = build_artifacts(loaded, force=True, already_built={tmp_path / "out" / "runner"})
    assert [result.step.name for result in once] == ["models.m.file"], (
        "a batch forces each file once")


def test_run_rebuild_and_make_always_force_the_builds(scenario_file, tmp_path):
    from fvp_harness.batch.engine import MakeOptions, make

    builds = ("builds.before.build=printf before > {output}",
              "builds.after.build=printf after > {output}")
    path = scenario_file()
    made_by_hand = {p: p.read_bytes() for p in (tmp_path / "bin").iterdir()}
    with pytest.raises(ConfigurationError, match="was not built by fvp-harness") as refused:
        run(path, FakeFleet(), tmp_path, overrides=builds)
    assert "builds.before.runner" in str(refused.value) and "--rebuild" in str(refused.value)
    assert {p: p.read_bytes() for p in (tmp_path / "bin").iterdir()} == made_by_hand, (
        "files made by hand are neither replaced nor given a build record or a staging folder")
    first = run(path, FakeFleet(), tmp_path, overrides=builds, rebuild=True)
    assert {r.step.reason for r in first.builds} == {NOT_OURS}
    plain = run(path, FakeFleet(), tmp_path, overrides=builds)
    assert plain.builds == [], "the runners exist and are up to date"
    forced = run(path, FakeFleet(), tmp_path, overrides=builds, rebuild=True)
    assert sorted((r.step.name, r.step.reason) for r in forced.builds) == [
        ("builds.after.runner", "forced"), ("builds.before.runner", "forced")]
    assert (tmp_path / "bin" / "runner-after").read_text() == "after"
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["options"]["rebuild"] is True and len(manifest["built"]) == 2
    dry = make([path],
               MakeOptions(always=True, dry_run=True, overrides=builds,
                           results_base=tmp_path / "r"))
    assert [(a.kind, a.target, a.reason) for a in dry.actions if a.kind == "build"] == [
        ("build", "builds.before.runner", "forced"), ("build", "builds.after.runner", "forced")]
    normal = make([path], MakeOptions(dry_run=True, overrides=builds, results_base=tmp_path / "r"))
    assert not [a for a in normal.actions if a.kind == "build"]


def test_an_etdump_the_runner_prints_is_kept_as_a_fetched_file(scenario_file, tmp_path):
    import base64

    etdump = b"ED00\x01\x02 trace"

    def dumps(unit: str, build: str, calls: int) -> CommandResult | None:
        if unit != "r0-after-m1":
            return None
        block = ('#[RUN THIS]\n# Writing etdump.bin [base64]\necho '
                 f'"{base64.b64encode(etdump).decode()}" | '
                "base64 -d >etdump.bin\n#[END]\n")
        return CommandResult("x", 0, runner_output(build, 4) + "\n" + block)

    run(scenario_file(), FakeFleet(dumps), tmp_path)
    kept = {r.unit_id: r.extra.get("etdump") for r in stored(tmp_path)}
    assert kept["r0-after-m1"] == "etdump.bin"
    assert (tmp_path / "out/fetched/r0-after-m1/etdump.bin").read_bytes() == etdump
    assert kept["r0-before-m1"] is None


# --- runs are kept --------------------------------------------------------------------------------


def test_a_plain_run_keeps_the_previous_run_whole_and_replace_deletes_it(scenario_file, tmp_path):
    from fvp_harness.store.folder import ResultStore

    path = scenario_file()
    run(path, FakeFleet(), tmp_path)
    out = tmp_path / "out"
    first = json.loads((out / "manifest.json").read_text())
    first_records = (out / "records.jsonl").read_bytes()
    second = run(path, FakeFleet(), tmp_path)
    assert second.exit_code == 0
    kept = out / "runs" / first["run"]["id"]
    assert (kept / "records.jsonl").read_bytes() == first_records, "nothing measured is deleted"
    assert ({p.name for p in kept.iterdir()}
            >= {"manifest.json", "records.jsonl", "logs", "report.md", "report.json"})
    assert json.loads((out / "manifest.json").read_text())["run"]["id"] != first["run"]["id"]
    assert rebuild_report(kept).exit_code == 0, (
        "an earlier run's folder is a results folder of its own")
    runs = ResultStore(out).stored_runs()
    assert [r.current for r in runs] == [False, True] and runs[0].run_id == first["run"]["id"]

    run(path, FakeFleet(), tmp_path, replace=True)
    assert len(ResultStore(out).stored_runs()) == 2, (
        "--replace deleted the current run, kept the earlier one")


def test_resume_continues_the_same_run_and_says_what_runs_again(scenario_file, tmp_path):
    path = scenario_file()
    run(path, FakeFleet(), tmp_path)
    out = tmp_path / "out"
    run_id = json.loads((out / "manifest.json").read_text())["run"]["id"]
    events: list[Event] = []
    loaded = load_scenario(path, ["run.iterations=4"])
    fleet = FakeFleet()
    outcome = run_scenario(loaded, RunOptions(output_dir=out, resume=True), factory=fleet.factory,
                           deploy=fleet.deploy, listener=events.append)
    reruns = {event.unit: event.detail for event in events if event.kind == "rerun"}
    assert len(reruns) == 8 and set(reruns.values()) == {"changed: run"}
    assert outcome.units_run == 8
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["run"]["id"] == run_id and not (out / "runs").exists(), (
        "--resume continues, nothing archived")
    keys = manifest["plan"]["keys"]
    assert len(keys) == 8 and {r.key for r in stored(tmp_path)} > set(keys.values()), (
        "the old records stay")
    # ... but only the current settings' records are counted: 2 repetitions x 4 iterations per build
    # and model
    comparison = outcome.analysis.comparison
    assert (comparison is not None and
            {(m.n_baseline, m.n_candidate) for m in comparison.models} == {(8, 8)})
    assert (outcome.analysis.excluded_records == 8 and not outcome.analysis.not_run and
            outcome.exit_code == 0)
    again = rebuild_report(out)
    assert again.analysis.excluded_records == 8 and again.exit_code == 0


def test_prune_and_runs_verbs(scenario_file, tmp_path, capsys):
    from fvp_harness.cli.main import main as cli

    path = scenario_file()
    for _ in range(3):
        run(path, FakeFleet(), tmp_path)
    out = tmp_path / "out"
    assert cli(["runs", str(out)]) == 0
    header, *listed = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert header.split()[:3] == ["run", "started", "status"]
    assert len(listed) == 3 and listed[-1].startswith("*")
    assert cli(["prune", str(out)]) == 2, "nothing is deleted without being asked"
    assert (cli(["prune", str(out), "--keep", "1", "-n"]) == 0 and
            len(list((out / "runs").iterdir())) == 2)
    assert cli(["prune", str(out), "--keep", "1"]) == 0
    assert len(list((out / "runs").iterdir())) == 1 and (out / "records.jsonl").is_file()
