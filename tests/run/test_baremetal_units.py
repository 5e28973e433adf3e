"""Bare-metal units in ``run.execute``: each unit is one launch (the runner, the build's FVP
parameters, the model by semihosting or at its data address), the outputs are the files the runner
wrote, the record carries what was launched, and a hard fault is retried like any infrastructure
failure. The launching target here is a fake (a ``HostTarget`` whose ``launch`` prints upstream's
perf block), so these tests start no process; the real target is in tests/targets/test_baremetal.py,
the simulator end to end in tests/e2e/test_baremetal_e2e.py. Also: the perf block parsers against
text made from upstream's format strings, garbage of old ``%d`` builds included."""

# ruff: noqa: UP031  -- old builds' lines are made with their printf format strings, kept verbatim
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import ClassVar

import pytest

from fvp_harness.batch.stale import _unit_artifacts
from fvp_harness.errors import HardFault
from fvp_harness.run.execute import execute_plan
from fvp_harness.run.lane_specs import ARTIFACT_CACHE_ENV, relocated
from fvp_harness.run.launch_unit import PRINTED_OUTPUTS
from fvp_harness.run.plan import build_plan
from fvp_harness.run.scrape import scrape
from fvp_harness.scenario import MetricSpec, load_scenario
from fvp_harness.store.folder import ResultStore
from fvp_harness.targets.baremetal import BaremetalLaunch, LaunchesModel, LaunchResult
from fvp_harness.targets.host import HostTarget
from tests.baremetal_fake import perf_block

NPU = {"u85-128": 78_125, "u85-256": 39_062}

SCENARIO = """\
name: bm
platform: corstone320-u85
fvp: {{binary: sim}}
builds:
  u85-128:
    runner: r128.elf
    fvp_params: {{mps4_board.subsystem.ethosu.num_macs: 128}}
    {address128}
    models:
      resnet8: {{file: m128/resnet8.pte}}
  u85-256:
    runner: r256.elf
    fvp_params: {{mps4_board.subsystem.ethosu.num_macs: 256}}
    {address}
models:
  resnet8: {{file: m256/resnet8.pte, inputs: [{{file: resnet8.input.bin}}]}}
run: {{repetitions: 2, retries: 1{run}}}
metrics: [{{name: bm_npu_cycles, required: true}}, bm_cpu_cycles, bm_execute_cycles]
compare:
  baseline: u85-128
  candidate: u85-256
  primary: bm_npu_cycles
  expect_identical: [outputs]
"""


class FakeBaremetal(HostTarget):
    """A bare-metal target whose launches print upstream's perf block for the build's NPU and write
    the runner's output where semihosting would; ``faults`` names units whose first launch
    hard-faults."""

    launches: ClassVar[list[BaremetalLaunch]] = []
    etdump: ClassVar[bool] = False
    """Write ``etdump.bin`` into the semihosting folder, as a SEMIHOSTING runner built with --etdump
    does."""

    def __init__(self, log_dir: Path, name: str, faults: set[str]) -> None:
        super().__init__(log_dir=log_dir, name=name)
        self.faults = faults

    def launch(self, request: BaremetalLaunch, timeout: float | None = None) -> LaunchResult:
        FakeBaremetal.launches.append(request)
        if request.label in self.faults:
            self.faults.discard(request.label)
            raise HardFault(f"{request.label}: the program hit a hard fault (Hard fault. irq=-13)",
                            output="Hard fault. irq=-13", log_path=self.log_dir / "fvp.log")
        build = request.runner.stem.replace("r", "u85-")
        if request.cwd is not None:  # the runner reads -m/-i in its folder and writes -o there
            for name, source in request.files.items():
                (request.cwd / name).write_bytes(Path(source).read_bytes())
            (request.cwd / "out-0.bin").write_bytes(b"the same output")
            if FakeBaremetal.etdump:
                # timings: differ
                (request.cwd / "etdump.bin").write_bytes(b"ED00" + request.label.encode())
        text = "\n".join(perf_block(NPU[build], 52_000, 61_000, inferences=2)) + "\n"
        # no semihosting: ET_LOG_DUMP_OUTPUT prints the outputs (printf, no prefix)
        if request.cwd is None:
            text += "".join(f"Output[0][{j}]: (char) {j - 5}\n" for j in range(10))
        handed = {str(path): f"{len(str(path)):064x}"
                  for path in [request.runner, *request.files.values()]}
        return LaunchResult(command=f"FVP -a {request.runner}", exit_status=0, output=text,
                            handed=handed)


