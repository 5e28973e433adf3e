"""Fixtures of the batch tests: simulator artifacts built once for the whole folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from fvp_harness.batch.engine import MakeOptions, make
from tests.batch.scenarios import write_scenario


@pytest.fixture(scope="package")
def art(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Simulator artifacts for models ds_cnn (scenarios a, c, ...) and resnet8 (b), built once by a
    make (the tests that use them boot the simulator: mark them slow and sim)."""
    base = tmp_path_factory.mktemp("batch")
    folder = base / "art"
    write_scenario(base / "sc", "a", folder)
    write_scenario(base / "sc", "b", folder, model="resnet8")
    result = make([base / "sc"], MakeOptions(jobs=2, results_base=base / "results"))
    assert result.exit_code == 0, [n.error for n in result.nodes]
    return folder
