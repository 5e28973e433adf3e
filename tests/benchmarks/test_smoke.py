"""Every script in ``benchmarks/`` runs in its smoke mode (``--smoke``: tiny sizes, seconds) as a
process.

Why: the scripts are not imported by the package, so nothing else notices when a change breaks one
(bench_perf.py once stopped at its step 4 because ``bench_batch``'s timing helper returned one more
value). Each test checks the exit status and that the figures were printed; the numbers themselves
are not judged.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.qemu.lane import require_qemu

DEADLINE_S = 900.0
"""Longest a smoke run may take (bench_perf.py's seven figures, on a loaded two-core machine)."""


def run_script(name: str, *args: str, cwd: Path) -> str:
    """``python benchmarks/NAME ARGS`` from ``cwd``: its stdout, or a failure with its exit status
    and stderr."""
    command = [sys.executable, str(REPO / "benchmarks" / name), *args]
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=DEADLINE_S,
                              check=False)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{name} {' '.join(args)} did not finish within {DEADLINE_S:g} s; its output "
                    f"so far:\n{exc.stdout!r}\n{exc.stderr!r}")
    assert done.returncode == 0, (
        f"{name} {' '.join(args)} exited {done.returncode}:\n{done.stderr[-4000:]}")
    return done.stdout


def assert_printed(out: str, *parts: str) -> None:
    missing = [part for part in parts if part not in out]
    assert not missing, f"missing from the output: {missing}\n{out}"


@pytest.mark.slow
@pytest.mark.parametrize(("script", "expected"), [
    ("bench_inference.py", ("all four",)),
    ("bench_scrape.py", ("ratio:", "cpu_time")),
    ("bench_load.py", ("load_scenario driver_reuse.yaml", "compose_file")),
])
def test_a_pure_python_benchmark_runs(script: str, expected: tuple[str, ...],
                                      tmp_path: Path) -> None:
    assert_printed(run_script(script, "--smoke", cwd=tmp_path), *expected)


@pytest.mark.slow
def test_the_driver_cost_fit_runs(tmp_path: Path) -> None:
    # no sizes to shrink: the fit is a few least-squares over four models
    assert_printed(run_script("fit_driver_cost.py", cwd=tmp_path), "FIXED", "OBJECT",
                   "deep_autoencoder")


@pytest.mark.slow
@pytest.mark.sim
@pytest.mark.parametrize(("script", "expected"), [
    ("bench_run.py", ("ratio fresh-boot / warm", "warm phases")),
    ("bench_analysis.py", ("analyse", "advance", "report of")),
    ("bench_target.py", ("deploy of 0.05 MiB", "command round trip", "launch-to-prompt")),
    ("bench_commands.py", ("make (no-op)", "history (3 runs) / report")),
])
def test_a_simulator_benchmark_runs(script: str, expected: tuple[str, ...], tmp_path: Path) -> None:
    assert_printed(run_script(script, "--smoke", cwd=tmp_path), *expected)


@pytest.mark.slow
@pytest.mark.sim
def test_the_batch_benchmark_runs_with_its_breakdown(tmp_path: Path) -> None:
    out = run_script("bench_batch.py", "--smoke", "--breakdown", cwd=tmp_path)
    assert_printed(out, "ratio -j 1 / -j 2", "ceiling with whole sessions", "no-op make",
                   "planning per unit", "-j 1 breakdown:", "-j 2 breakdown:", "before the lanes")
    assert out.count(": boot ") >= 3, f"a breakdown line per lane (1 at -j 1, 2 at -j 2):\n{out}"


@pytest.mark.slow
@pytest.mark.sim
def test_bench_perf_produces_all_seven_figures(tmp_path: Path) -> None:
    out = run_script("bench_perf.py", "--smoke", cwd=tmp_path)
    assert_printed(out, "1. harness overhead", "2. deploy", "3. units needed",
                   "4. make -j 1 vs -j 2", "5. boot-once",
                   "6. work stealing", "7. early boot", "early boot saves")
    assert out.count(" -j 1 ") >= 2, "the batch figure prints an unpaced and a paced line"


@pytest.mark.slow
@pytest.mark.sim
def test_the_fault_matrix_table_gets_its_cell(tmp_path: Path) -> None:
    out = run_script("fault_matrix.py", "--smoke", cwd=tmp_path)
    assert_printed(out, "| fault | phase |", "| SIGTERM | unit | 143 |", "1 cells in")


@pytest.mark.slow
def test_the_test_suite_timer_runs(tmp_path: Path) -> None:
    out = run_script("bench_tests.py", "--smoke", cwd=tmp_path)
    assert_printed(out, "collection", "fast lane")
    assert "passed" in out and "exit " not in out, out


@pytest.mark.slow
@pytest.mark.qemu
def test_the_qemu_benchmark_runs(tmp_path: Path) -> None:
    require_qemu()
    out = run_script("bench_qemu.py", "--smoke", cwd=tmp_path)
    assert_printed(out, "qemu: launch to shell", "sim: launch to shell", "ssh upload")
