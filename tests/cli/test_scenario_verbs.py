"""The scenario verbs as a user types them: validate, plan, schema, profiles; exit codes and
output."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml

from fvp_harness.cli.main import main
from fvp_harness.errors import EXIT_BAD_INPUT, EXIT_OK
from fvp_harness.scenario.model import scenario_json_schema
from tests.helpers import scenario_validator

GOOD = """\
name: s
builds:
  before: {runner: r1, build: "make {output}"}
  after: {runner: r2, build: "make {output}"}
models:
  m: {file: m, build: "make {output}"}
"""


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_validate_ok(capsys, write):
    one, two = write("a.yaml", GOOD), write("b.yaml", GOOD)
    code, out, err = run(capsys, "validate", str(one), str(two))
    assert code == EXIT_OK
    assert out == f"ok {one}\nok {two}\n"
    assert err == ""


def test_validate_folder_and_quiet(capsys, write, tmp_path):
    write("sc/a.yaml", GOOD)
    write("sc/b.yml", GOOD)
    assert run(capsys, "validate", str(tmp_path / "sc"))[1].count("ok ") == 2
    assert run(capsys, "validate", "-q", str(tmp_path / "sc"))[1] == ""


def test_validate_misspelt_key_exits_2_with_file_line_and_key(capsys, write):
    good = write("good.yaml", GOOD)
    bad = write("bad.yaml", GOOD + "run:\n  iteratons: 5\n")
    code, out, err = run(capsys, "validate", str(good), str(bad))
    assert code == EXIT_BAD_INPUT
    assert out == f"ok {good}\n"
    assert f"{bad}:8:3: run.iteratons: unknown key 'iteratons'; did you mean 'iterations'?" in err
    assert "1 of 2 scenario files have problems" in err


def test_validate_set_and_fvp(capsys, write):
    path = write("s.yaml", GOOD)
    code, _, err = run(capsys, "validate", str(path), "--set", "run.iterations=zero")
    assert code == EXIT_BAD_INPUT
    assert "--set run.iterations=zero: run.iterations: got 'zero'" in err
    code, out, _ = run(capsys, "validate", str(path), "--fvp", "sim", "--set", "run.iterations=4",
                       "--print")
    assert code == EXIT_OK
    resolved = yaml.safe_load(out)
    assert resolved["run"]["iterations"] == 4 and resolved["fvp"]["binary"] == "sim"


def test_validate_shipped_scenarios(capsys, repo):
    code, out, _ = run(capsys, "validate", str(repo / "scenarios"))
    assert code == EXIT_OK
    assert "driver_reuse.yaml" in out and "smoke.yaml" in out


def test_verbosity_flags_work_after_the_verb(capsys, write):
    assert run(capsys, "validate", str(write("s.yaml", GOOD)), "-v")[0] == EXIT_OK


def test_plan_lists_matrix_order_and_keys(capsys, repo):
    code, out, _ = run(capsys, "plan", str(repo / "scenarios" / "driver_reuse.yaml"))
    assert code == EXIT_OK
    assert ("2 builds x 4 models x 10 repetitions = 80 units at most (run.until: adaptive); order "
            "interleaved; 1 session") in out
    unit_lines = [line for line in out.splitlines() if line[:1].isdigit()]
    assert len(unit_lines) == 80
    assert unit_lines[0].split()[:6] == ["1", "r0-before-resnet8", "s0", "before", "resnet8", "0"]
    assert unit_lines[1].split()[1] == "r0-after-resnet8"
    assert unit_lines[2].split()[1] == "r0-after-ds_cnn"
    assert len(unit_lines[0].split()[6].rstrip("*")) == 12


def test_plan_json(capsys, repo):
    code, out, _ = run(
        capsys, "plan", str(repo / "scenarios" / "smoke.yaml"), "--json", "--set",
        "run.repetitions=1"
    )
    data = json.loads(out)
    assert code == EXIT_OK
    assert [unit["id"] for unit in data["units"]] == ["r0-before-ds_cnn", "r0-after-ds_cnn"]
    assert len(data["units"][0]["key"]) == 64


def test_plan_of_bad_scenario_exits_2(capsys, write):
    code, _, err = run(capsys, "plan", str(write("s.yaml", "name: s\n")))
    assert code == EXIT_BAD_INPUT
    assert "configuration error" in err and "builds: required field is missing" in err


def test_schema_is_json_schema_and_matches_the_committed_file(capsys, repo):
    code, out, _ = run(capsys, "schema")
    assert code == EXIT_OK
    schema = json.loads(out)
    assert schema == scenario_json_schema()
    assert schema["$schema"].startswith("https://json-schema.org/")
    committed = json.loads((repo / "docs" / "scenario.schema.json").read_text())
    assert committed == schema, (
        "docs/scenario.schema.json is stale: run `fvp-harness schema > docs/scenario.schema.json`"
    )


def test_shipped_scenarios_satisfy_the_schema(repo):
    validator = scenario_validator()  # the schema is checked against the meta-schema there
    for path in (repo / "scenarios").glob("*.yaml"):
        validator.validate(yaml.safe_load(path.read_text()))


def test_a_file_using_extends_satisfies_the_schema_and_the_loader_checks_the_merge(capsys, write):
    """A layer leaves out what its base gives (name, builds, models, a build's runner): editors must
    not flag it. Without ``extends`` the same omissions are errors; and the loader still requires
    them after merging."""
    validator = scenario_validator()
    write("base.yaml", GOOD)
    layer_text = "extends: base.yaml\nbuilds:\n  after: {id: reuse-v2}\nrun: {repetitions: 2}\n"
    layer = write("layer.yaml", layer_text)
    validator.validate(yaml.safe_load(layer_text))
    code, out, _ = run(capsys, "validate", str(layer))
    assert code == EXIT_OK and out == f"ok {layer}\n"

    alone = yaml.safe_load(layer_text.replace("extends: base.yaml\n", ""))
    messages = {error.message for error in validator.iter_errors(alone)}
    assert ("'name' is a required property" in messages and
            "'models' is a required property" in messages)
    assert any("'runner' is a required property" in m for e in validator.iter_errors(alone) for m in
               [e.message, *(c.message for c in e.context or ())])  # fmt: skip
    # still strict where a layer cannot lean on its base: unknown keys, list items (lists replace)
    assert not validator.is_valid({"extends": "b.yaml", "bulids": {}})
    assert not validator.is_valid({"extends": "b.yaml",
                                   "models": {"m": {"inputs": [{"sha256": "x"}]}}})

    write("thin.yaml", "name: thin\n")
    empty = write("empty.yaml", "extends: thin.yaml\nrun: {repetitions: 2}\n")
    validator.validate({"extends": "thin.yaml", "run": {"repetitions": 2}})
    code, _, err = run(capsys, "validate", str(empty))
    assert code == EXIT_BAD_INPUT
    assert "builds: required field is missing" in err and "models: required field is missing" in err


def test_every_schema_field_is_documented(repo):
    text = (repo / "docs" / "scenarios.md").read_text()
    schema = scenario_json_schema()
    for name in schema["properties"]:
        assert f"`{name}`" in text, name
    for definition in schema["$defs"].values():
        for name in definition.get("properties", {}):
            assert f"`{name}`" in text, name


def test_profiles_list_and_show(capsys):
    code, out, _ = run(capsys, "profiles")
    assert code == EXIT_OK
    assert [line.split()[0] for line in out.splitlines()] == [
        "corstone1000",
        "corstone1000-a320",
        "corstone300-u55",
        "corstone320-u85",
        "qemu-aarch64-virt",
    ]
    code, out, _ = run(capsys, "profiles", "show", "corstone1000-a320")
    assert code == EXIT_OK
    shown = yaml.safe_load(out)
    assert shown["name"] == "corstone1000-a320" and shown["terminal_mode"] == "raw"
    assert shown["firmware"]["flash"]["address"] == "0x68000000"


def test_profiles_show_unknown_exits_2(capsys):
    code, _, err = run(capsys, "profiles", "show", "corstone")
    assert code == EXIT_BAD_INPUT
    assert "unknown platform profile 'corstone'" in err


def test_python_dash_m_entry_point(repo):
    result = subprocess.run(
        [sys.executable, "-m", "fvp_harness", "validate", str(repo / "scenarios" / "smoke.yaml")],
        capture_output=True,
        text=True,
        check=False,
        cwd=repo,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok ")


def test_plan_marks_what_a_run_rebuilds_and_the_units_whose_keys_it_may_change(tmp_path):
    """A built artifact whose build is stale (here: its build command was edited) keeps its old
    bytes until a run rebuilds it, so plan's key for its units is the key of the file as it is now:
    plan says it will be rebuilt and why, marks those units (text and --json), and leaves the rest
    unmarked, as make -n would explain it."""
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nbuilds:\n  before: {runner: out/r1, build: \"printf one > "
                    "{output}\"}\n  after: {runner: out/r2, build: \"printf two > {output}\"}\n"
                    "models:\n  m: {file: m.model}\nrun: {repetitions: 1}\n")
    (tmp_path / "m.model").write_text("m")
    from fvp_harness.run.artifacts import build_artifacts
    from fvp_harness.scenario.load import load_scenario

    build_artifacts(load_scenario(path))

    def plan(*extra: str) -> str:
        done = subprocess.run([sys.executable, "-m", "fvp_harness", "plan", str(path), *extra],
                              capture_output=True, text=True, timeout=60, check=True)
        return done.stdout

    fresh = plan()
    assert "rebuilt before a run" not in fresh and "~" not in fresh
    edited = ["--set", "builds.after.build=printf three > {output}"]
    out = plan(*edited)
    runner_line = next(line for line in out.splitlines() if line.startswith("builds.after.runner"))
    assert runner_line.endswith("; rebuilt before a run (build command changed)")
    units = {line.split()[1]: line.split()[6] for line in out.splitlines() if line[:1].isdigit()}
    assert units["r0-after-m"].endswith("~") and not units["r0-before-m"].endswith("~")
    assert "~ key of the files as they are now" in out
    data = json.loads(plan("--json", *edited))
    assert data["rebuilt"] == {"builds.after.runner": "build command changed"}
    assert {unit["id"]: unit["rebuilt"] for unit in data["units"]} == {
        "r0-before-m": [], "r0-after-m": ["builds.after.runner"]}
