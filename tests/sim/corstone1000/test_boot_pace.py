"""The boot's lines are due at their share of ``boot_seconds`` from its start: a host that is slow
to write them (or to wake the loop) delays lines, not the login prompt. Told on a fake clock: the
loop's time moves only by the sleeps ``play`` asks for and by what each write costs."""

from __future__ import annotations

import asyncio

import pytest

from fvp_harness.sim.corstone1000 import boot as bootmod
from fvp_harness.sim.corstone1000.boot import BootStep, boot_steps, play
from fvp_harness.sim.knobs import Knobs


def _played(steps: list[BootStep], wall_seconds: float, write_cost: float,
            monkeypatch: pytest.MonkeyPatch) -> tuple[float, list[float]]:
    """(fake seconds the boot took, when each line was written) with every write costing
    ``write_cost``."""
    now = [0.0]
    written: list[float] = []

    async def sleep(delay: float) -> None:
        assert delay >= 0.0
        now[0] += delay

    def write(terminal: str, text: str) -> None:
        written.append(now[0])
        now[0] += write_cost

    async def on_stage(stage: str) -> bool:
        return True

    async def main() -> bool:
        asyncio.get_running_loop().time = lambda: now[0]  # type: ignore[method-assign]
        return await play(steps, write=write, advance=lambda seconds: None, kernel_now=lambda: 0.0,
                          wall_seconds=wall_seconds, sim_seconds=1.0, on_stage=on_stage,
                          record_kernel=lambda line: None)

    monkeypatch.setattr(bootmod.asyncio, "sleep", sleep)
    assert asyncio.run(main())
    return now[0], written


def test_a_slow_host_delays_the_boots_lines_not_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = boot_steps(Knobs())
    assert len(steps) > 50
    # 4 ms a line: 1.8 s when each sleep added it
    took, written = _played(steps, 1.5, 0.004, monkeypatch)
    assert took == pytest.approx(1.5 + 0.004)  # the last line's own write comes after its due time
    total = sum(step.weight for step in steps)
    due = [1.5 * sum(step.weight for step in steps[: n + 1]) / total for n in range(len(steps))]
    assert all(when >= at - 1e-9 for when, at in zip(written, due, strict=True)), (
        "no line comes early")


def test_lines_later_than_their_due_time_do_not_wait_at_all(
        monkeypatch: pytest.MonkeyPatch) -> None:
    steps = [BootStep("host_terminal_0", "tfm", f"line {n}") for n in range(10)]
    # each write takes longer than a line's share
    took, written = _played(steps, 0.1, 0.05, monkeypatch)
    assert written[0] == pytest.approx(0.01) and took == pytest.approx(10 * 0.05 + 0.01)
