"""``scenarios/vgf_zero_copy.yaml`` end to end through the real command line: on the embedded
simulator (the emulated VGF runner in the guest) and on this host (``--set target=host``), then the
VGF comparison of what the run kept. Each test works in a private copy of ``scenarios/`` so
artifacts and results land in tmp."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO

pytestmark = pytest.mark.slow

QUICK = ("--set", "run.repetitions=2", "--set", "run.iterations=60")
UNITS = 2 * 2 * 2  # builds x models x repetitions with QUICK


def harness(cwd: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return run_cli(cwd, *args, timeout=timeout)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("vgf-e2e")
    shutil.copytree(REPO / "scenarios", root / "scenarios")
    return root


def check_zero_copy_results(out: Path) -> None:
    """What zero-copy must show: each run's VGF JSON kept, copy bytes and memcpy time to zero with
    zero-copy, import overhead appearing, VGF execution time unchanged within its CI, and outputs
    still identical."""
    kept = sorted(out.glob("fetched/*/*.vgf.json"))
    assert len(kept) == UNITS, kept
    assert (out / "report.md").is_file()
    with (out / "report.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["model"] != "geometric mean":
                assert row["outputs_identical"] == "pass", row
    for name in ("vgf_report.md", "vgf_report.csv", "vgf_report.json", "vgf_report.png"):
        assert (out / name).is_file(), name
    data = json.loads((out / "vgf_report.json").read_text(encoding="utf-8"))
    rows = {(r["model"], r["metric"]): r for r in data["rows"]}
    for model in ("resnet8", "mobilenet_v1_025"):
        for metric in ("in_copy_bytes", "out_copy_bytes", "memcpy_ns"):
            row = rows[(model, metric)]
            assert (row["baseline_median"] > 0 and row["candidate_median"] == 0 and
                    row["verdict"] == "removed"), row
        for metric in ("imports", "import_ns", "binding_refresh_ns"):
            row = rows[(model, metric)]
            assert (row["baseline_median"] == 0 and row["candidate_median"] > 0 and
                    row["verdict"] == "appeared"), row
        execute = rows[(model, "execute_ns")]
        assert execute["verdict"] == "no change", execute
        assert execute["ci_low"] <= 0 <= execute["ci_high"] or abs(execute["change_pct"]) < 1, (
            execute)
    assert data["expectations_violated"] is False
    assert "## Boundary cost removed" in (out / "vgf_report.md").read_text(encoding="utf-8")


def run_and_compare(workdir: Path, out: str, *extra: str) -> Path:
    done = harness(workdir, "run", "scenarios/vgf_zero_copy.yaml", "-o", out, *QUICK, *extra)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "vgf report: " in done.stdout and "(expectations PASS)" in done.stdout, done.stdout
    return workdir / out


@pytest.mark.sim
def test_vgf_zero_copy_on_the_simulator(workdir: Path) -> None:
    out = run_and_compare(workdir, "out/sim")
    check_zero_copy_results(out)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["fvp"]["binary"] == "sim"


def test_vgf_zero_copy_on_this_host(workdir: Path) -> None:
    out = run_and_compare(workdir, "out/host", "--set", "target=host")
    check_zero_copy_results(out)
    scenario = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["scenario"]
    assert scenario.get("resolved", scenario)["target"] == "host"
    assert "ET_VGF_ZERO_COPY=1 " in (out / "logs" / "s0"
                                     / "r0-zero_copy-resnet8.log").read_text(encoding="utf-8")
    # the line under the title
    context = (out / "report.md").read_text(encoding="utf-8").split("\n\n")[1]
    assert "Host: **" in context and "FVP:" not in context and "Platform:" not in context, context


def test_run_writes_the_vgf_report(workdir: Path) -> None:
    done = harness(workdir, "run", "scenarios/vgf_zero_copy.yaml", "-o", "out/direct", *QUICK,
                   "--set", "target=host")
    assert done.returncode == 0, done.stderr + done.stdout
    out = workdir / "out" / "direct"
    assert (out / "vgf_report.md").is_file()
    # `report DIR` renders it again from what the run kept, byte for byte
    kept = {name: (out / name).read_bytes()
            for name in ("vgf_report.md", "vgf_report.csv", "vgf_report.json")}
    for name in kept:
        (out / name).unlink()
    again = harness(workdir, "report", "out/direct", "-q")
    assert again.returncode == 0, again.stderr + again.stdout
    assert {name: (out / name).read_bytes() for name in kept} == kept


def test_make_writes_the_vgf_report_and_keeps_it_up_to_date(workdir: Path) -> None:
    args = ("scenarios/vgf_zero_copy.yaml", "--results", "out/make", *QUICK, "--set", "target=host")
    done = harness(workdir, "make", "-j", "1", *args)
    assert done.returncode == 0, done.stderr + done.stdout
    out = workdir / "out" / "make" / "vgf_zero_copy"
    assert (out / "vgf_report.md").is_file()
    assert "vgf_report.md" in json.loads((out
                                          / "report.inputs").read_text(encoding="utf-8"))["files"]
    (out / "vgf_report.md").unlink()
    dry = harness(workdir, "make", "-n", *args)
    assert "missing vgf_report.md" in dry.stdout, dry.stdout
