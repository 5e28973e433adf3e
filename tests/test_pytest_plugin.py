"""The pytest plugin (``fvp_harness.pytest_plugin``), driven through pytester as its users run it.

Fast: a project that does not ask for the plugin is untouched (its own ``--fvp`` option,
``fvp_target`` fixture and ``fvp`` marker keep working, and nothing of the harness beyond the
options module is imported); FVP tests skip with the reason when no FVP is configured; bad options
are usage errors; and the fixtures' logic (one boot per session, a lost instance booted again, a
failed boot as errors, an A/B run borrowing the booted instance, deploys after a re-boot) on
``FakeTarget`` instances behind ``open_target``.

Slow (they boot the simulator; kept to three runs): the shipped example passes with one boot for the
session and its report in ``--junit-xml``; with ``-n 2`` each xdist worker boots once, in its own
results folder; a boot that fails (a kernel panic knob) is an error of the tests that use it, and a
console lost under a test (a dropped-console knob) is booted again for the next one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fvp_harness.errors import HarnessError, KernelPanic
from fvp_harness.pytest_plugin.ab import AbResult, NotMeasured
from fvp_harness.pytest_plugin.plugin import TAIL_LINES, failure_text
from fvp_harness.pytest_plugin.settings import override_text
from fvp_harness.run.pipeline import RunOptions, run_scenario
from fvp_harness.scenario.load import load_scenario
from fvp_harness.targets.base import CommandResult
from tests.fakes import FakeFleet
from tests.helpers import REPO

pytest_plugins = ["pytester"]

EXAMPLE = REPO / "examples" / "test_fvp_example.py"
SMOKE = REPO / "scenarios" / "smoke.yaml"
BOOTED = re.compile(r"^(\d+) FVP instances? booted", re.MULTILINE)


def _boots(text: str) -> int:
    found = BOOTED.search(text)
    assert found, f"no boot count in the terminal summary:\n{text}"
    return int(found.group(1))


def _smoke_project(pytester: pytest.Pytester) -> Path:
    """The example and a copy of the smoke scenario (its artifacts are then built inside the
    pytester folder)."""
    (pytester.path / "scenarios").mkdir()
    shutil.copy(SMOKE, pytester.path / "scenarios" / "smoke.yaml")
    shutil.copy(EXAMPLE, pytester.path / "test_fvp_example.py")
    return pytester.path / "scenarios" / "smoke.yaml"


# --- not asked: nothing changes -------------------------------------------------------------------


def test_a_project_that_does_not_ask_is_untouched(pytester: pytest.Pytester) -> None:
    pytester.makeini("""
        [pytest]
        markers = fvp: this project's own marker
    """)
    pytester.makeconftest("""
        import sys
        import pytest

        def pytest_addoption(parser):
            parser.addoption("--fvp", default="mine", help="this project's own option")

        @pytest.fixture
        def fvp_target(request):
            return "the project's own " + request.config.getoption("--fvp")

        def pytest_sessionfinish(session):
            names = sorted(name for name in sys.modules
                           if name.startswith(("fvp_harness", "pandas", "pydantic")))
            open("modules.txt", "w").write("\\n".join(names))
    """)
    pytester.makepyfile("""
        import pytest

        @pytest.mark.fvp
        def test_own_names(fvp_target):
            assert fvp_target == "the project's own option-value"
    """)
    result = pytester.runpytest_subprocess("--strict-markers", "--fvp", "option-value")
    result.assert_outcomes(passed=1)
    assert not re.search(r"=+ fvp-harness =+", result.stdout.str()), "no summary section either"
    modules = (pytester.path / "modules.txt").read_text().split()
    assert "fvp_harness.pytest_plugin.options" in modules, (
        "the entry point is installed (pip install -e .)")
    loaded_beyond = [name for name in modules if name not in (
        "fvp_harness", "fvp_harness.pytest_plugin", "fvp_harness.pytest_plugin.options")]
    assert loaded_beyond == [], (
        "only the options module (and its packages) may load in a run that did not ask")


def test_fvp_tests_skip_with_the_reason_when_no_fvp_is_configured(
        pytester: pytest.Pytester) -> None:
    shutil.copy(SMOKE, pytester.path / "smoke.yaml")
    pytester.makepyfile("""
        import pytest

        @pytest.mark.fvp(scenario="smoke.yaml")
        def test_marked_for_the_simulator():
            raise AssertionError("must not run")

        def test_without_a_scenario(fvp_target):
            raise AssertionError("must not run")

        def test_plain():
            pass

        @pytest.mark.fvp(sceanrio="smoke.yaml")
        def test_misspelt_marker():
            raise AssertionError("must not run")
    """)
    result = pytester.runpytest("-p", "fvp_harness.pytest_plugin", "--strict-markers", "-rs")
    result.assert_outcomes(passed=1, skipped=2, errors=1)
    text = result.stdout.str()
    assert "@pytest.mark.fvp takes scenario=PATH and set={FIELD: VALUE} (got sceanrio)" in text
    assert ("no FVP configured for smoke: its fvp.binary is the embedded simulator, which is not "
            "allowed here") in text
    assert "--fvp sim / --fvp-allow-sim" in text
    assert "no FVP scenario configured: pass --fvp-scenario PATH" in text
    assert "booted" not in text


@pytest.mark.parametrize(("args", "message"), [
    (["--fvp-timeout-scale", "0"], "must be positive"),
    (["-o", "fvp_target_scope=forever"], "fvp_target_scope = 'forever': expected one of session"),
    (["--fvp-scenario", "missing.yaml"], "--fvp-scenario / fvp_scenario"),
    (["--fvp-scenario", "smoke.yaml", "--fvp-set", "run.iterations"], "expected PATH=VALUE"),
    (["--fvp-scenario", "smoke.yaml", "--fvp-set", "run.iteratoins=3"], "run.iteratoins"),
])
def test_bad_settings_are_usage_errors(pytester: pytest.Pytester, args: list[str],
                                       message: str) -> None:
    shutil.copy(SMOKE, pytester.path / "smoke.yaml")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    assert message in result.stderr.str()


@pytest.mark.parametrize("value",
                         ["boot", 5, "5", 0.003, True, "A title: with colon", [1, "two"], {"a": 1},
                          None])
def test_override_values_read_back_as_themselves(value: Any) -> None:
    path, _, text = override_text("fvp.sim.knob", value).partition("=")
    assert path == "fvp.sim.knob"
    assert yaml.safe_load(text) == value


# --- the fixtures' logic on fake instances --------------------------------------------------------

FAKE_SCENARIO = """
name: fake
platform: corstone1000-a320
fvp: {binary: sim}
builds:
  before: {runner: bin/runner-before}
  after: {runner: bin/runner-after}
