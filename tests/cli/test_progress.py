"""``ProgressView`` under ``run.until``: the plan is a ceiling, so counts, bar and time left must
say so."""

from __future__ import annotations

import io

from rich.console import Console

from fvp_harness.cli.progress import ProgressView, format_seconds
from fvp_harness.events import Event


def _adaptive_run(view: ProgressView) -> None:
    """Two rounds of 2 models x 2 builds at 1 s a unit, then the rule spares the other 8 rounds (32
    units)."""
    view(Event("plan", total=40, skipped=0, sessions=1, count=10))
    for rep in (0, 1):
        for model in ("m1", "m2"):
            for build in ("before", "after"):
                view(Event("unit_done", session="s0", unit=f"r{rep}-{build}-{model}", status="ok",
                           seconds=1.0))
    for rep in range(2, 10):
        for model in ("m1", "m2"):
            for build in ("before", "after"):
                view(Event("unit_skipped", session="s0", unit=f"r{rep}-{build}-{model}"))


def test_plain_lines_show_rounds_and_the_most_the_rule_may_run() -> None:
    buffer = io.StringIO()
    with ProgressView(Console(file=buffer, width=200, force_terminal=False),
                      clock=lambda: 0.0) as view:
        _adaptive_run(view)
    text = buffer.getvalue()
    assert "at most 40 units to run in up to 10 rounds on 1 instance(s)" in text
    assert "40 units to run" not in text.replace("at most 40 units to run", "")
    assert "[round 1/≤10: 1/≤40] s0: r0-before-m1 ok (1.00 s)" in text
    assert "[round 2/≤10: 8/≤40] s0: r1-after-m2 ok (1.00 s)" in text
    assert "/80]" not in text and "[8/40]" not in text
    assert view.counts == (8, 0, 8), "the ceiling came down to what ran"
    assert view.spared == 32


def test_the_live_bar_counts_against_the_ceiling_and_bounds_the_time_left_by_past_rounds() -> None:
    buffer = io.StringIO()
    now = [0.0]
    view = ProgressView(Console(file=buffer, width=160, force_terminal=True), clock=lambda: now[0])
    with view:
        assert not view.plain
        view(Event("plan", total=40, skipped=0, sessions=1, count=10))
        for index, unit in enumerate(("r0-before-m1", "r0-after-m1", "r0-before-m2",
                                      "r0-after-m2")):
            now[0] = float(index + 1)
            view(Event("unit_done", session="s0", unit=unit, status="ok", seconds=1.0))
        assert view._progress is not None
        rendered = io.StringIO()
        Console(file=rendered, width=160,
                force_terminal=False).print(view._progress.make_tasks_table(
            view._progress.tasks))
        line = rendered.getvalue()
        assert "round 1/≤10" in line and "4/≤40" in line
        assert "≤ 0:36 left" in line, line  # 36 units at most, 1 s each so far
        for rep in range(1, 10):  # the rule spares every further round
            for unit in ("before-m1", "after-m1", "before-m2", "after-m2"):
                view(Event("unit_skipped", session="s0", unit=f"r{rep}-{unit}"))
        rendered = io.StringIO()
        Console(file=rendered, width=160,
                force_terminal=False).print(view._progress.make_tasks_table(
            view._progress.tasks))
        assert "4/≤4" in rendered.getvalue() and "≤ 0:00 left" in rendered.getvalue()


def test_a_fixed_matrix_keeps_its_plain_count() -> None:
    buffer = io.StringIO()
    with ProgressView(Console(file=buffer, width=200, force_terminal=False),
                      clock=lambda: 0.0) as view:
        view(Event("plan", total=2, skipped=0, sessions=1))
        view(Event("unit_done", session="s0", unit="r0-a-m", status="ok", seconds=0.5))
    text = buffer.getvalue()
    assert "2 units to run on 1 instance(s)" in text and "at most" not in text
    assert "[1/2] s0: r0-a-m ok (0.50 s)" in text


def test_format_seconds() -> None:
    assert [format_seconds(s) for s in (0, 36, 90, 3725)] == ["0:00", "0:36", "1:30", "1:02:05"]


def test_a_closed_pipe_quiets_the_view_and_asks_once_for_the_stop() -> None:
    """Issue 36: rich's console raised ``SystemExit(1)`` on EPIPE from whichever thread printed (a
    session's), so ``run ... 2>&1 | head -2`` died with its manifest ``running``. A real pipe whose
    reader is gone."""
    import os

    from fvp_harness.cli.progress import OutputConsole

    read_end, write_end = os.pipe()
    os.close(read_end)
    stream = os.fdopen(write_end, "w")
    asked: list[str] = []
    console = OutputConsole(file=stream, width=120, force_terminal=False,
                            on_closed=lambda: asked.append("stop"))
    with ProgressView(console, clock=lambda: 0.0) as view:
        for unit in ("r0-before-m1", "r0-after-m1"):
            view(Event("unit_done", session="s0", unit=unit, status="ok", seconds=1.0))
    assert console.closed and asked == ["stop"]
    stream.write("later lines go to /dev/null\n")
    stream.flush()  # no BrokenPipeError: the descriptor now points at /dev/null
    stream.close()


def test_main_exits_141_when_stdout_was_closed_after_the_work(monkeypatch, capsys) -> None:
    from fvp_harness.cli import main as cli_main

    silenced: list[object] = []

    def dispatch(argv: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(cli_main, "_dispatch", dispatch)
    monkeypatch.setattr(cli_main, "silence_stream", silenced.append)
    assert cli_main.main(["profiles"]) == 141
    assert len(silenced) == 2


def test_a_baseline_run_passed_over_is_said_even_with_q() -> None:
    """``run -q --baseline-from x@main``: the runs the ref passed over (nothing measured ok) are
    named in a CI log too; other baseline lines stay quiet."""
    buffer = io.StringIO()
    with ProgressView(Console(file=buffer, width=200, force_terminal=False), clock=lambda: 0.0,
                      quiet=True) as view:
        view(Event("baseline", name="before", status="skipped", scenario="smoke",
                   detail="run 20260302-100000-fail (...) in results/smoke: no ok record"))
        view(Event("baseline", name="before", detail="from stored run 20260301", scenario="smoke"))
    text = buffer.getvalue()
    assert "baseline before: skipped run 20260302-100000-fail" in text, text
    assert "from stored run" not in text
