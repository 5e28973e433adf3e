"""Seats (``run.seats``): the in-process cap, the host-wide lock files, and a killed holder's seat
coming free because the kernel drops its lock."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fvp_harness.errors import ConfigurationError, InfrastructureError
from fvp_harness.run.seats import MAX_INSTANCES_ENV, Seats, max_instances_from_env
from tests.helpers import wait_until


def test_the_local_cap_counts_live_seats() -> None:
    seats = Seats(2)
    one, two = seats.try_acquire(), seats.try_acquire()
    assert one is not None and two is not None and seats.try_acquire() is None
    one.release()
    one.release()  # idempotent
    assert seats.try_acquire() is not None and seats.peak == 2


def test_shared_seats_are_shared_by_every_holder_of_the_folder(tmp_path: Path) -> None:
    first, second = Seats(None, 1, tmp_path), Seats(None, 1, tmp_path)
    held = first.try_acquire()
    assert held is not None and second.try_acquire() is None
    with pytest.raises(InfrastructureError, match=r"no free instance seat.*seats in"):
        second.acquire(lambda: False, "s0", timeout=0.2)
    assert second.acquire(lambda: True, "s0", timeout=5) is None, "a stop ends the wait"
    held.release()
    assert second.try_acquire() is not None


def test_a_killed_holder_frees_its_seat(tmp_path: Path) -> None:
    code = (
        "import sys, time; from pathlib import Path; from fvp_harness.run.seats import Seats; "
        f"s = Seats(None, 1, Path({str(tmp_path)!r})).try_acquire(); print(s is not None, "
        "flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "True"
        seats = Seats(None, 1, tmp_path)
        assert seats.try_acquire() is None
        holder.kill()
        holder.wait(10)
        seat = wait_until(seats.try_acquire, timeout=5, message="the killed holder's seat")
        seat.release()
    finally:
        holder.kill()
        holder.wait(10)
        if holder.stdout is not None:
            holder.stdout.close()


def test_the_environment_value_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_INSTANCES_ENV, "0")
    with pytest.raises(ConfigurationError, match=MAX_INSTANCES_ENV):
        max_instances_from_env()
    monkeypatch.setenv(MAX_INSTANCES_ENV, "3")
    assert max_instances_from_env() == 3
