"""No name goes unchecked: every verb's options that name a metric, build, model, scenario, pattern,
stored run, ``--set`` path or a place to write (a folder that is a file, a file that is a folder)
refuse a name that matches nothing with exit 2, the valid names and a "did you mean", before any
artifact is built or any model started.

Why one child process for all cases: the CLI is tested as a process of its own, in a fresh folder
that holds a copy of the shipped scenarios and two stored runs, but on a shared CI machine a Python
start with pandas costs seconds, so the child imports the engines once and then calls ``main(argv)``
per case, measuring each case's CPU time (``time.process_time``, every thread) and the files it
created. Each case must exit 2 within a second of CPU, leave no new file or folder (no
``.artifacts``, no results or log folder: the next real boot would be named ``s0.2``), and no model
process may outlive the child (``FVP_HARNESS_OWNER_PID``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.cli import assert_no_models_left
from tests.helpers import REPO
from tests.report.stored_runs import write_run

BASE = {("before", "m1"): 2.0, ("after", "m1"): 1.0}

CASES: list[tuple[list[str], str]] = [
    # run: the selections, the stored baseline, --set paths, the scenario file itself
    (["run", "scenarios/smoke.yaml", "--only-model", "ds_cn"], "did you mean 'ds_cnn'?"),
    (["run", "scenarios/smoke.yaml", "--only-build", "aftr"], "did you mean 'after'?"),
    (["run", "scenarios/smoke.yaml", "--only-model", "nosuch", "--only-build", "before"],
     "the models there are"),
    (["run", "scenarios/smoke.yaml", "--baseline-from", "demo@nosuch"], "no stored run of"),
    (["run", "scenarios/smoke.yaml", "--baseline-from", "nosuch@main"], "no results folder"),
    (["run", "scenarios/smoke.yaml", "--set", "run.iteratons=3"], "did you mean 'iterations'?"),
    (["run", "scenarios/smoke.yaml", "--set", "compare.primary=cpu_tim"],
     "did you mean 'cpu_time'?"),
    (["run", "scenarios/smok.yaml"], "smok.yaml"),
    # the other scenario verbs: --set paths and metric names
    (["validate", "scenarios/smoke.yaml", "--set", "run.iteratons=3"],
     "did you mean 'iterations'?"),
    (["plan", "scenarios/smoke.yaml", "--set", "metrics=[cpu_tim]"], "did you mean 'cpu_time'?"),
    (["doctor", "scenarios/smoke.yaml", "--set", "fvp.timeots.boot=5"], "did you mean 'timeouts'?"),
    (["shell", "scenarios/smoke.yaml", "--set", "run.iteratons=3"], "did you mean 'iterations'?"),
    # make: patterns and scenarios
    (["make", "--only", "nosuch/*", "scenarios/"],
     "the scenarios (SCENARIO, SCENARIO/* or SCENARIO/UNIT) there are"),
    (["make", "-n", "--only", "smoke/r0-*-nosuch", "scenarios/"],
     "did you mean 'smoke/r0-after-ds_cnn'?"),
    (["make", "--only", "smok", "scenarios/smoke.yaml"], "did you mean 'smoke'?"),
    (["make", "scenarios/smoke.yaml", "--set", "run.iteratons=3"], "did you mean 'iterations'?"),
    # history and compare: metric, build, stored runs
    (["history", "demo", "--metric", "cpu_tim"], "did you mean 'cpu_time'?"),
    (["history", "demo", "--build", "aftr"], "did you mean 'after'?"),
    (["history", "dem"], "did you mean 'results/demo'?"),
    (["compare", "demo@latest#-1", "demo", "--metric", "cpu_tim"], "did you mean 'cpu_time'?"),
    (["compare", "demo@latest#-1", "demo", "--build", "aftr"], "did you mean 'after'?"),
    (["compare", "demo@nosuch", "demo"], "no stored run of"),
    (["compare", "demo@latest~1", "demo"], "latest#-1"),
    (["compare", "demo@lates", "demo"], "did you mean 'latest'?"),
    (["compare", "dem@latest", "demo"], "did you mean 'results/demo'?"),
    (["compare", "demo@latest#-1", "results/dmo"], "did you mean 'results/demo'?"),
    # stored results and profiles
    (["report", "results/nosuch"], "nosuch"),
    (["runs", "results/nosuch"], "nosuch"),
    (["prune", "results/nosuch", "--keep", "1"], "nosuch"),
    # a results folder typed wrong: the closest one there is, as for every other name
    (["report", "results/dem"], "did you mean 'results/demo'?"),
    (["runs", "results/dem"], "did you mean 'results/demo'?"),
    (["prune", "dem", "--keep", "1"], "did you mean 'results/demo'?"),
    (["profiles", "show", "corstone1000-a32"], "corstone1000-a320"),
    # where a verb writes: a folder option naming a file (or a path under one), a file option naming
    # a folder; these were tracebacks (run --junit DIR only after the whole run)
    (["run", "scenarios/smoke.yaml", "-o", "scenarios/smoke.yaml"],
     "-o/--output: scenarios/smoke.yaml is a file"),
    (["run", "scenarios/smoke.yaml", "-o", "scenarios/smoke.yaml/x"],
     "scenarios/smoke.yaml is a file, so no folder"),
    (["run", "scenarios/smoke.yaml", "--junit", "scenarios"],
     "--junit: scenarios is a folder, not a file"),
    (["report", "results/demo", "--junit", "scenarios/smoke.yaml/j.xml"],
     "scenarios/smoke.yaml is a file"),
    (["history", "demo", "-o", "scenarios/smoke.yaml"],
     "scenarios/smoke.yaml is a file, not a folder"),
    (["history", "demo", "--html", "scenarios/smoke.yaml"],
     "--html: scenarios/smoke.yaml is a file"),
    (["compare", "demo@latest#-1", "demo", "-o", "scenarios/smoke.yaml"],
     "scenarios/smoke.yaml is a file"),
    (["make", "-n", "--results", "scenarios/smoke.yaml", "scenarios/smoke.yaml"],
     "--results: scenarios/smoke.yaml"),
]

CHILD = r"""
import contextlib, io, json, os, sys, time
from pathlib import Path

