"""Issue 17's figures, side by side in one run: where FVP time goes, and how few units an answer
needs.

Run: ``python benchmarks/bench_perf.py [--skip boot ...]``. In a private copy of ``scenarios/`` it
measures, on the embedded simulator, one after the other in this one process:

1. **harness overhead**: a warm run of the seed scenario (``driver_reuse.yaml``) as shipped
   (``run.until``) and as the fixed 3 x 10 matrix (``--set run.until=null --set
   run.repetitions=3``): the share of wall time spent outside the boot (until a ready shell) and the
   units' guest commands (a unit's one framed line: prepare, runner, hashes); unpaced (a unit is the
   simulator's own numpy CPU, ~50 ms) and paced (``fvp.sim.speed``: a unit takes its model time, as
   on a real FVP);
2. **deploy MB/s**, console and ssh, for incompressible (random) bytes and machine code, and the
   console with the settings before issue 17 (2048-character lines, no gzip) for comparison;
3. **units needed, adaptive vs fixed sampling**, with the runner's noise (``runner_jitter``) at its
   default and at 3x: one run of 10 repetitions per noise level, then ``run.adaptive.replay`` over
   its records (exactly what a live run decides) for the shipped target (2 points) and for the CI
   width the fixed 3 x 10 matrix reached; the saving each model reports with adaptive sampling next
   to the fixed matrix's;
4. **make -j 1 vs -j 2** on ``bench_batch.py``'s four scenarios, unpaced and paced;
5. **boot-once vs boot-per-unit** with ``boot_seconds`` 30: the 24-unit fixed matrix on one boot,
   and ``--fresh-boot-per-unit`` measured on 4 of its units (per-unit cost x 24 for the ratio: 24
   real 30 s boots would take 12 minutes; ``--full-fresh`` measures them all);
6. **work stealing** with ``fvp.instances: 4``: the fixed matrix, paced, with the plan's deal kept
   (``--no-steal``) and with stealing;
7. **early boot**: a cold run (every artifact rebuilt) with the model booting while the artifacts
   build, and after them (``--no-early-boot``).

Nothing is asserted: this measures the harness, it does not test it. The machine's load moves every
figure: ``uptime`` is printed first. ``--smoke`` runs every figure at tiny sizes (one model, 2
iterations, short boots) only to prove the script still runs (tests/benchmarks).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from fvp_harness.report.stats.analysis import analyse
from fvp_harness.run import adaptive
from fvp_harness.run.deploy import Deployer
from fvp_harness.run.instances import open_target
from fvp_harness.run.pipeline import RunOptions, RunOutcome, run_scenario
from fvp_harness.scenario import load_scenario
from fvp_harness.store.folder import ResultStore
from fvp_harness.store.records import Record
from fvp_harness.targets.transfer import upload_console

REPO = Path(__file__).resolve().parent.parent
EARLY_BOOT_S = 10.0
"""``boot_seconds`` of the early-boot figure (a real Corstone-1000 boot takes minutes, its builds
about as long)."""
PACE = 0.05
"""``fvp.sim.speed`` of the paced figures: simulated seconds per wall second (a seed-scenario unit
~0.5-1 s)."""


@dataclass(frozen=True)
class Sizes:
    """How big each figure is: the measurement's, or ``--smoke``'s (seconds, only to prove the
    script runs)."""

    base: tuple[str, ...] = ()
    """Overrides (``--set`` values) added to every run."""
    models: tuple[str, ...] = ()
    """Only these models run (empty: all four)."""
    fixed_reps: int = 3
    noise_reps: int = 10
    jitters: tuple[float, ...] = (0.01, 0.03)
    batch: tuple[int, int] = (3, 30)
    """Repetitions and iterations of bench_batch's scenarios."""
    batch_models: dict[str, str] | None = None
    boot_s: float = 30.0
    early_boot_s: float = EARLY_BOOT_S
    fresh_model: str = "resnet8"
    instances: int = 4
    mib: float = 4.0

    @property
    def fixed(self) -> list[str]:
        """Overrides that turn the shipped scenario into the fixed 3 x 10 matrix."""
        return ["run.until=null", f"run.repetitions={self.fixed_reps}"]


SMOKE = Sizes(base=("run.iterations=2",), models=("ds_cnn",), noise_reps=4, jitters=(0.03,),
              batch=(1, 2), batch_models={"kws_a": "ds_cnn", "kws_b": "ds_cnn"}, boot_s=0.5,
              early_boot_s=0.5, fresh_model="ds_cnn", instances=2, mib=0.05)


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _run(scenario: Path, out: Path, overrides: Sequence[str], sizes: Sizes, *, fresh: bool = False,
         only_models: Sequence[str] = (), steal: bool = True, rebuild: bool = False,
         early_boot: bool = True) -> tuple[RunOutcome, float]:
    loaded = load_scenario(scenario, [*overrides, *sizes.base])
    only_models = only_models or sizes.models
    began = time.monotonic()
    outcome = run_scenario(loaded, RunOptions(output_dir=out, fresh_boot_per_unit=fresh,
                                              only_models=tuple(only_models), steal=steal,
                                              rebuild=rebuild, early_boot=early_boot))
    return outcome, time.monotonic() - began


