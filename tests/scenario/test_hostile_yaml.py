"""Hostile YAML: every bad file is a ``file:line:col`` message and exit 2, never a traceback, a hang
or MemoryError.

The fuzz cases flip bytes in (and cut short) every shipped scenario with fixed seeds, so a failure
is reproducible by its test id; each case runs under a short pytest-timeout."""

from __future__ import annotations

import functools
import json
import os
import random
import re
import shutil
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
    shallow = only(write("a.yaml",
                         "name: s\nvars: {x: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)
                         + "}\n"))
    assert f"nested too deeply (at most {MAX_DEPTH} levels)" in shallow
    # PyYAML would recurse
    deep = only(write("b.yaml", "name: s\nvars: {x: " + "[" * 5000 + "]" * 5000 + "}\n"))
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
    assert (":2:14: (yaml): cannot read '2001-02-30' as YAML timestamp" in message and
            "quotes" in message)
    assert ":1:7: (yaml): cannot read 'x' as YAML int" in only(write("t.yaml", "name: !!int x\n"))


def test_nan_and_infinity_are_refused(write):
    path = write("s.yaml",
                 "name: s\nbuilds: {b: {runner: r, build: x}}\nmodels: {m: {file: m, build: x}}\n"
                 "fvp: {timeout_scale: .inf}\nmetrics: [{name: q, regex: 'q(\\d)', scale: .nan}]\n")
    found = problems_of(path)
    assert any(":4:22: fvp.timeout_scale: got inf; expected a finite number" in item
               for item in found)
    assert any(":5:44: metrics[0].scale: got nan; expected a finite number" in item
               for item in found)


def test_nul_in_a_value_is_shown_escaped(write):
    path = write("s.yaml",
                 'name: s\nbuilds: {b: {runner: "a\\0b"}}\nmodels: {m: {file: m, build: x}}\n')
    message = only(path)
    assert "\x00" not in message and "a\\x00b" in message


def test_set_value_with_an_alias_bomb_stays_text(write):
    path = write("s.yaml",
                 "name: s\nbuilds: {b: {runner: r, build: x}}\nmodels: {m: {file: m, build: x}}\n")
    bomb = (
        "["
        + ", ".join(["&a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"])
        + ", "
        + ", ".join(["*a"] * 2000)
        + "]"
    )
    # more than MAX_VALUES values: kept as the text typed
    loaded = load_scenario(path, [f"vars.x={bomb}"])
    assert loaded.scenario.vars["x"] == bomb
    assert load_scenario(path, ["vars.d=2001-02-30"]).scenario.vars["d"] == "2001-02-30"


# --- fuzzing the shipped scenarios ----------------------------------------------------------------


def mutate(data: bytes, case: int, rng: random.Random) -> bytes:
    """Case 3 of every 4 cuts the file short; the others flip one to three bytes to random
    values."""
    if case % 4 == 3:
        return data[: rng.randrange(len(data))]
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def fuzzed_copy(folder: Path, name: str, case: int, originals: Path | None = None) -> Path:
    """The shipped scenarios copied into ``folder`` (bases stay intact for ``extends``), ``name``
    mutated.

    ``originals``: a folder holding the shipped files already, hard-linked instead of written again
    (the 420 cases write 3000 files less; the mutated file is always a file of its own)."""
    for source in SHIPPED:
        if originals is None:
            (folder / source.name).write_bytes(source.read_bytes())
        elif source.name != name:
            os.link(originals / source.name, folder / source.name)
    target = folder / name
    target.write_bytes(mutate((REPO / "scenarios" / name).read_bytes(), case,
                              random.Random(f"{name}:{case}")))
    return target


