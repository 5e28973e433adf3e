"""What the harness's own analysis and report cost (issue 17: harness overhead under 5 % of a warm
run).

Run: ``python benchmarks/bench_analysis.py [--folder RESULTS_DIR] [--calls 20]``. Prints, from one
run:

- ms per ``report.analysis.analyse`` call on synthetic record sets of 16, 24, 80 and 400 records (2
  builds, 4 models, 10 iterations per record: 2, 3, 10 and 50 repetitions), with the
  ``driver_reuse`` compare spec and metrics;
- ms per ``run.adaptive.advance`` that judges all four models (what ``StoppingRule.wanted`` costs
  after a round, while the model idles), on 16 and 80 records;
- ms for the whole report of a stored folder (``run.pipeline.rebuild_report``: the ``run.until``
  replay, the analysis, markdown, CSV, JSON and the PNG chart), first call in this process and the
  median after it, and the PNG chart alone. The folder is ``--folder`` (copied into a temp dir,
  never written) or, by default, a warm ``driver_reuse`` run on the embedded simulator in a private
  temp copy of ``scenarios/`` (artifacts built there first, about 10 s).

Medians of ``--calls`` calls (the machine is shared, so single figures move by 10-20 %). Nothing is
asserted: this is a measurement of the harness itself, not a test.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from fvp_harness.report.stats.analysis import analyse
from fvp_harness.run import adaptive
from fvp_harness.run.manifest import Manifest
from fvp_harness.run.pipeline import RunOptions, run_scenario
from fvp_harness.run.reporting import rebuild_report
from fvp_harness.scenario import load_scenario
from fvp_harness.scenario.model import Compare, MetricSpec, Until
from fvp_harness.store.folder import ResultStore
from fvp_harness.store.records import Record

REPO = Path(__file__).resolve().parent.parent
BUILDS = ("before", "after")
MODELS = {"resnet8": (2.63, 0.94), "ds_cnn": (1.97, 0.93), "mobilenet_v1_025": (4.23, 1.01),
          "deep_autoencoder": (4.05, 0.92)}
SPEC = Compare(baseline="before", candidate="after", primary=["cpu_time", "iteration_time"],
               expect_identical=["outputs", "npu_cycles"], min_effect=5)
METRICS = [MetricSpec(name="cpu_time"), MetricSpec(name="iteration_time", required=True),
           MetricSpec(name="npu_cycles")]
UNTIL = Until(ci_width=2, min_repetitions=2, max_repetitions=50)


def synthetic_records(repetitions: int, seed: int = 1) -> list[Record]:
    """``repetitions`` rounds of 2 builds x 4 models, 10 iterations each, with the driver_reuse
    metrics."""
    rng = np.random.default_rng(seed)
    out: list[Record] = []
    second = 0
    for rep in range(repetitions):
        for model, centres in MODELS.items():
            for build, centre in zip(BUILDS, centres, strict=True):
                level = centre * (1 + rng.normal(0, 0.01))
                cpu = [round(float(v), 3) for v in level * (1 + rng.normal(0, 0.005, 10))]
                unit = f"r{rep}-{build}-{model}"
                out.append(Record.model_validate({
                    "scenario": "driver_reuse", "key": f"key-{unit}", "unit_id": unit,
                    "instance": "s0",
                    "build": build, "model": model, "repetition": rep, "status": "ok",
                    "samples": {"cpu_time": cpu, "iteration_time": [v + 0.1 for v in cpu],
                                "npu_cycles": [84546.0] * 10},
                    "metric_units": {"cpu_time": "ms", "iteration_time": "ms",
                                     "npu_cycles": "cycles"},
                    "outputs": {"out-0.bin": "ab" * 32},
                    "started": f"2026-03-01T{10 + second // 3600:02d}:{second // 60 % 60:02d}:"
                               f"{second % 60:02d}Z",
                }))
                second += 1
    return out


def median_ms(call: Callable[[], object], calls: int) -> float:
    """Median wall time of ``calls`` calls of ``call``, in ms (one warm-up call first)."""
    call()
    times = []
    for _ in range(calls):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return 1000 * statistics.median(times)


SMOKE = ["run.until.max_repetitions=2", "run.iterations=2"]
"""``--smoke``'s overrides of the simulator run (with one model): seconds, only to prove the script
runs."""


def sim_folder(work: Path, smoke: bool = False) -> Path:
    """A warm ``driver_reuse`` run on the embedded simulator in ``work`` (artifacts built by a first
    run); prints the run's own report phase (what ``fvp-harness run`` spends on it)."""
    shutil.copytree(REPO / "scenarios", work / "scenarios")
    loaded = load_scenario(work / "scenarios" / "driver_reuse.yaml", SMOKE if smoke else [])
    models = ("ds_cnn",) if smoke else ()
    cold = run_scenario(loaded, RunOptions(output_dir=work / "cold", only_models=models))
    warm = run_scenario(loaded, RunOptions(output_dir=work / "warm", only_models=models))
    phases = [f"{1000 * run.phase_seconds.get('report', 0.0):.0f} ms" for run in (cold, warm)]
    print(f"sim runs of driver_reuse ({warm.units_run} units): report phase {phases[0]} (cold), "
          f"{phases[1]} (warm)")
    return work / "warm"


