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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unmarked = [
        item.nodeid for item in items
        if BOOTING_FIXTURES & set(getattr(item, "fixturenames", ()))
        and not (item.get_closest_marker("slow") and item.get_closest_marker("sim"))
    ]
    if unmarked:
        raise pytest.UsageError("tests that boot the simulator must be marked slow and sim: " + ", ".join(unmarked))


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
