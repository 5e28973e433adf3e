"""The model's command line: what it prints and how it refuses bad input, before anything starts."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.sim


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fvp_harness.sim", *args], capture_output=True, text=True,
                          timeout=60, env=env)


def test_version_banner_is_fast_models_style_and_honest() -> None:
    out = run("--version")
    assert out.returncode == 0
    first = out.stdout.splitlines()[0]
    assert re.fullmatch(r"Fast Models \[11\.\d+\.\d+ \(simulated by fvp-harness sim\)\]", first)
    assert "not an Arm product" in out.stdout


def test_help_lists_the_model_options() -> None:
    out = run("-h")
    assert out.returncode == 0
    for option in ("--parameter", "--data", "--stat", "--timelimit", "--simlimit", "--list-params", "--sim"):
        assert option in out.stdout


def test_list_params_is_parseable_and_complete() -> None:
    out = run("--list-params")
    assert out.returncode == 0
    line = re.compile(r"^(\S+)=(\S*)\s+# \((bool|int|string)\s*, init-time\) default = '([^']*)' : .+$")
    params = {}
    for text in out.stdout.splitlines():
        m = line.match(text)
        assert m, f"unparseable line: {text!r}"
        assert m.group(2) == m.group(4)
        params[m.group(1)] = m.group(2)
    for term in ("host.host_terminal_0", "host.host_terminal_1", "se.secenc_terminal"):
        assert params[f"{term}.start_port"] == "5000"
        assert params[f"{term}.mode"] == "telnet"
        assert f"{term}.start_telnet" in params and f"{term}.quiet" in params
    assert params["host.ethosu.num_macs"] == "256"
    for name in ("board.hostbridge.userNetworking", "board.hostbridge.userNetPorts", "board.msd_mmc.p_mmc_file",
                 "disable_visualisation", "se.trustedBootROMloader.fname"):
        assert name in params


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["-C", "host.host_terminal_0.strat_port=5000"], "host.host_terminal_0.strat_port"),
        (["-C", "host.host_terminal_0.start_telnet=maybe"], "not a valid bool"),
        (["-C", "host.ethosu.num_macs=lots"], "not a valid int"),
        (["-C", "host.host_terminal_0.mode=serial"], "not telnet or raw"),
        (["-C", "disable_visualisation"], "expected NAME=VALUE"),
        (["--bogus"], "unrecognised option"),
        (["--data", "board.flash0=/nonexistent/image.wic@0x68000000"], "cannot open file"),
        (["-C", "board.msd_mmc.p_mmc_file=/nonexistent/mmc.img"], "cannot open file"),
        (["-C", "se.trustedBootROMloader.fname=/nonexistent/bl1.bin"], "cannot open file"),
        (["--timelimit", "soon"], "expects a number"),
        (["--sim", "fault_bogus=1"], "unknown fault knob"),
        (["--sim", "boot_seconds=fast"], "not a number"),
        (["--sim", "release=1999"], "release"),
    ],
)
def test_bad_command_lines_are_refused_before_starting(args: list[str], needle: str) -> None:
    out = run(*args)
    assert out.returncode == 1
    assert needle in out.stderr
    assert "Listening for serial connection" not in out.stdout


def test_knob_from_environment_is_checked_too(tmp_path: Path) -> None:
    import os

    env = dict(os.environ, FVP_SIM_FAULT_PANIK="1")
    out = run("--version", env=env)
    assert out.returncode == 0  # --version does not read knobs
    out = run("-C", "host.host_terminal_0.start_port=70000", env=env)
    assert out.returncode == 1


def test_config_file_parameters(tmp_path: Path) -> None:
    cfg = tmp_path / "params.txt"
    cfg.write_text("# comment\nhost.ethosu.num_macs=512\nhost.nonsense=1\n")
    out = run("-f", str(cfg))
    assert out.returncode == 1
    assert "host.nonsense" in out.stderr
