"""Fixtures for the target tests: a leak guard (processes, temp files) and small scenarios on the
simulator."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from fvp_harness.targets.fvp import OWNER_ENV
from tests.helpers import eventually
from tests.proc_scan import children_and_marked


def _ours() -> tuple[set[int], set[int]]:
    """(direct child processes of this test process that are still running, live processes launched
    by it: they carry our PID in OWNER_ENV), from one scan of /proc."""
    return children_and_marked(os.getpid(), OWNER_ENV, str(os.getpid()))


@pytest.fixture(autouse=True)
def no_leaks(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Fail any test that leaves a model process, a child process or a temp file behind.

    Models are found by the owner variable ``build_launch`` puts into their environment, so
    concurrent test runs of other people on the same machine are never mistaken for ours.

    TMPDIR points at a fresh folder for the test (inherited by the models), which must be empty
    afterwards.
    """
    private_tmp = tmp_path_factory.mktemp("tmpdir")
    monkeypatch.setenv("TMPDIR", str(private_tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    # a module-scoped instance may already run (checked at its end)
    before_children, before_models = _ours()
    yield
    last: list[tuple[set[int], set[int]]] = []

    def clean() -> bool:
        last[:] = [_ours()]
        children, models = last[0]
        return not (models - before_models or children - before_children)

    eventually(clean, timeout=3.0)
    children, models = last[0]  # the scan eventually() judged last
    leaked = sorted(models - before_models)
    extra_children = children - before_children
    leftovers = sorted(p.name for p in Path(private_tmp).iterdir())
    problems = []
    if leaked:
        problems.append(f"model processes left running: {leaked}")
    if extra_children:
        problems.append(f"child processes left running: {sorted(extra_children)}")
    if leftovers:
        problems.append(f"temp files left behind: {leftovers}")
    for pid in leaked:  # clean up so one leak does not cascade into every later test
        try:
            os.killpg(pid, 9)
        except OSError:
            pass
    assert not problems, "; ".join(problems)


def make_scenario(*, sim: dict | None = None, timeouts: dict | None = None, method: str = "console",
                  params: dict | None = None, target: str = "fvp"):
    """A minimal valid scenario on the simulator with a short boot (0.4 s) and short timeouts."""
    from fvp_harness.scenario.model import Scenario

    knobs = {"boot_seconds": 0.4, "seed": 7}
    knobs.update(sim or {})
    limits = {"boot": 30, "login": 15, "command": 15, "deploy": 60}
    limits.update(timeouts or {})
    return Scenario.model_validate({
        "name": "target-test",
        "target": target,
        "builds": {"before": {"runner": "/bin/true"}},
        "models": {"m": {"file": "/bin/true"}},
        "fvp": {"binary": "sim", "sim": knobs, "timeouts": limits, "params": params or {}},
        "deploy": {"method": method},
    })


@pytest.fixture(scope="module")
def booted(tmp_path_factory: pytest.TempPathFactory):
    """One instance shared by the read-only tests of a module (booting once keeps the suite
    fast)."""
    from fvp_harness.run.instances import open_target

    log_dir = tmp_path_factory.mktemp("shared-logs")
    with open_target(make_scenario(), log_dir=log_dir) as target:
        yield target
    assert target.process is not None and not target.process.alive()
    assert not _ours()[1], "the shared instance left a model process behind"


@pytest.fixture(name="make_scenario")
def make_scenario_fixture():
    """``make_scenario`` as a fixture."""
    return make_scenario
