"""``builds.X.libraries``: shared libraries deployed with a build's runner: schema, loading, the
plan's artifacts and content keys, and the runner's ``LD_LIBRARY_PATH`` in its guest command."""

from __future__ import annotations

import os

import pytest

from fvp_harness.errors import ScenarioError
from fvp_harness.run.artifacts import declared_artifacts, pending_builds
from fvp_harness.run.plan import Unit, build_plan, unit_artifacts
from fvp_harness.run.unit_command import render_unit_command
from fvp_harness.scenario import load_scenario
from fvp_harness.scenario.model import Scenario, scenario_json_schema

SCENARIO = """\
name: s
platform: qemu-aarch64-virt
builds:
  before: {runner: art/r-before}
  after:
    runner: art/r-after
    libraries:
      - art/lib/libexecutorch.so
      - {file: art/kernels/libkernels.so, build: "cp src.so {output}", sources: [src.so]}
models:
  m: {file: art/m.pte}
run: {repetitions: 1}
"""


@pytest.fixture
def scenario_path(write):
    for name in ("r-before", "r-after", "m.pte", "lib/libexecutorch.so", "kernels/libkernels.so"):
        write(f"art/{name}", f"bytes of {name}")
    write("src.so", "source")
    path = write("s.yaml", SCENARIO)
    os.utime(
        path.parent / "src.so", (1, 1)
    )  # the built library is newer than its source: up to date
    return path


def test_schema_offers_a_path_or_an_artifact_entry():
    schema = scenario_json_schema()
    assert schema["$defs"]["Build"]["properties"]["libraries"]["items"] == {
        "$ref": "#/$defs/Library"
    }
    entry = schema["$defs"]["Library"]["anyOf"]
    assert {"type": "string", "description": "Short for {file: PATH}."} in entry
    assert any(option.get("properties", {}).get("file") for option in entry)


def test_a_bare_path_and_a_mapping_load_as_absolute_files(scenario_path):
    loaded = load_scenario(scenario_path)
    libraries = loaded.scenario.builds["after"].libraries
    root = scenario_path.parent
    assert [item.file for item in libraries] == [
        str(root / "art/lib/libexecutorch.so"),
        str(root / "art/kernels/libkernels.so"),
    ]
    assert libraries[1].build == "cp src.so {output}" and libraries[1].sources == [
        str(root / "src.so")
    ]
    assert loaded.scenario.builds["before"].libraries == []


def test_a_missing_library_without_a_build_is_refused_at_its_line(scenario_path, write):
    (scenario_path.parent / "art/lib/libexecutorch.so").unlink()
    with pytest.raises(ScenarioError) as caught:
        load_scenario(scenario_path)
    assert any(
        ":8:9: builds.after.libraries[0]: " in problem and "file not found" in problem
        for problem in caught.value.problems
    ), caught.value.problems


def test_two_libraries_of_one_name_are_refused(write):
    text = SCENARIO.replace("art/kernels/libkernels.so", "art/kernels/libexecutorch.so")
    for name in (
        "r-before",
        "r-after",
        "m.pte",
        "lib/libexecutorch.so",
        "kernels/libexecutorch.so",
    ):
        write(f"art/{name}", name)
    write("src.so", "source")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(write("s.yaml", text))
    assert any(
        "builds.after.libraries" in problem
        and "two libraries named 'libexecutorch.so'" in problem
        and "rename one" in problem
        for problem in caught.value.problems
    ), caught.value.problems


def test_bare_metal_platforms_refuse_libraries(write):
    write("art/r", "runner")
    write("art/m.pte", "model")
    write("art/libx.so", "lib")
    path = write(
        "s.yaml",
        """\
        name: s
        platform: corstone300-u55
        builds:
          b: {runner: art/r, libraries: [art/libx.so]}
        models:
          m: {file: art/m.pte}
        """,
    )
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert any(
        "builds.b.libraries" in problem and "no dynamic loader" in problem and "static" in problem
        for problem in caught.value.problems
    ), caught.value.problems


