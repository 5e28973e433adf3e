"""Work stealing and pre-boots of the local executor (``run.lanes._Board``, ``_PreBoot``).

The fake-instance tests steer the lanes with events, never with sleeps: a fake runner waits (with a
generous safety timeout, noted and asserted afterwards) until another lane reached a point, so which
lane runs which job is decided by the board, not by timing luck. Deals are the natural ones of
``engine.assign_lanes`` (asserted first, so a change of the deal shows up as such). The last test
runs the real thing on the simulator.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from fvp_harness.batch import engine
from fvp_harness.batch.engine import MakeOptions, MakeResult, make
from fvp_harness.errors import BootTimeout, Interrupted
from fvp_harness.events import Event
from fvp_harness.run.lanes import (
    BOOT_COST,
    JobSpec,
    LaneControl,
    LaneResult,
    LaneSpec,
    LocalExecutor,
    _Board,
    _Stopped,
)
from fvp_harness.scenario.model import Run
from fvp_harness.targets.base import CommandResult
from tests.batch.scenarios import (
    copy_artifacts,
    fake_artifacts,
    records,
    write_fake_scenario,
    write_scenario,
)
from tests.fakes import FakeFleet

SAFETY_S = 10.0
"""How long a fake runner waits for another lane before giving up (a failed test, never a hang)."""

STOPPED = ("interrupted", "not started: stop requested")


class Recording:
    """A ``LocalExecutor`` that remembers the lanes it was dealt and each lane's result, and sets an
    event as each lane reports (``reported(stem)``: the lane dealt that scenario's job)."""

    name = "local"
    ships_artifacts = False

    def __init__(self, opener: Any, jobs: int = 2, instances: int | None = None) -> None:
        self.inner = LocalExecutor(jobs, opener=opener, instances=instances)
        self.lanes: list[LaneSpec] = []
        self.results: dict[int, LaneResult] = {}
        self._reported: dict[int, threading.Event] = {}
        self._ready = threading.Event()

    def capacity(self) -> int:
        return self.inner.capacity()

    def run(self, lanes: Sequence[LaneSpec], control: LaneControl) -> None:
        self.lanes = list(lanes)
        self._reported = {lane.index: threading.Event() for lane in lanes}
        self._ready.set()

        def done(result: LaneResult) -> None:
            self.results[result.index] = result
            control.on_lane_done(result)
            self._reported[result.index].set()

        self.inner.run(lanes, replace(control, on_lane_done=done))

    def lane_of(self, stem: str) -> int:
        assert self._ready.wait(SAFETY_S)
        return next(lane.index for lane in self.lanes if stem in _stems(lane.jobs))

    def reported(self, stem: str) -> threading.Event:
        return self._reported[self.lane_of(stem)]

    def dealt(self) -> list[list[str]]:
        return [_stems(lane.jobs) for lane in self.lanes]

    def ran(self, stem: str) -> list[str]:
        """The jobs the lane dealt ``stem``'s job ran, by scenario, in order."""
        return [_stem_of(self.lanes, job.node) for job in self.results[self.lane_of(stem)].jobs]


def _stems(jobs: Sequence[JobSpec]) -> list[str]:
    return [Path(job.scenario_path).stem for job in jobs]


def _stem_of(lanes: Sequence[LaneSpec], node: int) -> str:
    return next(Path(job.scenario_path).stem for lane in lanes
                for job in lane.jobs if job.node == node)


class Waits:
    """Waiting inside a fake runner: ``wait(event, what)`` gives up after ``SAFETY_S`` and notes
    it."""

    def __init__(self) -> None:
        self.missed: list[str] = []

    def __call__(self, event: threading.Event, what: str) -> None:
        if not event.wait(SAFETY_S):
            self.missed.append(what)


@pytest.fixture
def fake_art(tmp_path: Path) -> Path:
    return fake_artifacts(tmp_path / "art", "m", "k", "q")


@pytest.fixture
def not_run(monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, tuple[str, str]]]:
    """Scenario stem -> its ``Node.not_run`` as the engine settled it (``make`` raises on a stop, so
    the result is gone)."""
    seen: dict[str, dict[str, tuple[str, str]]] = {}
    settle = engine._settle

    def spy(node: engine.Node, store: Any, reasons: Any) -> None:
        settle(node, store, reasons)
        seen[node.stem] = dict(node.not_run)

    monkeypatch.setattr(engine, "_settle", spy)
    return seen