def report_figures(folder: Path, calls: int) -> None:
    """The report of ``folder``: the first ``rebuild_report`` in this process, the median after, and
    parts of it."""
    began = time.perf_counter()
    outcome = rebuild_report(folder)
    first = 1000 * (time.perf_counter() - began)
    whole = median_ms(lambda: rebuild_report(folder), calls)
    from fvp_harness.report.rendering.charts import render_png  # late: after the timed first call

    png = median_ms(lambda: render_png(outcome.analysis, folder / "bench.png", "a title"), calls)
    (folder / "bench.png").unlink(missing_ok=True)
    manifest = Manifest.read(ResultStore(folder, create=False))
    assert manifest is not None
    scenario = manifest.resolved_scenario
    records = ResultStore(folder, create=False).records()
    line = f"report of {len(records)} records: first call {first:7.1f} ms, then {whole:7.1f} ms"
    until = scenario.run.until
    if until is not None:
        models = list(dict.fromkeys(r.model for r in records))
        replay = median_ms(
            lambda: adaptive.replay(
                records,
                scenario.compare,
                until,
                models=models,
                builds=list(scenario.builds),
                metrics=scenario.metrics,
            ),
            calls,
        )
        line += f" (run.until replay {replay:6.1f} ms"
    else:
        line += " ("
    analysis = median_ms(lambda: analyse(records, scenario.compare, scenario.metrics), calls)
    print(f"{line}, analyse {analysis:6.1f} ms, PNG chart {png:6.1f} ms)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path,
                        help="a stored results folder to report (default: a sim run)")
    parser.add_argument("--calls", type=int, default=20, help="calls per figure (median)")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes (seconds): only proves the script still runs "
                             "(tests/benchmarks)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.calls = 1
    for reps in (2, 3) if args.smoke else (2, 3, 10, 50):
        records = synthetic_records(reps)

        def whole(records: list[Record] = records) -> object:
            return analyse(records, SPEC, METRICS)

        ms = median_ms(whole, args.calls)
        print(f"analyse  {len(records):4d} records: {ms:8.1f} ms per call")
    for reps in (2,) if args.smoke else (2, 10):
        records = synthetic_records(reps)
        state = adaptive.SamplingState(tuple(adaptive.ModelSampling(m, reps - 1) for m in MODELS))

        def step(state: adaptive.SamplingState = state, records: list[Record] = records) -> object:
            return adaptive.advance(state, records, SPEC, UNTIL, builds=BUILDS, metrics=METRICS)

        print(f"advance  {len(records):4d} records: {median_ms(step, args.calls):8.1f} ms per call "
              "(4 models judged)")
    with tempfile.TemporaryDirectory(prefix="bench-analysis-") as temp:
        work = Path(temp)
        if args.folder is not None:
            folder = work / "folder"
            shutil.copytree(args.folder, folder)
        else:
            folder = sim_folder(work, args.smoke)
        report_figures(folder, 1 if args.smoke else max(3, args.calls // 4))


if __name__ == "__main__":
    main()