def test_libraries_are_artifacts_built_hashed_and_keyed(scenario_path):
    loaded = load_scenario(scenario_path)
    names = [name for name, *_ in declared_artifacts(loaded.scenario)]
    assert names[:4] == [
        "builds.before.runner",
        "builds.after.runner",
        "builds.after.libraries[0].file",
        "builds.after.libraries[1].file",
    ]
    plan = build_plan(loaded)
    assert plan.artifacts["builds.after.libraries[1].file"].built
    assert unit_artifacts(loaded.scenario, "after", "m")[-2:] == (
        "builds.after.libraries[0].file",
        "builds.after.libraries[1].file",
    )
    keys = {unit.build: unit for unit in plan.units}
    assert "libraries" in keys["after"].key_parts and "libraries" not in keys["before"].key_parts
    assert [step.name for step in pending_builds(loaded)] == [
        "builds.after.libraries[1].file"
    ]  # no record yet
    (scenario_path.parent / "art/kernels/libkernels.so").write_text("other bytes")
    again = {unit.build: unit for unit in build_plan(load_scenario(scenario_path)).units}
    assert again["before"].key == keys["before"].key
    assert again["after"].key != keys["after"].key
    assert [
        name
        for name in keys["after"].key_parts
        if keys["after"].key_parts[name] != again["after"].key_parts[name]
    ] == ["libraries"]


def test_an_unbuilt_library_makes_the_key_provisional_and_is_built(scenario_path):
    (scenario_path.parent / "art/kernels/libkernels.so").unlink()
    loaded = load_scenario(scenario_path)
    unit = next(unit for unit in build_plan(loaded).units if unit.build == "after")
    assert unit.unbuilt == ("builds.after.libraries[1].file",)
    assert [step.name for step in pending_builds(loaded)] == ["builds.after.libraries[1].file"]


def _scenario(command: str, env: dict[str, str] | None = None) -> Scenario:
    return Scenario.model_validate(
        {
            "name": "x",
            "builds": {
                "b": {
                    "runner": "/r",
                    "env": env or {},
                    "libraries": ["/h/a/liba.so", "/h/b/libb.so"],
                }
            },
            "models": {"m": {"file": "/m"}},
            "run": {"command": command},
        }
    )


UNIT = Unit("r0-b-m", "b", "m", 0, 0, 0, "k")
LIBS = ["/g/11/liba.so", "/g/22/libb.so", "/g/11/libc.so"]


def test_the_runner_word_gets_the_library_folders_first_on_ld_library_path():
    rendered = render_unit_command(
        _scenario("{runner} --model_path={model}"),
        UNIT,
        runner="/g/r",
        model="/g/m",
        inputs=[],
        guest_root="/g",
        libraries=LIBS,
    )
    assert rendered.command == (
        'LD_LIBRARY_PATH=/g/11:/g/22"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" /g/r --model_path=/g/m'
    )
    mine = _scenario("{runner}", env={"LD_LIBRARY_PATH": "/opt/x y"})
    rendered = render_unit_command(
        mine, UNIT, runner="/g/r", model="/g/m", inputs=[], guest_root="/g", libraries=LIBS
    )
    assert rendered.command == "LD_LIBRARY_PATH='/g/11:/g/22:/opt/x y' /g/r"


def test_a_compound_command_sets_the_folders_in_a_subshell_so_no_later_unit_inherits_them():
    rendered = render_unit_command(
        _scenario("cd {unit_dir} && {runner}", env={"A": "1"}),
        UNIT,
        runner="/g/r",
        model="/g/m",
        inputs=[],
        guest_root="/g",
        libraries=LIBS[:1],
    )
    assert rendered.command == (
        '(export A=1 LD_LIBRARY_PATH=/g/11"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; '
        "cd /g/units/r0-b-m && /g/r)"
    )
    plain = render_unit_command(
        _scenario("cd {unit_dir} && {runner}", env={"A": "1"}),
        UNIT,
        runner="/g/r",
        model="/g/m",
        inputs=[],
        guest_root="/g",
    )
    assert plain.command == "export A=1; cd /g/units/r0-b-m && /g/r"
