"""The batch engine's own costs on the embedded simulator: ``-j 1`` vs ``-j 2``, a no-op make,
overhead per unit.

Why: ``make`` is worth using only if parallel lanes really shorten a batch, if "nothing changed" is
answered in about a second, and if the engine adds little around each unit. Run ``python
benchmarks/bench_batch.py [--repetitions 3] [--iterations 30]``. It writes four tiny scenarios
(ds_cnn twice, resnet8, deep_autoencoder) into a temporary folder, builds their artifacts once, then
prints from one run each:

- wall time of ``make -j 1`` and ``make -j 2`` on fresh results folders, and their ratio;
- a no-op ``make`` (everything up to date) in-process, and through the CLI (includes Python start-up
  and imports);
- per unit, with ``-j 1``: the execute phase minus boots, deploys and the runner commands' own time
  (the guest folder preparation, output hashing, record handling and scheduling), and the planning
  time of the no-op make;
- the **ceiling** of the ratio for this batch: ``-j 1``'s wall time over its fixed part (everything
  but the units: boot, first deploy, close, report) plus the longest lane of the best deal of its
  measured unit time over the lanes, once with whole sessions (what the engine deals: a session's
  units run on one instance) and once with (repetition, model) groups dealt freely (the finest split
  that keeps each model's builds of one round back to back on one instance). No scheduler can beat
  the first without splitting sessions: it says how much of the achievable speed-up the measured
  ratio reaches.

``--breakdown`` adds, per lane of both makes, its boot, deploy and unit seconds, the harness's time
between them and how long the lane sat idle at the end (the others still ran), and the time before
the lanes start and after they end (planning, reports). ``--smoke``: two scenarios of one model, 1
repetition x 2 iterations, only to prove the script still runs (tests/benchmarks). Nothing is
asserted: this measures, it does not test.

``bench_perf.py`` reuses ``write_scenarios`` and ``timed_make``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from fvp_harness.batch.engine import MakeOptions, MakeResult, make
from fvp_harness.events import Event
from fvp_harness.store.folder import ResultStore

MODELS = {"kws_a": "ds_cnn", "kws_b": "ds_cnn", "res": "resnet8", "ae": "deep_autoencoder"}
SMOKE_MODELS = {"kws_a": "ds_cnn", "kws_b": "ds_cnn"}
"""``--smoke``'s scenarios: two of them (two lanes), one model to build."""

TEMPLATE = """\
name: {name}
vars: {{art: {art}}}
fvp: {{binary: sim{sim}}}
builds:
  before:
    runner: ${{vars.art}}/runner-before
    build: >-
      {{fvp_harness}} sim runner --driver per-inference --cpu-time-report
      --build-id per-inference -o {{output}}
    id: per-inference
  after:
    runner: ${{vars.art}}/runner-after
    build: >-
      {{fvp_harness}} sim runner --driver reuse --cpu-time-report --build-id reuse
      -o {{output}}
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


def write_scenarios(folder: Path, repetitions: int, iterations: int, speed: float = 0.0,
                    models: dict[str, str] | None = None) -> Path:
    """The scenarios (``MODELS``: scenario name -> model) in ``folder/scenarios``; ``speed`` > 0
    paces the simulator (``fvp.sim.speed``) so a unit takes the model's time, as on a real FVP, not
    the simulator's CPU."""
    scenarios = folder / "scenarios"
    scenarios.mkdir(parents=True)
    sim = f", sim: {{speed: {speed:g}}}" if speed > 0 else ""
    for name, model in (models or MODELS).items():
        (scenarios / f"{name}.yaml").write_text(TEMPLATE.format(
            name=name, model=model, art=folder / "art", repetitions=repetitions,
            iterations=iterations, sim=sim))
    return scenarios


LANE_EVENTS = ("boot", "booted", "deploy", "deployed", "unit", "unit_done", "unit_skipped")
"""What a lane reports: the calling thread's events of these kinds are its lane's."""


