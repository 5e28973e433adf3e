"""Variables, --set overrides, --fvp, and extends layering."""

from __future__ import annotations

from pathlib import Path

import pytest

from fvp_harness.errors import ScenarioError
from fvp_harness.scenario import load_scenario

BODY = """\
builds:
  before: {runner: r1, build: "make {output}"}
  after: {runner: r2, build: "make {output}"}
models:
  m: {file: m, build: "make {output}"}
"""


def test_env_variables_with_and_without_default(write):
    path = write(
        "s.yaml",
        "name: ${env:NAME}-${env:MISSING:-fallback}\ndescription: '${env:EMPTY:-}'\n" + BODY
    )
    scenario = load_scenario(path, env={"NAME": "bench"}).scenario
    assert scenario.name == "bench-fallback"
    assert scenario.description == ""


def test_env_variable_set_but_empty_is_kept(write):
    path = write("s.yaml", "name: s\ndescription: 'x${env:EMPTY:-default}x'\n" + BODY)
    assert load_scenario(path, env={"EMPTY": ""}).scenario.description == "xx"


def test_scenario_dir_and_file_dir(write, tmp_path):
    write("base/common.yaml", "description: ${file_dir}|${scenario_dir}\n")
    path = write("leaf/s.yaml", "extends: ../base/common.yaml\nname: s\n" + BODY)
    description = load_scenario(path).scenario.description
    assert description == f"{tmp_path / 'base'}|{tmp_path / 'leaf'}"


def test_vars_substitute_and_keep_their_type(write):
    path = write(
        "s.yaml",
        """
        name: s
        vars:
          iters: 25
          dir: out
          nested: {a: 1}
          both: ${vars.dir}/x
          ident: [outputs]
        run:
          iterations: ${vars.iters}
          command: "{runner} --n=${vars.iters} --x=${vars.nested.a}"
        compare:
          expect_identical: ${vars.ident}
        builds:
          before: {runner: '${vars.both}/r1', build: "make {output}"}
          after: {runner: r2, build: "make {output}"}
        models:
          m: {file: m, build: "make {output}"}
        """,
    )
    scenario = load_scenario(path).scenario
    assert scenario.run.iterations == 25
    assert scenario.run.command == "{runner} --n=25 --x=1"
    assert scenario.compare.expect_identical == ["outputs"]
    assert scenario.builds["before"].runner.endswith("out/x/r1")
    assert scenario.vars["both"] == "out/x"


def test_dollar_escape(write):
    path = write("s.yaml", "name: s\ndescription: 'cost $${HOME} and $$'\n" + BODY)
    assert load_scenario(path).scenario.description == "cost ${HOME} and $$"


def test_unclosed_reference(write):
    with pytest.raises(ScenarioError, match=r"description: unclosed \$\{"):
        load_scenario(write("s.yaml", "name: s\ndescription: 'a ${env:X'\n" + BODY))


def test_set_overrides_scalars_lists_and_vars(write):
    path = write("s.yaml", "name: s\nvars: {seed: 1}\ndescription: seed ${vars.seed}\n" + BODY)
    scenario = load_scenario(
        path,
        [
            "run.iterations=50",
            "run.order=blocked",
            "vars.seed=7",
            "compare.expect_identical=[outputs]",
            "report.title=A title: with colon",
            "fvp.timeouts.boot=1.5",
        ],
    ).scenario
    assert scenario.run.iterations == 50
    assert scenario.run.order == "blocked"
    assert scenario.description == "seed 7"
    assert scenario.compare.expect_identical == ["outputs"]
    assert scenario.fvp.timeouts.boot == 1.5


def test_set_quoted_value(write):
    path = write("s.yaml", "name: s\n" + BODY)
    assert load_scenario(path, ["report.title='A: b'"]).scenario.report.title == "A: b"


def test_set_parameter_names_with_dots(write):
    path = write("s.yaml", "name: s\n" + BODY)
    scenario = load_scenario(
        path, ["fvp.params.host.ethosu.num_macs=512", "builds.before.env.A.B=1"]
    ).scenario
    assert scenario.fvp.params == {"host.ethosu.num_macs": 512}
    assert scenario.builds["before"].env == {"A.B": "1"}


def test_env_values_may_be_yaml_numbers(write):
    path = write("s.yaml", "name: s\nrun: {env: {THREADS: 1, DEBUG: true}}\n" + BODY)
    assert load_scenario(path).scenario.run.env == {"THREADS": "1", "DEBUG": "true"}


def test_set_list_item_by_index(write):
    path = write("s.yaml", "name: s\nmetrics: [cpu_time, npu_cycles]\n" + BODY)
    scenario = load_scenario(path, ["metrics.1.required=true"]).scenario
    assert scenario.metrics[1].required


