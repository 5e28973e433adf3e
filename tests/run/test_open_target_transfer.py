"""``open_target`` (and so the pytest plugin's fixtures, which boot through it) moves files the way
the run deploys them: the scenario's ``deploy.method``. Why: a user's ``put`` of a 4 MiB model went
over the console at about 1 MB/s on the very instance where the run's ``auto`` took ssh at tens of
MB/s."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from fvp_harness.run.instances import make_target, open_target, resolve_scenario, transfer_for
from fvp_harness.targets.fvp_target import FvpTarget
from tests.helpers import REPO

SMOKE = REPO / "scenarios" / "smoke.yaml"


@pytest.mark.parametrize(("method", "transfer"),
                         [("console", "console"), ("ssh", "ssh"), ("auto", "auto"),
                                                  ("preloaded", "auto")])
def test_the_target_s_transfer_follows_the_scenario_s_deploy_method(
    method: str, transfer: str, tmp_path: Path
) -> None:
    assert transfer_for(method) == transfer
    scenario, profile, base = resolve_scenario(SMOKE, overrides=[f"deploy.method={method}"])
    target = make_target(scenario, profile, log_dir=tmp_path, base_dir=base)
    assert isinstance(target, FvpTarget) and target.transfer == transfer
    assert target.transport == (None if transfer == "auto" else transfer), (
        "auto decides on the first copy")


@pytest.mark.slow
@pytest.mark.sim
def test_open_target_puts_by_ssh_where_the_run_s_auto_would(tmp_path: Path) -> None:
    """On the simulator the guest's sshd answers, so ``auto`` copies by ssh, and ``get`` reads
    binary bytes back."""
    blob = tmp_path / "blob.bin"
    blob.write_bytes(os.urandom(256 << 10))
    with open_target(SMOKE, log_dir=tmp_path / "logs", overrides=["deploy.method=auto"]) as target:
        assert isinstance(target, FvpTarget)
        target.put(blob, "/root/blob.bin")
        assert target.transport == "ssh"
        assert (hashlib.sha256(target.get("/root/blob.bin")).digest()
                == hashlib.sha256(blob.read_bytes()).digest())