def _run(sc: Path, results: Path, executor: Recording, **options: Any) -> MakeResult:
    return make([sc], MakeOptions(jobs=2, results_base=results), executor=executor, **options)


def _one_record_per_unit(results: Path, stem: str, count: int) -> None:
    ids = [stored.unit_id for stored in records(results, stem)]
    assert len(ids) == count and len(set(ids)) == count, (stem, ids)


Behaviour = Callable[[str, str, int], "CommandResult | None"]


def _a_first(wait: Waits, then: Behaviour) -> Behaviour:
    """c's lane waits in c's first unit until a's lane has started a (so a is in flight before
    anyone can steal, however the threads are scheduled); then ``then`` answers."""
    a_started = threading.Event()

    def behaviour(unit: str, build: str, calls: int) -> CommandResult | None:
        if unit == "r0-before-m":
            a_started.set()
        elif unit == "r0-before-q" and calls == 1:
            wait(a_started, "a started")
        return then(unit, build, calls)

    return behaviour


def _one_pool(sc: Path, art: Path) -> None:
    """a (cost 10) and b (10) dealt to one lane, c (20) to the other: LPT on estimates, balanced on
    paper."""
    write_fake_scenario(sc, "a", art, model="m")
    write_fake_scenario(sc, "b", art, model="k")
    write_fake_scenario(sc, "c", art, model="q", repetitions=2)


# --- the board's rules ----------------------------------------------------------------------------


def _job(node: int, units: int) -> JobSpec:
    scenario = SimpleNamespace(run=Run(warmup=0, iterations=3))  # cost 5 per unit
    return JobSpec(node, scenario, f"n{node}.yaml", None, 0, tuple(f"u{i}" for i in range(units)),  # type: ignore[arg-type]
                   tuple("k" for _ in range(units)))


def test_the_board_steals_the_busiest_lanes_tail_same_pool_first_others_if_worth_a_boot() -> None:
    small, big = _job(10, 2), _job(11, 5)  # cost 10 and 25 (a boot: 20)
    assert small.cost <= BOOT_COST < big.cost
    lanes = [LaneSpec(0, "p", (_job(0, 1),)),
             LaneSpec(1, "p", (_job(1, 1), _job(2, 1), _job(3, 1))),
             LaneSpec(2, "p", (_job(4, 1), _job(5, 1))), LaneSpec(3, "q", (_job(6, 4), big, small))]
    board = _Board(lanes, [threading.Event()])

    def take(lane: int, warm: str | None) -> tuple[int, int] | None:
        claim = board.take(lane, warm)
        return None if claim is None else (claim.job.node, claim.origin.index)

    assert [take(lane, None) for lane in range(4)] == [(0, 0), (1, 1), (4, 2), (6, 3)], (
        "own jobs first")
    assert take(0, "p") == (3, 1), (
        "the lane of its pool with most work left (15 vs 10), from its tail")
    assert take(0, "p") == (2, 1), "a tie (10 and 10): the lower lane"
    assert board.claim_ahead(0, "p", 5) is None, "a job of its own pool is left: no pre-boot"
    assert take(0, "p") == (5, 2)
    assert take(0, "p") == (11, 3), (
        "then another pool's job worth a boot; the small tail job is passed over")
    assert take(0, "q") == (10, 3), "its instance is of pool q now: no boot, any job"
    assert take(0, "q") is None
    assert [job.node for job in board.retire(3)] == [6]
    assert [job.node for job in board.retire(0)] == [0, 2, 3, 5, 11, 10]