# the engines every verb imports late, so a case's CPU time is its own work, not the import of
# pandas
import fvp_harness.batch.engine, fvp_harness.report.stored.history  # noqa
import fvp_harness.report.stored.stored_compare  # noqa
import fvp_harness.run.doctor, fvp_harness.run.pipeline, fvp_harness.scenario, rich.console  # noqa
from fvp_harness.cli.main import main
from fvp_harness.scenario import load_scenario

load_scenario("scenarios/smoke.yaml")  # pydantic builds its validators on first use

def tree():
    return {str(p) for p in Path(".").rglob("*")}

out = []
for argv in json.loads(sys.argv[1]):
    before = tree()
    err = io.StringIO()
    began = time.process_time()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    out.append({"argv": argv, "code": code, "cpu": time.process_time() - began,
                "stderr": err.getvalue(), "new": sorted(tree() - before)})
print(json.dumps(out))
"""


@pytest.fixture
def fresh(tmp_path: Path) -> Path:
    """A user's folder: the shipped scenarios (no artifacts built) and two stored runs of a scenario
    ``demo``."""
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    folder = tmp_path / "results" / "demo"
    write_run(folder, BASE, run_id="20260301-100000-aaaa", commit="a" * 40, seed=1)
    write_run(folder, BASE, run_id="20260302-100000-bbbb", commit="b" * 40, seed=2)
    return tmp_path


def test_every_name_taking_option_refuses_a_wrong_name_before_any_work(fresh: Path) -> None:
    env = os.environ | {"PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps([argv for argv, _ in CASES])],
                            cwd=fresh,
                            env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=280)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        assert_no_models_left(proc.pid)
    assert proc.returncode == 0, err
    results = json.loads(out)
    problems = []
    for (argv, words), result in zip(CASES, results, strict=True):
        command = " ".join(argv)
        if result["code"] != 2:
            problems.append(f"`{command}` exited {result['code']}, not 2: "
                            f"{result['stderr'][-300:]}")
        elif words not in result["stderr"]:
            problems.append(f"`{command}` does not say {words!r}: {result['stderr'][-400:]}")
        if result["new"]:
            problems.append(f"`{command}` created {result['new'][:5]}")
        if result["cpu"] > 1.0:
            problems.append(f"`{command}` worked {result['cpu']:.2f} s of CPU before refusing")
    print("\n".join(f"{r['cpu']:.2f} s  {' '.join(r['argv'])}" for r in results))
    assert not problems, "\n".join(problems)
    assert not (fresh / ".artifacts").exists() and not (fresh / "results" / "smoke").exists()