models:
  m1: {file: m1.model, inputs: [{file: m1.in}]}
  m2: {file: m2.model}
run:
  command: "{runner} --model_path={model} --num_executions={iterations} --unit={unit}
    --output_file={output}"
  warmup: 1
  iterations: 3
  repetitions: 2
metrics: [{name: cpu_time, required: true}, npu_cycles]
compare:
  baseline: before
  candidate: after
  primary: cpu_time
  expect_identical: [outputs]
  min_effect: 5
report: {outputs: [csv]}
"""

FAKE_TESTS = """
import pytest
from fvp_harness.errors import ConsoleLost
from fvp_harness.pytest_plugin.ab import AbRunFailed

PANIC = {"fvp.sim.fault_panic": "boot"}


def test_target(fvp_target):
    assert fvp_target.run("echo hi").output.strip() == "hi"
    assert fvp_target.run("false").exit_status == 1
    with pytest.raises(AssertionError, match="exited 1"):
        fvp_target.run("false", check=True)
    assert fvp_target.boots == 1


def test_deployed(fvp_target, fvp_deployed):
    assert sorted(fvp_deployed.paths) == ["builds.after.runner", "builds.before.runner",
                                          "models.m1.file", "models.m1.inputs[0].file",
                                          "models.m2.file"]
    assert fvp_target.run("sha256sum " + fvp_deployed.runner("after")).ok
    assert fvp_deployed.inputs("m1") == [fvp_deployed["models.m1.inputs[0].file"]]
    with pytest.raises(KeyError, match="has no build named 'middle'"):
        fvp_deployed.runner("middle")


