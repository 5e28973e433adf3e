"""``run.preboot``: instances boot while the artifacts build, the session takes them, nothing is
leaked.

``PreBoot`` is checked with a factory whose boot blocks until the test lets it finish (no sleeps),
and the pipeline with ``tests.fakes.FakeFleet`` and a scenario whose runner is built by a command
that waits for the early boot to have started, so the overlap itself is what makes the run pass."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from fvp_harness.errors import BootTimeout
from fvp_harness.events import Event
from fvp_harness.run.pipeline import RunOptions, run_scenario
from fvp_harness.run.preboot import PreBoot
from fvp_harness.scenario import load_scenario
from fvp_harness.store.folder import ResultStore
from fvp_harness.targets.fake import FakeTarget
from tests.fakes import FakeFleet
from tests.helpers import join_early_boots


class GatedFactory:
    """A ``TargetFactory`` whose boots wait for ``release``; it remembers what it opened and
    closed."""

    def __init__(self, fail: bool = False) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.fail = fail
        self.opened: list[str] = []
        self.closed: list[str] = []

    @contextlib.contextmanager
    def __call__(self, name: str, log_dir: Path) -> Iterator[FakeTarget]:
        self.started.set()
        assert self.release.wait(10), "the test never released the boot"
        if self.fail:
            raise BootTimeout(f"{name}: no login prompt (gated fake)", stage="boot")
        self.opened.append(name)
        try:
            yield FakeTarget(name)
        finally:
            self.closed.append(name)


def _preboot(factory: GatedFactory, tmp_path: Path, sessions: tuple[str, ...] = ("s0",)) -> PreBoot:
    return PreBoot(factory, sessions, lambda name: tmp_path / name, lambda session: session)


def test_a_session_takes_the_instance_that_booted_early(tmp_path: Path) -> None:
    factory = GatedFactory()
    with _preboot(factory, tmp_path) as early:
        assert factory.started.wait(10), (
            "the boot starts when the block is entered, before anyone asks")
        instance = early.take("s0")
        assert instance is not None and early.take("s0") is None, "taken once"
        factory.release.set()
        with instance as target:
            assert target.name == "s0" and factory.closed == []
        assert factory.closed == ["s0"], "the session's with-block closes it"
        assert instance.boot_seconds is not None
    assert factory.opened == ["s0"]


def test_an_instance_nobody_took_is_closed_even_when_its_boot_ends_later(tmp_path: Path) -> None:
    factory = GatedFactory()
    with _preboot(factory, tmp_path, ("s0", "s1")) as early:
        assert factory.started.wait(10)
        assert early.take("s9") is None
    assert factory.closed == [], "still booting when the run ended (a build failed, say)"
    factory.release.set()
    join_early_boots()
    assert sorted(factory.opened) == sorted(factory.closed) == ["s0", "s1"], (
        "closed as soon as each boot ended")


def test_a_failed_early_boot_is_raised_to_the_session_that_takes_it(tmp_path: Path) -> None:
    factory = GatedFactory(fail=True)
    factory.release.set()
    with _preboot(factory, tmp_path) as early:
        instance = early.take("s0")
        assert instance is not None
        with pytest.raises(BootTimeout, match="no login prompt"), instance:
            pass


# --- in the pipeline ------------------------------------------------------------------------------

SCENARIO = """
name: early
fvp: {{binary: sim, instances: {instances}}}
builds:
  before: {{runner: bin/runner-before, build: "{build}"}}
  after: {{runner: bin/runner-after}}
models:
  m1: {{file: m1.model}}
run:
  command: "{{runner}} --model_path={{model}} --num_executions={{iterations}}
    --output_file={{output}}"
  warmup: 0
  iterations: 2
  repetitions: 2
