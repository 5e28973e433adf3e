"""The two ways ``located`` composes YAML agree: libyaml (the fast path, when PyYAML has it) and the
pure-Python parser (the fallback, and the source of every error message). Same trees, values and
``file:line:col`` for every shipped YAML file and every YAML text in the tests; what libyaml reads
more leniently is left to the pure-Python path; the safety limits hold on both."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import yaml

from fvp_harness import located
from fvp_harness.errors import ScenarioError
from fvp_harness.located import MAX_DEPTH, MAX_VALUES, YamlProblem, compose_bytes
from fvp_harness.scenario import load_scenario
from tests.helpers import REPO

needs_libyaml = pytest.mark.skipif(not yaml.__with_libyaml__,
                                   reason="PyYAML is built without libyaml here")

SHIPPED_YAML = sorted(
    path
    for folder in ("scenarios", "examples", "fvp_harness/profiles")
    for pattern in ("*.yaml", "*.yml")
    for path in (REPO / folder).rglob(pattern)
)


def flat(node: located.LNode) -> list[tuple[Any, ...]]:
    """Every node as (path, kind, value, location, key location); repr keeps NaN comparable and 1
    apart from True."""
    return [
        (path, type(item.value).__name__,
         None if isinstance(item.value, dict | list) else repr(item.value), item.loc, item.key_loc)
        for path, item in node.walk()
    ]


def fast(text: str, path: Path) -> located.LNode:
    assert located._CSafeLoader is not None
    return located._compose_libyaml(text, located.display_path(path), path.parent,
                                    located._CSafeLoader)


def pure(text: str, path: Path) -> located.LNode:
    return located._compose_pure(text, located.display_path(path), path.parent)


YAML_TEST_FOLDERS = ("scenario", "profiles", "cli", "batch", "run")
"""The test folders that write scenarios and profiles (all of ``tests`` takes seconds to parse)."""


def yaml_texts_in_tests() -> list[str]:
    """String constants of the test modules that look like YAML documents (several lines with a
    ``key:``)."""
    texts: set[str] = set()
    modules = [*(REPO / "tests").glob("*.py")]
    modules += [module for folder in YAML_TEST_FOLDERS
                for module in (REPO / "tests" / folder).rglob("*.py")]
    for module in sorted(modules):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
                if text.count("\n") >= 1 and ":" in text and len(text) < 20_000:
                    texts.add(text)
    return sorted(texts)


@needs_libyaml
def test_every_shipped_yaml_file_composes_the_same_both_ways():
    assert len(SHIPPED_YAML) >= 10
    for path in SHIPPED_YAML:
        text = path.read_text(encoding="utf-8")
        # fast() raising would be a fallback
        assert flat(fast(text, path)) == flat(pure(text, path)), path


@needs_libyaml
def test_non_ascii_text_keeps_its_columns():
    text = ("name: é€😀\n😀é: {a: [x, 'ü', \"\\u00e9\"]}\nlist:\n  - ñ: 1\n    b: |\n      ☃\n  "
            "-\nkey:\n")
    path = Path("s.yaml")
    assert flat(fast(text, path)) == flat(pure(text, path))
    assert fast(text, path).get(("😀é", "a", 1)).loc.col == 13  # type: ignore[union-attr]  # code points, not bytes


@needs_libyaml
def test_every_yaml_text_of_the_tests_that_libyaml_reads_composes_the_same():
    texts = yaml_texts_in_tests()
    assert len(texts) > 200
    path = Path("t.yaml")
    read = 0
    for text in texts:
        if located.yaml.reader.Reader.NON_PRINTABLE.search(text):
            continue
        try:
            tree = fast(text, path)
        except located._FALLBACK:
            continue  # the pure-Python path reads it (and words its error), as compose_bytes does
        read += 1
        try:
            expected = pure(text, path)
        except YamlProblem as exc:
            pytest.fail(f"libyaml reads a text the pure-Python path refuses ({exc}): {text!r}")
        assert flat(tree) == flat(expected), text
    assert read > 100


@needs_libyaml
@pytest.mark.parametrize("text", [
    "a:\tb\n",  # libyaml takes a tab as separating white space
    "a: {b: c?d}\n",  # and ? inside a plain value in a flow collection
    "a: |# comment\n  x\n",  # and a comment right after a block scalar's indicator
    # an empty value in a flow collection: libyaml marks the closing bracket
    "a: {b: }\nc: [d: ]\n",
    "a: 1\nb:",  # an empty value at the end of a file without a final line break
    "---",  # an empty document
])
def test_what_libyaml_reads_differently_is_left_to_the_pure_python_path(text):
    with pytest.raises(located._PureOnly):
        fast(text, Path("s.yaml"))
    try:
        expected: Any = flat(pure(text, Path("s.yaml")))
    except YamlProblem as exc:
        expected = str(exc)
    try:
        got: Any = flat(compose_bytes(text.encode(), Path("s.yaml")))
    except YamlProblem as exc:
        got = str(exc)
    assert got == expected


@pytest.fixture(params=["libyaml", "pure"])
def path_taken(request, monkeypatch):
    """Run the test with the fast path (when PyYAML has libyaml) and with the pure-Python path
    forced."""
    if request.param == "libyaml" and not yaml.__with_libyaml__:
        pytest.skip("PyYAML is built without libyaml here")
    monkeypatch.setattr(located, "USE_LIBYAML", request.param == "libyaml")
    monkeypatch.setattr(located, "_COMPOSED", {})
    calls: list[str] = []
    real = located._compose_pure

    def counted(*args: Any) -> located.LNode:
        calls.append("pure")
        return real(*args)

    monkeypatch.setattr(located, "_compose_pure", counted)
    return request.param, calls


def test_a_good_scenario_loads_the_same_on_either_path(path_taken):
    name, calls = path_taken
    loaded = load_scenario(REPO / "scenarios" / "driver_reuse.yaml", check_files=False)
    assert loaded.scenario.name and loaded.profile.name == "corstone1000-a320"
    assert (calls == []) == (name == "libyaml")  # the fast path needs no fallback for a good file


@needs_libyaml
@pytest.mark.timeout(10)
def test_libyaml_never_composes_what_is_nested_too_deep():
    """Its composer recurses in C: the token pre-check (or libyaml's own limit of flow levels)
    refuses first; a C stack overflow would kill the process."""
    with pytest.raises(located._FALLBACK):
        fast("a: " + "[" * 100_000 + "\n", Path("s.yaml"))
    # b: then - b:
    indentless = "a:\n" + "".join(" " * level + "- b:\n" for level in range(0, 8 * MAX_DEPTH, 2))
    # an indentless list has no start token: twice as many levels as tokens
    with pytest.raises(located._PureOnly):
        fast(indentless, Path("s.yaml"))
    with pytest.raises(YamlProblem, match="nested too deeply"):
        compose_bytes(indentless.encode(), Path("s.yaml"))


@pytest.mark.timeout(20)
@pytest.mark.parametrize(("text", "message"), [
    ("a: " + "[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2) + "\n", "values nested too deeply"),
    ("a: &x [*x]\n", "recursive alias"),
    ("a: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 8)),
     f"more than {MAX_VALUES} values"),
    ("a: 1\na: 2\n", "duplicate key 'a'"),
    ("a: !!python/object/apply:os.system [echo]\n", "unsupported YAML"),
    ("a: [1, 2\n", "YAML syntax error"),
    ("a: b\x07\n", "control character U+0007"),
])
def test_safety_limits_and_errors_hold_on_either_path(path_taken, text, message):
    _, calls = path_taken
    with pytest.raises(YamlProblem) as info:
        compose_bytes(text.encode(), Path("s.yaml"))
    assert message in info.value.message
    # every error is worded by the pure-Python path, whichever path read first
    assert calls == ["pure"]


def test_a_file_over_the_size_limit_is_refused_unread_on_either_path(
    path_taken, tmp_path, monkeypatch
):
    monkeypatch.setattr(located, "MAX_FILE_BYTES", 64)
    path = tmp_path / "s.yaml"
    path.write_text("name: s\n" + "x: 1\n" * 20)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert "larger than" in info.value.problems[0]
