"""A traced build (``builds.<name>.traced``): the unit's command gets its own ``--etdump_path``, and the field is
validated with the file position of the mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from fvp_harness.errors import ScenarioError
from fvp_harness.run.execute import render_unit_command
from fvp_harness.run.plan import Unit
from fvp_harness.scenario import load_scenario
from fvp_harness.scenario.model import Scenario


def _scenario(**build: object) -> Scenario:
    return Scenario.model_validate({
        "name": "x",
        "builds": {"b": {"runner": "/r", **build}},
        "models": {"m": {"file": "/m"}},
        "run": {"command": "{runner} --model_path={model}"},
    })


def test_a_traced_build_writes_its_etdump_into_the_unit_folder() -> None:
    unit = Unit("r0-b-m", "b", "m", 0, 0, 0, "k")
    rendered = render_unit_command(_scenario(traced=True, args=["--x"]), unit, runner="/g/r", model="/g/m",
                                   inputs=[], guest_root="/g")
    assert rendered.command == "/g/r --x --etdump_path=/g/units/r0-b-m/etdump.bin --model_path=/g/m"
    plain = render_unit_command(_scenario(), unit, runner="/g/r", model="/g/m", inputs=[], guest_root="/g")
    assert "etdump" not in plain.command


def test_traced_with_its_own_etdump_path_is_refused() -> None:
    with pytest.raises(ValueError, match="remove --etdump_path from args"):
        _scenario(traced=True, args=["--etdump_path=x"])


def test_a_bad_traced_value_names_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: x\nbuilds:\n  b:\n    runner: /r\n    traced: sometimes\nmodels:\n  m: {file: /m}\n"
                    "run: {command: '{runner}'}\n")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path, check_files=False)
    assert any(p.startswith(f"{path}:5:") and "builds.b.traced" in p for p in caught.value.problems), \
        caught.value.problems
