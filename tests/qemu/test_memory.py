"""Memory on the real guest: busybox's ``time`` takes the options the harness's line uses and
reports the same ``%M`` the simulator's guest gives a busybox process (``SHELL_RSS_KIB``); the
shipped QEMU scenario measured with the memory metrics gives each unit its peak resident set (above
the runner's 8 MiB arena) and the flash of the real ELF it ran."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fvp_harness.guest import GuestImage
from fvp_harness.profiles import load_profile
from fvp_harness.run.memory import elf_sections
from fvp_harness.scenario.model import FvpConfig
from fvp_harness.sim.guest.session import SHELL_RSS_KIB
from fvp_harness.targets.fvp_target import FvpTarget
from tests.e2e.cli import run_cli
from tests.helpers import REPO
from tests.qemu.lane import require_qemu

pytestmark = [pytest.mark.qemu, pytest.mark.slow]

COMMANDS = [
    "time -f 'rss %M' sh -c 'true; exit $?' 2>&1",
    "time -f 'rss %M %x' -o /tmp/rss sh -c 'exit 3; exit $?'; echo status $?; cat /tmp/rss",
    "time -f 'rss %M' sh -c 'kill -ABRT $$; exit $?' 2>&1; echo status $?",
]


def test_busybox_time_reports_what_the_simulator_models(tmp_path: Path) -> None:
    image: GuestImage = require_qemu()
    fvp = FvpConfig(
        binary="qemu-system-aarch64",
        firmware={"kernel": str(image.kernel), "initrd": str(image.initrd)},
    )
    profile = load_profile("qemu-aarch64-virt")
    with FvpTarget(fvp, profile, log_dir=tmp_path) as target:  # type: ignore[arg-type]
        results = [target.run(command, timeout=30) for command in COMMANDS]
    plain, failed, killed = (result.output for result in results)
    shell = int(re.search(r"rss (\d+)", plain).group(1))  # type: ignore[union-attr]
    print(f"busybox sh -c under time: {shell} KiB (simulator: {SHELL_RSS_KIB} KiB)")
    assert abs(shell - SHELL_RSS_KIB) <= 0.25 * SHELL_RSS_KIB, (shell, SHELL_RSS_KIB)
    assert "status 3" in failed and re.search(
        r"Command exited with non-zero status 3\nrss \d+ 3", failed
    ), failed
    assert "status 6" in killed, (
        killed
    )  # time returns the bare signal: why the harness adds `; exit $?`


def test_qemu_scenario_measures_memory(tmp_path: Path) -> None:
    require_qemu(need_compiler=True)
    out = tmp_path / "results"
    metrics = (
        "metrics=[{name: iteration_time, required: true}, {name: peak_rss, required: true}, "
        "{name: runner_flash, required: true}, runner_bss, {name: model_bytes, required: true}]"
    )
    proc = run_cli(
        REPO,
        "run",
        "scenarios/qemu/qemu_driver_reuse.yaml",
        "-o",
        str(out),
        "--set",
        "run.iterations=3",
        "--set",
        "run.repetitions=1",
        "--set",
        "run.warmup=1",
        "--set",
        metrics,
        timeout=280,
    )
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert records and all(r["status"] == "ok" for r in records), records
    artifacts = REPO / ".artifacts" / "qemu_driver_reuse"
    for record in records:
        peak = record["samples"]["peak_rss"][0]
        assert 8 << 20 < peak < 256 << 20, record  # the runner's calloc'd 8 MiB arena is touched
        flash = elf_sections(artifacts / f"executor_runner-{record['build']}")["runner_flash"]
        assert record["samples"]["runner_flash"] == [float(flash)]
        assert record["metric_units"]["peak_rss"] == "bytes"
