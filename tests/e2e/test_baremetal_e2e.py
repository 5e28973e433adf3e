"""Bare-metal Corstone-320 end to end, through the CLI as a user runs it:
``scenarios/baremetal_macs.yaml`` on the embedded simulator (NPU cycles per model per MAC
configuration, falling as the MACs grow, outputs identical), the same scenario on a stand-in
executable named ``FVP_Corstone_SSE-320`` given with ``--fvp PATH`` (the real-binary path), a hard
fault and a time limit classed as infrastructure, retried and reported, ``doctor`` and ``make``.

Each CLI run is a child process carrying a marker variable its models inherit; afterwards no process
with the marker may live and its private TMPDIR must be empty (no model, no working folder left
behind).
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.sim]

SCENARIO = "scenarios/baremetal_macs.yaml"
BUILDS = ("u85-128", "u85-256", "u85-512")
MODELS = ("resnet8", "ds_cnn", "mobilenet_v1_025", "deep_autoencoder")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the scenarios: the artifacts are built once into <copy>/.artifacts and shared by
    the tests."""
    root = tmp_path_factory.mktemp("baremetal")
    shutil.copytree(REPO / "scenarios", root / "scenarios")
    return root


@pytest.fixture
def harness(workdir: Path, tmp_path: Path):
    """``harness(*args, timeout=600)``: run the CLI in the workdir; check that nothing it started
    lives on."""

    def _run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return run_cli(workdir, *args, timeout=timeout, scratch=tmp_path)

    return _run


def records(folder: Path) -> list[dict[str, object]]:
    return [json.loads(line)
            for line in (folder / "records.jsonl").read_text().splitlines() if line.strip()]


def npu_cycles(folder: Path) -> dict[tuple[str, str], float]:
    """(build, model) -> median bm_npu_cycles of the ok records."""
    values: dict[tuple[str, str], list[float]] = {}
    for record in records(folder):
        if record["status"] == "ok":
            samples = record["samples"]
            assert isinstance(samples, dict)
            values.setdefault((str(record["build"]), str(record["model"])),
                              []).extend(samples["bm_npu_cycles"])
    return {key: statistics.median(found) for key, found in values.items()}


def stand_in(folder: Path, how: str) -> Path:
    """An executable named like the real model that runs the simulator (the real-binary path of the
    harness): a script (``python -m`` cannot see the name it runs under, so it says the platform) or
    a symbolic link to the ``fvp-sim`` console script (which plays the model it is named after)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "FVP_Corstone_SSE-320"
    if how == "script":
        path.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m fvp_harness.sim --platform '
                        'corstone320 "$@"\n')
        path.chmod(0o755)
        return path
    console_script = Path(sys.executable).parent / "fvp-sim"
    if not console_script.is_file():
        pytest.skip("no fvp-sim console script next to this Python (not installed)")
    path.symlink_to(console_script)
    return path


def test_the_mac_sweep_reports_npu_cycles_falling_as_the_macs_grow_with_identical_outputs(
        harness, workdir: Path) -> None:
    out = workdir / "results" / "macs"
    done = harness("run", SCENARIO, "-o", str(out), "--set", "run.repetitions=2")
    assert done.returncode == 0, done.stdout + done.stderr
    cycles = npu_cycles(out)
    assert set(cycles) == {(build, model) for build in BUILDS for model in MODELS}
    for model in MODELS:
        low, mid, high = (cycles[(build, model)] for build in BUILDS)
        assert low > mid > high, f"{model}: NPU cycles 128/256/512 MACs = {low}/{mid}/{high}"
    # outputs are byte-identical across the three configurations and the repetitions
    for model in MODELS:
        hashes = {json.dumps(r["outputs"], sort_keys=True)
                  for r in records(out) if r["model"] == model}
        assert len(hashes) == 1 and "out-0.bin" in next(iter(hashes)), (model, hashes)
    report = (out / "report.md").read_text()
    assert "## u85-256 vs u85-128" in report and "## u85-512 vs u85-128" in report
    for model in MODELS:
        low, mid, high = (f"{cycles[(build, model)]:,.0f}" for build in BUILDS)
        assert f"{low} -> {mid} cycles" in report and f"{low} -> {high} cycles" in report, model
    every = records(out)
    assert all(r["extra"].get("model_sha256") and r["extra"].get("runner_sha256") for r in every)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["platform"] == "corstone320-u85"
    argv = next(iter(manifest["instances"].values()))["argv"]  # the last launch of the instance
    assert argv[1:5] == ["-m", "fvp_harness.sim", "--platform", "corstone320"] and "-a" in argv


@pytest.mark.parametrize("how", ["script", "symlink"])
def test_a_stand_in_named_like_the_real_model_runs_it_with_fvp_path(
    harness, workdir: Path, tmp_path: Path, how: str
) -> None:
    binary = stand_in(tmp_path / "bin", how)
    out = workdir / "results" / f"standin-{how}"
    done = harness("run", SCENARIO, "--fvp", str(binary), "-o", str(out), "--set",
                   "run.repetitions=1", "--only-model", "ds_cnn")
    assert done.returncode == 0, done.stdout + done.stderr
    cycles = npu_cycles(out)
    assert (cycles[("u85-128", "ds_cnn")] > cycles[("u85-256", "ds_cnn")]
            > cycles[("u85-512", "ds_cnn")])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["fvp"]["binary"] == str(binary)
    assert "simulated by fvp-harness sim" in manifest["fvp"]["version"]
    log = "\n".join(path.read_text() for path in (out / "logs").glob("s*/fvp.log"))
    assert f"launch r0-u85-512-ds_cnn: {binary} -C mps4_board.subsystem.ethosu.num_macs=512 " in log
    assert "FVP_SIM_" not in json.dumps(manifest["instances"]), (
        "a real binary gets no simulator knobs")


@pytest.mark.parametrize(("fault", "error"), [
    (["--set", "fvp.sim.runner_fault=hardfault=1"], "HardFault"),
    (["--set", "fvp.sim.runner_fault=hang", "--set", "fvp.timelimit=2"], "TimeLimitExceeded"),
])  # fmt: skip
def test_a_hard_fault_and_a_time_limit_are_infrastructure_retried_and_reported(
    harness, workdir: Path, fault: list[str], error: str
) -> None:
    out = workdir / "results" / f"fault-{error}"
    done = harness("run", SCENARIO, "-o", str(out), "--set", "run.repetitions=1", "--only-model",
                   "ds_cnn", "--only-build", "u85-256", *fault)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "retrying on a fresh instance" in done.stderr  # progress lines
    attempts = [(r["attempt"], r["status"], r["failure_class"], str(r["failure"]).split(":")[0])
                for r in records(out)]
    assert attempts == [(1, "failed", "infrastructure", error),
                        (2, "failed", "infrastructure", error)]
    report = json.loads((out / "report.json").read_text())
    assert [unit["unit_id"] for unit in report["failed_units"]] == ["r0-u85-256-ds_cnn"]
    assert report["failed_units"][0]["failure_class"] == "infrastructure"


def test_doctor_checks_every_builds_launch_parameters(harness) -> None:
    done = harness("doctor", SCENARIO, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all " in done.stdout and "-C parameters exist" in done.stdout
    assert "terminals" in done.stdout and "bare metal" in done.stdout


def test_make_brings_a_bare_metal_scenario_up_to_date_and_then_has_nothing_to_do(
        harness, workdir: Path) -> None:
    layer = workdir / "scenarios" / "small" / "baremetal_small.yaml"
    layer.parent.mkdir(parents=True, exist_ok=True)
    layer.write_text("# yaml-language-server: $schema=../../docs/scenario.schema.json\n"
                     "extends: ../baremetal_macs.yaml\nname: baremetal_small\nrun: {repetitions: "
                     "1}\n")
    results = workdir / "make-results"
    first = harness("make", "-j", "2", "--results", str(results), str(layer.parent))
    assert first.returncode == 0, first.stdout + first.stderr
    assert len(records(results / "baremetal_small")) == len(BUILDS) * len(MODELS)
    again = harness("make", "-n", "--results", str(results), str(layer.parent))
    assert again.returncode == 0 and "up to date" in again.stdout, again.stdout


def readelf_flash(path: Path) -> tuple[int, int]:
    """(flash, .bss bytes) of a runner ELF as binutils' readelf lists its sections (not the
    harness's pyelftools): allocated sections with contents, and allocated NOBITS ones."""
    listing = subprocess.run(["readelf", "-S", "-W", str(path)], capture_output=True, text=True,
                             check=True).stdout
    flash = bss = 0
    for line in listing.splitlines():
        fields = line.replace("[ ", "[").split()
        if (len(fields) >= 8 and fields[0].startswith("[") and fields[0] != "[Nr]" and
            "A" in fields[7]):
            size = int(fields[5], 16)
            if fields[2] == "NOBITS":
                bss += size
            else:
                flash += size
    return flash, bss


