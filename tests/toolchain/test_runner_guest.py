"""Our aarch64 runner on ExecuTorch's runtime in the real QEMU guest (``fvp-harness guest build``):
deployed content-addressed like any artifact, its libraries found through ``LD_LIBRARY_PATH`` (the
guest carries libstdc++ and libgcc_s since recipe 2), outputs identical between the two builds,
every line read by the harness's scrapers."""

from __future__ import annotations

import hashlib
import os
import posixpath
import shlex
import statistics
import subprocess
from pathlib import Path

import pytest

from fvp_harness.profiles import load_profile
from fvp_harness.run.deploy import Deployer
from fvp_harness.run.scrape import scrape
from fvp_harness.scenario.model import FvpConfig, MetricSpec
from fvp_harness.targets.fvp_target import FvpTarget
from fvp_harness.toolchain import runner_build
from tests.qemu.lane import require_qemu
from tests.toolchain.lane import export_program, require_lane, require_qemu_user

pytestmark = [pytest.mark.qemu, pytest.mark.slow]

RUNS = 20
METRICS = [MetricSpec(name="iteration_time"), MetricSpec(name="load_time")]


def test_aarch64_runner_in_the_qemu_guest(tmp_path: Path) -> None:
    guest = require_qemu()
    lane = require_lane()
    sdk = require_qemu_user(lane)
    program = export_program(lane, tmp_path / "program")
    runners = {
        variant: runner_build.build_runner(
            sdk=sdk,
            cmake=lane.cmake,
            arch="aarch64",
            variant=variant,
            traced=False,
            output=tmp_path / f"runner-{variant}",
            work=tmp_path / "work",
        )
        for variant in ("before", "after")
    }
    libraries = runner_build.copy_runtime_libraries(sdk, "aarch64", tmp_path / "lib")
    fvp = FvpConfig(
        binary="qemu-system-aarch64",
        firmware={"kernel": str(guest.kernel), "initrd": str(guest.initrd)},
    )
    medians, digests = {}, {}
    with FvpTarget(fvp, load_profile("qemu-aarch64-virt"), log_dir=tmp_path / "logs") as target:
        deployer = Deployer(target, method="auto")
        files = [
            *((path, True) for path in runners.values()),
            *((path, False) for path in libraries),
            (program, False),
            (program.parent / "input.bin", False),
        ]
        placed = {
            local: artifact.guest_path for local, artifact in deployer.deploy_all(files).items()
        }
        library_path = ":".join(posixpath.dirname(placed[path]) for path in libraries)
        for variant, runner in runners.items():
            out = f"/tmp/out-{variant}"
            command = (
                f"LD_LIBRARY_PATH={library_path} {shlex.quote(placed[runner])} "
                f"--model_path={placed[program]} --inputs={placed[program.parent / 'input.bin']} "
                f"--num_executions={RUNS} --output_file={out} --print_output=none "
                f"&& sha256sum {out}-0.bin"
            )
            result = target.run(command, timeout=300)
            assert result.exit_status == 0, result.output
            scraped = scrape(result.output, METRICS)
            assert len(scraped.samples["iteration_time"]) == RUNS, result.output
            assert "executorch:cpuinfo_utils.cpp" in result.output  # the runtime's own lines
            medians[variant] = statistics.median(scraped.samples["iteration_time"][2:])
            digests[variant] = result.output.strip().splitlines()[-1].split()[0]
    assert digests["before"] == digests["after"]
    # the same bytes as qemu-user's run of the same runner (one architecture, one result)
    user = subprocess.run(
        [
            "qemu-aarch64-static",
            "-L",
            "/usr/aarch64-linux-gnu",
            str(runners["after"]),
            "--model_path",
            str(program),
            "--inputs",
            "input.bin",
            "--output_file",
            "user",
            "--print_output",
            "none",
        ],
        cwd=program.parent,
        capture_output=True,
        timeout=300,
        check=False,
        env={**os.environ, "LD_LIBRARY_PATH": str(tmp_path / "lib")},
    )
    assert user.returncode == 0, user.stderr
    assert (
        hashlib.sha256((program.parent / "user-0.bin").read_bytes()).hexdigest() == digests["after"]
    )
    assert medians["before"] / medians["after"] > 1, medians