def _overhead(outcome: RunOutcome, wall: float) -> tuple[float, float, float]:
    boot = sum(info.boot_seconds or 0.0 for s in outcome.sessions for info in s.instances)
    commands = sum(s.unit_seconds for s in outcome.sessions)
    return boot, commands, 100.0 * (1.0 - (boot + commands) / wall)


PACED = f"fvp.sim.speed={PACE}"
"""Override that paces the simulator: a unit then takes the model's time (as on a real FVP), not the
simulator's own numpy CPU time."""


def overhead(scenario: Path, work: Path, sizes: Sizes) -> None:
    print("\n1. harness overhead (warm runs: artifacts built, one boot each); unpaced: a unit is "
          f"the simulator's CPU time (~50 ms); paced (fvp.sim.speed {PACE:g}): a unit takes its "
          "model time (~0.5-1 s)")
    fixed = sizes.fixed
    _run(scenario, work / "cold", fixed, sizes)  # builds the artifacts
    for label, overrides in (("shipped (run.until)", []), ("fixed 3 x 10", fixed),
                             ("shipped, paced", [PACED]), ("fixed 3 x 10, paced", [*fixed, PACED])):
        outcome, wall = _run(scenario, work / f"warm-{label.replace(' ', '_')}", overrides, sizes)
        boot, commands, share = _overhead(outcome, wall)
        deployed = sum(info.deploy_seconds or 0.0 for s in outcome.sessions for info in s.instances)
        how = ", ".join(str(info.metadata.get("deploy", "?")) for s in outcome.sessions
                        for info in s.instances)
        phases = ", ".join(f"{k} {v:.2f} s" for k, v in outcome.phase_seconds.items() if v >= 0.005)
        print(f"   {label:20} {outcome.units_run:3d} units  wall {wall:6.2f} s  boot {boot:5.2f} "
              f"s  unit commands {commands:6.2f} s  -> overhead {share:4.1f}% of wall  (deploy "
              f"{deployed:.2f} s by {how}; {phases})")


def deploy(work: Path, mib: float) -> None:
    print(f"\n2. deploy of {mib:g} MiB, sha256 checked in the guest")
    target_bench = _module("bench_target")
    size = int(mib * (1 << 20))
    blobs = {"random": work / "random.bin", "code": work / "code.bin"}
    blobs["random"].write_bytes(os.urandom(size))
    blobs["code"].write_bytes(target_bench._machine_code(size))
    with open_target(target_bench._scenario(), log_dir=work / "deploy-logs") as target:
        for kind, blob in blobs.items():
            began = time.monotonic()
            upload_console(target, blob, f"/tmp/legacy/{kind}.bin", chunk_chars=2048,
                           compress=False)
            legacy = time.monotonic() - began
            rates = {}
            for method in ("console", "ssh"):
                placed = Deployer(target, method=method).deploy(blob, name=f"{method}-{kind}.bin")
                rates[method] = (size / 1e6 / placed.seconds, placed.method)
            print(f"   {kind:7} console before (2048-char lines, plain) {size / 1e6 / legacy:6.2f} "
                  f"MB/s | console now {rates['console'][0]:6.2f} MB/s | ssh "
                  f"{rates['ssh'][0]:7.2f} MB/s ({rates['ssh'][1]})")


def _saved(records: Sequence[Record], spec: object,
           metrics: Sequence[object]) -> dict[str, tuple[float, float]]:
    """model -> (saved %, CI width) of the first comparison."""
    result = analyse(records, spec, metrics)  # type: ignore[arg-type]  # a scenario.Compare
    comparison = result.comparison
    out: dict[str, tuple[float, float]] = {}
    if comparison is not None:
        for row in comparison.models:
            if row.saved_pct is not None and row.ci_low is not None and row.ci_high is not None:
                out[row.model] = (row.saved_pct, row.ci_high - row.ci_low)
    return out