def test_the_board_starts_nothing_after_stop_and_claims_ahead_only_what_would_still_wait() -> None:
    stop = threading.Event()
    board = _Board([LaneSpec(0, "p", (_job(0, 1),)), LaneSpec(1, "q", (_job(1, 10), _job(2, 5)))],
                   [stop])
    # lane 1 runs a job of cost 50
    assert board.take(0, None) is not None and board.take(1, None) is not None
    assert board.claim_ahead(0, "p", 60) is None, (
        "lane 1 would start it before a job of cost 60 ends")
    ahead = board.claim_ahead(0, "p", 5)
    assert ahead is not None and ahead.job.node == 2 and ahead.pool == "q"
    assert board.take(1, "q") is None, "a claimed job is nobody else's"
    assert [job.node for job in board.retire(0)] == [0, 2]

    again = _Board([LaneSpec(0, "p", (_job(0, 1),)), LaneSpec(1, "p", (_job(1, 1), _job(2, 1)))],
                   [stop])
    assert again.take(0, None) is not None and again.take(1, None) is not None
    stop.set()
    with pytest.raises(_Stopped):
        again.take(0, "p")  # job 2 could be stolen, but nothing starts after a stop
    assert again.claim_ahead(0, "p", 1) is None
    with pytest.raises(_Stopped):
        again.take(1, "p")
    assert [job.node for job in again.retire(1)] == [1, 2], (
        "what it did not start, it still answers for")


def test_the_board_leaves_a_lane_its_first_job_until_it_runs_unless_it_waits_for_a_thread() -> None:
    """A lane whose first job ended before the other lane's thread began (a loaded host, a quick
    job) must not take that lane's first job: both lanes' jobs would then run on one instance, one
    after the other."""
    lanes = [LaneSpec(0, "p", (_job(0, 1),)), LaneSpec(1, "p", (_job(1, 1),)),
             LaneSpec(2, "q", (_job(2, 2),))]
    board = _Board(lanes, [threading.Event()], workers=3)
    assert board.take(0, None) is not None
    assert board.take(0, "p") is None, (
        "lane 1 and lane 2 have threads of their own: their first jobs wait for them")
    assert board.claim_ahead(0, "p", 1) is None
    first = board.take(1, None)
    assert first is not None and first.job.node == 1

    longer = [LaneSpec(0, "p", (_job(0, 1),)),
              LaneSpec(1, "p", (_job(1, 1), _job(2, 1), _job(3, 1)))]
    board = _Board(longer, [threading.Event()], workers=2)
    assert board.take(0, None) is not None
    taken = [board.take(0, "p") for _ in range(3)]
    assert [claim.job.node if claim else None for claim in taken] == [3, 2, None], (
        "its tail, never its head")
    first = board.take(1, None)
    assert first is not None and first.job.node == 1

    waiting = _Board(lanes[:2], [threading.Event()], workers=1)
    assert waiting.take(0, None) is not None
    taken_one = waiting.take(0, "p")
    assert taken_one is not None and taken_one.job.node == 1, (
        "lane 1 waits for lane 0's thread: lane 0 takes it")
    waiting.retire(0)
    assert waiting.take(1, None) is None


# --- one pool -------------------------------------------------------------------------------------


def test_a_lane_that_ran_out_of_jobs_steals_an_unstarted_one(
    fake_art: Path, tmp_path: Path
) -> None:
    sc, results = tmp_path / "sc", tmp_path / "results"
    _one_pool(sc, fake_art)
    b_started, wait = threading.Event(), Waits()

    def behaviour(unit: str, build: str, calls: int) -> CommandResult | None:
        if unit.endswith("-k"):
            b_started.set()
        elif unit == "r0-before-m":
            wait(b_started, "b started while a was in flight")  # estimates missed: a is slow
        return None

    fleet = FakeFleet(_a_first(wait, behaviour))
    executor = Recording(fleet.opener)
    result = _run(sc, results, executor)
    assert executor.dealt() == [["c"], ["a", "b"]]
    assert not wait.missed
    assert executor.ran("c") == ["c", "b"] and executor.ran("a") == ["a"], (
        "c's lane took b off a's lane")
    assert result.exit_code == 0 and result.units_run == 8 and result.boots == 2
    assert set(fleet.calls.values()) == {1}, "every unit ran exactly once"
    for stem, count in (("a", 2), ("b", 2), ("c", 4)):
        _one_record_per_unit(results, stem, count)
    assert sorted(len(units) for units in fleet.units_by_instance) == [2, 6], (
        "b ran on c's instance: no boot")


