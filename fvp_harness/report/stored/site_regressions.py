"""The history site's regressions page, and the ``compare`` report of each step still in effect.

Why a page of its own: the overview says *that* something regressed; the maintainer's next questions
are where, since which commit, and what exactly changed. So each regression ``history`` finds still
in effect (``History.in_effect``, the step detector's, nothing is detected again here) is listed
with the commits and runs on either side of the step, a link to its chart, the exact ``fvp-harness
compare`` command of those two runs, and that comparison itself, written into the site
(``<scenario>/compare/<run A>-vs-<run B>/index.html``: the report with its charts inlined, as
``compare --html`` writes it) so it opens offline like the rest. A pair that ``compare`` refuses
(the runs measured different things) gets the refusal's reason instead of a page. Steps no longer in
effect and improvements follow, with their command.
"""

from __future__ import annotations

import contextlib
import html
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fvp_harness.errors import HarnessError
from fvp_harness.files import atomic_write
from fvp_harness.report import format as fmt
from fvp_harness.report.rendering.report_page import report_page
from fvp_harness.store.folder import RUNS_DIR, StoredRun

if TYPE_CHECKING:
    from fvp_harness.report.stored.history import History, Step

__all__ = ["COMPARE_FOLDER", "REGRESSIONS_PAGE", "StepPair", "compare_command", "step_pair",
           "step_text", "write_compare"]

REGRESSIONS_PAGE = "regressions.html"
"""The regressions page, at the top of the site beside ``index.html``."""
COMPARE_FOLDER = "compare"
"""Under a scenario's folder of the site: one folder per compared pair of runs."""


@dataclass(frozen=True)
class StepPair:
    """The two runs a step lies between: the last run of the old level that measured the model
    (``before``) and the first of the new one (``after``), as run indices of ``History.runs``."""

    before: int
    after: int


def step_pair(history: History, step: Step) -> StepPair | None:
    """The runs on either side of ``step`` (failed runs between them skipped); None for a step at
    the first run."""
    points = history.points[step.model]
    before = next((i for i in range(step.index - 1, -1, -1) if points[i].median is not None), None)
    return None if before is None else StepPair(before, step.index)


def _shown_path(path: Path) -> str:
    with contextlib.suppress(ValueError, OSError):
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    return str(path)


def compare_command(history: History, run_dirs: Sequence[Path], pair: StepPair) -> str:
    """The ``fvp-harness compare`` line of the pair's two run folders, on the history's build and
    metric."""
    return (f"fvp-harness compare {shlex.quote(_shown_path(run_dirs[pair.before]))} "
            f"{shlex.quote(_shown_path(run_dirs[pair.after]))} --build "
            f"{shlex.quote(history.build)} "
            f"--metric {shlex.quote(history.metric)}")


def _stored(path: Path) -> StoredRun:
    return StoredRun.of(Path(path), current=Path(path).parent.name != RUNS_DIR)


def write_compare(history: History, run_dirs: Sequence[Path], pair: StepPair, folder: Path,
                  back: str) -> str | None:
    """Compare the pair's runs (B against A, on the history's build and metric) and write the report
    and its page into ``folder`` (``index.html``, a ``back`` link first). Returns None when written,
    else why ``compare`` refused the pair."""
    # late: the comparison's analysis (pandas, scipy) and the report renderer load only for a
    # regression's page
    from fvp_harness.report.rendering.render import render_report
    from fvp_harness.report.stored.stored_compare import compare_run_events, compare_runs, load_run
    from fvp_harness.store.locate import describe_run

    first, second = _stored(run_dirs[pair.before]), _stored(run_dirs[pair.after])
    try:
        a, b = load_run(first), load_run(second)
        done = compare_runs(a, b, metrics=[history.metric], builds=[history.build])
        events = compare_run_events(a, b, done)
    except HarnessError as exc:
        return str(exc)
    render_report(done.result, folder, ("markdown", "png"), done.title, done.context, events=events)
    intro = [f"A: {describe_run(first)}", f"B: {describe_run(second)}"]
    text = report_page(folder, done.title, f"fvp-harness compare {first.run_id} {second.run_id}",
                       intro)
    nav = f"<p class=\"nav\"><a href=\"{html.escape(back)}\">← regressions</a></p>\n"
    text = text.replace("<body>\n", f"<body>\n{nav}", 1)
    atomic_write(folder / "index.html", text)
    return None


def step_text(history: History, step: Step, run_text: Callable[[int], str]) -> str:
    """The step in words (HTML): model, change, levels, z, and the run it starts at (``run_text`` of
    a run index: its commit, subject and link)."""
    unit = f" {history.unit}" if history.unit else ""
    return (f"<strong>{html.escape(step.model)}</strong>: {html.escape(history.metric)} "
            f"{step.kind} "
            f"<strong>{html.escape(fmt.signed_percent(step.change_pct, 1))}</strong>, level "
            f"{html.escape(fmt.number(step.before))} → "
            f"{html.escape(fmt.number(step.after) + unit)} "
            f"(z = {step.z:.1f}), from {run_text(step.index)}")