def sampling(scenario: Path, work: Path, sizes: Sizes) -> None:
    print("\n3. units needed: adaptive (run.until, replayed on the records of a 10-repetition run) "
          "vs fixed 3 x 10")
    top = sizes.noise_reps
    for jitter in sizes.jitters:
        out = work / f"noise-{jitter}"
        overrides = ["run.until=null", f"run.repetitions={top}", f"fvp.sim.runner_jitter={jitter}"]
        outcome, _ = _run(scenario, out, overrides, sizes)
        loaded = load_scenario(scenario, overrides)
        spec, metrics = loaded.scenario.compare, loaded.scenario.metrics
        records = ResultStore(out).records()
        models = list(sizes.models or loaded.scenario.models)
        builds = list(loaded.scenario.builds)
        fixed = [r for r in records if r.repetition < sizes.fixed_reps]
        fixed_saved = _saved(fixed, spec, metrics)
        fixed_width = max((width for _, width in fixed_saved.values()), default=float("nan"))
        print(f"   runner_jitter {jitter:g} ({outcome.units_run} units measured); fixed 3 x 10: "
              f"{len(fixed)} units, CI widths "
              f"{', '.join(f'{m} {w:.2f}' for m, (_, w) in fixed_saved.items())} points")
        for label, width in (("target 2 points (shipped)", 2.0),
                             (f"target {fixed_width:.2f} (fixed's widest)",
                                                                    fixed_width)):
            until = adaptive.replay(records, spec, _Until(width, top), models=models, builds=builds,
                                    metrics=metrics)
            cut = [r for r in records if r.repetition < until.get(r.model).repetitions]
            saved = _saved(cut, spec, metrics)
            fewer = 100.0 * (1 - len(cut) / len(fixed))
            diff = max((abs(saved[m][0] - fixed_saved[m][0]) for m in saved if m in fixed_saved),
                       default=float("nan"))
            widest = max((w for _, w in saved.values()), default=float("nan"))
            reasons = ", ".join(f"{m.model} {m.repetitions} ({m.reason})" for m in until.models)
            print(f"     adaptive, {label}: {len(cut)} units ({fewer:+.0f}% fewer than fixed), "
                  f"widest CI {widest:.2f} points, savings within {diff:.2f} points of the fixed "
                  f"matrix's; {reasons}")
        # the CI-width rule alone (no "verdict settled"), aiming at the fixed's widest CI
        needed: dict[str, int] = {}
        prefixes = {k: _saved([r for r in records if r.repetition < k], spec, metrics)
                    for k in range(2, top + 1)}
        for model in models:
            needed[model] = next((k for k in range(2, top + 1)
                                  if prefixes[k].get(model, (0, 1e9))[1] <= fixed_width), top)
        units = sum(needed.values()) * len(builds)
        print(f"     CI-width rule alone, target {fixed_width:.2f} (same CI width as the fixed "
              f"matrix): {units} units ({100.0 * (1 - units / len(fixed)):+.0f}% fewer); "
              f"{', '.join(f'{m} {k}' for m, k in needed.items())}")
        # the smallest fixed matrix that meets the shipped 2-point target everywhere
        for reps in range(2, top + 1):
            uniform = _saved([r for r in records if r.repetition < reps], spec, metrics)
            if uniform and max(w for _, w in uniform.values()) <= 2.0:
                print(f"     smallest fixed matrix with every CI within 2 points: {reps} "
                      f"repetitions = {reps * len(models) * len(builds)} units")
                break
        else:
            print(f"     no fixed matrix up to {top} repetitions brings every CI within 2 points")


class _Until:
    def __init__(self, width: float, top: int) -> None:
        self.ci_width, self.min_repetitions, self.max_repetitions = width, 2, top


BATCH_PACE = 0.2
"""``fvp.sim.speed`` of the paced batch: bench_batch's 30-iteration units take ~0.3-0.6 s of model
time."""


def batch(work: Path, sizes: Sizes) -> None:
    bench = _module("bench_batch")
    count = len(sizes.batch_models or bench.MODELS)
    print(f"\n4. make -j 1 vs -j 2 (bench_batch.py's {count} scenarios, {sizes.batch[0]} "
          f"repetitions x {sizes.batch[1]} iterations); unpaced: the units are two Python "
          f"simulators' CPU on 2 cores; paced (fvp.sim.speed {BATCH_PACE:g}): the units take model "
          "time, as each real FVP on its own core")
    # late: only this section needs the engine
    from fvp_harness.batch.engine import MakeOptions, make

    for label, speed in (("unpaced", 0.0), ("paced", BATCH_PACE)):
        folder = work / f"batch-{label}"
        scenarios = bench.write_scenarios(folder, *sizes.batch, speed, sizes.batch_models)
        make([scenarios], MakeOptions(jobs=2, results_base=folder / "warm"))
        one = bench.timed_make([scenarios], MakeOptions(jobs=1, results_base=folder / "j1"))
        two = bench.timed_make([scenarios], MakeOptions(jobs=2, results_base=folder / "j2"))
        print(f"   {label:8} -j 1 {one.wall:6.2f} s ({one.result.boots} boot(s)), -j 2 "
              f"{two.wall:6.2f} s ({two.result.boots} boot(s)): {one.wall / two.wall:.2f}x")


