"""Loading scenarios: the happy paths, defaults, path resolution, templates, and the shipped
scenarios."""

from __future__ import annotations

import ast
import shlex
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from fvp_harness.scenario import load_scenario
from fvp_harness.scenario.model import (
    MetricSpec,
    Scenario,
    expand_build_command,
    render_template,
    template_fields,
)

MINIMAL = """
name: mini
builds:
  before: {runner: out/runner-before, build: "make before -o {output}"}
  after: {runner: out/runner-after, build: "make after -o {output}"}
models:
  m1:
    file: out/m1.model
    build: "{fvp_harness} sim model m1 -o {output}"
    inputs:
      - {file: out/m1.in, build: "gen -o {output}"}
"""


def test_minimal_scenario_loads_with_defaults(write):
    path = write("s/mini.yaml", MINIMAL)
    loaded = load_scenario(path)
    scenario = loaded.scenario
    assert loaded.path == path
    assert loaded.stem == "mini"
    assert loaded.files == (path,)
    assert loaded.profile.name == "corstone1000-a320"
    assert scenario.fvp.is_sim
    assert scenario.run.order == "interleaved"
    assert [spec.name for spec in scenario.metrics] == ["cpu_time", "npu_cycles"]
    assert scenario.metric("cpu_time").required
    assert scenario.compare is None


def test_executions_are_warmup_plus_iterations(write):
    path = write("s.yaml", MINIMAL + "run: {warmup: 3, iterations: 7}\n")
    scenario = load_scenario(path).scenario
    assert scenario.run.executions == 10


def test_relative_paths_become_absolute_next_to_the_file(write, tmp_path):
    loaded = load_scenario(write("s/mini.yaml", MINIMAL))
    assert loaded.scenario.builds["before"].runner == str(tmp_path / "s" / "out" / "runner-before")
    assert loaded.scenario.models["m1"].inputs[0].file == str(tmp_path / "s" / "out" / "m1.in")


def test_metrics_as_plain_strings_are_builtin_specs(write):
    path = write(
        "s.yaml",
        MINIMAL + "metrics: [cpu_time, {name: x, regex: 'x=(\\d+)', unit: ms, per: run}]\n"
    )
    metrics = load_scenario(path).scenario.metrics
    assert metrics[0] == MetricSpec(name="cpu_time")
    assert metrics[0].builtin and not metrics[1].builtin
    assert metrics[1].per == "run"


def test_existing_files_need_no_build_command(write):
    write("a/r", "runner")
    write("a/m", "model")
    path = write("a/s.yaml", "name: s\nbuilds: {b: {runner: r}}\nmodels: {m: {file: m}}\n")
    assert load_scenario(path).scenario.builds["b"].build is None


def test_check_files_off_skips_existence_checks(write):
    path = write("s.yaml",
                 "name: s\nbuilds: {b: {runner: nowhere}}\nmodels: {m: {file: nothing}}\n")
    assert load_scenario(path, check_files=False).scenario.models["m"].file.endswith("nothing")


def test_yaml_merge_keys_and_anchors_work(write):
    path = write(
        "s.yaml",
        """
        name: s
        builds:
          before: &common {runner: r, build: "make {output}", env: {A: "1"}}
          after: {<<: *common, runner: r2}
        models: {m: {file: m, build: "make {output}"}}
        """,
    )
    builds = load_scenario(path).scenario.builds
    assert builds["after"].env == {"A": "1"}
    assert builds["after"].runner.endswith("r2")


