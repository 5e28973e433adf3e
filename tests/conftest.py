"""Shared fixtures, and the rule that keeps the fast lane fast. Keep this small: helpers shared by several folders
are in ``tests/helpers.py`` and ``tests/fakes.py``; folder-specific fixtures in that folder's conftest.

Markers (``pyproject.toml``): ``slow`` for tests that boot the simulator or run the CLI end to end, ``sim`` for
tests that start the simulator as a process. ``pytest -m "not slow"`` is the fast lane; a test that uses a
fixture booting the simulator must carry both markers (checked at collection).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import REPO

BOOTING_FIXTURES = frozenset({"sim", "booted"})
"""Fixtures that boot the simulator (``tests/sim``'s ``sim`` and ``booted``, ``tests/targets``'s ``booted``)."""

LONG_FIRST = (
    "tests/e2e/test_doc_commands.py::test_readme_everyday_use_block",
    "tests/e2e/test_doc_commands.py::test_ci_workflow_",
    "tests/e2e/test_ci_workflow_e2e.py::",
    "tests/e2e/test_fault_matrix.py::",
    "tests/qemu/",
    "tests/scenario/test_hostile_yaml.py::test_1000_seeded_mutants",
    "tests/e2e/test_doc_commands.py::",
    "tests/e2e/",
)
"""Node-id prefixes of the longest tests, longest first (each takes minutes, or many of them do). Why: with two
xdist workers a suite ends when its last long test does; started first (``--dist loadgroup`` in pyproject hands
out one test at a time, in this order), the long ones spread over both workers and the short ones fill the gaps,
so the two workers finish together instead of one running a long test alone at the end."""

BOOTED_ONCE = frozenset({"booted", "target", "two_runs"})
"""Module-scoped fixtures that boot a model or store runs once for a module's tests: a module using one runs on
one xdist worker (``xdist_group``), so the boot is not paid again by the other worker."""


def pytest_itemcollected(item: pytest.Item) -> None:
    """Group the tests of a module that boots once (before xdist names the groups in ``modifyitems``)."""
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    if any(definitions.get(name) and definitions[name][-1].scope == "module" for name in BOOTED_ONCE):
        item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))


def _start_rank(item: pytest.Item) -> tuple[int, int]:
    """Where ``item`` starts: the ``LONG_FIRST`` groups in order, then the simulator's tests, the other slow ones,
    and the fast lane last (file order inside each group, so module fixtures stay together)."""
    for index, prefix in enumerate(LONG_FIRST):
        if item.nodeid.startswith(prefix):
            return 0, index
    if item.get_closest_marker("sim"):
        return 1, 0
    return (2, 0) if item.get_closest_marker("slow") else (3, 0)


@pytest.hookimpl(trylast=True)  # after pytest's own reordering and the -m/-k deselection
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unmarked = [
        item.nodeid for item in items
        if BOOTING_FIXTURES & set(getattr(item, "fixturenames", ()))
        and not (item.get_closest_marker("slow") and item.get_closest_marker("sim"))
    ]
    if unmarked:
        raise pytest.UsageError("tests that boot the simulator must be marked slow and sim: " + ", ".join(unmarked))
    items[:] = sorted(items, key=_start_rank)


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    """``write("name.yaml", text)``: write dedented text under tmp_path (folders created) and return the
    path."""

    def _write(name: str, text: str = "") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    return _write


@pytest.fixture
def repo() -> Path:
    """The repository root (for the shipped scenarios and docs)."""
    return REPO