def test_ab(fvp_ab, fvp_target):
    result = fvp_ab(models=["m1"])
    assert result.verdicts == {"m1": "faster"}
    assert 45 < result.saved("m1") < 55
    assert result.identical("outputs")
    assert "| m1 " in result.markdown  # rendered although report.outputs has no markdown
    assert fvp_target.boots == 1, "the A/B run borrowed the booted instance"
    with pytest.raises(Exception, match="no build named 'nightly'"):
        fvp_ab(builds=["nightly"])


def test_ab_with_failing_units(fvp_ab):
    with pytest.raises(AbRunFailed,
                       match="(?s)did not measure every unit.*r0-after-m2: test: CommandFailed"):
        fvp_ab(models=["m2"])
    assert fvp_ab(models=["m2"], check=False).verdicts == {"m2": "not measured"}


def test_console_lost(fvp_target):
    def lose(call):
        raise ConsoleLost("the console went away (fake)")

    fvp_target.target.program("lose", lose)
    fvp_target.run("lose")  # the platform fails under the test: the test fails


def test_after_the_loss(fvp_target, fvp_deployed):
    assert fvp_target.boots == 2
    assert fvp_target.run("sha256sum " + fvp_deployed.model("m2")).ok, (
        "deployed again into the new instance")


@pytest.mark.fvp(set=PANIC)
def test_boot_fails(fvp_target):
    raise AssertionError("never runs")


@pytest.mark.fvp(set=PANIC)
def test_boot_fails_for_the_ab_too(fvp_ab):
    raise AssertionError("never runs")
