"""The kill matrix of issue 36 as the table its closing note gives: each signal in each phase of a
run on the simulator, then the next run.

Run: ``python benchmarks/fault_matrix.py [-n WORKERS]`` from anywhere; it runs
``pytest tests/e2e/test_fault_matrix.py -k kill_matrix`` with the Python that runs this script, in
the checkout this script belongs to, collects the cells' rows (``FVP_FAULT_TABLE``: one ``KILL
[...]`` line per cell, from every xdist worker) and prints one markdown row per cell: fault, phase,
exit code, seconds from the signal to the exit, processes left (the run's and the next run's, by
their mark), files left after the next run (temp, staging and reserve files), records lost (lines
stored before the next run that it does not keep), and whether the next run (``--resume``) was
correct (exit 0, every planned unit ok once, ``PASS``, artifacts equal to a clean build's).

Nothing is asserted here (the tests do that, with strict xfails for the cells that need the
supervisor); the exit status is pytest's. ``--smoke`` runs one cell (``SMOKE_CELL``) in one process,
only to prove the script still runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PHASES = ("build", "boot", "deploy", "unit", "report")
FAULTS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGKILL")
SMOKE_CELL = "tests/e2e/test_fault_matrix.py::test_kill_matrix[SIGTERM-unit]"


def table(rows: list[list[object]]) -> str:
    """The markdown table, in the matrix's order (faults, then phases)."""
    order = {(fault, phase): index for index, (fault, phase) in
             enumerate((f, p) for f in FAULTS for p in PHASES)}
    rows = sorted(rows, key=lambda row: order.get((str(row[0]), str(row[1])), len(order)))
    lines = ["| fault | phase | exit code | seconds to exit | processes left | files left after "
             "the next run | records lost | next run correct |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for fault, phase, code, seconds, processes, files, lost, correct in rows:
        lines.append(f"| {fault} | {phase} | {code} | {seconds} | {processes} | {files} | {lost} | "
                     f"{'yes' if correct else 'NO'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--workers", default="2",
                        help="pytest-xdist workers (default 2; 0: one process)")
    parser.add_argument("--smoke", action="store_true",
                        help="one cell in one process: does the script still run")
    args = parser.parse_args(argv)
    tests = [SMOKE_CELL] if args.smoke else ["tests/e2e/test_fault_matrix.py", "-k", "kill_matrix"]
    if args.smoke:
        args.workers = "0"
    with tempfile.TemporaryDirectory() as scratch:
        rows_file = Path(scratch) / "rows.txt"
        env = {**os.environ, "FVP_FAULT_TABLE": str(rows_file)}
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", args.workers, "-p",
                               "no:randomly", *tests], cwd=REPO, env=env, check=False)
        seconds = time.monotonic() - began
        lines = rows_file.read_text().splitlines() if rows_file.exists() else []
    rows = [json.loads(line[len("KILL "):]) for line in lines if line.startswith("KILL ")]
    print(table(rows))
    print(f"\n{len(rows)} cells in {seconds:.0f} s (pytest -n {args.workers}); pytest exit "
          f"{done.returncode}")
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