class Timeline:
    """The make's events with when (seconds from its start) and which thread (a lane's) reported
    them."""

    def __init__(self) -> None:
        self.began = time.perf_counter()
        self.events: list[tuple[float, str, Event]] = []
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        with self._lock:
            self.events.append((time.perf_counter() - self.began, threading.current_thread().name,
                                event))

    def breakdown(self, result: MakeResult, wall: float) -> list[str]:
        """Per lane: its boots, deploys and units (seconds, as the events say), the rest of its time
        (the harness between units: guest checks, records, scheduling) and how long it sat idle
        before the make's execute phase ended; then the phases around the lanes."""
        plan = result.phase_seconds.get("plan", 0.0)
        execute = result.phase_seconds.get("execute", 0.0)
        report = result.phase_seconds.get("report", 0.0)
        lanes: dict[str, dict[str, float]] = {}
        for when, thread, event in self.events:
            if not thread.startswith("lane"):  # a make of one lane runs it in the calling thread
                if event.kind not in LANE_EVENTS:
                    continue
                thread = "lane (calling thread)"
            lane = lanes.setdefault(thread,
                                    {"start": when, "end": when, "boot": 0.0, "deploy": 0.0,
                                     "units": 0.0,
                                             "count": 0.0})
            lane["start"], lane["end"] = min(lane["start"], when), max(lane["end"], when)
            seconds = event.seconds or 0.0
            if event.kind == "booted" and event.detail != "reused":
                lane["boot"] += seconds
            elif event.kind == "deployed":
                lane["deploy"] += seconds
            elif event.kind == "unit_done":
                lane["units"] += seconds
                lane["count"] += 1
        first = min((lane["start"] for lane in lanes.values()), default=plan)
        last = max((lane["end"] for lane in lanes.values()), default=wall)
        lines = [f"  before the lanes {first:5.2f} s (plan {plan:.2f} s), after them "
                 f"{wall - last:5.2f} s (report {report:.2f} s)"]
        for name, lane in sorted(lanes.items()):
            busy = lane["end"] - lane["start"]
            other = busy - lane["boot"] - lane["deploy"] - lane["units"]
            idle = first + execute - lane["end"]
            lines.append(f"  {name}: boot {lane['boot']:5.2f} s, deploy {lane['deploy']:5.2f} s, "
                         f"{int(lane['count']):2d} units {lane['units']:5.2f} s, other "
                         f"{other:5.2f} s, idle at the end {max(0.0, idle):5.2f} s")
        return lines


class Timed:
    """One make, timed: read by name (a tuple grew a field once and broke its unpacking callers)."""

    def __init__(self, wall: float, result: MakeResult, timeline: Timeline) -> None:
        self.wall, self.result, self.timeline = wall, result, timeline


def timed_make(paths: list[Path], options: MakeOptions) -> Timed:
    timeline = Timeline()
    result = make(paths, options, listener=timeline)
    return Timed(time.perf_counter() - timeline.began, result, timeline)


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


def _lane_seconds(base: Path, result: MakeResult, *, by_group: bool) -> list[float]:
    """The runner time of each session (or each (repetition, model) group) of a make, from its
    stored records."""
    work: dict[tuple[str, ...], float] = {}
    for node in result.nodes:
        for record in ResultStore(base / node.stem, create=False).records():
            key = (
                (node.stem, str(record.repetition), record.model)
                if by_group
                else (node.stem, record.instance)
            )
            work[key] = work.get(key, 0.0) + record.duration_s
    return sorted(work.values(), reverse=True)


def best_longest_lane(pieces: list[float], lanes: int) -> float:
    """The shortest possible longest lane when ``pieces`` (seconds) are dealt whole over ``lanes``:
    exact by branch and bound (longest first, a lane load seen before is not tried twice), fine for
    a few dozen pieces."""
    best = sum(pieces)
    loads = [0.0] * lanes

    def place(index: int) -> None:
        nonlocal best
        if index == len(pieces):
            best = min(best, max(loads))
            return
        tried: set[float] = set()
        for lane in range(lanes):
            load = round(loads[lane], 9)
            if load in tried or loads[lane] + pieces[index] >= best:
                continue
            tried.add(load)
            loads[lane] += pieces[index]
            place(index + 1)
            loads[lane] -= pieces[index]

    place(0)
    return best


