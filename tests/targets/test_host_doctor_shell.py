"""The host target, and the ``doctor`` / ``shell`` verbs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fvp_harness.cli.main import main
from fvp_harness.profiles import load_profile
from fvp_harness.run.deploy import Deployer
from fvp_harness.run.doctor import doctor_exit_code, parse_param_names, run_doctor
from fvp_harness.run.instances import open_target
from fvp_harness.targets.console import CommandTimeout
from fvp_harness.targets.host import HostTarget


def test_host_target_runs_puts_gets_and_cleans_up(make_scenario, tmp_path: Path) -> None:
    local = tmp_path / "runner.sh"
    local.write_text("#!/bin/sh\necho ran \"$@\"\n")
    with open_target(make_scenario(target="host"), log_dir=tmp_path / "logs") as target:
        assert isinstance(target, HostTarget)
        workdir = target.workdir
        assert target.run("printf abc; false").exit_status == 1
        deployed = Deployer(target).deploy(local, executable=True)
        assert deployed.guest_path.startswith(str(workdir))
        assert target.run(f"{deployed.guest_path} x").output == "ran x\n"
        assert Deployer(target).deploy(local).skipped
        target.put(local, "copy.sh")
        assert target.get("copy.sh") == local.read_bytes()
        with pytest.raises(CommandTimeout):
            target.run("sleep 5", timeout=0.2)
    assert workdir is not None and not workdir.exists()


def _scenario_file(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "smoke.yaml"
    runner = tmp_path / "runner"
    runner.write_bytes(b"x")
    model = tmp_path / "model.pte"
    model.write_bytes(b"x")
    path.write_text(
        "name: smoke\n"
        "builds:\n  before: {runner: runner}\n  after: {runner: runner}\n"
        "models:\n  m: {file: model.pte}\n"
        "fvp:\n  binary: sim\n  sim: {boot_seconds: 0.4}\n" + extra
    )
    return path


@pytest.mark.sim  # asks the simulator for --version and --list-params (no boot)
def test_doctor_passes_on_the_simulator(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", str(_scenario_file(tmp_path))])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "ok    binary" in out and "embedded simulator" in out
    assert "parameters" in out and "all checks passed" in out


@pytest.mark.sim
def test_doctor_catches_a_misspelt_parameter(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = _scenario_file(tmp_path, "  params: {board.hostbridge.userNetwork: true}\n")
    code = main(["doctor", str(path)])
    out = capsys.readouterr().out
    assert code == 2
    assert "FAIL  parameters" in out
    assert "did you mean board.hostbridge.userNetworking?" in out
    assert "fix:" in out


@pytest.mark.sim  # --version and --list-params only
def test_doctor_accepts_what_meta_arm_passes(make_scenario) -> None:
    """The profile already carries meta-arm's parameters; these are the ones it leaves out. The
    external system's flash loader (meta-arm's corstone1000-extsys feature) does not exist on the
    A320 model."""
    extra = {"diagnostics": 4, "board.hostbridge.interfaceName": "tap0",
             "board.virtio_net.hostbridge.interfaceName": "eth1"}
    profile = load_profile("corstone1000-a320")
    by_name = {check.name: check for check in run_doctor(make_scenario(params=extra), profile)}
    assert by_name["parameters"].status == "ok", by_name["parameters"].detail
    extsys = make_scenario(params={**extra,
                                   "extsys_harness0.extsys_flashloader.fname": "es_flashfw.bin"})
    by_name = {check.name: check for check in run_doctor(extsys, profile)}
    assert by_name["parameters"].status == "fail"
    assert "unknown to the model: extsys_harness0.extsys_flashloader.fname" in by_name[
        "parameters"].detail


def test_doctor_fails_ssh_deploy_without_a_live_forward(make_scenario) -> None:
    scenario = make_scenario(
        method="ssh", params={"board.smsc_91c111.enabled": False, "board.virtio_net.enabled": False}
    )
    checks = run_doctor(scenario, load_profile("corstone1000-a320"),
                        binary="FVP_Corstone-1000-A320-missing")
    ssh = {check.name: check for check in checks}["ssh client"]
    assert ssh.status == "fail" and "no SSH forward" in ssh.detail


def test_doctor_for_a_missing_real_model(make_scenario) -> None:
    scenario = make_scenario()
    checks = run_doctor(scenario, load_profile("corstone1000-a320"),
                        binary="FVP_Corstone-1000-A320-missing")
    by_name = {check.name: check for check in checks}
    assert by_name["binary"].status == "fail"
    assert by_name["firmware bl1"].status == "fail"  # a real model needs the release's firmware
    assert doctor_exit_code(checks) == 2


def test_param_listing_parser() -> None:
    listing = ("host.cpu0.CFGEND=0   # (bool  , init-time) default = '0' : x\nnoise line\n  "
               "a.b-c=1 # y\n")
    assert parse_param_names(listing) == {"host.cpu0.CFGEND", "a.b-c"}


@pytest.mark.slow
@pytest.mark.sim
def test_shell_verb_hands_over_the_console(tmp_path: Path) -> None:
    """Drive ``fvp-harness shell`` through a pty like a user: type a command, see it run, leave with
    Ctrl-]."""
    import pexpect

    path = _scenario_file(tmp_path)
    child = pexpect.spawn(
        os.sys.executable,
        ["-m", "fvp_harness", "shell", str(path), "--log-dir", str(tmp_path / "logs")],
        cwd=str(tmp_path), env={**os.environ}, encoding="utf-8", codec_errors="replace", timeout=30,
    )
    try:
        child.expect("Ctrl-] leaves")
        child.sendline("printf 'hello%s\\n' -shell")
        child.expect("hello-shell")
        child.send("\x1d")
        child.expect("stopping the model")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert "hello-shell" in (tmp_path / "logs" / "host_terminal_0.log").read_text()
