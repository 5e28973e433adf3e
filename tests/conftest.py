"""Shared fixtures. Keep this small: module-specific helpers belong in their own test files."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


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
