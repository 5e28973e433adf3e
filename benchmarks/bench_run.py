"""What booting once per session buys, and how much of a run is the harness's own overhead.

Run: ``python benchmarks/bench_run.py [--set run.repetitions=1 ...] [--keep DIR]``. In a private
copy of ``scenarios/`` it runs ``driver_reuse.yaml`` three times through the library
(``pipeline.run_scenario``, what ``fvp-harness run`` calls):

1. cold: artifacts built from nothing, then the matrix (one boot);
2. warm: the same matrix again, artifacts already built (one boot);
3. fresh boot: the same matrix with ``--fresh-boot-per-unit`` (one boot per unit, how
   one-launch-per-run scripts work).

It prints, measured side by side in this one run:

- the wall-time ratio fresh-boot / warm (how much slower the per-unit-launch way is);
- the harness overhead share of the warm run: the part of wall time *not* spent waiting for the
  simulator (its boot until a ready shell, and the runner commands themselves), i.e. version query,
  artifact hashing, deploy, per-unit prepare/hash/cleanup commands, scraping, storing, analysis and
  the report;
- the same share computed from the simulator's own ``--stat`` CPU time (user + system) for
  reference;
- the savings per model next to the published 64/53/77/77 %.

Nothing is asserted: this is a measurement of the harness itself, not a test.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from fvp_harness.run.pipeline import RunOptions, RunOutcome, run_scenario
from fvp_harness.scenario import load_scenario

REPO = Path(__file__).resolve().parent.parent
SMOKE = ["run.until=null", "run.repetitions=1", "run.iterations=2"]
"""``--smoke``'s overrides (with one model): seconds, only to prove the script still runs."""
PUBLISHED = {"resnet8": 64, "ds_cnn": 53, "mobilenet_v1_025": 77, "deep_autoencoder": 77}


def _seconds(text: object) -> float:
    try:
        return float(str(text).rstrip("s"))
    except ValueError:
        return 0.0


def run_once(scenario: Path, out: Path, overrides: list[str], *, fresh: bool,
             models: tuple[str, ...] = ()) -> tuple[RunOutcome, float]:
    loaded = load_scenario(scenario, overrides)
    began = time.monotonic()
    outcome = run_scenario(loaded, RunOptions(output_dir=out, fresh_boot_per_unit=fresh,
                                              only_models=models))
    return outcome, time.monotonic() - began


def breakdown(outcome: RunOutcome, wall: float) -> dict[str, float]:
    """Wall time split into: booting (until a ready shell), runner commands, and everything else."""
    boot = sum(info.boot_seconds or 0.0 for s in outcome.sessions for info in s.instances)
    deploy = sum(info.deploy_seconds or 0.0 for s in outcome.sessions for info in s.instances)
    runner = sum(s.unit_seconds for s in outcome.sessions)
    sim_cpu = 0.0
    for session in outcome.sessions:
        for info in session.instances:
            stat = info.metadata.get("stat") or {}
            if isinstance(stat, dict):
                sim_cpu += _seconds(stat.get("User time")) + _seconds(stat.get("System time"))
    return {"wall": wall, "boot": boot, "deploy": deploy, "runner": runner, "sim_cpu": sim_cpu,
            "instances": float(sum(len(s.instances) for s in outcome.sessions))}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="PATH=VALUE",
                        help="scenario overrides for all three runs (e.g. run.repetitions=1)")
    parser.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes (seconds): only proves the script still runs "
                             "(tests/benchmarks)")
    args = parser.parse_args(argv)
    models = ("ds_cnn",) if args.smoke else ()
    if args.smoke:
        args.overrides = [*SMOKE, *args.overrides]
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-run-"))
    try:
        shutil.copytree(REPO / "scenarios", work / "scenarios", dirs_exist_ok=True)
        shutil.rmtree(work / ".artifacts", ignore_errors=True)
        scenario = work / "scenarios" / "driver_reuse.yaml"
        cold, cold_wall = run_once(scenario, work / "cold", args.overrides, fresh=False,
                                   models=models)
        warm, warm_wall = run_once(scenario, work / "warm", args.overrides, fresh=False,
                                   models=models)
        fresh, fresh_wall = run_once(scenario, work / "fresh", args.overrides, fresh=True,
                                     models=models)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)

    units = warm.units_run
    print(f"driver_reuse.yaml: {units} units, overrides {args.overrides or 'none'}")
    print(f"  cold (builds artifacts, one boot): {cold_wall:6.1f} s  (artifact builds "
          f"{cold.phase_seconds.get('build', 0.0):.1f} s)")
    print(f"  warm (one boot):                   {warm_wall:6.1f} s")
    print(f"  fresh boot per unit:               {fresh_wall:6.1f} s")
    print(f"  ratio fresh-boot / warm:           {fresh_wall / warm_wall:6.2f} x")
    for name, outcome, wall in (("warm", warm, warm_wall), ("fresh", fresh, fresh_wall)):
        parts = breakdown(outcome, wall)
        inside = parts["boot"] + parts["runner"]
        print(f"  {name}: {parts['instances']:.0f} instance(s); boot {parts['boot']:.1f} s, runner "
              f"commands {parts['runner']:.2f} s, deploy {parts['deploy']:.2f} s; harness overhead "
              f"{100 * (1 - inside / wall):.0f}% of wall time (outside boot + runner); simulator "
              f"--stat CPU {parts['sim_cpu']:.1f} s = {100 * parts['sim_cpu'] / wall:.0f}% of wall")
    phases = ", ".join(f"{k} {v:.2f} s" for k, v in warm.phase_seconds.items())
    print(f"  warm phases: {phases}")
    comparison = warm.analysis.comparison
    if comparison is not None:
        print("  savings (warm run) vs published:")
        for model in comparison.models:
            saved = "-" if model.saved_pct is None else f"{model.saved_pct:.1f}%"
            print(f"    {model.model:<18} {saved:>7}  published {PUBLISHED.get(model.model, '?')}%")


if __name__ == "__main__":
    main()