@pytest.mark.parametrize("name", ["driver_reuse.yaml", "driver_reuse_stock.yaml", "smoke.yaml"])
def test_shipped_scenarios_validate(repo, name):
    loaded = load_scenario(repo / "scenarios" / name)
    scenario = loaded.scenario
    assert scenario.fvp.binary == "sim"
    assert scenario.compare is not None
    expected = "cpu_time" if name == "smoke.yaml" else ["cpu_time", "iteration_time"]
    assert scenario.compare.primary == expected
    assert scenario.compare.expect_identical == ["outputs", "npu_cycles"]
    for build in scenario.builds.values():
        assert build.build and "{fvp_harness}" in build.build
        assert ".artifacts" in build.runner
        # the driver-reuse files must work with stock runners unchanged: no printed id, no required
        # CPU-time line
        assert (build.id is None) == (name != "smoke.yaml")
        assert ("--cpu-time-report" in build.build) == (name != "driver_reuse_stock.yaml")


def test_driver_reuse_matrix(repo):
    scenario = load_scenario(repo / "scenarios" / "driver_reuse.yaml").scenario
    assert list(scenario.builds) == ["before", "after"]
    assert list(scenario.models) == ["resnet8", "ds_cnn", "mobilenet_v1_025", "deep_autoencoder"]
    assert scenario.compare.min_effect == 5
    assert not scenario.metric("cpu_time").required and scenario.metric("iteration_time").required
    assert ("per-inference" in scenario.builds["before"].build and
            "reuse" in scenario.builds["after"].build)


def test_shipped_scenarios_carry_the_schema_modeline(repo):
    for path in (repo / "scenarios").glob("*.yaml"):
        first = path.read_text().splitlines()[0]
        assert first == "# yaml-language-server: $schema=../docs/scenario.schema.json", path


def test_template_fields_and_escapes():
    assert template_fields("{runner} --x={model} {{literal}}") == ["runner", "model"]
    with pytest.raises(ValueError, match="unbalanced"):
        template_fields("{runner")
    with pytest.raises(ValueError, match="format spec"):
        template_fields("{iterations:d}")


def test_render_template_quotes_values():
    text = render_template(
        "{runner} --model_path={model} {{x}}", {"runner": "/tmp/r", "model": "a b; rm -rf /"}
    )
    assert text == "/tmp/r --model_path='a b; rm -rf /' {x}"
    assert shlex.split(text)[1] == "--model_path=a b; rm -rf /"


def test_expand_build_command_uses_this_interpreter(tmp_path):
    command = expand_build_command("{fvp_harness} sim model ds_cnn -o {output}",
                                   tmp_path / "a b.model")
    argv = shlex.split(command)
    assert argv[:3] == [sys.executable, "-m", "fvp_harness"]
    assert argv[-1] == str(tmp_path / "a b.model")


def test_direct_construction_runs_cross_field_checks():
    with pytest.raises(ValidationError, match=r"compare\.baseline: no build named 'befor'"):
        Scenario(
            name="x",
            builds={"before": {"runner": "r"}, "after": {"runner": "r"}},
            models={"m": {"file": "m"}},
            compare={"baseline": "befor"},
        )


def test_loaded_scenario_is_immutable(write):
    scenario = load_scenario(write("s.yaml", MINIMAL)).scenario
    with pytest.raises(ValidationError):
        scenario.run.iterations = 3  # type: ignore[misc]


def test_platform_may_be_a_profile_path(write, repo):
    profile_text = (repo / "fvp_harness" / "profiles" / "corstone1000.yaml").read_text()
    write("p/custom.yaml", profile_text.replace("name: corstone1000", "name: custom"))
    path = write("s.yaml", MINIMAL + "platform: p/custom.yaml\n")
    loaded = load_scenario(path)
    assert loaded.profile.name == "custom"
    assert Path(loaded.scenario.platform).is_absolute()


def test_scenario_models_declare_their_fields_before_their_validators(repo):
    """A class reads top down: every field of a scenario model comes before its validators and
    properties."""
    late = []
    for path in sorted((repo / "fvp_harness" / "scenario").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                methods = [item.lineno for item in node.body if isinstance(item, ast.FunctionDef)]
                late += [f"{path.name}:{item.lineno}: {node.name}" for item in node.body
                         if isinstance(item, ast.AnnAssign) and methods
                         and item.lineno > methods[0]]
    assert late == []
