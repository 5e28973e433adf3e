"""A paced simulator (``speed`` > 0) takes the model's time for a program, not the model's time plus
its own CPU: the host work between two paced steps is spent inside the pace (``SimClock.advance``),
as a real model's is. Told on a fake wall clock that moves only by the sleeps asked for and the
"CPU" the test spends."""

from __future__ import annotations

import pytest

from fvp_harness.sim.clock import PACE_CREDIT_S, SimClock


class Wall:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_a_programs_own_cpu_is_spent_inside_its_pace() -> None:
    wall = Wall()
    clock = SimClock(speed=0.5, wall=wall.time, sleep=wall.sleep)
    with clock.working():
        wall.now += 0.004  # loading the model: before its first paced step
        for _ in range(10):
            clock.advance(0.01)  # 20 ms of wall time each at half speed
            wall.now += 0.003  # the simulator's own work between two steps
    assert wall.now == pytest.approx(10 * 0.02 + 0.003), (
        "the model's time, plus only the last step's work")
    assert (wall.slept[0] == pytest.approx(0.02 - 0.004) and
            wall.slept[1:] == pytest.approx([0.02 - 0.003] * 9))
    assert (clock.now() == pytest.approx(0.1) and
            clock.instructions == 10 * int(0.01 * clock.clock_hz))


def test_a_longer_pause_is_not_made_up_and_work_slower_than_the_pace_sleeps_nothing() -> None:
    wall = Wall()
    clock = SimClock(speed=0.5, wall=wall.time, sleep=wall.sleep)
    clock.advance(0.01)
    wall.now += PACE_CREDIT_S + 1.0  # waiting for input, say
    clock.advance(0.01)
    assert wall.slept == pytest.approx([0.02, 0.02])
    wall.slept.clear()
    for _ in range(3):
        wall.now += 0.03  # more host work than the 20 ms each step declares
        clock.advance(0.01)
    assert wall.slept == [], "behind its pace: nothing to wait for"
