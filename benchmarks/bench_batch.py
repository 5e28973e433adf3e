"""The batch engine's own costs on the embedded simulator: ``-j 1`` vs ``-j 2``, a no-op make, overhead per unit.

Why: ``make`` is worth using only if parallel lanes really shorten a batch, if "nothing changed" is answered in
about a second, and if the engine adds little around each unit. Run ``python benchmarks/bench_batch.py
[--repetitions 3] [--iterations 30]``. It writes four tiny scenarios (ds_cnn twice, resnet8, deep_autoencoder)
into a temporary folder, builds their artifacts once, then prints from one run each:

- wall time of ``make -j 1`` and ``make -j 2`` on fresh results folders, and their ratio;
- a no-op ``make`` (everything up to date) in-process, and through the CLI (includes Python start-up and imports);
- per unit, with ``-j 1``: the execute phase minus boots, deploys and the runner commands' own time (the guest
  folder preparation, output hashing, record handling and scheduling), and the planning time of the no-op make.

Nothing is asserted: this measures, it does not test.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fvp_harness.batch.engine import MakeOptions, MakeResult, make
from fvp_harness.store.folder import ResultStore

MODELS = {"kws_a": "ds_cnn", "kws_b": "ds_cnn", "res": "resnet8", "ae": "deep_autoencoder"}

TEMPLATE = """\
name: {name}
vars: {{art: {art}}}
fvp: {{binary: sim{sim}}}
builds:
  before:
    runner: ${{vars.art}}/runner-before
    build: "{{fvp_harness}} sim runner --driver per-inference --cpu-time-report --build-id per-inference -o {{output}}"
    id: per-inference
  after:
    runner: ${{vars.art}}/runner-after
    build: "{{fvp_harness}} sim runner --driver reuse --cpu-time-report --build-id reuse -o {{output}}"
    id: reuse
models:
  {model}:
    file: ${{vars.art}}/{name}.model
    build: "{{fvp_harness}} sim model {model} -o {{output}}"
    inputs:
      - file: ${{vars.art}}/{name}.in
        build: "{{fvp_harness}} sim input {model} -o {{output}}"
run:
  command: >-
    {{runner}} --model_path={{model}} --inputs={{inputs}}
    --num_executions={{iterations}} --output_file={{output}}
  warmup: 1
  iterations: {iterations}
  repetitions: {repetitions}
report: {{outputs: [markdown, csv, json]}}
"""


def _write(folder: Path, repetitions: int, iterations: int, speed: float = 0.0) -> Path:
    """The four scenarios in ``folder/scenarios``; ``speed`` > 0 paces the simulator (``fvp.sim.speed``: simulated
    seconds per wall second) so a unit takes the model's time, as on a real FVP, instead of the simulator's CPU."""
    scenarios = folder / "scenarios"
    scenarios.mkdir(parents=True)
    sim = f", sim: {{speed: {speed:g}}}" if speed > 0 else ""
    for name, model in MODELS.items():
        (scenarios / f"{name}.yaml").write_text(TEMPLATE.format(
            name=name, model=model, art=folder / "art", repetitions=repetitions, iterations=iterations, sim=sim))
    return scenarios


def _timed(paths: list[Path], options: MakeOptions) -> tuple[float, MakeResult]:
    began = time.perf_counter()
    result = make(paths, options)
    return time.perf_counter() - began, result


def _overhead_per_unit(result: MakeResult, base: Path) -> float:
    boots = deploys = commands = 0.0
    for node in result.nodes:
        for outcome in node.outcomes:
            for info in outcome.instances:
                boots += info.boot_seconds or 0.0
                deploys += info.deploy_seconds or 0.0
        for record in ResultStore(base / node.stem, create=False).records():
            commands += float(record.extra.get("command_s") or 0.0)
    execute = result.phase_seconds.get("execute", 0.0)
    return (execute - boots - deploys - commands) / max(1, result.units_run)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--speed", type=float, default=0.0,
                        help="pace the simulator (fvp.sim.speed), e.g. 0.2: units take model time, not its CPU")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        folder = Path(tmp)
        scenarios = _write(folder, args.repetitions, args.iterations, args.speed)
        paths = [scenarios]
        make(paths, MakeOptions(jobs=2, results_base=folder / "warm"))  # builds the artifacts once
        serial, one = _timed(paths, MakeOptions(jobs=1, results_base=folder / "j1"))
        parallel, two = _timed(paths, MakeOptions(jobs=2, results_base=folder / "j2"))
        noop, nothing = _timed(paths, MakeOptions(jobs=2, results_base=folder / "j2"))
        began = time.perf_counter()
        subprocess.run([sys.executable, "-m", "fvp_harness", "make", "-q", "--results", str(folder / "j2"),
                        str(scenarios)], check=True, capture_output=True)
        cli_noop = time.perf_counter() - began
        units = one.units_run
        print(f"batch: {len(MODELS)} scenarios, {units} units ({args.repetitions} repetitions x 2 builds, "
              f"{args.iterations} iterations)")
        print(f"make -j 1: {serial:6.2f} s  ({one.lanes} lane(s), {one.boots} boot(s))")
        print(f"make -j 2: {parallel:6.2f} s  ({two.lanes} lane(s), {two.boots} boot(s))")
        print(f"ratio -j 1 / -j 2: {serial / parallel:.2f}x")
        print(f"no-op make: {noop:.3f} s in-process (nothing to do: {nothing.nothing_to_do}), "
              f"{cli_noop:.2f} s through the CLI")
        print(f"harness overhead per unit (-j 1, execute minus boot/deploy/runner time): "
              f"{_overhead_per_unit(one, folder / 'j1') * 1000:.0f} ms")
        print(f"planning per unit (no-op make): {nothing.phase_seconds.get('plan', 0.0) / units * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
