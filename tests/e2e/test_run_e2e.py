"""``fvp-harness run`` end to end on the embedded simulator, through the real command line.

Each test runs the CLI as a child process in a private copy of ``scenarios/`` (so generated
artifacts and results land in tmp, never in the repository), and checks that no simulator process
outlives it.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.cli import assert_no_models_left, run_cli
from tests.helpers import REPO, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.sim]

PUBLISHED_SAVED = {"resnet8": 64, "ds_cnn": 53, "mobilenet_v1_025": 77, "deep_autoencoder": 77}
CRASH_BUILD = ("{fvp_harness} sim runner --driver reuse --cpu-time-report --build-id driver-reuse "
               "--fault crash=2 -o {output}")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the scenarios (their artifacts are built once into <copy>/.artifacts and shared by
    the tests)."""
    root = tmp_path_factory.mktemp("e2e")
    shutil.copytree(REPO / "scenarios", root / "scenarios")
    return root


def fvp_harness(workdir: Path, *args: str,
                timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return run_cli(workdir, *args, timeout=timeout)


def records(folder: Path) -> list[dict]:
    return [json.loads(line)
            for line in (folder / "records.jsonl").read_text().splitlines() if line.strip()]


def _implied_iteration_savings(artifacts: Path) -> dict[str, float]:
    """What the simulator's own cost models say the stock runner's iteration time saves, per model:
    the driver cost model's CPU time (per-inference vs reuse) plus the NPU time and the runner's
    overhead, which both builds pay alike."""
    from fvp_harness.sim.networks.modelfile import decode_model
    from fvp_harness.sim.npu.cycles import NPU_CLOCK_HZ, model_cycles
    from fvp_harness.sim.npu.driver_cost import DEFAULT, DriverSizes
    from fvp_harness.sim.workloads.executor_runner.run import RUNNER_OVERHEAD_MS

    implied = {}
    for model in PUBLISHED_SAVED:
        compiled = decode_model((artifacts / f"{model}.model").read_bytes())
        sizes = DriverSizes.from_mapping(compiled.sizes.to_dict())
        # the runner's own counter
        shared = model_cycles(compiled) / NPU_CLOCK_HZ * 1000 + RUNNER_OVERHEAD_MS
        before = DEFAULT.execute_ms(sizes, "per-inference") + shared
        after = DEFAULT.execute_ms(sizes, "reuse") + shared
        implied[model] = 100.0 * (1.0 - after / before)
    return implied


def test_stock_runners_headline_iteration_time_with_the_same_savings_the_model_implies(
        workdir: Path) -> None:
    """No instrumentation and no build id: the same scenario language picks iteration_time, outputs
    and NPU cycles stay identical, and each saving is the one the simulator's cost model implies
    (within 8 points)."""
    done = fvp_harness(workdir, "run", "scenarios/driver_reuse_stock.yaml")
    assert done.returncode == 0, done.stderr + done.stdout
    out = workdir / "results" / "driver_reuse_stock"
    report = json.loads((out / "report.json").read_text())
    comparison = report["comparison"]
    assert comparison["primary"] == "iteration_time"
    # run.until: 2 rounds were enough
    assert "cpu_time: 0 of 16 units" in comparison["primary_choice"]["reason"]
    assert "Primary metric: **iteration_time**" in (out / "report.md").read_text()
    implied = _implied_iteration_savings(workdir / ".artifacts" / "driver_reuse_stock")
    for model in comparison["models"]:
        assert abs(model["saved_pct"] - implied[model["model"]]) <= 8, (
            model["model"],
            model["saved_pct"],
            implied[model["model"]],
        )
        assert model["verdict"] == "faster"
        assert ({check["name"]: check["status"] for check in model["identity"]}
                == {"outputs": "pass", "npu_cycles": "pass"})
    stored = records(out)
    assert all(r["status"] == "ok" and r["build_id_seen"] is None and
               len(r["extra"]["runner_sha256"]) == 64
               for r in stored), "provenance from the guest's hash, not from a printed id"


def test_driver_reuse_main_command_writes_the_report(workdir: Path) -> None:
    """The README's main command, from the repository-like folder, with the scenario's own
    settings."""
    done = fvp_harness(workdir, "run", "scenarios/driver_reuse.yaml")
    assert done.returncode == 0, done.stderr + done.stdout
    out = workdir / "results" / "driver_reuse"
    for name in ("report.md", "report.csv", "report.json", "report.png", "manifest.json",
                 "records.jsonl"):
        assert (out / name).is_file(), name
    assert "report: results/driver_reuse/report.md" in done.stdout

    with (out / "report.csv").open(newline="") as handle:
        rows = {row["model"]: row for row in csv.DictReader(handle)}
    for model, published in PUBLISHED_SAVED.items():
        row = rows[model]
        assert abs(float(row["saved_pct"]) - published) <= 5, (model, row["saved_pct"])
        assert row["outputs_identical"] == "pass", row
        assert row["npu_identical"] in ("True", "true", "pass"), row
        assert float(row["npu_baseline"]) == float(row["npu_candidate"]) > 0, row
        assert row["verdict"] == "faster"
    stored = records(out)
    # run.until: every model's verdict is settled (or its CI narrow) after min_repetitions, 2 of at
    # most 10 rounds
    assert len(stored) == 16 and all(r["status"] == "ok" for r in stored)
    sampling = json.loads((out / "report.json").read_text())["sampling"]
    assert ({(n["repetitions"], n["reason"] in ("ci_width", "verdict settled")) for n in sampling}
            == {(2, True)})
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest["instances"]) == ["s0"], "one boot serves the whole matrix"
    assert manifest["instances"]["s0"]["stat"], "the --stat block is kept"
    assert manifest["fvp"]["version"] and manifest["artifacts"]["builds.after.runner"]
    report = (out / "report.md").read_text()
    assert "PASS" in report and "| resnet8" in report
    assert ("[report.samples.png](report.samples.png)" in report and
            (out / "report.samples.png").is_file())

    before = {name: (out / name).read_bytes()
              for name in ("report.md", "report.csv", "report.json")}
    again = fvp_harness(workdir, "report", "results/driver_reuse")
    assert again.returncode == 0, again.stderr
    assert {name: (out / name).read_bytes() for name in before} == before, (
        "report must be byte-identical")


