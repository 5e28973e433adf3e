"""Results you can trust, on fake instances: implausible samples are refused one by one (and
counted), a required metric without a valid sample fails its unit, and secret environment values
never reach the results folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fvp_harness.run.pipeline import RunOptions, run_scenario
from fvp_harness.scenario import load_scenario
from fvp_harness.store.folder import ResultStore
from fvp_harness.targets.base import CommandResult
from fvp_harness.targets.fake import FakeCall, FakeTarget
from tests.fakes import FakeFleet

SECRET = "s3cr3t-v4lue"

SCENARIO = """\
name: trust
fvp: {{binary: sim}}
builds:
  before: {{runner: bin/runner-before, id: id-before}}
  after: {{runner: bin/runner-after, id: id-after}}
models:
  m1: {{file: m1.model}}
run:
  command: "{{runner}} --model_path={{model}} --num_executions={{iterations}}
    --output_file={{output}}"
  warmup: 1
  iterations: 3
  repetitions: 1
{run_extra}
metrics: [{{name: cpu_time, required: true}}, npu_cycles]
compare: {{baseline: before, candidate: after}}
report: {{outputs: [markdown, csv, json]}}
"""

HEAD = "I 00:00:00.000100 executorch:executor_runner.cpp:60] executor_runner build id: id-{build}"
CPU = "I 00:00:00.000300 executorch:EthosUBackend.cpp:291] EthosUBackend::execute() CPU time: {} ms"
CYCLES = ("I 00:00:00.000200 executorch:EthosUBackend.cpp:284] Ethos-U Linux delegate cycle "
          "counter: {}")


def output(build: str, cpu: list[str], cycles: list[str]) -> str:
    lines = [HEAD.format(build=build)]
    for time, count in zip(cpu, cycles, strict=True):
        lines += [CYCLES.format(count), CPU.format(time)]
    return "\n".join(lines) + "\n"


def scenario_file(tmp_path: Path, run_extra: str = "") -> Path:
    (tmp_path / "bin").mkdir(exist_ok=True)
    for name in ("bin/runner-before", "bin/runner-after", "m1.model"):
        (tmp_path / name).write_text(name)
    path = tmp_path / "trust.yaml"
    path.write_text(SCENARIO.format(run_extra=run_extra), encoding="utf-8")
    return path


def run(path: Path, fleet: FakeFleet, tmp_path: Path) -> Any:
    return run_scenario(load_scenario(path), RunOptions(output_dir=tmp_path / "out"),
                        factory=fleet.factory, deploy=fleet.deploy)


def records(tmp_path: Path) -> dict[str, Any]:
    return {record.build: record for record in ResultStore(tmp_path / "out").records()}


def test_implausible_samples_are_refused_one_by_one_and_counted(tmp_path):
    def answer(unit: str, build: str, calls: int) -> CommandResult | None:
        # warmup, then a plausible, an implausible (> 1 h) and a plausible time
        if build == "before":
            return CommandResult("x", 0, output(build, ["100.0", "2.0", "9999999.0", "2.5"],
                                                ["4242", "4242", "-7", "4242"]))
        return None

    run(scenario_file(tmp_path), FakeFleet(answer, outputs={}), tmp_path)
    before = records(tmp_path)["before"]
    assert before.status == "ok"
    assert before.samples["cpu_time"] == [2.0, 2.5]
    assert before.samples["npu_cycles"] == [4242.0, 4242.0]
    assert before.extra["rejected_samples"] == 2
    assert before.extra["rejected.cpu_time"] == 1 and before.extra["rejected.npu_cycles"] == 1
    warnings = str(before.extra["scrape_warnings"])
    assert "implausible time" in warnings and "counter out of range" in warnings
    assert "rejected_samples" not in records(tmp_path)["after"].extra


def test_a_refused_warmup_value_still_counts_as_the_warmup(tmp_path):
    def answer(unit: str, build: str, calls: int) -> CommandResult | None:
        return CommandResult("x", 0,
                             output(build, ["-1.0", "2.0", "2.1", "2.2"], ["1", "1", "1", "1"]))

    run(scenario_file(tmp_path), FakeFleet(answer, outputs={}), tmp_path)
    # no measured value dropped
    assert records(tmp_path)["before"].samples["cpu_time"] == [2.0, 2.1, 2.2]


def test_a_required_metric_without_a_valid_sample_fails_the_unit(tmp_path):
    def answer(unit: str, build: str, calls: int) -> CommandResult | None:
        if build == "before":
            return CommandResult("x", 0,
                                 output(build, ["1.0", "-2.0", "-3.0", "1e9"],
                                        ["1", "1", "1", "1"]))
        return None

    run(scenario_file(tmp_path), FakeFleet(answer, outputs={}), tmp_path)
    before = records(tmp_path)["before"]
    assert before.status == "failed" and before.failure_class == "test"
    assert before.failure is not None and before.failure.startswith("MetricMissing")
    assert "cpu_time (no valid sample: 3 rejected" in before.failure
    assert before.samples["cpu_time"] == []
    assert before.extra["no_sample.cpu_time"] == "negative time", "the record says why in one field"


class EnvFleet(FakeFleet):
    """Remembers the environment every runner call got."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.envs: list[dict[str, str]] = []

    def _runner(self, target: FakeTarget, units: list[str], call: FakeCall) -> CommandResult:
        self.envs.append(dict(call.env))
        return super()._runner(target, units, call)


@pytest.mark.timeout(60)
def test_a_secret_env_value_reaches_the_runner_and_no_file_of_the_results(tmp_path):
    def answer(unit: str, build: str, calls: int) -> CommandResult | None:
        # a runner that prints the secret and fails: failure text, log tail, warnings
        if build == "after":
            return CommandResult("x", 1,
                                 f"E 00:00:00.000100 executorch:x.cpp:1] token {SECRET} refused\n")
        return None

    extra = f"  env: {{TOKEN: {{value: {SECRET}, secret: true}}, PLAIN: visible}}"
    fleet = EnvFleet(behaviour=answer)
    outcome = run(scenario_file(tmp_path, extra), fleet, tmp_path)
    assert outcome.exit_code == 1
    # the runner got the value
    assert fleet.envs and all(env.get("TOKEN") == SECRET for env in fleet.envs)
    out = tmp_path / "out"
    files = [path for path in out.rglob("*") if path.is_file()]
    assert (any(path.name == "manifest.json" for path in files) and
            any(path.suffix == ".log" for path in files))
    leaked = [path for path in files if SECRET.encode() in path.read_bytes()]
    assert leaked == [], leaked
    after = records(tmp_path)["after"]
    assert after.failure is not None and "token *** refused" in after.failure
    log = (out / str(after.log)).read_text(encoding="utf-8")
    assert "TOKEN=*** " in log and "PLAIN=visible" in log
    manifest = (out / "manifest.json").read_text(encoding="utf-8")
    assert '"TOKEN": "***"' in manifest and '"PLAIN": "visible"' in manifest