def test_a_job_in_flight_is_never_stolen(fake_art: Path, tmp_path: Path) -> None:
    sc, results = tmp_path / "sc", tmp_path / "results"
    write_fake_scenario(sc, "a", fake_art, model="m")
    write_fake_scenario(sc, "c", fake_art, model="q", repetitions=2)
    wait = Waits()
    executor: Recording

    def behaviour(unit: str, build: str, calls: int) -> CommandResult | None:
        if unit == "r0-before-m":
            wait(executor.reported("c"), "c's lane ended while a's first unit ran")
        return None

    fleet = FakeFleet(_a_first(wait, behaviour))
    executor = Recording(fleet.opener)
    result = _run(sc, results, executor)
    assert executor.dealt() == [["c"], ["a"]]
    assert not wait.missed
    assert executor.ran("c") == ["c"] and executor.ran("a") == ["a"]
    assert result.exit_code == 0 and set(fleet.calls.values()) == {1} and result.boots == 2
    _one_record_per_unit(results, "a", 2)


def test_a_stop_while_stealing_is_possible_starts_nothing_new(
    fake_art: Path, tmp_path: Path, not_run: dict[str, Any]
) -> None:
    sc, results = tmp_path / "sc", tmp_path / "results"
    _one_pool(sc, fake_art)
    stop, wait = threading.Event(), Waits()
    executor: Recording
    q_calls: list[str] = []

    def behaviour(unit: str, build: str, calls: int) -> CommandResult | None:
        if unit.endswith("-q"):
            q_calls.append(unit)
            if len(q_calls) == 4:
                # during c's last unit: b is still unstarted on a's lane, c's lane about to be idle
                stop.set()
        elif unit == "r0-before-m":
            wait(executor.reported("c"), "c's lane ended while a's first unit ran")
        return None

    fleet = FakeFleet(_a_first(wait, behaviour))
    executor = Recording(fleet.opener)
    with pytest.raises(Interrupted):
        _run(sc, results, executor, stop=stop)
    assert not wait.missed
    assert executor.ran("c") == ["c"] and executor.ran("a") == ["a"]
    assert not any(unit.endswith("-k") for unit in fleet.calls), "b never started"
    assert [r.unit_id for r in records(results, "a")] == ["r0-before-m"], (
        "the unit in flight is kept")
    assert len(records(results, "c")) == 4
    assert not_run["b"] == {"r0-before-k": STOPPED, "r0-after-k": STOPPED}
    assert not_run["a"] == {"r0-after-m": STOPPED}
    assert all(target.closed for target in fleet.targets)


def test_units_of_a_stolen_job_are_explained_by_the_lane_that_took_it(
    fake_art: Path, tmp_path: Path, not_run: dict[str, Any]
) -> None:
    """The dealt lane reports first, before the stop; the thief is stopped inside the stolen job:
    its unstarted unit is "not started: stop requested", not "no result came back" (a lost lane,
    exit 3)."""
    sc, results = tmp_path / "sc", tmp_path / "results"
    _one_pool(sc, fake_art)
    stop, b_started, wait = threading.Event(), threading.Event(), Waits()
    executor: Recording

    def behaviour(unit: str, build: str, calls: int) -> CommandResult | None:
        if unit == "r0-before-m":
            wait(b_started, "b started while a was in flight")
        elif unit.endswith("-k") and not b_started.is_set():
            b_started.set()
            wait(executor.reported("a"), "a's lane ended while b's first unit ran")
            stop.set()
        return None

    fleet = FakeFleet(_a_first(wait, behaviour))
    executor = Recording(fleet.opener)
    with pytest.raises(Interrupted):
        _run(sc, results, executor, stop=stop)
    assert not wait.missed
    assert executor.ran("a") == ["a"] and executor.ran("c") == ["c", "b"]
    assert executor.results[executor.lane_of("c")].interrupted
    assert len(records(results, "b")) == 1
    assert not_run["b"] == {"r0-after-k": STOPPED}
    assert not not_run["a"] and not not_run["c"]