@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs binutils' readelf")
@pytest.mark.parametrize("scenario", ["kpi_corstone300_u55", "kpi_corstone320_u85"])
def test_a_kpi_report_shows_flash_and_ram_per_model_and_build(
    harness, workdir: Path, scenario: str
) -> None:
    """Issue 39's bare-metal case: the report of a KPI run shows RAM (method allocator used and
    planned, temp, the runner's .bss) and flash (runner text, rodata, data and their sum, model
    bytes) for each model of its build; the runner's figures are those binutils reads from the ELF
    the unit ran."""
    out = workdir / "results" / scenario
    done = harness("run", f"scenarios/{scenario}.yaml", "-q", "-o", str(out), "--set",
                   "run.repetitions=1")
    assert done.returncode == 0, done.stdout + done.stderr
    every = [r for r in records(out) if r["status"] == "ok"]
    assert {r["model"] for r in every} == set(MODELS)
    runner = workdir / ".artifacts" / scenario / "arm_executor_runner.elf"
    flash, bss = readelf_flash(runner)
    rows = {}
    for line in (out / "report.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) > 4 and cells[1] == "main":
            rows[cells[0], cells[2]] = cells[5]  # (model, metric) -> the median cell
    for record in every:
        model, samples = str(record["model"]), record["samples"]
        assert isinstance(samples, dict)
        assert samples["runner_flash"] == [flash] and samples["runner_bss"] == [bss], model
        assert (samples["runner_flash"][0]
                == sum(samples[f"runner_{part}"][0] for part in ("text", "rodata", "data")))
        model_file = workdir / ".artifacts" / scenario / f"{model}.pte"
        assert samples["model_bytes"] == [model_file.stat().st_size]
        for metric in ("method_allocator_used", "method_allocator_planned", "temp_allocator",
                       "runner_text",
                       "runner_rodata", "runner_data", "runner_bss", "runner_flash", "model_bytes"):
            cell = rows.get((model, metric), "")  # e.g. "131,984 bytes", "512.0 bytes"
            assert (cell.endswith(" bytes") and
                    float(cell[:-6].replace(",", "")) == samples[metric][0]), (
                model, metric, cell)
        assert not any(key.startswith("no_sample.runner") for key in record["extra"]), (
            record["extra"])
