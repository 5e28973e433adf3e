"""Shared fixtures, and the rule that keeps the fast lane fast. Keep this small: helpers shared by
several folders are in ``tests/helpers.py`` and ``tests/fakes.py``; folder-specific fixtures in that
folder's conftest.

Markers (``pyproject.toml``): ``slow`` for tests that boot the simulator or run the CLI end to end,
``sim`` for tests that start the simulator as a process. ``pytest -m "not slow"`` is the fast lane;
a test that uses a fixture booting the simulator must carry both markers (checked at collection).
"""

from __future__ import annotations

import gc
import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import REPO

# pytest keeps its assertion-rewritten test modules (and Python the package's modules) as byte code
# in __pycache__ (git-ignored) unless Python was told to write none: where PYTHONDONTWRITEBYTECODE
# is set (these machines set it), every collection rewrote and compiled every test module again, 10
# s of a 12 s collection. The suite's own processes read what this one writes.
sys.dont_write_bytecode = False
# ... and so do the processes the tests start (the CLI, the simulator, the pytest plugin's runs:
# hundreds of them): the harness's own modules were compiled anew in each, 0.4 s of every ``python
# -m fvp_harness``. (Under pytest this process keeps assertion-rewritten copies of the harness's
# modules, which no child reads.)
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

BOOTING_FIXTURES = frozenset({"sim", "booted"})
"""Fixtures that boot the simulator (``tests/sim``'s ``sim`` and ``booted``, ``tests/targets``'s
``booted``)."""

LONG_FIRST = (
    "tests/e2e/test_doc_commands.py::test_readme_everyday_use_block",
    "tests/e2e/test_doc_commands.py::test_ci_workflow_",
    "tests/e2e/test_ci_workflow_e2e.py::",
    "tests/e2e/test_fault_matrix.py::",
    "tests/qemu/",
    "tests/benchmarks/",
    "tests/scenario/test_hostile_yaml.py::test_1000_seeded_mutants",
    "tests/e2e/test_doc_commands.py::",
    "tests/e2e/",
)
"""Node-id prefixes of the longest tests, longest first (each takes minutes, or many of them do).
Why: with two xdist workers a suite ends when its last long test does; started first (``--dist
loadgroup`` in pyproject hands out each of them alone, in this order), the long ones spread over
both workers and the short ones fill the gaps, so the two workers finish together instead of one
running a long test alone at the end."""

HEAVY_FIRST = (
    "tests/cli/test_small_journeys.py",
    "tests/cli/test_unknown_names.py",
    "tests/batch/test_engine.py",
    "tests/run/test_execute.py",
    "tests/run/test_baremetal_units.py",
    "tests/cli/test_ci_verbs.py",
    "tests/cli/test_scenario_verbs.py",
    "tests/report/test_dashboard.py",
    "tests/report/test_render.py",
    "tests/scenario/test_hostile_yaml.py",
    "tests/sim/fvp/test_cmdline.py",
    "tests/vgf/test_report.py",
    "tests/batch/test_stealing.py",
)
"""The fast lane's heaviest modules (5 to 11 s of tests each on a quiet machine), started before the
other fast tests (each module whole, in file order, handed out by ``CHUNK``). Why: in file order one
of them could come last and leave the other worker idle for its seconds at the end; first, the light
modules fill the gaps and the two workers finish together. A module missing here still runs, in file
order."""

ONE_WORKER = frozenset({
    "tests/e2e/test_stored_baselines_e2e.py",  # two_runs: two stored runs
    "tests/sim/guest/test_shell.py",  # booted: a booted simulator with a console
    "tests/targets/test_fvp_target.py",  # booted: an FvpTarget
    # booted_on: the simulator and the QEMU guest, each booted once
    "tests/targets/test_session.py",
})
"""Modules whose tests share a module-scoped boot (``booted``, ``target``, ``two_runs``): each runs
whole on one xdist worker, so the other worker does not boot it again. (xdist's ``xdist_group``
marks cannot do this: its loadgroup suffix is lost on pytest 9's node ids.) A module missing here
still passes, it just boots twice."""


CHUNK = 20
"""Tests of one module handed out together (outside ``LONG_FIRST``): a few seconds of work at
most."""


# before xdist's own choice; absent without xdist
@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """For ``--dist loadgroup`` (pyproject): units of work in collection order (the long ones
    first): each ``LONG_FIRST`` test alone, a module of ``ONE_WORKER`` whole, the other tests of a
    module by ``CHUNK`` (few round trips to the controller, and still small enough that the two
    workers end together)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling  # late: only the xdist controller schedules

    class LongFirstScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def __init__(self, config: pytest.Config, log: object) -> None:
            super().__init__(config, log)
            self.scopes: dict[str, str] = {}
            self.counts: dict[str, int] = {}

        def _split_scope(self, nodeid: str) -> str:
            """The unit ``nodeid`` belongs to; first asked in collection order, then remembered
            (xdist asks again as each test completes)."""
            if nodeid not in self.scopes:
                module = nodeid.split("::", 1)[0]
                if module in ONE_WORKER:
                    self.scopes[nodeid] = module
                elif nodeid.startswith(LONG_FIRST):
                    self.scopes[nodeid] = nodeid
                else:
                    seen = self.counts[module] = self.counts.get(module, 0) + 1
                    self.scopes[nodeid] = f"{module}#{(seen - 1) // CHUNK}"
            return self.scopes[nodeid]

    config.option.loadscopereorder = False  # keep the collection order (longest first)
    return LongFirstScheduling(config, log)


def _start_rank(item: pytest.Item) -> tuple[int, int]:
    """Where ``item`` starts: the ``LONG_FIRST`` groups in order, then the simulator's tests, the
    other slow ones, and the fast lane last, its ``HEAVY_FIRST`` modules first (file order inside
    each group, so module fixtures stay together)."""
    for index, prefix in enumerate(LONG_FIRST):
        if item.nodeid.startswith(prefix):
            return 0, index
    if item.get_closest_marker("sim"):
        return 1, 0
    if item.get_closest_marker("slow"):
        return 2, 0
    module = item.nodeid.split("::", 1)[0]
    return (3, HEAVY_FIRST.index(module)) if module in HEAVY_FIRST else (4, 0)


@pytest.hookimpl(trylast=True)  # after pytest's own reordering and the -m/-k deselection
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unmarked = [
        item.nodeid for item in items
        if BOOTING_FIXTURES & set(getattr(item, "fixturenames", ()))
        and not (item.get_closest_marker("slow") and item.get_closest_marker("sim"))
    ]
    if unmarked:
        raise pytest.UsageError("tests that boot the simulator must be marked slow and sim: "
                                + ", ".join(unmarked))
    items[:] = sorted(items, key=_start_rank)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection imported (pandas, scipy, matplotlib, dask: millions of long-lived objects) is
    frozen out of the garbage collector's generations: its full passes then scan only what the tests
    make, instead of the whole library stack again each time (2-3 s of every worker's run)."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Nothing is collected any more once pytest is done: the garbage collector's passes over the
    millions of objects of pandas, scipy and matplotlib as the interpreter shut down took 2-3 s
    after every collection and in every xdist worker at the end of a run. Frozen, they are left to
    the process's exit."""
    gc.freeze()


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    """``write("name.yaml", text)``: write dedented text under tmp_path (folders created) and return
    the path."""

    def _write(name: str, text: str = "") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    return _write


@pytest.fixture
def repo() -> Path:
    """The repository root (for the shipped scenarios and docs)."""
    return REPO
