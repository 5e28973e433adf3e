"""Issue 38 (2): every ``fvp.sim`` knob value is checked when the scenario loads, by the simulator's
own rules (``sim/knob_check.py``), through the real command line: ``--set
fvp.sim.runner_slowdown=bogus`` ran all 80 units, each failing the same way, and exited 1; now it is
bad input (exit 2) naming the option and the key, before anything is built or booted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fvp_harness.sim.knob_check import knob_problems
from tests.e2e.cli import run_cli
from tests.helpers import REPO


def test_a_bad_knob_value_on_the_command_line_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    done = run_cli(
        tmp_path,
        "run",
        "scenarios/smoke.yaml",
        "-o",
        "out",
        "--set",
        "fvp.sim.runner_slowdown=bogus",
        "--set",
        "fvp.sim.speed=1",
    )
    assert done.returncode == 2, done.stderr + done.stdout
    assert (
        "--set fvp.sim.runner_slowdown=bogus: fvp.sim.runner_slowdown: 'bogus' is not a number"
        in done.stderr
    ), done.stderr
    assert "fvp.sim.speed" not in done.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / ".artifacts").exists()


def test_a_bad_knob_value_in_the_file_names_its_line(tmp_path: Path) -> None:
    text = (REPO / "scenarios" / "smoke.yaml").read_text(encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(
        text.replace(
            "  binary: sim\n", "  binary: sim\n  sim:\n    release: 2030\n    runner_slowdwn: 1.2\n"
        ),
        encoding="utf-8",
    )
    done = run_cli(tmp_path, "validate", "s.yaml")
    assert done.returncode == 2, done.stderr + done.stdout
    assert (
        "s.yaml:15:14: fvp.sim.release: '2030' is not one of 2025.12" in done.stdout + done.stderr
    )
    assert (
        "s.yaml:16:21: fvp.sim.runner_slowdwn: unknown knob 'runner_slowdwn'; did you mean "
        "'runner_slowdown'?"
    ) in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("knobs", "baremetal", "expected"),
    [
        (
            {"runner_slowdown": "reuse:resnet8=1.2,ds_cnn=0"},
            False,
            {"runner_slowdown": "0.0 is outside 0.1..100"},
        ),
        ({"runner_jitter": "0.9"}, False, {"runner_jitter": "0.9 is outside 0.0..0.5"}),
        ({"runner_fault": "hardfault=1"}, True, {}),
        ({"runner_fault": "crash=2"}, False, {}),
        ({"fault_panic": "soon"}, False, {"fault_panic": "'soon' is not an integer"}),
        (
            {"fault_panik": "3"},
            False,
            {"fault_panik": "unknown knob 'fault_panik'; did you mean 'fault_panic'?"},
        ),
        (
            {"vgf_reject": "some"},
            False,
            {"vgf_reject": "'some': expected input, output, all or none"},
        ),
        (
            {"ssh_fragment": True, "speed": 0.5, "release": "next", "my_workload_knob": "x"},
            False,
            {},
        ),
    ],
)
def test_knob_problems_are_what_the_simulator_would_refuse(knobs, baremetal, expected) -> None:
    assert knob_problems(knobs, baremetal=baremetal) == expected
