"""The seam to the emulated workloads: a deployed runner artifact runs through GuestContext, streams
its output to the console and stops on Ctrl-C."""

from __future__ import annotations

import asyncio
import re

import asyncssh
import pytest

from fvp_harness.sim.networks import architectures, modelfile

pytestmark = [pytest.mark.slow, pytest.mark.sim]


def test_runner_runs_on_console_and_ctrl_c_stops_it(sim, free_ports) -> None:
    port = free_ports(1)
    s = sim("-C", "board.hostbridge.userNetworking=true", "-C",
            f"board.hostbridge.userNetPorts={port}=22", "-C", "host.ethosu.num_macs=512")
    t = s.login()
    arch = architectures.get_architecture(next(iter(architectures.ARCHITECTURES)))
    model = modelfile.encode_model(modelfile.compile_model(arch, num_macs=512))
    runner = modelfile.encode_runner(modelfile.RunnerArtifact("reuse", "build-x"))

    async def deploy() -> None:
        async with (
            asyncssh.connect("127.0.0.1", port, username="root", password="",
                             known_hosts=None) as conn,
            conn.start_sftp_client() as sftp,
        ):
            async with sftp.open("/tmp/executor_runner", "wb") as fh:
                await fh.write(runner)
            async with sftp.open("/tmp/model.pte", "wb") as fh:
                await fh.write(model)

    asyncio.run(deploy())
    # not executable yet
    assert t.status("/tmp/executor_runner --model_path /tmp/model.pte")[1] == 126
    t.run("chmod +x /tmp/executor_runner")
    out, code = t.status("/tmp/executor_runner --model_path /tmp/model.pte --num_executions 2")
    assert code == 0, out
    assert "build id: build-x" in out and "Model executed successfully 2 time(s)" in out
    t.send(b"/tmp/executor_runner --model_path /tmp/model.pte --num_executions 1000000\n")
    t.expect(re.compile(rb"Iteration \d+ of 1000000"))  # streamed while it runs
    t.send(b"\x03")
    t.expect(re.compile(rb"root@corstone1000-fvp:~# $"))
    assert t.run("echo $?") == "130\n"