# --- two pools: steal only when worth a boot, and boot ahead --------------------------------------


def _two_pools(sc: Path, art: Path, *, yb_big: bool) -> None:
    """Pool X: x (cost 20). Pool Y (another boot timeout): ya (30), then yb (24, or 10 when not
    ``yb_big``)."""
    write_fake_scenario(sc, "x", art, model="m", repetitions=2, boot_timeout=300)
    write_fake_scenario(sc, "ya", art, model="k", repetitions=3)
    write_fake_scenario(sc, "yb", art, model="q", iterations=9 if yb_big else 2)


class Opener:
    """The fleet's opener, noting every open (name, log folder) and setting ``opened[stem]`` once an
    instance for that scenario's results folder is booted."""

    def __init__(self, fleet: FakeFleet, results: Path) -> None:
        self.fleet = fleet
        self.results = results
        self.fail_first: set[str] = set()
        """Scenario stems whose first instance fails to boot."""
        self.opens: list[tuple[str, Path]] = []
        self.contexts: list[contextlib.AbstractContextManager[Any]] = []
        self.opened: dict[str, threading.Event] = {"yb": threading.Event()}
        self.tried: dict[str, threading.Event] = {"yb": threading.Event()}

    def __call__(self, scenario: Any, profile: Any, name: str, log_dir: Path,
                 scale: float) -> contextlib.AbstractContextManager[Any]:
        self.opens.append((name, log_dir))
        context = self._open(scenario, profile, name, log_dir, scale)
        # held, so no instance is closed by garbage collection behind the lane's back
        self.contexts.append(context)
        return context

    @contextlib.contextmanager
    def _open(self, *args: Any) -> Iterator[Any]:
        log_dir = Path(args[3])
        for stem, event in self.tried.items():
            if log_dir.is_relative_to(self.results / stem):
                event.set()
        for stem in list(self.fail_first):
            if log_dir.is_relative_to(self.results / stem):
                self.fail_first.discard(stem)
                raise BootTimeout(f"{args[2]}: no login prompt (fake)", stage="boot")
        with self.fleet.opener(*args) as target:
            for stem, event in self.opened.items():
                if Path(log_dir).is_relative_to(self.results / stem):
                    event.set()
            yield target


def _instance_for(fleet: FakeFleet, folder: Path) -> int:
    """The fleet's index of the one instance opened with its log folder in ``folder``."""
    found = [i for i, target in enumerate(fleet.targets) if target.log_dir.is_relative_to(folder)]
    assert len(found) == 1, found
    return found[0]


def _pools_setup(tmp_path: Path, art: Path, *, yb_big: bool, on_x: Callable[[], None],
                 ya_started: threading.Event
                 | None = None) -> tuple[Path, Path, FakeFleet, Opener, Recording, Waits]:
    sc, results = tmp_path / "sc", tmp_path / "results"
    _two_pools(sc, art, yb_big=yb_big)
    x_started, wait = threading.Event(), Waits()

    def behaviour(unit: str, build: str, calls: int) -> CommandResult | None:
        if unit == "r0-before-m":
            x_started.set()
            on_x()
        # ya waits until x's lane took its job (and claimed one)
        elif unit == "r0-before-k" and calls == 1:
            wait(x_started, "x started")
            if ya_started is not None:
                ya_started.set()
        return None

    fleet = FakeFleet(behaviour)
    opener = Opener(fleet, results)
    # two lanes and a pre-boot are three live instances: -j caps pre-boots too, so these tests give
    # the executor a third seat (the pre-boot needs a free one: test_instance_cap_e2e.py)
    return sc, results, fleet, opener, Recording(opener, instances=3), wait


