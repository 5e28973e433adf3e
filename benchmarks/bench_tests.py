"""How long the test suite keeps developers waiting (issue 27): collection and the fast lane against
their targets.

Run: ``python benchmarks/bench_tests.py [--rounds N] [--full]`` from anywhere; it runs ``python -m
pytest`` with the Python that runs this script, in the checkout this script belongs to:

1. collection: ``pytest --collect-only -q -m "not slow" -n 0`` (one process, as a developer's first
   feedback), target 5 s;
2. the fast lane: ``pytest -q -m "not slow"`` with the project's ``addopts`` (two xdist workers),
   target 60 s on the two-core machine while nothing else runs;
3. with ``--full``: the whole suite (``pytest -q``), no target.

For each, the median wall time and the CPU time (user + system of pytest and every process it waited
for: workers, the CLI and simulator processes the tests start) over ``--rounds`` rounds, and the
count pytest reported. The machine is shared and noisy: read the CPU time beside the wall time, and
compare runs taken side by side.

Nothing is asserted: this measures the suite, it is not a test.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SMOKE_TESTS = "tests/test_public_api.py"
"""``--smoke`` times the lanes on this one module, in one process: it only proves the script still
runs."""
COLLECT_TARGET_S = 5.0
FAST_LANE_TARGET_S = 60.0
TIMEOUT_S = 3600.0
"""Deadline of one pytest run (the full suite boots the simulator many times)."""


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float
    summary: str
    """pytest's closing line (``2353 passed ... in 95.1s``), or its exit code when it printed
    none."""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_pytest(args: Sequence[str]) -> Timing:
    """``python -m pytest ARGS`` in the checkout, its wall time and the CPU time of its process
    tree."""
    cpu_before, started = _children_cpu(), time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=False)
    wall, cpu = time.monotonic() - started, _children_cpu() - cpu_before
    lines = [
        line.strip("= ")
        for line in done.stdout.splitlines()
        if re.search(r"\d+ (passed|failed|tests? coll)", line)
    ]
    return Timing(wall, cpu, lines[-1] if lines else f"exit {done.returncode}")


def measure(name: str, args: Sequence[str], rounds: int, target: float | None) -> None:
    """Run one lane ``rounds`` times and print its medians against ``target``."""
    timings = [timed_pytest(args) for _ in range(rounds)]
    wall = statistics.median(t.wall for t in timings)
    cpu = statistics.median(t.cpu for t in timings)
    verdict = "" if target is None else (f"  target {target:g} s: "
                                         f"{'met' if wall <= target else 'MISSED'}")
    print(f"{name:<12} wall {wall:7.1f} s  cpu {cpu:7.1f} s{verdict}")
    print(f"{'':<12} {timings[-1].summary}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1, help="runs of each lane (median reported)")
    parser.add_argument("--full", action="store_true",
                        help="also time the whole suite (slow tests included)")
    parser.add_argument("--smoke", action="store_true",
                        help=f"time the lanes on {SMOKE_TESTS} only, one process")
    args = parser.parse_args(argv)
    only = ["-n", "0", SMOKE_TESTS] if args.smoke else []
    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} cores, load {load:.2f} before the first run"
          + ("  (the machine is busy: wall times will be long)" if load > 0.5 else ""))
    measure("collection", ["--collect-only", "-q", "-m", "not slow", "-n", "0", *only], args.rounds,
            COLLECT_TARGET_S)
    measure("fast lane", ["-q", "-m", "not slow", *only], args.rounds, FAST_LANE_TARGET_S)
    if args.full:
        measure("full suite", ["-q", *only], args.rounds, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