metrics: [{{name: cpu_time, required: true}}]
compare: {{baseline: before, candidate: after, min_effect: 5}}
report: {{outputs: [json]}}
"""

def _scenario(tmp_path: Path, *, instances: int = 1, build_ok: bool = True) -> Path:
    """A scenario whose before-runner is built by a command that succeeds only once an instance
    started booting (the fleet writes ``booting`` then): proof that the boot does not wait for the
    builds."""
    (tmp_path / "bin").mkdir(exist_ok=True)
    (tmp_path / "bin" / "runner-after").write_text("after")
    (tmp_path / "m1.model").write_text("m1")
    script = tmp_path / "wait_for_boot.py"
    script.write_text(
        "import pathlib, sys, time\n"
        "flag, output, mode = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]\n"
        "end = time.monotonic() + 8\n"
        "while not flag.exists() and time.monotonic() < end:\n"
        "    time.sleep(0.01)\n"
        "if mode != 'ok' or not flag.exists():\n"
        "    sys.exit(9)\n"
        "output.write_text('before')\n")
    build = (f"{sys.executable} {script} {tmp_path / 'booting'} {{output}} "
             f"{'ok' if build_ok else 'fail'}")
    path = tmp_path / "early.yaml"
    path.write_text(SCENARIO.format(instances=instances, build=build.replace('"', '\\"')))
    return path


class FlaggingFleet(FakeFleet):
    """A fleet that marks (a file) when any boot starts, so the build command above can see it."""

    def __init__(self, flag: Path) -> None:
        super().__init__()
        self.flag = flag

    @contextlib.contextmanager
    def factory(self, name: str, log_dir: Path) -> Iterator[FakeTarget]:  # type: ignore[override]
        self.flag.write_text(name)
        with super().factory(name, log_dir) as target:
            yield target


def test_the_boot_overlaps_the_artifact_builds_and_the_session_uses_that_instance(
        tmp_path: Path) -> None:
    fleet = FlaggingFleet(tmp_path / "booting")
    events: list[Event] = []
    outcome = run_scenario(load_scenario(_scenario(tmp_path)),
                           RunOptions(output_dir=tmp_path / "out"),
                           factory=fleet.factory, deploy=fleet.deploy, listener=events.append)
    assert outcome.exit_code == 0, outcome
    assert fleet.boots == ["s0"], "one boot, started before the build finished, served every unit"
    kinds = [(event.kind, event.detail) for event in events if event.kind in ("boot", "build")]
    assert kinds[0] == ("boot", "early") and ("boot", None) not in kinds
    assert {record.instance for record in ResultStore(tmp_path / "out").records()} == {"s0"}


def test_each_session_of_several_instances_boots_early(tmp_path: Path) -> None:
    fleet = FlaggingFleet(tmp_path / "booting")
    outcome = run_scenario(load_scenario(_scenario(tmp_path, instances=2)),
                           RunOptions(output_dir=tmp_path / "out"),
                           factory=fleet.factory, deploy=fleet.deploy)
    assert outcome.exit_code == 0 and sorted(fleet.boots) == ["s0", "s1"]


def test_a_failed_build_closes_the_instance_booted_for_it(tmp_path: Path) -> None:
    fleet = FlaggingFleet(tmp_path / "booting")
    with pytest.raises(Exception, match="runner"):
        run_scenario(load_scenario(_scenario(tmp_path, build_ok=False)),
                     RunOptions(output_dir=tmp_path / "out"),
                     factory=fleet.factory, deploy=fleet.deploy)
    join_early_boots()
    assert fleet.boots == ["s0"] and all(target.closed for target in fleet.targets), (
        "no instance left open")


def test_resume_and_fresh_boot_per_unit_boot_only_when_a_session_asks(tmp_path: Path) -> None:
    path = _scenario(tmp_path)
    (tmp_path / "booting").write_text("the build needs no early boot here")
    fleet = FakeFleet()
    events: list[Event] = []
    run_scenario(load_scenario(path),
                 RunOptions(output_dir=tmp_path / "out", fresh_boot_per_unit=True),
                 factory=fleet.factory, deploy=fleet.deploy, listener=events.append)
    assert not any(event.detail == "early" for event in events) and len(fleet.boots) == 4
    again = FakeFleet()
    run_scenario(load_scenario(path), RunOptions(output_dir=tmp_path / "out", resume=True),
                 factory=again.factory, deploy=again.deploy, listener=events.append)
    assert again.boots == [], "everything was stored: a resume with nothing to run boots nothing"


def test_no_early_boot_boots_only_after_the_builds(tmp_path: Path) -> None:
    path = _scenario(tmp_path)
    (tmp_path / "booting").write_text("the build needs no early boot here")
    fleet = FakeFleet()
    events: list[Event] = []
    outcome = run_scenario(load_scenario(path),
                           RunOptions(output_dir=tmp_path / "out", early_boot=False),
                           factory=fleet.factory, deploy=fleet.deploy, listener=events.append)
    assert outcome.exit_code == 0 and fleet.boots == ["s0"]
    kinds = [(event.kind, event.detail) for event in events if event.kind in ("boot", "build")]
    assert kinds.index(("boot", None)) > kinds.index(("build", None)), (
        "the boot waited for the build")


def test_a_factory_that_fails_before_booting_is_raised_too(tmp_path: Path) -> None:
    """Not only a failed boot: a factory that cannot even make the instance must not leave the
    session waiting."""
    def broken(name: str, log_dir: Path) -> contextlib.AbstractContextManager[FakeTarget]:
        raise RuntimeError("no such model binary")

    outcome: list[BaseException] = []

    def take_it(early: PreBoot) -> None:
        instance = early.take("s0")
        assert instance is not None
        try:
            with instance:
                pass
        except RuntimeError as exc:
            outcome.append(exc)

    with PreBoot(broken, ["s0"], lambda name: tmp_path / name, lambda session: session) as early:
        session = threading.Thread(target=take_it, args=(early,), daemon=True)
        session.start()
        session.join(10)
    assert not session.is_alive(), "the session still waits for an instance that will never boot"
    assert [str(exc) for exc in outcome] == ["no such model binary"]