def ceiling(serial_wall: float, pieces: list[float], lanes: int) -> float:
    """The best ``-j lanes`` ratio for these pieces: the serial wall time over its fixed part plus
    the best deal's longest lane (the fixed part, boot, deploy, close and report, happens once per
    lane in parallel)."""
    fixed = serial_wall - sum(pieces)
    return serial_wall / (fixed + best_longest_lane(pieces, lanes))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--speed", type=float, default=0.0,
                        help="pace the simulator (fvp.sim.speed), e.g. 0.2: units take model time, "
                             "not its CPU")
    parser.add_argument("--breakdown", action="store_true",
                        help="also print, per lane of -j 1 and -j 2, its boot, deploy, unit and "
                             "other seconds")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes (2 scenarios, 1 repetition x 2 iterations): does the "
                             "script still run")
    args = parser.parse_args(argv)
    models = SMOKE_MODELS if args.smoke else MODELS
    if args.smoke:
        args.repetitions, args.iterations = 1, 2
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        folder = Path(tmp)
        scenarios = write_scenarios(folder, args.repetitions, args.iterations, args.speed, models)
        paths = [scenarios]
        make(paths, MakeOptions(jobs=2, results_base=folder / "warm"))  # builds the artifacts once
        first = timed_make(paths, MakeOptions(jobs=1, results_base=folder / "j1"))
        second = timed_make(paths, MakeOptions(jobs=2, results_base=folder / "j2"))
        again = timed_make(paths, MakeOptions(jobs=2, results_base=folder / "j2"))
        serial, one, parallel, two = first.wall, first.result, second.wall, second.result
        noop, nothing = again.wall, again.result
        began = time.perf_counter()
        subprocess.run([sys.executable, "-m", "fvp_harness", "make", "-q", "--results",
                        str(folder / "j2"), str(scenarios)], check=True, capture_output=True)
        cli_noop = time.perf_counter() - began
        units = one.units_run
        print(f"batch: {len(models)} scenarios, {units} units ({args.repetitions} repetitions x 2 "
              f"builds, {args.iterations} iterations)")
        print(f"make -j 1: {serial:6.2f} s  ({one.lanes} lane(s), {one.boots} boot(s))")
        print(f"make -j 2: {parallel:6.2f} s  ({two.lanes} lane(s), {two.boots} boot(s))")
        print(f"ratio -j 1 / -j 2: {serial / parallel:.2f}x")
        sessions = _lane_seconds(folder / "j1", one, by_group=False)
        groups = _lane_seconds(folder / "j1", one, by_group=True)
        whole, split = ceiling(serial, sessions, 2), ceiling(serial, groups, 2)
        print(f"ceiling with whole sessions: {whole:.2f}x (best deal of the {len(sessions)} "
              f"sessions' unit time {best_longest_lane(sessions, 2):.2f} s of {sum(sessions):.2f} "
              f"s); measured is {serial / parallel / whole:.0%} of it")
        print(f"ceiling with (repetition, model) groups dealt freely: {split:.2f}x "
              f"({len(groups)} groups, longest lane {best_longest_lane(groups, 2):.2f} s)")
        if args.breakdown:
            for jobs, timed in ((1, first), (2, second)):
                print(f"-j {jobs} breakdown:")
                print("\n".join(timed.timeline.breakdown(timed.result, timed.wall)))
        print(f"no-op make: {noop:.3f} s in-process (nothing to do: {nothing.nothing_to_do}), "
              f"{cli_noop:.2f} s through the CLI")
        print(f"harness overhead per unit (-j 1, execute minus boot/deploy/runner time): "
              f"{_overhead_per_unit(one, folder / 'j1') * 1000:.0f} ms")
        print("planning per unit (no-op make): "
              f"{nothing.phase_seconds.get('plan', 0.0) / units * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