def test_smoke_runs_to_a_chosen_folder(workdir: Path) -> None:
    """Also what a reviewer gets when the report is pasted: the simulated label on the line above
    the table (the header lines cut off), the declared source's commit in the table, the machine
    record in report.json and a ``simulated`` column in the CSV."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    done = fvp_harness(workdir, "run", "scenarios/smoke.yaml", "-o", "out/smoke", "-q",
                       "--set",
                       f"builds.after.source={{repository: pytorch/executorch, commit: {commit}}}")
    assert done.returncode == 0, done.stderr + done.stdout
    out = workdir / "out" / "smoke"
    assert ({r["unit_id"] for r in records(out)}
            == {"r0-before-ds_cnn", "r0-after-ds_cnn", "r1-before-ds_cnn",
                                                 "r1-after-ds_cnn"})
    assert (out / "report.md").is_file() and not (out / "report.png").exists(), (
        "smoke asks for md/csv/json")
    pasted = (out / "report.md").read_text().split("\n")[4:]  # no title, no context line
    table = next(i for i, line in enumerate(pasted) if line.startswith("| Model"))
    assert pasted[table - 2].startswith("**Simulated, not measured on an FVP** (fvp-harness "), (
        pasted[table - 2])
    assert f"after (pytorch/executorch@{commit[:12]})" in pasted[table]
    assert "report.samples.png" not in "\n".join(pasted), "no link to a chart smoke does not write"
    machine = json.loads((out / "report.json").read_text())["machine"]
    host = machine["host"]
    assert host["cpus"] and host["os"] and host["memory_bytes"] and len(host["load_before"]) == 3
    assert len(host["load_after"]) == 3 and machine["simulated"] is True
    assert machine["fvp"]["simulator"].startswith("fvp-harness ") and machine["harness"]["version"]
    # a source named for the record (not a local repository): no ref to resolve, no tree read
    # (docs/bisect.md)
    assert machine["builds"]["after"]["source"] == {
        "origin": "scenario",
        "repository": "pytorch/executorch",
        "commit": commit,
        "describe": None,
        "ref": None,
        "tree": None,
    }
    with (out / "report.csv").open(newline="") as handle:
        assert {row["simulated"] for row in csv.DictReader(handle)} == {"true"}


def test_runner_crash_gives_a_failed_unit_that_the_report_shows(workdir: Path) -> None:
    crash_runner = workdir / ".artifacts" / "crash" / "executor_runner-crash"
    done = fvp_harness(
        workdir, "run", "scenarios/smoke.yaml", "-o", "out/crash", "--set", "run.repetitions=1",
        "--set", f"builds.after.runner={crash_runner}", "--set",
        f"builds.after.build={CRASH_BUILD}")
    assert done.returncode == 1, done.stderr + done.stdout
    out = workdir / "out" / "crash"
    failed = [r for r in records(out) if r["status"] == "failed"]
    assert ([(r["unit_id"], r["failure_class"], r["attempt"]) for r in failed]
            == [("r0-after-ds_cnn", "test", 1)])
    assert ("139" in failed[0]["failure"] and
            "Segmentation fault" in (out / failed[0]["log"]).read_text())
    report = (out / "report.md").read_text()
    assert "r0-after-ds_cnn" in report and "139" in report
    assert "FAILED r0-after-ds_cnn" in done.stdout


def test_resume_after_the_run_is_killed_part_way(workdir: Path) -> None:
    """SIGKILL the harness mid-run (no cleanup at all), then --resume: nothing measured twice,
    nothing lost."""
    out = workdir / "out" / "killed"
    args = ["run", "scenarios/smoke.yaml", "-o", str(out), "--set", "run.repetitions=3",
            "--set", "fvp.sim.speed=0.02"]  # about half a second of simulated work per unit
    proc = subprocess.Popen([sys.executable, "-m", "fvp_harness", *args, "-q"], cwd=workdir,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        path = out / "records.jsonl"
        wait_until(lambda: proc.poll() is not None or
                   (path.is_file() and len(path.read_text().splitlines()) >= 2),
                   timeout=120, message="two stored records (or the end of the run)")
        assert proc.poll() is None, (
            "the run ended before it could be killed: " + proc.communicate()[1])
        proc.kill()
        proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert_no_models_left(proc.pid, grace=10.0)  # the simulator notices its parent is gone
    kept = [r for r in records(out) if r["status"] == "ok"]
    assert 2 <= len(kept) < 6

    done = fvp_harness(workdir, *args, "--resume")
    assert done.returncode == 0, done.stderr + done.stdout
    final = [r for r in records(out) if r["status"] == "ok"]
    units = [r["unit_id"] for r in final]
    assert len(units) == 6 and len(set(units)) == 6, "every unit exactly once"
    assert final[: len(kept)] == kept, "records measured before the kill are kept unchanged"
    assert f"{6 - len(kept)} units run, {len(kept)} skipped" in done.stdout


def test_fresh_boot_per_unit_boots_an_instance_per_unit(workdir: Path) -> None:
    done = fvp_harness(workdir, "run", "scenarios/smoke.yaml", "-o", "out/fresh", "-q",
                       "--fresh-boot-per-unit", "--set", "run.repetitions=1")
    assert done.returncode == 0, done.stderr + done.stdout
    manifest = json.loads((workdir / "out" / "fresh" / "manifest.json").read_text())
    assert sorted(manifest["instances"]) == ["s0", "s0.2"]
    assert [r["instance"] for r in records(workdir / "out" / "fresh")] == ["s0", "s0.2"]


def test_lost_console_is_retried_on_a_fresh_instance(workdir: Path) -> None:
    """The simulator drops the console as the fourth runner starts (during the units, however many
    lines the deploy takes): that unit's attempt is recorded as an infrastructure failure and
    retried on a fresh instance, which finishes the run."""
    done = fvp_harness(workdir, "run", "scenarios/smoke.yaml", "-o", "out/drop", "-q", "--set",
                       "run.repetitions=3",
                       "--set", "fvp.sim.fault_console_drop=4", "--set",
                       "fvp.sim.fault_count_matching=--model_path")
    assert done.returncode == 0, done.stderr + done.stdout
    stored = records(workdir / "out" / "drop")
    failed = [r for r in stored if r["status"] == "failed"]
    assert (len(failed) == 1 and failed[0]["failure_class"] == "infrastructure" and
            failed[0]["instance"] == "s0")
    assert "ConsoleLost" in failed[0]["failure"]
    retried = [r for r in stored if r["unit_id"] == failed[0]["unit_id"] and r["status"] == "ok"]
    assert [(r["attempt"], r["instance"]) for r in retried] == [(2, "s0.2")]
    assert len({r["unit_id"] for r in stored if r["status"] == "ok"}) == 6
