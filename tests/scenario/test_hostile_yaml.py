"""Hostile YAML: every bad file is a ``file:line:col`` message and exit 2, never a traceback, a hang or MemoryError.

The fuzz cases flip bytes in (and cut short) every shipped scenario with fixed seeds, so a failure is reproducible
by its test id; each case runs under a short pytest-timeout."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fvp_harness.errors import EXIT_BAD_INPUT, ConfigurationError, ScenarioError
from fvp_harness.located import MAX_DEPTH, MAX_VALUES
from fvp_harness.scenario import load_scenario
from tests.helpers import REPO

SHIPPED = sorted((REPO / "scenarios").glob("*.yaml"))
CASES_PER_SCENARIO = 60
LOCATED = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): ")


def problems_of(path: Path) -> list[str]:
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.exit_code == EXIT_BAD_INPUT
    return info.value.problems


def only(path: Path) -> str:
    found = problems_of(path)
    assert len(found) == 1, found
    return found[0]


def billion_laughs(levels: int = 9) -> str:
    lines = ["name: s", 'a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.timeout(10)
def test_billion_laughs_is_refused_before_expanding(write):
    message = only(write("s.yaml", billion_laughs()))
    assert re.match(r".*s\.yaml:\d+:\d+: \(yaml\): this value expands to more than", message)
    assert str(MAX_VALUES) in message and "aliases" in message


@pytest.mark.timeout(10)
def test_merge_key_bomb_is_refused(write):
    text = "name: s\nm0: &m0 {a: 1, b: 2, c: 3, d: 4}\n" + "".join(
        f"m{i}: &m{i} {{<<: [" + ", ".join([f"*m{i - 1}"] * 8) + "]}\n" for i in range(1, 8))
    assert "expands to more than" in only(write("s.yaml", text))


@pytest.mark.timeout(10)
def test_recursive_alias_is_refused(write):
    message = only(write("s.yaml", "name: s\nvars:\n  x: &x [1, *x]\n"))
    assert ":3:6: (yaml): recursive alias" in message


@pytest.mark.timeout(10)
def test_deep_nesting_is_refused(write):
    shallow = only(write("a.yaml", "name: s\nvars: {x: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "}\n"))
    assert f"nested too deeply (at most {MAX_DEPTH} levels)" in shallow
    deep = only(write("b.yaml", "name: s\nvars: {x: " + "[" * 5000 + "]" * 5000 + "}\n"))  # PyYAML would recurse
    assert re.match(r".*b\.yaml:2:\d+: \(yaml\): values nested too deeply", deep)


def test_control_character_names_line_and_column(write):
    message = only(write("s.yaml", "name: s\ndescription: a\x07b\n"))
    assert ":2:15: (yaml): control character U+0007 is not allowed in YAML" in message


def test_non_utf8_bytes_name_line_and_column(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_bytes(b"name: s\ndescription: caf\xe9\n")
    assert ":2:17: (yaml): not UTF-8 text: byte 0xe9" in only(path)
    utf16 = tmp_path / "u.yaml"
    utf16.write_bytes("name: s\n".encode("utf-16"))
    assert ":1:1: (yaml): not UTF-8 text: byte 0xff" in only(utf16)


def test_oversized_file_is_refused_unread(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_bytes(b"name: s\n#" + b"x" * (5 * 1024 * 1024) + b"\n")
    assert ":1:1: (yaml): the file is larger than 4 MiB" in only(path)


def test_values_yaml_cannot_construct_are_located(write):
    message = only(write("s.yaml", "name: s\ndescription: 2001-02-30\n"))
    assert ":2:14: (yaml): cannot read '2001-02-30' as YAML timestamp" in message and "quotes" in message
    assert ":1:7: (yaml): cannot read 'x' as YAML int" in only(write("t.yaml", "name: !!int x\n"))


def test_nan_and_infinity_are_refused(write):
    path = write("s.yaml", "name: s\nbuilds: {b: {runner: r, build: x}}\nmodels: {m: {file: m, build: x}}\n"
                 "fvp: {timeout_scale: .inf}\nmetrics: [{name: q, regex: 'q(\\d)', scale: .nan}]\n")
    found = problems_of(path)
    assert any(":4:22: fvp.timeout_scale: got inf; expected a finite number" in item for item in found)
    assert any(":5:44: metrics[0].scale: got nan; expected a finite number" in item for item in found)


def test_nul_in_a_value_is_shown_escaped(write):
    path = write("s.yaml", 'name: s\nbuilds: {b: {runner: "a\\0b"}}\nmodels: {m: {file: m, build: x}}\n')
    message = only(path)
    assert "\x00" not in message and "a\\x00b" in message


def test_set_value_with_an_alias_bomb_stays_text(write):
    path = write("s.yaml", "name: s\nbuilds: {b: {runner: r, build: x}}\nmodels: {m: {file: m, build: x}}\n")
    bomb = "[" + ", ".join(["&a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"]) + ", " + ", ".join(["*a"] * 2000) + "]"
    loaded = load_scenario(path, [f"vars.x={bomb}"])  # more than MAX_VALUES values: kept as the text typed
    assert loaded.scenario.vars["x"] == bomb
    assert load_scenario(path, ["vars.d=2001-02-30"]).scenario.vars["d"] == "2001-02-30"


# --- fuzzing the shipped scenarios ------------------------------------------------------------------------------


def mutate(data: bytes, case: int, rng: random.Random) -> bytes:
    """Case 3 of every 4 cuts the file short; the others flip one to three bytes to random values."""
    if case % 4 == 3:
        return data[: rng.randrange(len(data))]
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def fuzzed_copy(folder: Path, name: str, case: int) -> Path:
    """The shipped scenarios copied into ``folder`` (bases stay intact for ``extends``), ``name`` mutated."""
    for source in SHIPPED:
        (folder / source.name).write_bytes(source.read_bytes())
    target = folder / name
    target.write_bytes(mutate(target.read_bytes(), case, random.Random(f"{name}:{case}")))
    return target


@pytest.mark.timeout(10)
@pytest.mark.parametrize("case", range(CASES_PER_SCENARIO))
@pytest.mark.parametrize("name", [path.name for path in SHIPPED])
def test_fuzzed_shipped_scenarios_fail_with_located_messages(tmp_path, name, case):
    path = fuzzed_copy(tmp_path, name, case)
    try:
        load_scenario(path)
    except ScenarioError as exc:
        assert exc.problems, "a ScenarioError without problems"
        for problem in exc.problems:
            where = LOCATED.match(problem)
            assert where is not None, f"not file:line:col: {problem}"
            assert Path(where["file"]).resolve().parent == tmp_path.resolve(), problem
    except ConfigurationError as exc:  # anything else the harness raises for bad input must still say where
        assert LOCATED.match(str(exc)), str(exc)


def test_fuzz_covers_every_shipped_scenario():
    assert len(SHIPPED) >= 4 and len(SHIPPED) * CASES_PER_SCENARIO >= 200


@pytest.mark.timeout(60)
def test_validate_cli_exits_2_without_traceback(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(billion_laughs(), encoding="utf-8")
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(b"name: s\ndescription: caf\xe9\n")
    bell = tmp_path / "bell.yaml"
    bell.write_text("name: s\ndescription: a\x07b\n", encoding="utf-8")
    (tmp_path / "fuzz").mkdir()
    fuzzed = fuzzed_copy(tmp_path / "fuzz", "smoke.yaml", 0)
    files = [bomb, latin1, bell]
    result = subprocess.run([sys.executable, "-m", "fvp_harness", "validate", *map(str, files), str(fuzzed)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == EXIT_BAD_INPUT, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    for path in files:
        assert re.search(rf"{re.escape(str(path))}:\d+:\d+: \(yaml\): ", result.stderr), (path, result.stderr)