def test_another_pools_job_is_booted_ahead_while_the_current_job_runs(
    fake_art: Path, tmp_path: Path
) -> None:
    holder: dict[str, Any] = {}

    # x's first unit runs until yb's instance is up: the pre-boot overlaps x's work
    def on_x() -> None:
        holder["wait"](holder["opener"].opened["yb"], "yb's instance booted while x ran")

    sc, results, fleet, opener, executor, wait = _pools_setup(
        tmp_path, fake_art, yb_big=True, on_x=on_x
    )
    holder.update(wait=wait, opener=opener)
    events: list[Event] = []
    result = _run(sc, results, executor, listener=events.append)
    assert executor.dealt() == [["ya", "yb"], ["x"]]
    assert not wait.missed
    assert executor.ran("x") == ["x", "yb"] and executor.ran("ya") == ["ya"]
    assert result.exit_code == 0 and result.units_run == 2 * 2 + 3 * 2 + 2
    assert result.boots == 3 and len(fleet.boots) == 3, (
        "one instance per lane, plus exactly one pre-boot")
    yb_opens = [(name, log_dir)
                for name, log_dir in opener.opens if log_dir.is_relative_to(results / "yb")]
    assert yb_opens == [("s0", results / "yb" / "logs" / "s0")], (
        "named as yb's session would name it")
    assert (sorted(fleet.units_by_instance[_instance_for(fleet, results / "yb")])
            == ["r0-after-q", "r0-before-q"]), (
        "yb ran on the pre-booted instance")
    boots = Counter((e.kind, e.detail) for e in events
                    if e.kind in ("boot", "booted") and (e.session or "").startswith("yb/"))
    assert boots == Counter([("boot", None), ("booted", None), ("booted", "reused")]), (
        "the display says booting once, for the pre-boot")
    assert all(target.closed for target in fleet.targets)
    for stem, count in (("x", 4), ("ya", 6), ("yb", 2)):
        _one_record_per_unit(results, stem, count)


def test_another_pools_job_not_worth_a_boot_stays_with_its_lane(
    fake_art: Path, tmp_path: Path
) -> None:
    sc, results = tmp_path / "sc", tmp_path / "results"
    _two_pools(sc, fake_art, yb_big=False)
    wait = Waits()
    executor: Recording

    def behaviour(unit: str, build: str, calls: int) -> CommandResult | None:
        # ya runs until x's lane has ended: yb was there to take all along
        if unit == "r0-before-k":
            wait(executor.reported("x"), "x's lane ended while ya ran")
        return None

    fleet = FakeFleet(behaviour)
    executor = Recording(fleet.opener)
    result = _run(sc, results, executor)
    assert executor.dealt() == [["ya", "yb"], ["x"]]
    assert not wait.missed
    assert executor.ran("x") == ["x"] and executor.ran("ya") == ["ya", "yb"], (
        "cost 10 does not pay for a boot")
    assert result.exit_code == 0 and result.boots == 2 and len(fleet.boots) == 2


def test_a_pre_boot_that_fails_counts_as_the_sessions_failed_boot_and_it_boots_again(
        fake_art: Path, tmp_path: Path) -> None:
    holder: dict[str, Any] = {}

    def on_x() -> None:  # x's first unit runs until yb's boot was tried (and failed)
        holder["wait"](holder["opener"].tried["yb"], "yb's instance booted while x ran")

    sc, results, fleet, opener, executor, wait = _pools_setup(
        tmp_path, fake_art, yb_big=True, on_x=on_x
    )
    holder.update(wait=wait, opener=opener)
    opener.fail_first.add("yb")
    result = _run(sc, results, executor)
    assert not wait.missed
    assert executor.ran("x") == ["x", "yb"]
    assert (result.exit_code == 0 and records(results, "yb") and
            {r.status for r in records(results, "yb")} == {"ok"})
    assert [log_dir.relative_to(results / "yb").as_posix() for _name, log_dir in opener.opens
            if log_dir.is_relative_to(results / "yb")] == ["logs/s0", "logs/s0.2"], (
        "the pre-boot (s0) failed as the session's first instance; it retried on a fresh one "
        "(s0.2), execute's boot rule")
    manifest = json.loads((results / "yb" / "manifest.json").read_text(encoding="utf-8"))
    assert {name: bool(entry.get("error")) for name, entry in manifest["instances"].items()} == {
        "s0": True, "s0.2": False}
    assert all(target.closed for target in fleet.targets)


