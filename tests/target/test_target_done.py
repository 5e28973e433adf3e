"""The issue's "done when", as a test; and the harness's own death (SIGTERM) leaves no model behind."""

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


def test_done_when(make_scenario, tmp_path: Path) -> None:
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

    began = time.monotonic()
    with pytest.raises(KernelPanic) as caught, open_target(
        make_scenario(sim={"fault_panic": "boot"}, timeouts={"boot": 300}), log_dir=tmp_path / "panic"
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
        "name": "sigterm", "builds": {"b": {"runner": "/bin/true"}}, "models": {"m": {"file": "/bin/true"}},
        "fvp": {"sim": {"boot_seconds": 0.4}, "timeouts": {"boot": 30}}})
    with open_target(scenario, log_dir=sys.argv[1]) as target:
        print(target.process.pid, flush=True)
        time.sleep(60)
    """
)


def test_sigterm_to_the_harness_kills_the_model(tmp_path: Path) -> None:
    harness = subprocess.Popen([sys.executable, "-c", SCRIPT, str(tmp_path / "logs")], stdout=subprocess.PIPE,
                               text=True)
    try:
        model_pid = int(harness.stdout.readline())
        os.kill(model_pid, 0)  # running
        harness.send_signal(signal.SIGTERM)
        harness.wait(10)
        for _ in range(100):
            try:
                os.kill(model_pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"model {model_pid} survived its harness's SIGTERM")
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
        harness.stdout.close()
