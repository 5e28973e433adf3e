"""Against the embedded simulator: boot metadata, deploy, two instances, ssh forwards, timeouts (the
session layer both targets share, framed commands, noise and transfers, is
tests/targets/test_session.py)."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from fvp_harness.run.deploy import Deployer, content_path
from fvp_harness.run.instances import open_target
from fvp_harness.targets.base import Target
from fvp_harness.targets.console import CommandTimeout
from fvp_harness.targets.fvp_target import FvpTarget

pytestmark = [pytest.mark.slow, pytest.mark.sim]


def test_boot_login_and_metadata(booted: FvpTarget) -> None:
    assert isinstance(booted, Target)
    meta = booted.metadata
    assert set(meta["ports"]) == {"host_terminal_0", "host_terminal_1", "secenc_terminal"}
    assert "simulated by fvp-harness sim" in str(meta["version"])
    assert f"board.hostbridge.userNetPorts={meta['ssh_port']}=22" in meta["argv"]
    assert meta["boot_seconds"] < 20
    assert meta["boot_stages"]  # TF-M ... init, seen on their terminals
    for name in meta["ports"]:
        assert (booted.log_dir / f"{name}.log").stat().st_size > 0
    assert "Listening for serial connection" in (booted.log_dir / "fvp.log").read_text()


def test_command_timeout_interrupts_and_recovers(booted: FvpTarget) -> None:
    with pytest.raises(CommandTimeout) as caught:
        booted.run("cat", timeout=0.5)  # reads the console forever
    assert caught.value.failure_class == "test"
    assert "did not finish" in str(caught.value) and "host_terminal_0.log" in str(caught.value)
    assert booted.run("printf ok").output == "ok"


def _blob(tmp_path: Path, size: int, name: str = "blob.bin") -> Path:
    path = tmp_path / name
    path.write_bytes(os.urandom(size))
    return path


@pytest.mark.parametrize("method", ["console", "ssh"])
def test_deploy_hash_checked_and_skipped_when_present(
    booted: FvpTarget, tmp_path: Path, method: str
) -> None:
    local = _blob(tmp_path, 300_000 + (7 if method == "ssh" else 0))
    digest = hashlib.sha256(local.read_bytes()).hexdigest()
    deployer = Deployer(booted, method=method)
    first = deployer.deploy(local, executable=True)
    assert first.guest_path == content_path("/tmp/fvp-harness", digest, "blob.bin")
    assert not first.skipped and first.method.startswith(method)
    assert booted.run(f"sha256sum {first.guest_path}").output.split()[0] == digest
    assert deployer.deploy(local).skipped  # once per session
    # already in the guest with the right hash
    assert Deployer(booted, method=method).deploy(local).skipped


def test_preloaded_checks_presence(booted: FvpTarget, tmp_path: Path) -> None:
    from fvp_harness.errors import DeployError

    local = _blob(tmp_path, 1000, "absent.bin")
    with pytest.raises(DeployError, match="not preloaded"):
        Deployer(booted, method="preloaded").deploy(local)
    Deployer(booted, method="console").deploy(local)
    assert Deployer(booted, method="preloaded").deploy(local).skipped


def test_two_instances_at_once_get_distinct_ports(tmp_path: Path, make_scenario) -> None:
    targets: dict[int, FvpTarget] = {}
    errors: list[BaseException] = []

    def boot(index: int) -> None:
        try:
            target = FvpTarget(make_scenario().fvp, _profile(), log_dir=tmp_path / f"s{index}",
                               name=f"s{index}")
            targets[index] = target
            target.open()
        except BaseException as exc:  # collected and re-raised in the test thread
            errors.append(exc)

    threads = [threading.Thread(target=boot, args=(i,)) for i in range(2)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not errors, errors
        first, second = targets[0], targets[1]
        assert set(first.metadata["ports"].values()).isdisjoint(second.metadata["ports"].values())
        assert first.metadata["ssh_port"] != second.metadata["ssh_port"]
        assert first.run("printf one").output == "one"
        assert second.run("printf two").output == "two"
        assert first.ssh_run("printf one").output == "one"
        assert second.ssh_run("printf two").output == "two"
    finally:
        for target in targets.values():
            target.close()


def test_ssh_through_the_virtio_net_forward(tmp_path: Path, make_scenario) -> None:
    """An image whose network is virtio-net (here: the SMSC Ethernet switched off) is reached
    through the second forward; the harness does not even try the first."""
    scenario = make_scenario(params={"board.smsc_91c111.enabled": False}, method="ssh")
    with open_target(scenario, log_dir=tmp_path / "logs") as target:
        assert isinstance(target, FvpTarget) and target.spec is not None
        virtio = target.spec.ssh_forwards["board.virtio_net.hostbridge.userNetPorts"]
        assert target.spec.ssh_ports == [virtio]
        assert target.ssh_run("uname -n").output == "corstone1000-fvp\n"
        assert target.metadata["ssh_port"] == virtio


def test_ssh_keeps_the_first_forward_that_answers(tmp_path: Path, make_scenario) -> None:
    """When the harness cannot tell which device carries the guest's network, it tries each forward
    in turn."""
    profile = _profile().model_copy(update={"ssh_forward_enabled_by": {}})
    fvp = make_scenario(params={"board.smsc_91c111.enabled": False}).fvp
    with FvpTarget(fvp, profile, log_dir=tmp_path / "logs") as target:
        assert target.spec is not None
        smsc, virtio = (target.spec.ssh_forwards[name] for name in profile.ssh_forward_params)
        assert target.spec.ssh_ports == [smsc, virtio]
        assert target.ssh_run("printf ok").output == "ok"
        assert target.metadata["ssh_port"] == virtio


def test_ctrl_c_inside_the_session_stops_the_model(tmp_path: Path, make_scenario) -> None:
    with pytest.raises(KeyboardInterrupt), open_target(make_scenario(),
                                                       log_dir=tmp_path / "logs") as target:
        process = target.process
        raise KeyboardInterrupt
    assert process is not None and not process.alive()
    assert target.metadata["stat"]["Simulated time"].endswith("s")  # the polite stop printed --stat


def _profile():
    from fvp_harness.profiles import load_profile

    return load_profile("corstone1000-a320")
