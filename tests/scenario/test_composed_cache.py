"""``compose_bytes`` remembers good documents (every scenario load composes the scenario and its
bases again): the same bytes under the same name are not parsed again, and every caller gets a tree
of its own to change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fvp_harness import located, profiles
from fvp_harness.located import YamlProblem, compose_bytes, compose_file
from fvp_harness.scenario import load_scenario
from tests.helpers import REPO


@pytest.fixture
def parsed(monkeypatch) -> list[str]:
    """What was parsed during the test (both ways count), with the caches emptied first."""
    monkeypatch.setattr(located, "_COMPOSED", {})
    monkeypatch.setattr(profiles, "_VALIDATED", {})
    calls: list[str] = []
    for name in ("_compose_libyaml", "_compose_pure"):
        real = getattr(located, name)

        def counted(*args: Any, _real: Any = real, _name: str = name) -> located.LNode:
            calls.append(_name)
            return _real(*args)

        monkeypatch.setattr(located, name, counted)
    return calls


def flat(node: located.LNode) -> list[tuple[Any, ...]]:
    return [(path, repr(item.value) if not isinstance(item.value, dict | list) else None, item.loc,
             item.key_loc)
            for path, item in node.walk()]


def test_the_same_bytes_are_parsed_once_and_each_caller_gets_its_own_tree(parsed, write):
    path = write("s.yaml", "name: s\nlist: [1, 2]\nmap: {a: b}\n")
    first = compose_file(path)
    expected = flat(first)
    first.value.pop("name")
    first.value["list"].value.append(first.value["map"])
    first.value["map"].value["a"] = located.LNode("changed", first.loc)
    first.value["map"].key_loc = None
    second = compose_file(path)
    assert flat(second) == expected
    assert len(parsed) == 1


def test_changed_bytes_are_parsed_again(parsed, write):
    path = write("s.yaml", "name: s\n")
    assert compose_file(path).value["name"].value == "s"
    path.write_text("name: t\n")
    assert compose_file(path).value["name"].value == "t"
    assert len(parsed) == 2


def test_the_same_bytes_elsewhere_are_named_for_where_they_are(parsed, tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for folder in ("a", "b"):
        (tmp_path / folder / "s.yaml").write_text("name: s\n")
    monkeypatch.chdir(tmp_path)
    assert compose_file(Path("a/s.yaml")).loc.file == "a/s.yaml"
    tree = compose_file(tmp_path / "b" / "s.yaml")
    assert tree.loc.file == "b/s.yaml" and tree.loc.base_dir == tmp_path / "b"
    monkeypatch.chdir(tmp_path / "b")
    # relative to the working folder, as shown
    assert compose_file(tmp_path / "b" / "s.yaml").loc.file == "s.yaml"
    assert len(parsed) == 3


def test_a_bad_document_is_refused_every_time(parsed):
    for _ in range(2):
        with pytest.raises(YamlProblem, match="duplicate key"):
            compose_bytes(b"a: 1\na: 2\n", Path("s.yaml"))
    assert parsed.count("_compose_pure") == 2


def test_at_most_so_many_trees_are_kept(parsed):
    for number in range(located._COMPOSED_KEPT + 10):
        compose_bytes(f"n: {number}\n".encode(), Path("s.yaml"))
    assert len(located._COMPOSED) == located._COMPOSED_KEPT
    compose_bytes(b"n: 0\n", Path("s.yaml"))  # the oldest went first
    assert len(parsed) == located._COMPOSED_KEPT + 11


def test_a_scenario_loaded_again_keeps_its_base_and_drops_the_last_overrides(parsed):
    path = REPO / "scenarios" / "driver_reuse_stock.yaml"
    first = load_scenario(path, ["run.iterations=7", "builds.before.runner=/x/r"],
                          check_files=False)
    second = load_scenario(path, check_files=False)
    # from the base
    assert first.scenario.run.iterations == 7 and second.scenario.run.iterations == 10
    assert (second.scenario.name == "driver_reuse_stock" and
            second.scenario.builds["before"].runner != "/x/r")
    assert second.files == first.files and len(second.files) == 2
    assert len(parsed) == 3  # the scenario, its base and the profile, each once


def test_a_large_file_is_not_kept(parsed):
    data = b"a: '" + b"x" * located._COMPOSED_LARGEST + b"'\n"
    for _ in range(2):
        assert (len(compose_bytes(data, Path("s.yaml")).value["a"].value)
                == located._COMPOSED_LARGEST)
    assert len(parsed) == 2 and not located._COMPOSED