"""


class FakeInstances:
    """What the plugin's ``open_target`` opened instead of models: ``FakeFleet`` targets, and the
    names of the boots that failed (a scenario with ``fvp.sim.fault_panic: boot`` panics at
    boot)."""

    def __init__(self) -> None:
        self.fleet = FakeFleet()
        self.failed: list[str] = []

    @contextlib.contextmanager
    def open_target(self, scenario: Any, *, log_dir: Path, name: str,
                    timeout_scale: float) -> Iterator[Any]:
        if scenario.scenario.fvp.sim.get("fault_panic") == "boot":
            self.failed.append(name)
            raise KernelPanic(f"{name}: Kernel panic - not syncing (fake)",
                              log_path=Path(log_dir) / "fvp.log",
                              last_lines=["[    0.5] Kernel panic - not syncing: fake"])
        with self.fleet.factory(name, Path(log_dir)) as target:
            yield target


@pytest.fixture
def fake_instances(monkeypatch: pytest.MonkeyPatch) -> FakeInstances:
    instances = FakeInstances()
    monkeypatch.setattr("fvp_harness.pytest_plugin.target.open_target", instances.open_target)
    return instances


def test_fixture_logic_on_fake_instances(pytester: pytest.Pytester,
                                         fake_instances: FakeInstances) -> None:
    (pytester.path / "bin").mkdir()
    for name in ("bin/runner-before", "bin/runner-after", "m1.model", "m1.in", "m2.model"):
        (pytester.path / name).write_text(name)
    (pytester.path / "fake.yaml").write_text(FAKE_SCENARIO)
    pytester.makepyfile(test_fake=FAKE_TESTS)
    fake_instances.fleet.behaviour = lambda unit, build, call: (
        CommandResult("runner", 139, "Segmentation fault") if unit.endswith("after-m2") else None)
    result = pytester.runpytest("--fvp-scenario", "fake.yaml", "--fvp", "sim")
    result.assert_outcomes(passed=5, failed=1, errors=2)
    text = result.stdout.str()
    result.stdout.fnmatch_lines(["E * fvp_harness.errors.ConsoleLost: the console went away "
                                 "(fake)"])
    result.stdout.fnmatch_lines(["*ERROR at setup of "
                                 "test_boot_fails[[]fake,fvp.sim.fault_panic=boot[]]*",
                                 "the FVP instance of fake did not boot (2 tries, *): fake-4: "
                                 "Kernel panic*"])
    assert "Kernel panic - not syncing: fake" in text  # the log's last lines are in the error
    assert len(fake_instances.fleet.boots) == 2, (
        "one boot for the session, one after the lost console")
    assert len(fake_instances.failed) == 2, (
        "a failed boot is tried run.retries + 1 times, once for its scope")
    assert _boots(text) == 2 and "2 boot attempts failed" in text
    assert "A/B run in test_fake.py::test_ab: PASS" in text
    instances = sorted(path.name
                       for path in (pytester.path / "results" / "pytest" / "instances").iterdir())
    assert instances == ["fake-1", "fake-2", "fake-3", "fake-4"], (
        "every attempt logs into a folder of its own")


def test_ab_result_answers_the_questions_tests_ask(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    for name in ("bin/runner-before", "bin/runner-after", "m1.model", "m1.in", "m2.model"):
        (tmp_path / name).write_text(name)
    (tmp_path / "fake.yaml").write_text(FAKE_SCENARIO)

    def after_fails_on_m2(unit: str, build: str, call: int) -> CommandResult | None:
        return (CommandResult("runner", 1, "Segmentation fault") if unit.endswith("after-m2")
                else None)

    fleet = FakeFleet(behaviour=after_fails_on_m2)
    loaded = load_scenario(tmp_path / "fake.yaml")
    outcome = run_scenario(loaded, RunOptions(output_dir=tmp_path / "out"), factory=fleet.factory,
                           deploy=fleet.deploy)
    result = AbResult(outcome, "# report\n", loaded)
    assert result.verdicts == {"m1": "faster", "m2": "not measured"}
    assert 45 < result.saved("m1") < 55
    with pytest.raises(NotMeasured, match="m2: no saving was measured"):
        result.saved("m2")
    with pytest.raises(LookupError, match="no model 'm3'"):
        result.saved("m3")
    assert result.identical("outputs", model="m1")
    assert not result.identical("outputs"), "m2 could not be verified: not identical"
    with pytest.raises(LookupError, match="checks no identity of 'cpu_time'"):
        result.identical("cpu_time")
    assert set(result.frame["model"]) == {"m1", "m2"}
    assert result.verdict == "FAIL" and result.exit_code == 1
    assert "m1 faster (saved" in repr(result) and "m2 not measured" in repr(result)
    # a candidate that got slower: a cost in the report's words, never "saved -20.4%"
    comparison = outcome.analysis.comparisons[0]
    slower = [dataclasses.replace(m, saved_pct=-20.44, verdict="slower") if m.model == "m1" else m
              for m in comparison.models]
    analysis = dataclasses.replace(
        outcome.analysis, comparisons=(dataclasses.replace(comparison, models=tuple(slower)),)
    )
    shown = repr(AbResult(dataclasses.replace(outcome, analysis=analysis), "# report\n", loaded))
    assert "m1 slower (20.4% slower" in shown and "saved -" not in shown, shown


def test_the_docs_show_the_example_as_shipped() -> None:
    doc = (REPO / "docs" / "pytest-plugin.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", doc, re.DOTALL)
    assert EXAMPLE.read_text(encoding="utf-8") in blocks


def test_failure_text_shows_the_log_and_its_last_lines() -> None:
    exc = HarnessError("no login prompt", log_path="logs/x.log",
                       last_lines=[f"line {n}" for n in range(40)])
    text = failure_text("boot", exc)
    assert text.startswith("boot: no login prompt (log: logs/x.log)")
    assert f"line {40 - TAIL_LINES}" in text and f"line {39 - TAIL_LINES}" not in text


# --- on the simulator -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.sim
def test_the_example_passes_on_the_simulator_with_one_boot(pytester: pytest.Pytester) -> None:
    _smoke_project(pytester)
    result = pytester.runpytest("--fvp-scenario", "scenarios/smoke.yaml", "--fvp", "sim",
                                "--junit-xml=junit.xml")
    result.assert_outcomes(passed=3)
    text = result.stdout.str()
    results = pytester.path / "results" / "pytest"
    assert _boots(text) == 1
    assert [path.name for path in (results / "instances").iterdir()] == ["smoke-1"]
    assert (results / "instances" / "smoke-1" / "fvp.log").is_file()
    ab = results / "ab" / "smoke"
    assert ((ab / "report.md").is_file() and
            json.loads((ab / "manifest.json").read_text())["status"] == "complete")
    assert list((ab / "logs" / "s0").glob("r0-*.log")), "the A/B's unit logs"
    assert not (ab / "logs" / "s0" / "fvp.log").exists(), (
        "the A/B run borrowed the instance: no boot of its own")
    assert "A/B run in test_fvp_example.py::test_driver_reuse_saves_cpu_time: PASS" in text
    assert "# Smoke test (DS-CNN)" in text
    junit = ET.parse(pytester.path / "junit.xml")
    properties = {prop.get("name"): prop.get("value") for prop in junit.iter("property")}
    assert properties["fvp_ab_verdict"] == "PASS"
    assert properties["fvp_ab_report"].startswith("# Smoke test (DS-CNN)")
    assert Path(properties["fvp_ab_results"]) == ab


@pytest.mark.slow
@pytest.mark.sim
def test_each_xdist_worker_boots_its_own_instance(pytester: pytest.Pytester) -> None:
    _smoke_project(pytester)
    result = pytester.runpytest_subprocess("-n", "2", "--fvp-scenario", "scenarios/smoke.yaml",
                                           "--fvp", "sim", timeout=600)
    result.assert_outcomes(passed=3)
    text = result.stdout.str()
    assert _boots(text) == 2 and "(gw0: 1, gw1: 1)" in text
    results = pytester.path / "results" / "pytest"
    for worker in ("gw0", "gw1"):
        assert [path.name for path in (results / worker / "instances").iterdir()] == ["smoke-1"], (
            worker)
    assert len(list(results.glob("gw*/ab/smoke/report.md"))) == 1


FAULT_TESTS = """
import pytest
from fvp_harness.errors import ConsoleLost

