"""The shipped partly delegated scenario, end to end: the CLI as a process, the simulator as a
process.

What it proves, on the user's path: a model in K Ethos-U partitions prints K ``Ethos-U Linux
delegate cycle counter`` lines per inference
(backends/arm/runtime/EthosUBackend_Cortex_A.cpp:294-299, once per delegate call); the harness
stores one summed sample per inference and each partition's value, so ``expect_identical:
npu_cycles`` passes when no partition's cycles changed, and fails, naming the partition, when one
did (the simulator knob ``runner_partition_cycles`` changes partition 2 of the ``after`` build
only).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.sim]

SCENARIO = "scenarios/driver_reuse_partitioned.yaml"


def test_partitioned_models_pass_with_identical_cycles_and_fail_naming_the_partition_that_moved(
    tmp_path: Path,
) -> None:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    done = run_cli(tmp_path, "run", SCENARIO, "-q", timeout=240)
    assert done.returncode == 0, done.stderr + done.stdout
    out = tmp_path / "results" / "driver_reuse_partitioned"
    rows = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    resnet = [row for row in rows if row["model"] == "resnet8_3p"]
    assert resnet and all(row["status"] == "ok" for row in rows)
    for row in resnet:  # warmup dropped: 5 inferences, each three calls summed
        calls = row["partitions"]["npu_cycles"]
        assert (len(calls) == len(row["samples"]["npu_cycles"]) == 5 and
                {len(c) for c in calls} == {3})
        assert [sum(c) for c in calls] == row["samples"]["npu_cycles"]
    report = json.loads((out / "report.json").read_text())
    checks = {(m["model"], c["name"]): c for m in report["comparison"]["models"]
              for c in m["identity"]}
    assert checks[("resnet8_3p", "npu_cycles")]["status"] == "pass"
    assert "3 partitions" in checks[("resnet8_3p", "npu_cycles")]["detail"]

    moved = run_cli(tmp_path, "run", SCENARIO, "-q", "-o", "results/moved", "--only-model",
                    "ds_cnn_2p",
                    "--set", "fvp.sim.runner_partition_cycles=reuse:2=1.05", timeout=240)
    assert moved.returncode == 1, moved.stderr + moved.stdout
    text = (tmp_path / "results" / "moved" / "report.md").read_text()
    assert "identical npu_cycles (ds_cnn_2p): partition 2 of 2 differs" in text
    assert "partition 1 of 2" not in text, "only the partition that moved is named"