def test_a_pre_booted_instance_is_closed_when_the_batch_stops_before_using_it(
        fake_art: Path, tmp_path: Path, not_run: dict[str, Any]) -> None:
    holder: dict[str, Any] = {}
    stop, ya_started = threading.Event(), threading.Event()

    def on_x() -> None:
        holder["wait"](holder["opener"].opened["yb"], "yb's instance booted while x ran")
        holder["wait"](ya_started, "ya started")
        stop.set()

    sc, results, fleet, opener, executor, wait = _pools_setup(
        tmp_path, fake_art, yb_big=True, on_x=on_x, ya_started=ya_started
    )
    holder.update(wait=wait, opener=opener)
    with pytest.raises(Interrupted):
        _run(sc, results, executor, stop=stop)
    assert not wait.missed
    assert len(fleet.boots) == 3, "ya's lane, x's lane and the pre-boot"
    preboot = _instance_for(fleet, results / "yb")
    assert fleet.units_by_instance[preboot] == [] and fleet.targets[preboot].closed, "closed unused"
    assert all(target.closed for target in fleet.targets)
    assert not [t for t in threading.enumerate() if t.name.startswith("preboot")], (
        "no boot thread left behind")
    assert records(results, "yb") == []
    assert not_run["yb"] == {"r0-before-q": STOPPED, "r0-after-q": STOPPED}
    assert executor.ran("x") == ["x"]


# --- on the simulator -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.sim
def test_make_j2_with_two_pools_on_the_simulator_steals_and_boots_ahead(
    art: Path, tmp_path: Path
) -> None:
    """Pool X (``runner_jitter`` 0.02): x (cost 32). Pool Y: ya (48), yb (24): dealt one lane per
    pool; x's lane claims yb when it starts x (ya is ahead of yb on its lane) and boots yb's
    instance while x runs: 3 boots."""
    own, sc, results = tmp_path / "art", tmp_path / "sc", tmp_path / "results"
    copy_artifacts(art, own, {"x": "a", "ya": "a", "yb": "b"})
    x = write_scenario(sc, "x", own, iterations=14)
    jitter = x.read_text(encoding="utf-8").replace(
        "  binary: sim\n", "  binary: sim\n  sim: {runner_jitter: 0.02}\n"
    )
    x.write_text(jitter, encoding="utf-8")
    write_scenario(sc, "ya", own, repetitions=2, iterations=10)
    write_scenario(sc, "yb", own, model="resnet8", iterations=10)
    events: list[Event] = []
    # two lanes and the pre-boot are three live instances: a third seat for it (-j 2 alone caps them
    # at 2)
    executor = LocalExecutor(2, instances=3)
    result = make([sc], MakeOptions(jobs=2, results_base=results), listener=events.append,
                  executor=executor)
    assert result.exit_code == 0, [(node.stem, node.error, node.not_run) for node in result.nodes]
    assert executor.peak == 3, "the pre-boot took the third seat"
    assert result.lanes == 2 and result.units_run == 8
    assert result.boots == 3, "one instance per pool's lane, plus yb's (a fixed deal boots 2)"
    yb_boots = [e.detail
                for e in events if e.kind == "boot" and (e.session or "").startswith("yb/")]
    assert yb_boots == [None], "yb's instance was booted ahead, and only that boot is shown"
    assert [e.detail
            for e in events if e.kind == "booted" and (e.session or "").startswith("yb/")] == [
        None, "reused"], "its session found it ready"
    for stem, count in (("x", 2), ("ya", 4), ("yb", 2)):
        _one_record_per_unit(results, stem, count)
        assert {r.status for r in records(results, stem)} == {"ok"}
        assert (results / stem / "report.md").is_file()
    assert (results / "yb" / "logs" / "s0" / "fvp.log").is_file(), (
        "the pre-booted instance logs into yb's folder")
    assert {r.instance for r in records(results, "yb")} == {"s0"}, (
        "its records name the instance whose logs they are")