# the 20th console command: after login, during the first test
DROP = {"fvp.sim.fault_console_drop": 20}
PANIC = {"fvp.sim.fault_panic": "boot", "run.retries": 0}


@pytest.mark.fvp(set=DROP)
def test_console_is_lost(fvp_target):
    with pytest.raises(ConsoleLost):
        for number in range(40):
            fvp_target.run(f"echo {number}")
    assert fvp_target.lost


@pytest.mark.fvp(set=DROP)
def test_next_test_gets_a_new_instance(fvp_target):
    assert fvp_target.boots == 2
    assert fvp_target.run("echo fine").output.strip() == "fine"


@pytest.mark.fvp(set=PANIC)
def test_boot_fails(fvp_target):
    raise AssertionError("never runs")


@pytest.mark.fvp(set=PANIC)
def test_boot_fails_for_the_deploy_too(fvp_deployed):
    raise AssertionError("never runs")
"""


@pytest.mark.slow
@pytest.mark.sim
def test_a_failed_boot_is_an_error_and_a_lost_console_boots_again(
        pytester: pytest.Pytester) -> None:
    _smoke_project(pytester)
    pytester.makepyfile(test_faults=FAULT_TESTS)
    result = pytester.runpytest("test_faults.py", "--fvp-scenario", "scenarios/smoke.yaml", "--fvp",
                                "sim")
    result.assert_outcomes(passed=2, errors=2)
    text = result.stdout.str()
    result.stdout.fnmatch_lines(["*ERROR at setup of test_boot_fails*",
                                 "the FVP instance of smoke did not boot "
                                 "(1 try, *): *Kernel panic - not syncing*"])
    assert _boots(text) == 2 and "1 boot attempt failed" in text
    assert len(list((pytester.path / "results" / "pytest" / "instances").iterdir())) == 3
