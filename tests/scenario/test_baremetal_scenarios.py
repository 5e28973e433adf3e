"""Bare-metal scenarios: what the language adds (per-build FVP parameters and model files, data
addresses, the semihosting command line, ``fvp.timelimit``) and what the platform's kind allows,
each problem at its ``file:line:col``; and what the shipped bare-metal scenarios say."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fvp_harness.errors import ScenarioError
from fvp_harness.located import display_path
from fvp_harness.run.plan import _digest, artifact_hashes, build_plan
from fvp_harness.scenario import load_scenario
from fvp_harness.scenario.baremetal import semihosting_names, semihosting_unit

HEAD = """\
name: bm
platform: corstone320-u85
builds:
  u85-128:
    runner: r128.elf
    build: "make {output}"
    fvp_params: {mps4_board.subsystem.ethosu.num_macs: 128}
    models:
      resnet8: {file: m128/resnet8.pte, build: "make {output}"}
  u85-256:
    runner: r256.elf
    build: "make {output}"
    fvp_params: {mps4_board.subsystem.ethosu.num_macs: 256}
models:
  resnet8:
    file: m256/resnet8.pte
    build: "make {output}"
    inputs: [{file: resnet8.input.bin, build: "make {output}"}]
metrics: [{name: bm_npu_cycles, required: true}]
compare:
  baseline: u85-128
  candidate: u85-256
  primary: bm_npu_cycles
  expect_identical: [outputs]
"""


def problems(path: Path) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    return caught.value.problems


def test_a_bare_metal_scenario_loads_with_its_per_build_parts(write) -> None:
    loaded = load_scenario(write("s.yaml", HEAD + "fvp: {timelimit: 60}\n"))
    scenario = loaded.scenario
    assert loaded.profile.baremetal and scenario.fvp.timelimit == 60
    assert scenario.model_file("u85-128", "resnet8").endswith("m128/resnet8.pte")
    assert scenario.model_file("u85-256", "resnet8").endswith("m256/resnet8.pte")
    assert scenario.model_artifact("u85-128", "resnet8") == "builds.u85-128.models.resnet8.file"
    assert "builds.u85-128.models.resnet8.file" in artifact_hashes(scenario)
    unit = semihosting_unit(scenario, "u85-128", "resnet8", "r0-u85-128-resnet8")
    assert unit.cmd_line == "r128.elf -m resnet8.pte -o out -i resnet8.input.bin"
    assert list(unit.files) == ["resnet8.pte", "resnet8.input.bin"]


def test_a_builds_launch_parameters_are_part_of_its_units_keys_only(write) -> None:
    plan = build_plan(load_scenario(write("a.yaml", HEAD), check_files=False))
    moved = build_plan(load_scenario(write("b.yaml",
                                           HEAD.replace("num_macs: 128}", "num_macs: 512}")),
                                     check_files=False))
    for before, after in zip(plan.units, moved.units, strict=True):
        assert (before.key == after.key) == (before.build == "u85-256"), before.id
        if before.build == "u85-128":
            assert [name for name in before.key_parts
                    if before.key_parts[name] != after.key_parts[name]] == ["build"]


def test_a_linux_scenarios_keys_do_not_move_with_the_new_fields(write) -> None:
    """The bare-metal fields enter a unit's key only when set: a Linux scenario's build and run
    parts are digests of exactly what they were before (stored results stay current)."""
    linux = """\
