"""Memory gates and memory history on the user's path: the CLI as a process, the simulator as a
process.

The simulator's memory comes from the work: the ``after`` build (driver objects kept for the
method's life) holds every Ethos-U partition's buffers at once where ``before`` holds one call's,
and a program in more partitions plans the tensors they hand each other. So on ResNet-8 in two
partitions the candidate's peak resident set grows, and given a three-partition file its planned
buffer too; on DS-CNN in one partition neither moves. A gate of 1 KiB on each fails the run (exit 1)
naming the model that grew, and passes the one that did not; ``history --metric planned_memory``
flags the step when a later run's candidate gets the bigger program.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.sim]

_MODEL = '"{{fvp_harness}} sim model {name} {partitions}--seed 1 --macs 256 -o {{output}}"'

SCENARIO = """\
name: memory_gate
platform: corstone1000-a320
vars:
  artifacts: ${{scenario_dir}}/artifacts
fvp: {{binary: sim}}
builds:
  before:
    runner: ${{vars.artifacts}}/runner-before
    build: "{{fvp_harness}} sim runner --driver per-inference -o {{output}}"
  after:
    runner: ${{vars.artifacts}}/runner-after
    build: "{{fvp_harness}} sim runner --driver reuse -o {{output}}"
    models:
      resnet8_2p:
        file: ${{vars.artifacts}}/{after_file}
        build: {after_build}
models:
  ds_cnn:
    file: ${{vars.artifacts}}/ds_cnn.model
    build: {one}
  resnet8_2p:
    file: ${{vars.artifacts}}/resnet8_2p.model
    build: {two}
run:
  command: "{{runner}} --model_path={{model}} --num_executions={{iterations}} --print_output=none"
  warmup: 1
  iterations: 3
  repetitions: 2
metrics:
  - {{name: iteration_time, required: true}}
  - {{name: planned_memory, required: true}}
  - {{name: peak_rss, required: true}}
  - model_bytes
compare:
  baseline: before
  candidate: after
  primary: iteration_time
  gates:
    planned_memory: {{max_regression: 1024, unit: bytes}}
    peak_rss: {{max_regression: 1024, unit: bytes}}
"""


def _scenario(folder: Path, after_partitions: int) -> Path:
    two = _MODEL.format(name="resnet8", partitions="--partitions 2 ")
    after = _MODEL.format(name="resnet8", partitions=f"--partitions {after_partitions} ")
    text = SCENARIO.format(
        one=_MODEL.format(name="ds_cnn", partitions=""),
        two=two,
        after_build=after,
        after_file=f"resnet8_{after_partitions}p_after.model",
    )
    path = folder / "memory_gate.yaml"
    path.write_text(text)
    return path


def _gates(out: Path) -> dict[tuple[str, str], dict[str, object]]:
    report = json.loads((out / "report.json").read_text())
    return {(g["model"], g["metric"]): g for g in report["comparisons"][0]["gates"]}


def test_memory_gate_fails_the_run_when_the_candidate_grows(tmp_path: Path) -> None:
    out = tmp_path / "results"
    scenario = _scenario(tmp_path, after_partitions=3)
    junit = tmp_path / "junit.xml"
    done = run_cli(
        tmp_path, "run", str(scenario), "-o", str(out), "-q", "--junit", str(junit), timeout=240
    )
    assert done.returncode == 1, done.stdout + done.stderr
    xml = junit.read_text()
    assert (
        "resnet8_2p: gate peak_rss" in xml
        and "exact: every run of each build measured the same" in xml
    )
    gates = _gates(out)
    for metric in ("planned_memory", "peak_rss"):
        grown, same = gates[("resnet8_2p", metric)], gates[("ds_cnn", metric)]
        assert grown["verdict"] == "violated" and grown["status"] == "fail", grown
        assert float(grown["change"]) > 1024 and grown["ci_low"] is None  # exact: no zero-width CI
        assert same["verdict"] == "within" and same["change"] == 0, same
    markdown = (out / "report.md").read_text()
    assert "## Memory" in markdown and "no change" in markdown
    assert "more than allowed (a rise of at most 1024 bytes" in markdown
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert all(r["metric_units"]["peak_rss"] == "bytes" for r in records)


def test_history_flags_a_memory_step(tmp_path: Path) -> None:
    out = tmp_path / "results"
    for partitions in (
        2,
        2,
        2,
        3,
    ):  # the fourth run's candidate plans more: a step in planned_memory
        scenario = _scenario(tmp_path, after_partitions=partitions)
        done = run_cli(
            tmp_path,
            "run",
            str(scenario),
            "-o",
            str(out),
            "-q",
            "--set",
            "run.repetitions=1",
            "--set",
            "compare.gates={}",
            timeout=240,
        )
        assert done.returncode in (0, 1), (
            done.stdout + done.stderr
        )  # 1: a time verdict of one repetition
        assert (out / "report.md").is_file()
    history = run_cli(tmp_path, "history", str(out), "--metric", "planned_memory", timeout=120)
    assert history.returncode == 1, (
        history.stdout + history.stderr
    )  # a regression in effect at the newest run
    data = json.loads((out / "history" / "history.json").read_text())
    steps = [s for s in data["steps"] if s["model"] == "resnet8_2p"]
    assert [s["kind"] for s in steps] == ["regression"] and steps[0]["in_effect"], data["steps"]
    assert not [s for s in data["steps"] if s["model"] == "ds_cnn"]