def test_set_unknown_path_names_set(write):
    path = write("s.yaml", "name: s\n" + BODY)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path,
                      ["run.iteratons=5", "nonsense", "fvp.timeouts.bot=1", "metrics.9.name=x"])
    problems = info.value.problems
    assert problems[0] == (
        "--set run.iteratons=5: run.iteratons: unknown field 'iteratons'; did you mean "
        "'iterations'? (expected one of: command, warmup, iterations, repetitions, order, until, "
        "timeout, max_output, env, secret_env, secret_patterns, fetch, cmd_line, retries)"
    )
    assert problems[1].startswith("--set nonsense: --set: expected PATH=VALUE")
    assert problems[2].startswith(
        "--set fvp.timeouts.bot=1: fvp.timeouts.bot: unknown field 'bot'; did you mean 'boot'?"
    )
    assert problems[3].startswith("--set metrics.9.name=x: metrics[9]: index out of range")


def test_set_wrong_type_names_set(write):
    path = write("s.yaml", "name: s\n" + BODY)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, ["run.iterations=many"])
    assert info.value.problems == [
        "--set run.iterations=many: run.iterations: got 'many'; expected a valid integer, unable "
        "to parse string as an integer"
    ]


def test_set_relative_path_is_relative_to_the_working_folder(write, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write("sub/s.yaml", "name: s\n" + BODY)
    scenario = load_scenario(path, ["builds.before.runner=local/r"]).scenario
    assert scenario.builds["before"].runner == str(tmp_path / "local" / "r")
    assert scenario.builds["after"].runner == str(tmp_path / "sub" / "r2")


def test_fvp_option_overrides_binary(write, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write("s.yaml", "name: s\nfvp: {binary: /opt/FVP/FVP_Corstone-1000-A320}\n" + BODY)
    assert load_scenario(path, fvp_binary="sim").scenario.fvp.is_sim
    assert load_scenario(path, fvp_binary="./FVP", check_files=False).scenario.fvp.binary == str(
        tmp_path / "FVP"
    )


def test_extends_deep_merges_and_lists_replace(write):
    write(
        "base.yaml",
        "name: base\ndescription: from base\nfvp: {params: {a: 1, b: 2}, args: [--stat, --x]}\n"
        "run: {iterations: 5, warmup: 2}\nmetrics: [cpu_time, npu_cycles]\n" + BODY,
    )
    path = write(
        "s.yaml",
        """
        extends: base.yaml
        name: leaf
        fvp: {params: {b: 3}, args: [--y]}
        run: {iterations: 7}
        metrics: [cpu_time]
        builds:
          third: {runner: r3, build: "make {output}"}
        """,
    )
    loaded = load_scenario(path)
    scenario = loaded.scenario
    assert scenario.name == "leaf" and scenario.description == "from base"
    assert scenario.fvp.params == {"a": 1, "b": 3}
    assert scenario.fvp.args == ["--y"]
    assert (scenario.run.iterations, scenario.run.warmup) == (7, 2)
    assert [spec.name for spec in scenario.metrics] == ["cpu_time"]
    assert list(scenario.builds) == ["before", "after", "third"]
    assert [file.name for file in loaded.files] == ["s.yaml", "base.yaml"]


def test_extends_list_later_wins_and_paths_stay_next_to_their_file(write, tmp_path):
    write(
        "bases/one.yaml",
        "description: one\nrun: {iterations: 3}\nbuilds: {before: {runner: r1, build: x}}\n"
    )
    write("bases/two.yaml", "description: two\n")
    path = write(
        "s.yaml",
        "extends: [bases/one.yaml, bases/two.yaml]\nname: s\nmodels: {m: {file: m, build: x}}\n",
    )
    scenario = load_scenario(path).scenario
    assert scenario.description == "two" and scenario.run.iterations == 3
    assert scenario.builds["before"].runner == str(tmp_path / "bases" / "r1")
    assert scenario.models["m"].file == str(tmp_path / "m")


def test_set_beats_extends(write):
    write("base.yaml", "run: {iterations: 5}\n")
    path = write("s.yaml", "extends: base.yaml\nname: s\nrun: {iterations: 6}\n" + BODY)
    assert load_scenario(path, ["run.iterations=8"]).scenario.run.iterations == 8


def test_loaded_scenario_records_overrides(write):
    path = write("s.yaml", "name: s\n" + BODY)
    loaded = load_scenario(path, ["run.iterations=2"])
    assert loaded.overrides == ("run.iterations=2",)
    assert loaded.directory == Path(path).parent
