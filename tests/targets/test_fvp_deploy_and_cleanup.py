"""A booted instance end to end: a large artifact arrives intact by console and by ssh under kernel
noise, a panic at boot fails fast, and the harness's own death (SIGTERM) leaves no model behind."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fvp_harness.errors import KernelPanic
from fvp_harness.run.deploy import Deployer
from fvp_harness.run.instances import open_target
from tests.helpers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.sim]


def test_a_4_mib_artifact_arrives_intact_by_console_and_ssh_under_kernel_noise(
        make_scenario, tmp_path: Path) -> None:
    blob = tmp_path / "model.pte"
    blob.write_bytes(os.urandom(4 << 20))
    digest = hashlib.sha256(blob.read_bytes()).hexdigest()
    scenario = make_scenario(sim={"kernel_noise_rate": 20}, timeouts={"deploy": 120})
    with open_target(scenario, log_dir=tmp_path / "logs", quiet_kernel=False) as target:
        by_console = Deployer(target, method="console").deploy(blob, name="by-console.pte")
        by_ssh = Deployer(target, method="ssh").deploy(blob, name="by-ssh.pte")
        for artifact in (by_console, by_ssh):
            assert artifact.sha256 == digest and not artifact.skipped
            assert target.run(f"sha256sum {artifact.guest_path}").output.split()[0] == digest
        result = target.run("false")
        assert result.exit_status == 1
        assert target.console.kernel_lines_removed > 0


def test_a_panic_at_boot_fails_within_seconds_as_an_infrastructure_error(
    make_scenario, tmp_path: Path
) -> None:
    began = time.monotonic()
    with pytest.raises(KernelPanic) as caught, open_target(
        make_scenario(sim={"fault_panic": "boot"}, timeouts={"boot": 300}),
        log_dir=tmp_path / "panic"
    ):
        pass
    assert time.monotonic() - began < 10
    assert caught.value.failure_class == "infrastructure"
    # no process left behind: checked by the autouse no_leaks fixture


SCRIPT = textwrap.dedent(
    """
    import sys, time
    from fvp_harness.scenario.model import Scenario
    from fvp_harness.run.instances import open_target
    scenario = Scenario.model_validate({
        "name": "sigterm", "builds": {"b": {"runner": "/bin/true"}},
        "models": {"m": {"file": "/bin/true"}},
        "fvp": {"sim": {"boot_seconds": 0.4}, "timeouts": {"boot": 30}}})
    with open_target(scenario, log_dir=sys.argv[1]) as target:
        print(target.process.pid, flush=True)
        time.sleep(60)  # hold the model until the test's SIGTERM ends this process
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigterm_to_the_harness_kills_the_model(tmp_path: Path) -> None:
    harness = subprocess.Popen([sys.executable, "-c", SCRIPT, str(tmp_path / "logs")],
                               stdout=subprocess.PIPE, text=True)
    try:
        model_pid = int(harness.stdout.readline())
        os.kill(model_pid, 0)  # running
        harness.send_signal(signal.SIGTERM)
        harness.wait(10)
        wait_until(lambda: not _alive(model_pid), timeout=5,
                   message=f"model {model_pid} to end after its harness's SIGTERM")
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
        harness.stdout.close()