name: l
builds: {before: {runner: r1, build: "make {output}"}, after: {runner: r2, build: "make {output}"}}
models: {m: {file: m, build: "make {output}"}}
"""
    loaded = load_scenario(write("l.yaml", linux), check_files=False)
    run = loaded.scenario.run
    unit = build_plan(loaded).units[0]
    assert unit.key_parts["build"] == _digest({"env": {}, "args": [], "id": None})
    assert unit.key_parts["run"] == _digest({"command": run.command, "warmup": 1, "iterations": 10,
                                             "order": "interleaved", "env": {}, "fetch": []})


def test_semihosting_names_keep_file_names_and_rename_clashes() -> None:
    assert semihosting_names("/a/m.pte", ["/b/x.bin", "/c/x.bin", "/d/out-0.bin"]) == {
        "m.pte": "/a/m.pte", "x.bin": "/b/x.bin", "i1-x.bin": "/c/x.bin",
        "i2-out-0.bin": "/d/out-0.bin"}


def test_a_semihosting_command_line_over_256_characters_is_refused_at_its_line(write) -> None:
    long_name = "x" * 200
    path = write("s.yaml", HEAD.replace("m256/resnet8.pte", f"m256/{long_name}.pte")
                 + "run:\n  cmd_line: \"{runner} -m {model} -o {output} {input_args} --name "
                   "{model_name}\"\n")
    found = problems(path)
    assert len(found) == 1, found
    assert re.match(rf"{re.escape(display_path(path))}:26:13: run\.cmd_line: build u85-256, model "
                    r"resnet8: the semihosting command line would be 2\d\d characters, over the "
                    r"platform's 256", found[0]), found


def test_the_default_command_line_is_checked_too_and_names_its_section(write) -> None:
    path = write("s.yaml", HEAD.replace("resnet8.input.bin", "i" * 250 + ".bin"))
    found = problems(path)
    assert (len(found) == 1 and
            ": run: build u85-128, model resnet8: the semihosting command line" in found[0])
    assert "(2 of 2 units are too long)" in found[0]


def test_a_name_with_a_space_cannot_be_passed_on_a_command_line(write) -> None:
    path = write("s.yaml", HEAD.replace("m256/resnet8.pte", "'m256/res net8.pte'"))
    assert any("a semihosting command line cannot carry" in problem for problem in problems(path))


def test_what_the_platform_kind_allows(write) -> None:
    linux = write("l.yaml", HEAD.replace("platform: corstone320-u85", "platform: corstone1000-a320")
                  + "fvp: {timelimit: 60}\nrun: {cmd_line: \"{runner}\"}\n")
    found = problems(linux)
    assert any(":7:5: builds.u85-128.fvp_params: applies to bare-metal platforms only" in p
               for p in found)
    assert any("fvp.timelimit: applies to bare-metal platforms only" in p for p in found)
    assert any("run.cmd_line: applies to bare-metal platforms only" in p for p in found)
    host = write("h.yaml", HEAD + "target: host\n")
    assert any(": target: platform corstone320-u85 is bare metal: its runner runs only inside the "
               "model" in p for p in problems(host))
    shell = write("c.yaml",
                  HEAD + "run:\n  command: \"{runner} --model_path={model}\"\n  env: {A: b}\n")
    found = problems(shell)
    assert any(":26:3: run.command: platform corstone320-u85 is bare metal" in p for p in found)
    assert any("run.env: platform corstone320-u85 is bare metal" in p and "no environment" in p
               for p in found)


def test_npu_sizes_the_npu_has_and_a_uart_the_harness_can_read(write) -> None:
    path = write("s.yaml", HEAD.replace("num_macs: 128}", "num_macs: 100}")
                 + "fvp:\n  params: {mps4_board.uart0.out_file: uart.log}\n")
    found = problems(path)
    assert any(":7:56: builds.u85-128.fvp_params.mps4_board.subsystem.ethosu.num_macs: 100 is not "
               "a configuration of the ethos-u85 of corstone320-u85 (MACs: 128, 256, 512, 1024, "
               "2048)" in p for p in found), found
    assert any("fvp.params.mps4_board.uart0.out_file: must stay '-'" in p for p in found)


def test_data_addresses_and_runs_without_semihosting(write) -> None:
    no_semihosting = write(
        "s.yaml",
        HEAD.replace(
            "    build: \"make {output}\"\n    fvp_params: {mps4_board."
            "subsystem.ethosu.num_macs: 256}",
            "    build: \"make {output}\"\n    data_address: true",
        )
        + "run: {cmd_line: false}\n",
    )
    found = problems(no_semihosting)
    assert (len(found) == 1 and
            "builds.u85-128.data_address: run.cmd_line is false (no semihosting)" in found[0])
    bad = write("b.yaml",
                HEAD.replace("    fvp_params: {mps4_board.subsystem.ethosu.num_macs: 256}",
                                       "    data_address: '70000000'"))
    assert any("builds.u85-256.data_address: got '70000000'; expected a hexadecimal address" in p
               for p in problems(bad))


def test_a_builds_own_model_file_must_name_a_model(write) -> None:
    path = write("s.yaml", HEAD.replace("      resnet8: {file: m128", "      resnet9: {file: m128"))
    found = problems(path)
    assert any("builds.u85-128.models.resnet9: no model named 'resnet9'; did you mean "
               "'resnet8'?" in p for p in found), found


@pytest.mark.parametrize("name", ["baremetal_macs.yaml", "baremetal_memory_mode.yaml"])
def test_the_shipped_bare_metal_scenarios(repo: Path, name: str) -> None:
    loaded = load_scenario(repo / "scenarios" / name)
    scenario = loaded.scenario
    assert loaded.profile.name == "corstone320-u85" and scenario.fvp.is_sim
    assert scenario.compare is not None and scenario.compare.expect_identical == ["outputs"]
    for build in scenario.builds:  # the semihosting command lines are well under the limit
        for model in scenario.models:
            line = semihosting_unit(scenario, build, model, f"r9-{build}-{model}").cmd_line
            assert line is not None and len(line) < 128, line
    if name == "baremetal_macs.yaml":
        assert scenario.compare.build_pairs == [("u85-128", "u85-256"), ("u85-128", "u85-512")]
        assert {b: s.fvp_params["mps4_board.subsystem.ethosu.num_macs"]
                for b, s in scenario.builds.items()} == {
            "u85-128": 128, "u85-256": 256, "u85-512": 512}
        for build, spec in scenario.builds.items():  # every model compiled for its build's NPU
            assert f"--target ethos-{build} " in (spec.build or "")
            for model in scenario.models:
                assert f"/ethos-{build}/" in scenario.model_file(build, model)
