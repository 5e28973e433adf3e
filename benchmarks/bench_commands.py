"""How long users wait for the everyday commands (issue 27): the no-op ones against ``--version``,
and ``report``, ``compare`` and ``history`` over 20 stored runs against ``report``.

Run: ``python benchmarks/bench_commands.py [--rounds 5] [--keep DIR]``. Every command runs as its
own process, ``python -m fvp_harness ...`` with the Python that runs this script (so
``other-venv/bin/python benchmarks/bench_commands.py`` measures that checkout's code: this script
imports nothing of the harness), from a private temp folder:

1. set-up (not timed): a copy of ``scenarios/``; one ``driver_reuse`` run on the embedded simulator
   (its artifacts built there first, about 30 s); 19 more stored runs made from it (``runs/<id>/``:
   the records with every sample scaled a little, a step up at run 12, and their own run id and
   start), the way 20 nightly runs would look; one ``make`` so that the next one has nothing to do;
   one call of each command (what a cache keeps is then kept);
2. ``--rounds`` rounds; in each every command once, in a new order each round (the machine is shared
   and noisy: interleaving spreads its moods over all the commands alike);
3. the median wall time and CPU time (user + system of the child) of each command, and the ratios
   the issue sets targets for: no-op ``make``, ``validate``, ``plan`` and ``runs`` at most 2x
   ``--version``; ``compare`` at most 1.5x ``report``; ``history`` over 20 runs at most 3x
   ``report``.

Nothing is asserted: this measures the harness, it is not a test. ``--smoke``: 1 repetition x 2
iterations, 3 stored runs, one round, only to prove the script still runs (tests/benchmarks).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCENARIO = "driver_reuse"
STORED_RUNS = 20
STEP_AT = 12
"""From this stored run on the after build is 8 % slower: history has a step to find, as in real
life."""
SMOKE = ["--set", "run.until=null", "--set", "run.repetitions=1", "--set", "run.iterations=2"]
"""``--smoke``'s overrides of the stored run (and of every ``make``, so that it agrees the run is up
to date)."""


def harness(python: str, *args: str, cwd: Path,
            check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """``python -m fvp_harness ARGS`` from ``cwd`` (never the checkout: ``-m`` would import its code
    first)."""
    done = subprocess.run([python, "-m", "fvp_harness", *args], cwd=cwd, capture_output=True,
                          timeout=900, check=False)
    if check and done.returncode not in (0, 1):
        raise SystemExit(f"fvp-harness {' '.join(args)} exited {done.returncode}:\n"
                         + done.stderr.decode(errors="replace")[-3000:])
    return done


def _scaled(line: str, factor: float) -> str:
    """One records.jsonl line with every time sample times ``factor`` (NPU cycles stay: the same
    model)."""
    row = json.loads(line)
    for name, values in row.get("samples", {}).items():
        if name != "npu_cycles" and isinstance(values, list):
            row["samples"][name] = [round(value * factor, 6) for value in values]
    return json.dumps(row, separators=(",", ":"))


def stored_runs(folder: Path, count: int, seed: int = 1) -> None:
    """``count - 1`` earlier runs of ``folder``'s current run, as ``runs/<id>/``: its manifest with
    another run id and an earlier start, its records with the samples of each run scaled by a little
    noise (and the after build 8 % slower from run ``STEP_AT`` on)."""
    rng = random.Random(seed)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    lines = (folder / "records.jsonl").read_text(encoding="utf-8").splitlines()
    for index in range(count - 1):
        run_id = f"20260101-{index:02d}0000-b{index:03d}"
        target = folder / "runs" / run_id
        target.mkdir(parents=True, exist_ok=True)
        copy = json.loads(json.dumps(manifest))
        copy["run"]["id"] = run_id
        copy["started"] = f"2026-01-{index + 1:02d}T00:00:00.000+00:00"
        copy["finished"] = f"2026-01-{index + 1:02d}T00:05:00.000+00:00"
        (target / "manifest.json").write_text(json.dumps(copy, indent=2), encoding="utf-8")
        noise = 1 + rng.gauss(0, 0.005)
        out = []
        for line in lines:
            build = json.loads(line).get("build")
            step = 1.08 if build == "after" and index >= STEP_AT else 1.0
            out.append(_scaled(line, noise * step))
        (target / "records.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")


def set_up(python: str, base: Path, stored: int = STORED_RUNS,
           sets: Sequence[str] = ()) -> dict[str, list[str]]:
    """The scenarios, the ``stored`` runs and an up-to-date make (``sets``: ``--set`` overrides of
    the run and every make); returns the commands to time, by name."""
    scenarios = base / "scenarios"
    shutil.copytree(REPO / "scenarios", scenarios, ignore=shutil.ignore_patterns(".artifacts"))
    results = base / "results"
    scenario = scenarios / f"{SCENARIO}.yaml"
    folder = results / SCENARIO
    print(f"set-up: one {SCENARIO} run on the simulator, then {stored - 1} stored runs made from "
          "it ...", file=sys.stderr)
    harness(python, "run", str(scenario), "-o", str(folder), "-q", *sets, cwd=base)
    stored_runs(folder, stored)
    harness(python, "make", str(scenario), "--results", str(results), "-q", *sets, cwd=base)
    commands = {
        "--version": ["--version"],
        "make (no-op)": ["make", str(scenario), "--results", str(results), *sets],
        "validate": ["validate", str(scenario), str(scenarios / "smoke.yaml")],
        "plan": ["plan", str(scenario)],
        "runs": ["runs", str(folder)],
        "report": ["report", str(folder)],
        "compare": ["compare", f"{folder}@latest#-1", str(folder), "-o", str(base / "compare")],
        "history": ["history", str(folder)],
    }
    # once untimed: whatever a command keeps for the next call is kept
    for args in commands.values():
        harness(python, *args, cwd=base)
    done = harness(python, "make", str(scenario), "--results", str(results), *sets, cwd=base)
    if b"nothing to do" not in done.stdout:
        raise SystemExit("set-up: make still had work after the first make:\n"
                         + done.stdout.decode())
    return commands


def timed(python: str, args: Sequence[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system of the child) of one call."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    harness(python, *args, cwd=cwd)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="work in DIR and keep it (default: a temp folder, removed afterwards)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the command order")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes (seconds): only proves the script still runs "
                             "(tests/benchmarks)")
    args = parser.parse_args(argv)
    stored = 3 if args.smoke else STORED_RUNS
    if args.smoke:
        args.rounds = 1
    python = sys.executable
    base = (Path(tempfile.mkdtemp(prefix="bench-commands-")) if args.keep is None
            else args.keep.resolve())
    base.mkdir(parents=True, exist_ok=True)
    try:
        commands = set_up(python, base, stored, SMOKE if args.smoke else ())
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        order = list(commands)
        shuffle = random.Random(args.seed)
        for _ in range(args.rounds):
            shuffle.shuffle(order)
            for name in order:
                wall, cpu = timed(python, commands[name], base)
                walls[name].append(wall)
                cpus[name].append(cpu)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    wall_m = {name: statistics.median(values) for name, values in walls.items()}
    cpu_m = {name: statistics.median(values) for name, values in cpus.items()}
    print(f"python {python}; {args.rounds} interleaved rounds; load average "
          f"{os.getloadavg()[0]:.1f}")
    print(f"{'command':<22} {'wall s':>8} {'cpu s':>8}")
    for name in commands:
        label = f"history ({stored} runs)" if name == "history" else name
        print(f"{label:<22} {wall_m[name]:>8.3f} {cpu_m[name]:>8.3f}")
    print()
    print(f"{'ratio':<34} {'wall':>6} {'cpu':>6} {'target':>7}  met (wall, cpu)")
    ratios = [(f"{name} / --version", name, "--version", 2.0)
              for name in ("make (no-op)", "validate", "plan", "runs")]
    ratios += [("compare / report", "compare", "report", 1.5),
               (f"history ({stored} runs) / report", "history", "report", 3.0)]
    for label, top, bottom, target in ratios:
        wall = wall_m[top] / wall_m[bottom]
        cpu = cpu_m[top] / cpu_m[bottom]
        met = f"{'yes' if wall <= target else 'no'}, {'yes' if cpu <= target else 'no'}"
        print(f"{label:<34} {wall:>5.2f}x {cpu:>5.2f}x {target:>6.1f}x  {met}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