@pytest.fixture(scope="module")
def originals(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped scenarios written once for the fuzz cases to link to (never written to: each
    case's mutant is a new file)."""
    folder = tmp_path_factory.mktemp("shipped")
    for source in SHIPPED:
        (folder / source.name).write_bytes(source.read_bytes())
    return folder


@pytest.mark.timeout(10)
@pytest.mark.parametrize("case", range(CASES_PER_SCENARIO))
@pytest.mark.parametrize("name", [path.name for path in SHIPPED])
def test_fuzzed_shipped_scenarios_fail_with_located_messages(tmp_path, originals, name, case):
    path = fuzzed_copy(tmp_path, name, case, originals)
    try:
        load_scenario(path)
    except ScenarioError as exc:
        assert exc.problems, "a ScenarioError without problems"
        for problem in exc.problems:
            where = LOCATED.match(problem)
            assert where is not None, f"not file:line:col: {problem}"
            assert Path(where["file"]).resolve().parent == tmp_path.resolve(), problem
    # anything else the harness raises for bad input must still say where
    except ConfigurationError as exc:
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
    result = subprocess.run([sys.executable, "-m", "fvp_harness", "validate", *map(str, files),
                             str(fuzzed)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == EXIT_BAD_INPUT, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    for path in files:
        assert re.search(rf"{re.escape(str(path))}:\d+:\d+: \(yaml\): ", result.stderr), (
            path,
            result.stderr,
        )


# --- hostile values (issue 23, item 6): each cause the 1000-mutant pass found, as an explicit
# case -----------------


LONG_NAME = "x" * 300  # over NAME_MAX: Path.exists/resolve raised ENAMETOOLONG
SMOKE = REPO / "scenarios" / "smoke.yaml"


def _located(message: str, field: str) -> None:
    assert LOCATED.match(message) or message.startswith("--set "), message
    assert f" {field}: " in message, message


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("override", "field", "wanted"), [
    (f"platform={LONG_NAME}.yaml", "platform",
     "a name in the path is 305 bytes long; a file system takes at most 255"),
    (f"models.ds_cnn.file={LONG_NAME}", "models.ds_cnn.file",
     "a name in the path is 300 bytes long"),
    (f"builds.before.runner={'/a' * 2100}", "builds.before.runner",
     "a file system takes at most 4095"),
    ("builds.before.runner=/proc/self/mem", "builds.before.runner",
     "/proc/self/mem cannot be read: Input/output"),
    ("models.ds_cnn.file=/dev/zero", "models.ds_cnn.file",
     "/dev/zero is a device; expected a regular file"),
    ("run.repetitions=1000000000", "run.repetitions", "expected less than or equal to 10000"),
    ("run.repetitions=1.0e+9", "run.repetitions", "expected less than or equal to 10000"),
    ("run.iterations=100000000", "run.iterations", "expected less than or equal to 10000000"),
    ("run.warmup=100000000", "run.warmup", "expected less than or equal to 1000000"),
    ("fvp.instances=100000", "fvp.instances", "expected less than or equal to 256"),
    ("run.retries=1000", "run.retries", "expected less than or equal to 100"),
    ("fvp.timeouts.unit=1e12", "fvp.timeouts.unit", "expected less than or equal to 2592000"),
    ("run.until={ci_width: 2, max_repetitions: 1000000}", "run.until.max_repetitions",
     "less than or equal to 10000"),
    ("models.ds_cnn.inputs=[{file: 'in,put.bin', build: x}]", "models.ds_cnn.inputs[0].file",
     "holds a comma"),
])
def test_hostile_values_are_located_validation_errors(tmp_path, override, field, wanted):
    overrides = [override] + (["run.until=null"] if override.startswith("run.repetitions") else [])
    with pytest.raises(ScenarioError) as info:
        load_scenario(SMOKE, overrides)
    messages = [problem for problem in info.value.problems if f" {field}: " in problem]
    assert messages, info.value.problems
    _located(messages[0], field)
    assert wanted in messages[0]


def test_too_many_units_for_one_plan_is_refused():
    with pytest.raises(ScenarioError) as info:  # 2 builds x 1 model x 6000 = 12000 units
        load_scenario(SMOKE, ["run.repetitions=6000"])
    assert any("is 12000 units; at most 10000 fit in one plan" in item
               for item in info.value.problems)


@pytest.mark.timeout(30)
def test_pipes_folders_and_a_null_build_are_refused_like_run_refuses_them(tmp_path):
    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a named pipe"), (tmp_path, "a folder")):
        with pytest.raises(ScenarioError) as info:
            load_scenario(SMOKE, [f"models.ds_cnn.file={path}"])
        found = info.value.problems
        assert any(" models.ds_cnn.file: " in item and f"is {kind}; expected a regular file" in item
                   for item in found), found
    missing = tmp_path / "nowhere" / "m.model"  # no file, and --set takes the build command away
    with pytest.raises(ScenarioError) as info:
        load_scenario(SMOKE, [f"models.ds_cnn.file={missing}", "models.ds_cnn.build=null"])
    assert any("there is no `build` command to produce it" in item for item in info.value.problems)


def test_a_long_extends_path_is_located(write):
    path = write("s.yaml", f"extends: {LONG_NAME}.yaml\nname: s\n")
    message = only(path)
    assert ":1:10: extends: cannot be a base file: a name in the path is 305 bytes long" in message


def test_input_names_with_a_comma_work_with_input_args(tmp_path):
    loaded = load_scenario(SMOKE, ["models.ds_cnn.inputs=[{file: 'in,put.bin', build: x}]",
                                   "run.command={runner} --model_path={model} {input_args} "
                                   "--output_file={output}"])
    assert loaded.scenario.models["ds_cnn"].inputs[0].file.endswith("in,put.bin")


# --- 1000 seeded mutants through validate and plan (the slow lane) --------------------------------

MUTANTS = 1000
MUTANT_SECONDS = 10
"""Per mutant: a hang (``plan`` enumerating 1e9 repetitions) fails the test at its seed instead of
stalling CI."""


def _hostile_values(folder: Path) -> list[object]:
    fifo = folder / "fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    return [
        LONG_NAME, "/" + "/".join([LONG_NAME] * 3), "y/" * 2100, "/proc/self/mem", "/dev/zero",
        str(fifo),
        str(folder), "/", "", " ", None, 0, -1, 1e9, 10**9, 10**30, 2**63, 1.5, True, [], {},
        [[[]]], {"a": {"b": None}},
        "a,b.bin", "${env:FVP_HARNESS_NO_SUCH_VAR}", "${vars.nope}", "${", "{nope}", "{inputs}",
        "{{", "~", "~nobody/x",
        "../" * 50, "\u202e", "x" * 20_000, "NaN", ".inf", "0x10", "1e9", "-0", "null", "*", "[a",
        "{a: 1}", "sim", "host", "fvp", "corstone300-u55", "interleaved", "cpu_time",
    ]


def _leaves(data: object, path: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    found: list[tuple[object, ...]] = [path]
    if isinstance(data, dict):
        for key, value in data.items():
            found += _leaves(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found += _leaves(value, (*path, index))
    return found


def _put(data: object, path: tuple[object, ...], value: object) -> object:
    if not path:
        return value
    parent = data
    for step in path[:-1]:
        parent = parent[step]  # type: ignore[index]
    parent[path[-1]] = value  # type: ignore[index]
    return data


@functools.cache
def _shipped(source: Path) -> tuple[bytes, str]:
    """A shipped scenario's bytes and its data as JSON (a cheap deep copy per mutant)."""
    import yaml

    text = source.read_bytes()
    return text, json.dumps(yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))


def make_mutant(case: int, folder: Path) -> tuple[Path, list[str]]:
    """Mutant ``case`` (reproducible by number): one of the shipped scenarios with a value replaced
    by a hostile one, a key added, a ``--set`` override, or bytes flipped / the file cut
    (``mutate``)."""
    import yaml

    rng = random.Random(f"mutant:{case}")
    source = SHIPPED[case % len(SHIPPED)]
    target = folder / f"mutant-{source.name}"
    text, as_json = _shipped(source)
    kind = rng.randrange(10)
    if kind < 2:
        target.write_bytes(mutate(text, case, rng))
        return target, []
    data = json.loads(as_json)
    values = _hostile_values(folder)
    value = rng.choice(values)
    paths = _leaves(data)[1:]
    path = rng.choice(paths)
    if kind < 6:
        data = _put(data, path, value)
    elif kind < 8:
        parent = path[:-1]
        holder = data
        for step in parent:
            holder = holder[step]
        key = rng.choice(["extends", "platform", "file", "runner", "build", "repetitions",
                          "iterations", "warmup",
                          "instances", "inputs", "sources", "env", "secret_env", "timeout", "until",
                          "fetch"])
        if isinstance(holder, dict):
            holder[key] = value
        else:
            data = _put(data, path, value)
    else:
        dotted = ".".join(str(step) for step in path if isinstance(step, str))
        shown = yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()
        target.write_bytes(text)
        return target, [f"{dotted}={shown}"]
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    target.write_text(yaml.dump(data, Dumper=dumper, allow_unicode=True), encoding="utf-8")
    return target, []


class _TooSlow(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _TooSlow


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_1000_seeded_mutants_through_validate_and_plan(tmp_path):
    """Every mutant either loads and plans or fails with a HarnessError; any other exception, or a
    mutant taking longer than MUTANT_SECONDS (SIGALRM), fails the test naming its case number
    (``make_mutant(case, folder)`` rebuilds it)."""
    import signal

    from fvp_harness.errors import HarnessError
    from fvp_harness.run.plan import build_plan

    for source in SHIPPED:
        (tmp_path / source.name).write_bytes(source.read_bytes())
    for extra in (REPO / "scenarios").iterdir():
        if extra.is_dir():  # bases and data some scenarios name
            shutil.copytree(extra, tmp_path / extra.name)
    failures: list[str] = []
    previous = signal.signal(signal.SIGALRM, _alarm)
    counts = {"planned": 0, "refused": 0}
    try:
        for case in range(MUTANTS):
            path, overrides = make_mutant(case, tmp_path)
            signal.setitimer(signal.ITIMER_REAL, MUTANT_SECONDS)
            try:
                build_plan(load_scenario(path, overrides))
                counts["planned"] += 1
            except HarnessError:
                counts["refused"] += 1
            except _TooSlow:
                failures.append(f"case {case} ({path.name} {overrides}): no answer within "
                                f"{MUTANT_SECONDS} s")
            except Exception as exc:
                failures.append(f"case {case} ({path.name} {overrides}): {type(exc).__name__}: "
                                f"{exc}"[:400])
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert not failures, "\n".join(failures)
    assert counts["refused"] > MUTANTS // 4 and counts["planned"] > 0, counts


# --- long values are never echoed whole (issue 36, "Also") ----------------------------------------


HUGE = "x" * 1_000_000


@pytest.mark.parametrize(("old", "new", "field"), [
    ("platform: corstone1000-a320", f"platform: {HUGE}", "platform"),
    ("  - npu_cycles", f"  - {HUGE}", "metrics[1].name"),
    ("baseline: before", f"baseline: {HUGE}", "compare.baseline"),
    ("iterations: 3", f"iterations: {HUGE}", "run.iterations"),
], ids=["profile", "metric", "validator", "type"])
def test_a_1_mb_value_is_echoed_as_80_characters_and_its_length(
    tmp_path: Path, old: str, new: str, field: str
) -> None:
    """The validator's own words quoted the value, some twice: 2 MB of messages for a 1 MB value."""
    path = tmp_path / "smoke.yaml"
    path.write_text(SMOKE.read_text().replace(old, new, 1))
    found = problems_of(path)
    text = "\n".join(found)
    assert len(text) < 2000, f"{len(text)} characters of messages"
    mine = next(line for line in found if f" {field}: " in line)
    _located(mine, field)
    assert f"'{'x' * 80}…' (1,000,000 characters)" in mine, mine[:300]


def test_a_record_of_wrong_types_is_file_line_field_message(tmp_path: Path, capsys) -> None:
    """pydantic's raw text ("3 validation errors for Record", indented lines, web links) was printed
    as it came. ``report`` in process (``main``): the same words as its process, without a second
    start of the CLI."""
    from fvp_harness.cli.main import main
    from tests.report.stored_runs import write_run

    store = write_run(tmp_path / "demo", {("before", "m1"): 2.0, ("after", "m1"): 1.0}, run_id="r1",
                      reps=1)
    lines = store.records_path.read_text().splitlines()
    bad = {**json.loads(lines[1]), "repetition": "two", "samples": {"cpu_time": "fast"},
           "status": "y" * 500}
    store.records_path.write_text("\n".join([lines[0], json.dumps(bad), *lines[2:]]) + "\n")
    assert main(["report", str(store.root)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    where = f"{store.records_path}:2"
    assert f"{where}: repetition: got 'two'; expected a valid integer" in err, err
    assert f"{where}: samples.cpu_time: got 'fast'; expected a valid list" in err
    assert f"{where}: status: got '{'y' * 80}…' (500 characters); expected 'ok' or 'failed'" in err
    assert "pydantic" not in err and "validation error" not in err and "https://" not in err
