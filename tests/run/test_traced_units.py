"""A traced build (``builds.<name>.traced``): the unit's command gets its own ``--etdump_path``, and
the field is validated with the file position of the mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from fvp_harness.errors import ScenarioError
from fvp_harness.run.plan import Unit
from fvp_harness.run.unit_command import render_unit_command
from fvp_harness.scenario import load_scenario
from fvp_harness.scenario.model import Scenario


def _scenario(**build: object) -> Scenario:
    return Scenario.model_validate({
        "name": "x",
        "builds": {"b": {"runner": "/r", **build}},
        "models": {"m": {"file": "/m"}},
        "run": {"command": "{runner} --model_path={model}"},
    })


def test_a_traced_build_writes_its_etdump_into_the_unit_folder() -> None:
    unit = Unit("r0-b-m", "b", "m", 0, 0, 0, "k")
    rendered = render_unit_command(_scenario(traced=True, args=["--x"]), unit, runner="/g/r",
                                   model="/g/m", inputs=[], guest_root="/g")
    assert rendered.command == "/g/r --x --etdump_path=/g/units/r0-b-m/etdump.bin --model_path=/g/m"
    plain = render_unit_command(_scenario(), unit, runner="/g/r", model="/g/m", inputs=[],
                                guest_root="/g")
    assert "etdump" not in plain.command


def test_traced_with_its_own_etdump_path_is_refused() -> None:
    with pytest.raises(ValueError, match="remove --etdump_path from args"):
        _scenario(traced=True, args=["--etdump_path=x"])


def test_a_bad_traced_value_names_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: x\nbuilds:\n  b:\n    runner: /r\n    traced: sometimes\nmodels:\n  m: "
                    "{file: /m}\nrun: {command: '{runner}'}\n")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path, check_files=False)
    assert any(p.startswith(f"{path}:5:") and "builds.b.traced" in p
               for p in caught.value.problems), \
        caught.value.problems


def test_tracing_a_build_moves_only_its_units_build_key(tmp_path: Path) -> None:
    """A traced unit runs another command (its --etdump_path) and keeps a trace: a stored untraced
    result is not current for it, while the other build's units, and every untraced scenario's keys,
    stay as they were."""
    from fvp_harness.run.plan import build_plan

    text = ("name: k\nbuilds: {a: {runner: r1}, b: {runner: r2}}\nmodels: {m: {file: m}}\n"
            "run: {command: '{runner} --model_path={model}'}\n")
    plain, traced = tmp_path / "p.yaml", tmp_path / "t.yaml"
    plain.write_text(text)
    traced.write_text(text.replace("b: {runner: r2}", "b: {runner: r2, traced: true}"))
    before = build_plan(load_scenario(plain, check_files=False)).units
    after = build_plan(load_scenario(traced, check_files=False)).units
    for old, new in zip(before, after, strict=True):
        moved = [name for name in old.key_parts if old.key_parts[name] != new.key_parts[name]]
        assert moved == (["build"] if old.build == "b" else []), old.id


FLEET_SCENARIO = """
name: fake
fvp: {binary: sim}
builds:
  before: {runner: bin/runner-before, id: id-before, traced: true}
  after: {runner: bin/runner-after, id: id-after, traced: true}
models:
  m1: {file: m1.model}
run:
  command: "{runner} --model_path={model} --num_executions={iterations} --output_file={output}"
  warmup: 1
  iterations: 3
  repetitions: 2
metrics: [{name: cpu_time, required: true}]
compare: {baseline: before, candidate: after, min_effect: 5}
report: {outputs: [markdown, csv, json]}
"""


def _fleet_run(tmp_path: Path, outputs: dict[str, bytes]) -> list[object]:
    from fvp_harness.run.pipeline import RunOptions, run_scenario
    from fvp_harness.store.folder import ResultStore
    from tests.fakes import FakeFleet

    (tmp_path / "bin").mkdir()
    for name in ("bin/runner-before", "bin/runner-after", "m1.model"):
        (tmp_path / name).write_text(name)
    (tmp_path / "s.yaml").write_text(FLEET_SCENARIO)
    fleet = FakeFleet(outputs=outputs)
    run_scenario(load_scenario(tmp_path / "s.yaml"), RunOptions(output_dir=tmp_path / "out"),
                 factory=fleet.factory, deploy=fleet.deploy)
    runs = [c for c in fleet.commands if "--num_executions=" in c]
    assert runs and all("--etdump_path=" in c for c in runs)
    return list(ResultStore(tmp_path / "out").records())


def test_a_traced_units_etdump_is_kept_hashed_and_no_output(tmp_path: Path) -> None:
    import hashlib

    from fvp_harness.sim.workloads.etdump import ProfileEvent, RunBlock, encode_etdump

    trace = encode_etdump([RunBlock("Execute", (ProfileEvent(0, 10, name="Method::execute"),))] * 4)
    records = _fleet_run(tmp_path, {"out-0.bin": b"same", "etdump.bin": trace})
    assert len(records) == 4
    for r in records:
        assert r.status == "ok" and list(r.outputs) == ["out-0.bin"]  # type: ignore[attr-defined]
        assert r.extra["etdump_sha256"] == hashlib.sha256(trace).hexdigest()  # type: ignore[attr-defined]
        assert (tmp_path / "out" / "fetched" / r.unit_id / "etdump.bin").read_bytes() == trace  # type: ignore[attr-defined]
    assert "## Where the time went (ETDump events)" in (tmp_path / "out" / "report.md").read_text()
    assert (tmp_path / "out" / "report.events.csv").is_file()


def test_a_traced_build_that_writes_no_etdump_fails_its_units_saying_why(tmp_path: Path) -> None:
    records = _fleet_run(tmp_path, {"out-0.bin": b"same"})
    assert {r.status for r in records} == {"failed"}  # type: ignore[attr-defined]
    failure = records[0].failure  # type: ignore[attr-defined]
    assert ("traced: the runner wrote no ETDump at" in failure and
            "ET_EVENT_TRACER_ENABLED" in failure)
    assert "Where the time went" not in (tmp_path / "out" / "report.md").read_text()