def stealing(scenario: Path, work: Path, sizes: Sizes) -> None:
    print(f"\n6. work stealing, fvp.instances {sizes.instances} (fixed 3 x 10 matrix, paced at "
          f"fvp.sim.speed {PACE:g}): the plan's deal kept (--no-steal) vs an idle instance taking "
          "not-started groups of the busier one")
    overrides = [*sizes.fixed, PACED, f"fvp.instances={sizes.instances}"]
    for label, steal in (("fixed deal", False), ("stealing", True)):
        outcome, wall = _run(scenario, work / f"steal-{steal}", overrides, sizes, steal=steal)
        busy = ", ".join(f"{info.name} {info.units} units" for s in outcome.sessions
                         for info in s.instances)
        dealt = {unit.id: f"s{unit.session}" for unit in outcome.plan.units}
        moved = sum(record.instance.split(".")[0] != dealt[record.unit_id]
                    for s in outcome.sessions for record in s.records)
        print(f"   {label:10} {outcome.units_run} units in {wall:6.2f} s ({busy}; {moved} ran on "
              "another instance than dealt)")


def boots(scenario: Path, work: Path, full: bool, sizes: Sizes) -> None:
    print(f"\n5. boot-once vs boot-per-unit, boot_seconds {sizes.boot_s:g} (fixed 3 x 10 matrix, "
          "24 units)")
    slow = [*sizes.fixed, f"fvp.sim.boot_seconds={sizes.boot_s:g}"]
    once, once_wall = _run(scenario, work / "boot-once", slow, sizes)
    if full:
        fresh, fresh_wall = _run(scenario, work / "boot-fresh", slow, sizes, fresh=True)
        per_unit, measured = fresh_wall / max(1, fresh.units_run), fresh.units_run
    else:
        fresh, fresh_wall = _run(scenario, work / "boot-fresh", [*slow, "run.repetitions=2"], sizes,
                                 fresh=True, only_models=[sizes.fresh_model])
        per_unit, measured = fresh_wall / max(1, fresh.units_run), fresh.units_run
    total = per_unit * once.units_run
    print(f"   boot once: {once.units_run} units in {once_wall:6.1f} s; boot per unit: "
          f"{per_unit:5.1f} s per unit (measured on {measured} units) -> {total:6.1f} s for "
          f"{once.units_run} units: boot-once {total / once_wall:.1f}x faster")


def early_boot(scenario: Path, work: Path, sizes: Sizes) -> None:
    print("\n7. early boot: a cold run (--rebuild: every artifact built again), boot_seconds "
          f"{sizes.early_boot_s:g}, the model booting while the artifacts build vs after them "
          "(--no-early-boot)")
    overrides = [*sizes.fixed, f"fvp.sim.boot_seconds={sizes.early_boot_s:g}"]
    walls = {}
    for label, early in (("after the builds", False), ("while they build", True)):
        outcome, wall = _run(scenario, work / f"early-{early}", overrides, sizes, rebuild=True,
                             early_boot=early)
        walls[early] = wall
        boot = sum(info.boot_seconds or 0.0 for s in outcome.sessions for info in s.instances)
        print(f"   boot {label:17} {wall:6.2f} s (builds "
              f"{outcome.phase_seconds.get('build', 0.0):5.2f} s, boot {boot:5.2f} s, "
              f"{outcome.units_run} units)")
    print(f"   early boot saves {walls[False] - walls[True]:.2f} s: "
          f"{walls[False] / walls[True]:.2f}x")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=["overhead", "deploy", "sampling", "batch", "boot", "steal", "early"],
    )
    parser.add_argument("--mib", type=float, default=None, help="deploy figure's size (default 4)")
    parser.add_argument("--full-fresh", action="store_true",
                        help="boot per unit for all 24 units (12 minutes)")
    parser.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    parser.add_argument("--smoke", action="store_true",
                        help="every figure at tiny sizes (seconds): only proves the script still "
                             "runs")
    args = parser.parse_args(argv)
    sizes = SMOKE if args.smoke else Sizes()
    print("load:", os.getloadavg())
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-perf-"))
    try:
        shutil.copytree(REPO / "scenarios", work / "scenarios", dirs_exist_ok=True)
        shutil.rmtree(work / ".artifacts", ignore_errors=True)
        scenario = work / "scenarios" / "driver_reuse.yaml"
        if "overhead" not in args.skip:
            overhead(scenario, work, sizes)
        if "deploy" not in args.skip:
            deploy(work, args.mib or sizes.mib)
        if "sampling" not in args.skip:
            sampling(scenario, work, sizes)
        if "batch" not in args.skip:
            batch(work, sizes)
        if "boot" not in args.skip:
            boots(scenario, work, args.full_fresh, sizes)
        if "steal" not in args.skip:
            stealing(scenario, work, sizes)
        if "early" not in args.skip:
            early_boot(scenario, work, sizes)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print("load:", os.getloadavg())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