def run_units(tmp_path: Path, *, address: str = "", address128: str = "", run: str = "",
              faults: set[str] | None = None):
    for name in ("r128.elf", "r256.elf", "m128/resnet8.pte", "m256/resnet8.pte",
                 "resnet8.input.bin"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    path = tmp_path / "bm.yaml"
    path.write_text(SCENARIO.format(address=address, address128=address128, run=run))
    plan = build_plan(load_scenario(path))
    store = ResultStore(tmp_path / "out")
    FakeBaremetal.launches = []
    pending = set(faults or ())
    targets: list[FakeBaremetal] = []

    class Opened:
        def __init__(self, name: str, log_dir: Path) -> None:
            self.target = FakeBaremetal(log_dir, name, pending)
            targets.append(self.target)

        def __enter__(self) -> FakeBaremetal:
            self.target.open()
            return self.target

        def __exit__(self, *exc: object) -> None:
            self.target.close()

    outcomes = execute_plan(plan, store, Opened)
    assert isinstance(targets[0], LaunchesModel)
    return plan, store.records(), outcomes


def test_each_unit_is_one_launch_with_its_builds_parameters_and_files(tmp_path: Path) -> None:
    plan, _, _ = run_units(tmp_path)
    assert len(FakeBaremetal.launches) == len(plan.units) == 4
    by_unit = {launch.label: launch for launch in FakeBaremetal.launches}
    low, high = by_unit["r0-u85-128-resnet8"], by_unit["r0-u85-256-resnet8"]
    assert (low.params == {"mps4_board.subsystem.ethosu.num_macs": 128} and
            low.runner == tmp_path / "r128.elf")
    assert low.cmd_line == "r128.elf -m resnet8.pte -o out -i resnet8.input.bin"
    assert low.files == {"resnet8.pte": tmp_path / "m128/resnet8.pte",
                         "resnet8.input.bin": tmp_path / "resnet8.input.bin"}
    assert high.files["resnet8.pte"] == tmp_path / "m256/resnet8.pte" and not high.data
    assert low.cwd is not None and low.cwd.name == "r0-u85-128-resnet8"


def test_records_hold_the_per_run_figures_the_outputs_and_what_was_launched(tmp_path: Path) -> None:
    _, records, _ = run_units(tmp_path)
    assert all(record.status == "ok" for record in records)
    low = next(record for record in records if record.unit_id == "r0-u85-128-resnet8")
    assert low.samples == {"bm_npu_cycles": [39_062.5], "bm_cpu_cycles": [30_500.0],
                           "bm_execute_cycles": [26_000.0]}
    assert list(low.outputs) == ["out-0.bin"], (
        "the model and input put into the folder are not outputs")
    assert low.extra["model_sha256"] == f"{len(str(tmp_path / 'm128/resnet8.pte')):064x}"
    assert "inputs_sha256" in low.extra and len(str(low.extra["runner_sha256"])) == 64
    assert low.extra["executions"] == 2
    assert {record.outputs["out-0.bin"] for record in records} == {low.outputs["out-0.bin"]}


def test_a_semihosting_runners_etdump_is_kept_and_is_not_an_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(FakeBaremetal, "etdump", True)
    _, records, _ = run_units(tmp_path)
    assert all(list(record.outputs) == ["out-0.bin"] and record.extra["etdump"] == "etdump.bin"
               for record in records)
    assert (tmp_path / "out" / "fetched" / "r0-u85-128-resnet8" / "etdump.bin").read_bytes() == (
        b"ED00r0-u85-128-resnet8")


def test_a_data_address_build_places_its_model_with_data(tmp_path: Path) -> None:
    run_units(tmp_path, address="data_address: '0x76000000'")
    high = next(launch for launch in FakeBaremetal.launches if launch.label == "r0-u85-256-resnet8")
    assert high.data == [(tmp_path / "m256/resnet8.pte", "0x76000000")]
    run_units(tmp_path, address="data_address: true", address128="data_address: '0x70000000'",
              run=", cmd_line: false")
    high = next(launch for launch in FakeBaremetal.launches if launch.label == "r0-u85-256-resnet8")
    assert high.data == [(tmp_path / "m256/resnet8.pte", "0x70000000")]  # the profile's address
    assert high.cmd_line is None and high.cwd is None and not high.files
    printed = "\n".join(f"Output[0][{j}]: (char) {j - 5}" for j in range(10))
    # the second run's (the first one's stay stored)
    records = ResultStore(tmp_path / "out").records()[-4:]
    assert {json.dumps(record.outputs) for record in records} == {
        json.dumps({PRINTED_OUTPUTS: hashlib.sha256(printed.encode()).hexdigest()})}


def test_a_hard_fault_is_retried_on_a_fresh_instance_and_both_attempts_are_recorded(
        tmp_path: Path) -> None:
    _, records, outcomes = run_units(tmp_path, faults={"r1-u85-256-resnet8"})
    attempts = [record for record in records if record.unit_id == "r1-u85-256-resnet8"]
    assert [(r.attempt, r.status, r.failure_class) for r in attempts] == [
        (1, "failed", "infrastructure"),
        (2, "ok", None),
    ]
    assert attempts[0].failure is not None and attempts[0].failure.startswith("HardFault: ")
    assert [instance.name for instance in outcomes[0].instances] == ["s0", "s0.2"]


# --- the perf block, from upstream's format strings -----------------------------------------------

SPECS = [MetricSpec(name=name) for name in ("bm_npu_cycles", "bm_execute_cycles", "bm_cpu_cycles")]


@pytest.mark.parametrize("inferences", [1, 3, 10])
def test_the_perf_block_gives_the_per_inference_figure_once_per_run(inferences: int) -> None:
    text = "\n".join(perf_block(85_094 * inferences, 100_500 * inferences, 120_001 * inferences,
                                inferences))
    result = scrape(text + "\n", SPECS)
    assert result.samples == {"bm_npu_cycles": [85_094.0], "bm_execute_cycles": [100_500.0],
                              "bm_cpu_cycles": [120_001.0]}
    assert result.executions == inferences and not result.warnings


def test_a_total_that_is_not_the_per_inference_figure_times_the_count_is_rounding_safe() -> None:
    """%.2f of total / n: 1000 cycles over 3 inferences print 333.33, which is not a mismatch."""
    result = scrape("\n".join(perf_block(1000, 1000, 1000, 3)) + "\n", SPECS)
    assert result.samples["bm_npu_cycles"] == [333.33] and not result.flagged


def old_percent_d(value: int) -> int:
    """What ``%d`` printed for a 64-bit counter on a 32-bit Cortex-M: its low word as a signed
    int."""
    low = value & 0xFFFFFFFF
    return low - (1 << 32) if low & 0x80000000 else low


def test_old_percent_d_totals_are_flagged_not_averaged() -> None:
    """Builds before upstream #21911 printed the totals with %d: the per-inference double still
    reads right, the total is the low 32 bits: negative (>= 2**31) or wrapped (>= 2**32). Both are
    rejected with a reason."""
    n = 10
    negative, wrapped = 3_000_000_000, 5_000_000_000  # execute and runtime totals of a long run
    lines = [
        "I [executorch:arm_perf_monitor.cpp:150 StopMeasurements()] NPU Inferences : %d" % n,
        "I [executorch:arm_perf_monitor.cpp:160 StopMeasurements()] ethos-u : cycle_cnt : %d "
        "cycles (%.2f per inference)" % (old_percent_d(negative), negative / n),
        "I [executorch:arm_perf_monitor.cpp:175 StopMeasurements()] Inference runtime: %d CPU "
        "cycles total (%.2f per inference)" % (old_percent_d(wrapped), wrapped / n),
        "I [executorch:arm_perf_monitor.cpp:210 StopMeasurements()] ethosu_pmu_cycle_cntr : % u "
        "(%.2f per inference)" % (340_376, 340_376 / n),
    ]
    result = scrape("\n".join(lines) + "\n",
                    [*SPECS[:2], MetricSpec(name="bm_cpu_cycles", required=True)])
    assert wrapped / n < old_percent_d(wrapped), "the wrapped total looks plausible on its own"
    assert result.samples == {"bm_npu_cycles": [34_037.6], "bm_execute_cycles": [],
                              "bm_cpu_cycles": []}
    assert result.rejected == {"bm_execute_cycles": 1, "bm_cpu_cycles": 1}
    assert result.missing == ["bm_cpu_cycles"]
    assert any("bm_cpu_cycles" in warning and
               "is not 10 (NPU Inferences) times the per-inference figure" in warning
               for warning in result.warnings)
    assert any("bm_execute_cycles" in warning and "negative" in warning
               for warning in result.warnings)


def test_every_block_of_a_server_mode_run_is_judged_by_its_own_count() -> None:
    """StopMeasurements(1) after each inference of --server_mode: one block per inference."""
    text = "\n".join([*perf_block(1000, 2000, 3000, 1), *perf_block(1002, 2000, 3000, 1)]) + "\n"
    result = scrape(text, SPECS)
    assert result.samples["bm_npu_cycles"] == [1000.0, 1002.0] and not result.flagged


def test_a_dask_worker_gets_every_builds_own_model_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shipped artifacts (``make --executor dask``) are relocated into the worker's cache, the
    per-build model files of ``builds.<name>.models`` included (the batch engine ships every file a
    unit reads)."""

    plan, _, _ = run_units(tmp_path)
    unit = next(unit for unit in plan.units if unit.build == "u85-128")
    assert "builds.u85-128.models.resnet8.file" in _unit_artifacts(plan, unit)
    blobs, hashes = {}, {}
    for state in plan.artifacts.values():
        assert state.sha256 is not None
        blobs[state.sha256] = state.path.read_bytes()
        hashes[str(state.path)] = state.sha256
    monkeypatch.setenv(ARTIFACT_CACHE_ENV, str(tmp_path / "cache"))
    moved = relocated(plan.scenario, blobs, hashes)
    own = moved.model_file("u85-128", "resnet8")
    assert own.startswith(str(tmp_path / "cache")) and Path(own).read_text() == "m128/resnet8.pte"
    assert Path(moved.model_file("u85-256", "resnet8")).read_text() == "m256/resnet8.pte"
