"""Every simulator fault is classified right, fast, with the log that shows it, and nothing is left
running."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from fvp_harness.errors import (
    BootTimeout,
    ConfigurationError,
    ConsoleLost,
    FvpDied,
    FvpStartError,
    InfrastructureError,
    KernelPanic,
    PortError,
    SshUnavailable,
)
from fvp_harness.run.instances import open_target

pytestmark = [pytest.mark.slow, pytest.mark.sim]


def _boot_failure(make_scenario, tmp_path: Path, **kwargs) -> InfrastructureError:
    with pytest.raises(InfrastructureError) as caught, open_target(make_scenario(**kwargs),
                                                                   log_dir=tmp_path):
        pass
    return caught.value


@pytest.mark.parametrize(("stage", "last_seen"), [("uboot", "U-Boot"), ("kernel", "Linux")])
def test_boot_hang_names_the_last_stage(make_scenario, tmp_path: Path, stage: str,
                                        last_seen: str) -> None:
    error = _boot_failure(make_scenario, tmp_path, sim={"fault_boot_hang": stage},
                          timeouts={"boot": 2.5})
    assert isinstance(error, BootTimeout)
    assert error.stage == last_seen
    assert f"last boot stage seen: {last_seen}" in str(error)
    assert "no login prompt on host_terminal_0 after 2.5 s (phase boot)" in str(error)
    assert "raise fvp.timeouts.boot or pass --timeout-scale" in str(error)
    assert error.log_path == tmp_path / "host_terminal_0.log"


def test_panic_at_boot_fails_at_once_with_the_trace(make_scenario, tmp_path: Path) -> None:
    began = time.monotonic()
    error = _boot_failure(make_scenario, tmp_path, sim={"fault_panic": "boot"},
                          timeouts={"boot": 300})
    assert time.monotonic() - began < 10
    assert isinstance(error, KernelPanic) and error.failure_class == "infrastructure"
    assert any("Kernel panic - not syncing" in line for line in error.last_lines)
    # the grace collected the trace
    assert any("end Kernel panic" in line for line in error.last_lines)
    assert error.stage == "boot"


def test_panic_during_a_command(make_scenario, tmp_path: Path) -> None:
    with pytest.raises(KernelPanic) as caught, open_target(make_scenario(sim={"fault_panic": 5}),
                                                           log_dir=tmp_path) as target:
        for _ in range(10):
            target.run("true", timeout=20)
    assert caught.value.stage == "command"


def test_console_drop_is_console_lost(make_scenario, tmp_path: Path) -> None:
    began = time.monotonic()
    with pytest.raises(ConsoleLost) as caught, open_target(
            make_scenario(sim={"fault_console_drop": 5}),
                                                           log_dir=tmp_path) as target:
        for _ in range(10):
            target.run("true", timeout=20)
    assert time.monotonic() - began < 15
    assert "host_terminal_0" in str(caught.value)


def test_crash_at_boot_is_fvp_died_with_the_exit_status(make_scenario, tmp_path: Path) -> None:
    error = _boot_failure(make_scenario, tmp_path, sim={"fault_crash": "boot"},
                          timeouts={"boot": 300})
    assert isinstance(error, FvpDied | FvpStartError)
    assert "exit status 139" in str(error)


def test_crash_during_a_command(make_scenario, tmp_path: Path) -> None:
    with pytest.raises(FvpDied) as caught, open_target(make_scenario(sim={"fault_crash": 5}),
                                                       log_dir=tmp_path) as target:
        for _ in range(10):
            target.run("true", timeout=20)
    assert "exit status 139" in str(caught.value)
    assert caught.value.log_path == tmp_path / "fvp.log"


def test_busy_start_ports_are_stepped_over(make_scenario, tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        busy = holder.getsockname()[1]
        params = {f"{prefix}.start_port": busy for prefix in
                  ("host.host_terminal_0", "host.host_terminal_1", "se.secenc_terminal")}
        knobs = {"fault_busy_ports": 2}  # and the simulator pretends the next one is taken too
        with open_target(make_scenario(params=params, sim=knobs), log_dir=tmp_path) as target:
            ports = target.metadata["ports"]
            assert busy not in ports.values() and busy + 1 not in ports.values()
            assert len(set(ports.values())) == 3
            assert target.run("printf ok").output == "ok"


def test_refused_ssh_is_ssh_unavailable(make_scenario, tmp_path: Path) -> None:
    began = time.monotonic()
    with pytest.raises(SshUnavailable) as caught, open_target(
        make_scenario(sim={"fault_refuse_ssh": True}, timeouts={"deploy": 2}), log_dir=tmp_path
    ) as target:
        target.ssh_run("true")
    assert time.monotonic() - began < 15
    assert "no SSH server answered" in str(caught.value)
    assert caught.value.failure_class == "infrastructure"


def test_bad_parameter_reports_the_models_words(make_scenario, tmp_path: Path) -> None:
    error = _boot_failure(make_scenario, tmp_path, params={"board.hostbridge.userNetPort": "1=22"})
    assert isinstance(error, FvpStartError)
    assert 'Parameter "board.hostbridge.userNetPort" not found in the model' in str(error)
    assert "exit status 1" in str(error)


def test_missing_port_banner_is_a_port_error(make_scenario, tmp_path: Path) -> None:
    error = _boot_failure(make_scenario, tmp_path, params={"host.host_terminal_1.quiet": True},
                          timeouts={"boot": 1.5})
    assert isinstance(error, PortError)
    assert "no port banner for host_terminal_1" in str(error)


def test_missing_binary_is_configuration(make_scenario, tmp_path: Path) -> None:
    scenario = make_scenario()
    with pytest.raises(ConfigurationError, match="FVP binary not found"), open_target(
        scenario, log_dir=tmp_path, binary="FVP_Not_Installed_Here"
    ):
        pass
