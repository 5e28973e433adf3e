"""Helpers every test folder shares: the repository root, waiting on a condition, and ``Record``
builders.

Waiting: tests never sleep for a fixed time to let something happen elsewhere (a thread, a process,
a socket); they poll for the condition itself with ``wait_until`` (fails naming what it waited for)
or ``eventually`` (says whether it came, for cleanup code that must go on either way). Deadlines are
generous: other people run tests on the same small machine.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest

from fvp_harness.store.records import Record

__all__ = ["REPO", "eventually", "interleaved", "record", "scenario_validator", "wait_until"]

REPO = Path(__file__).resolve().parent.parent
"""The repository root (shipped scenarios, docs, benchmarks)."""

T = TypeVar("T")


def eventually(predicate: Callable[[], object], *, timeout: float = 10.0,
               interval: float = 0.05) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` seconds have passed; whether it became
    true.

    The predicate is always checked once more at the deadline, so a slow poll cannot miss the last
    chance."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return bool(predicate())
        time.sleep(max(0.0, min(interval, deadline - time.monotonic())))


def wait_until(predicate: Callable[[], T], *, timeout: float = 10.0, interval: float = 0.05,
               message: str = "") -> T:
    """Poll ``predicate`` until it returns something true and return that; after ``timeout`` seconds
    fail with an AssertionError naming ``message`` (what was waited for)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            what = message or getattr(predicate, "__name__", "the condition")
            raise AssertionError(f"gave up after {timeout:g} s waiting for {what}")
        time.sleep(max(0.0, min(interval, deadline - time.monotonic())))


@functools.cache
def scenario_validator() -> Any:
    """A ``jsonschema`` validator of ``scenario_json_schema()``, the schema checked against its
    meta-schema once per process (skips without jsonschema). Why one: ``jsonschema.validate`` checks
    the big schema against the meta-schema in every call, half a second each, and the schema tests
    validated a dozen documents."""
    jsonschema = pytest.importorskip("jsonschema")
    # late: pydantic only for the tests that ask
    from fvp_harness.scenario.model import scenario_json_schema

    schema = scenario_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


# --- records --------------------------------------------------------------------------------------


def join_early_boots(timeout: float = 10.0) -> None:
    """Wait for every early boot thread (``run.preboot``) to end: one still booting when a run ended
    closes its instance itself, so a test that checks every instance was closed must let it finish
    first."""
    for thread in threading.enumerate():
        if thread.name.startswith("preboot-"):
            thread.join(timeout)


def record(unit_id: str = "r1-after-resnet8", *, status: str = "ok", **fields: Any) -> Record:
    """A valid ``Record``; every field can be given.

    Defaults: unit ``r1-after-resnet8`` (build ``after``, model ``resnet8``, repetition 1) of
    scenario ``driver_reuse`` on instance ``s0``, key ``key-<unit>``, started 2026-03-01 10:00 UTC,
    two ``cpu_time`` samples in ms when ok; a failed record is a test failure (``runner exited 1``)
    with a log.
    """
    values: dict[str, Any] = {
        "scenario": "driver_reuse",
        "key": f"key-{unit_id}",
        "unit_id": unit_id,
        "instance": "s0",
        "build": "after",
        "model": "resnet8",
        "repetition": 1,
        "status": status,
        "samples": {"cpu_time": [0.93, 0.94]} if status == "ok" else {},
        "metric_units": {"cpu_time": "ms"},
        "started": "2026-03-01T10:00:00Z",
    }
    if status == "failed":
        values.update(failure_class="test", failure="runner exited 1", log="logs/s0/x.log")
    values.update(fields)
    return Record.model_validate(values)


def interleaved(reps: Sequence[int], models: Sequence[str], builds: Sequence[str]
                ) -> Iterator[tuple[int, int, str, str]]:
    """(count from 1, repetition, model, build) in interleaved unit order: every build of a model,
    every model of a repetition (``r1-before-m1, r1-after-m1, r1-before-m2, ...``), the order a run
    measures them in."""
    count = 0
    for rep in reps:
        for model in models:
            for build in builds:
                count += 1
                yield count, rep, model, build


def skip_or_fail_in_ci(skip: str, fail: str) -> NoReturn:
    """A lane's component is missing: under ``CI=true`` fail with ``fail`` (``.ci/run`` installs
    what every lane CI runs needs, so CI can never go green by skipping), elsewhere skip with
    ``skip`` (which says how to get it)."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(fail, pytrace=False)
    pytest.skip(skip)


@contextlib.contextmanager
def mounted_tmpfs(folder: Path, options: str) -> Iterator[Path]:
    """A real tmpfs at ``folder`` (created) with mount ``options`` (``size=4m``, ``ro,size=1m``),
    unmounted afterwards.

    Disk-full and read-only faults need a real file system; mounting one needs root, which CI has:
    there a test that cannot mount fails, elsewhere it skips saying why."""
    def refuse(why: str) -> None:
        skip_or_fail_in_ci(f"{why} (CI runs as root)",
                           f"CI runs the tests as root, so a tmpfs test must run there: {why}")

    if os.geteuid() != 0:
        refuse("mounting a tmpfs needs root")
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                          capture_output=True, check=False)
    if done.returncode != 0:
        refuse(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
