"""The history dashboard: a static site of every stored run of one or more scenarios (``history
--html DIR``): plain HTML, charts inlined as SVG, no JavaScript, nothing loaded from outside
``DIR``. Layout, element ids and why: docs/architecture.md, "`stored/`"."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from fvp_harness.files import atomic_write
from fvp_harness.report import format as fmt
from fvp_harness.report.rendering.report_page import local_image, markdown_html, page
from fvp_harness.report.stored.site_chart import AXES, DEFAULT_AXIS, chart_svg
from fvp_harness.report.stored.site_feed import FEED, FeedEntry, atom_feed
from fvp_harness.report.stored.site_regressions import (
    COMPARE_FOLDER,
    REGRESSIONS_PAGE,
    compare_command,
    step_pair,
    step_text,
    write_compare,
)
from fvp_harness.report.stored.sparkline import sparkline_svg
from fvp_harness.store.folder import REPORT_FILES

if TYPE_CHECKING:
    from fvp_harness.report.stored.history import History, Step
    from fvp_harness.report.stored.stored_compare import LoadedRun

__all__ = ["DASHBOARD_INDEX", "REGRESSIONS_PAGE", "SiteScenario", "chart_svg", "run_page_path",
           "scenario_page_path",
           "site_scenario", "write_dashboard"]

DASHBOARD_INDEX = "index.html"
"""The site's entry page (the overview), at the top of ``DIR``."""
RUN_PAGE = "index.html"
"""Each run's page, in ``<scenario folder>/<run id>/``; each scenario's page is ``<scenario
folder>/index.html``."""
SUBJECT_CHARS = 72
"""A commit subject longer than this is cut (with …) where the site shows it."""
AXIS_NAMES = {"relative": "relative (% of the first level)", "zero": "from zero", "zoom": "zoomed"}
SITE_STYLE = """
nav.site { margin-bottom: 1em; } nav.site a { margin-right: 1em; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(225px, 1fr)); gap: .6em;
  margin: .6em 0; }
a.card { display: block; border: 1px solid #ddd; border-radius: 6px; padding: .35em .55em;
  color: inherit; text-decoration: none; } a.card:hover { border-color: #1f6fb4; }
a.card.in-effect { border-color: #c0392b; box-shadow: inset 3px 0 0 #c0392b; }
a.card .name { font-weight: 600; } a.card .value { float: right; color: #444; }
a.card .state { display: block; font-size: 12px; color: #666; }
a.card svg { display: block; margin: .2em 0; }
.failed { color: #d35400; font-weight: 600; }
.modes > input { position: absolute; opacity: 0; pointer-events: none; }
.axis-choice label { border: 1px solid #ccc; border-radius: 4px; padding: .1em .5em;
  cursor: pointer; }
.modes .v-zero, .modes .v-zoom { display: none; }
#axis-zero:checked ~ * .v-relative, #axis-zoom:checked ~ * .v-relative { display: none; }
#axis-zero:checked ~ * .v-zero, #axis-zoom:checked ~ * .v-zoom { display: block; }
#axis-relative:checked ~ .axis-choice label[for=axis-relative],
#axis-zero:checked ~ .axis-choice label[for=axis-zero],
#axis-zoom:checked ~ .axis-choice label[for=axis-zoom] { background: #1f6fb4; color: #fff;
  border-color: #1f6fb4; }
ol.regressions li, ul.steps li { margin-bottom: .7em; } li.in-effect strong { color: #c0392b; }
code.command { display: inline-block; margin-top: .2em; }
""".strip()


@dataclass(frozen=True)
class SiteScenario:
    """One scenario of the site: its history and, per run of ``history.runs`` (same order), the
    run's folder (where its ``report.md`` is). ``name`` is the scenario's results folder name:
    unique in a results base, it names the scenario's folder in the site. ``subjects``: commit ->
    subject line (``commit_subjects``); ``failures``: (run index, model) -> why that run has no
    result for the model."""

    name: str
    history: History
    run_dirs: tuple[Path, ...]
    subjects: Mapping[str, str] = field(default_factory=dict)
    failures: Mapping[tuple[int, str], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.run_dirs) != len(self.history.runs):
            raise ValueError(f"{self.name}: {len(self.run_dirs)} run folders for "
                             f"{len(self.history.runs)} runs")

    def missing(self, model: str) -> dict[int, str]:
        """Run index -> why it has no point for ``model``: the runs the chart marks."""
        history = self.history
        return {index: self.failures.get((index, model))
                or f"no {history.metric} of build {history.build} for {model} in this run"
                for index, point in enumerate(history.points[model]) if point.median is None}


def _failures(
    runs: Sequence[LoadedRun], build: str, models: Sequence[str]
) -> dict[tuple[int, str], str]:
    """Why each run has no result for a model: its failed units (how many, the first one's class and
    message), or that it did not run the model (its status when it is not ``complete``)."""
    found: dict[tuple[int, str], str] = {}
    for index, run in enumerate(runs):
        status = (f" (run {run.run.status})" if run.run.status and
                  run.run.status != "complete" else "")
        for model in models:
            mine = [r for r in run.records if r.build == build and r.model == model]
            failed = [r for r in mine if r.status != "ok"]
            if failed:
                first = failed[0]
                lines = (first.failure or "").strip().splitlines()
                message = lines[0] if lines else "no message"
                found[(index, model)] = (
                    f"FAILED: {len(failed)} of {len(mine)} unit(s) of {build} failed{status}; "
                    f"{first.failure_class or 'failure'}: {message[:160]}")
            elif not mine:
                found[(index, model)] = (f"not run: this run has no unit of {build} for "
                                         f"{model}{status}")
    return found


def site_scenario(results_dir: Path, *, runs: Sequence[LoadedRun] | None = None,
                  history: History | None = None) -> SiteScenario:
    """A scenario's results folder as the site shows it: every stored run (``runs``, read when not
    given), their ``history`` (default: the history's defaults: the candidate build, the primary
    metric, ``compare.min_effect``), the commits' subjects from the checkout around the folder, and
    why runs have no result. ``make --html`` builds its site from these; ``history --html`` from the
    history it was asked for."""
    # late: the history's analysis (pandas, scipy) loads only when a site is asked for
    from fvp_harness.report.stored.commit_subjects import commit_subjects
    from fvp_harness.report.stored.history import history_from_runs, load_history

    runs = list(runs) if runs is not None else load_history(results_dir)
    history = history if history is not None else history_from_runs(runs)
    subjects = commit_subjects([run.commit for run in history.runs],
                               [Path(results_dir), Path.cwd()])
    return SiteScenario(Path(results_dir).name, history, tuple(run.run.path for run in runs),
                        subjects,
                        _failures(runs, history.build, history.models))


def _slug(text: str) -> str:
    """A file-name and id-safe form of a scenario, model or run name."""
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", text) or "_"


def run_page_path(scenario: str, run_id: str) -> str:
    """The page of one run, relative to the site's top (a URL path: always ``/``)."""
    return f"{_slug(scenario)}/{_slug(run_id)}/{RUN_PAGE}"


def scenario_page_path(scenario: str) -> str:
    """The page of one scenario's charts, relative to the site's top."""
    return f"{_slug(scenario)}/{RUN_PAGE}"


# --- what a run is called -------------------------------------------------------------------------


def _subject(site: SiteScenario, index: int) -> str | None:
    commit = site.history.runs[index].commit
    subject = site.subjects.get(commit) if commit else None
    if subject and len(subject) > SUBJECT_CHARS:
        subject = subject[:SUBJECT_CHARS - 1].rstrip() + "…"
    return subject


def _when(started: str | None) -> str:
    return (started or "")[:16].replace("T", " ")


def _tick(site: SiteScenario, index: int) -> str:
    """A run's slot on the x axis: its short commit and day, else its start time, else its id."""
    run = site.history.runs[index]
    day = (run.started or "")[5:10]
    if run.commit:
        return f"{run.commit[:7]} {day}".strip()
    return _when(run.started)[5:] or run.run_id


def _title(site: SiteScenario, model: str, index: int, why: str | None) -> str:
    """A run's tooltip in a chart: commit and subject, date and run, the value (or why there is
    none)."""
    # late: history imports pandas and matplotlib
    from fvp_harness.report.stored.history import point_cell

    history = site.history
    run = history.runs[index]
    subject = _subject(site, index)
    lines = [f"commit {run.commit[:7]}" + (f" {subject}" if subject else "") if run.commit else
             "no commit recorded"]
    lines.append(" · ".join(bit for bit in (_when(run.started), f"run {run.run_id}",
                                            run.status if run.status not in (None, "complete")
                                            else "") if bit))
    point = history.points[model][index]
    value = f"{history.metric} {point_cell(point, history.unit)}"
    if point.npu_cycles is not None:
        value += f"; NPU cycles {fmt.number(point.npu_cycles)}"
    lines.append(value)
    if why is not None:
        lines.append(why)
    return "\n".join(lines)


def _commit_html(site: SiteScenario, index: int, href: str) -> str:
    """``commit abc1234 subject (2026-03-01 10:00, run <link>)`` as HTML."""
    run = site.history.runs[index]
    subject = _subject(site, index)
    commit = (f"commit <code>{html.escape(run.commit[:7])}</code>"
              + (f" “{html.escape(subject)}”" if subject else "")
              if run.commit else "no commit recorded")
    when = f"{html.escape(_when(run.started))}, " if run.started else ""
    return f"{commit} ({when}run <a href=\"{html.escape(href)}\">{html.escape(run.run_id)}</a>)"


# --- pages ----------------------------------------------------------------------------------------


def _page(title: str, body: str, top: str, regressions: int) -> str:
    """A page of the site: the navigation (``top``: the way up to the site's top folder) and
    ``body``."""
    count = f" ({regressions} in effect)" if regressions else ""
    nav = (f"<nav class=\"site\"><a href=\"{top}{DASHBOARD_INDEX}\">Overview</a>"
           f"<a href=\"{top}{REGRESSIONS_PAGE}\">Regressions{count}</a></nav>")
    return page(title, f"<style>\n{SITE_STYLE}\n</style>\n{nav}\n{body}",
                "fvp-harness history --html")


def _chart_id(number: int, offset: int) -> str:
    return f"c{number}-{offset}"


def _step_line(site: SiteScenario, step: Step, link: Callable[[int], str]) -> str:
    history = site.history
    state = ""
    if step.kind == "regression":
        state = "; still in effect at the newest run" if step.in_effect else "; no longer in effect"
    # late: history loads pandas; this module is light
    from fvp_harness.report.stored.history import step_bisect

    command = step_bisect(history, step)
    bisect = f"<br><code>{html.escape(command)}</code>" if command is not None else ""
    run = history.runs[step.index]
    commit = f" (commit {html.escape(run.commit[:7])})" if run.commit else ""
    return (f"<li class=\"{step.kind}\">{html.escape(step.model)}: {step.kind} "
            f"{html.escape(fmt.signed_percent(step.change_pct, 1))} at run "
            f"<a href=\"{html.escape(link(step.index))}\">{html.escape(run.run_id)}</a>{commit}: "
            f"level {html.escape(fmt.number(step.before))} → "
            f"{html.escape(fmt.number(step.after) + (' ' + history.unit if history.unit else ''))} "
            f"(z = {step.z:.1f}){state}{bisect}</li>")


def _axis_switch() -> str:
    inputs = "".join(f"<input type=\"radio\" name=\"axis\" id=\"axis-{axis}\""
                     f"{' checked' if axis == DEFAULT_AXIS else ''}>" for axis in AXES)
    labels = " ".join(f"<label for=\"axis-{axis}\">{html.escape(AXIS_NAMES[axis])}</label>"
                      for axis in AXES)
    return f"{inputs}\n<p class=\"axis-choice\">Y axis: {labels}</p>"


def _scenario_page(site: SiteScenario, number: int, regressions: int) -> str:
    """A scenario's page: the y-axis switch, per model its chart in each axis, the steps, the runs'
    table."""
    history = site.history
    link = lambda index: f"{_slug(history.runs[index].run_id)}/{RUN_PAGE}"  # noqa: E731
    unit = f" ({history.unit})" if history.unit else ""
    parts = [f"<section class=\"scenario modes\" id=\"{html.escape(_slug(site.name))}\">",
             f"<h1>{html.escape(history.scenario)}: "
             f"{html.escape(history.metric)}{html.escape(unit)} of build "
             f"{html.escape(history.build)}</h1>",
             f"<p>{len(history.runs)} stored run(s), oldest first, one slot each on the x axis "
             "(its commit and day; hover a point for the commit's subject and the value). Each "
             "point: the median per inference with its 95 % CI; grey: the fitted level; a dashed "
             f"line: a step of at least {history.threshold:g}&nbsp;% found over the whole series "
             "(red a regression, green an improvement); an orange × at the foot: a run with no "
             "result for that model (failed, or not run). Below: the NPU cycles. Each point and "
             "mark opens its run's report.</p>",
             _axis_switch()]
    shown = [step for step in history.steps if step.kind != "shift"]
    if shown:
        parts.append("<ul class=\"steps\">"
                     + "".join(_step_line(site, step, link) for step in shown) + "</ul>")
    else:
        parts.append(f"<p>No step of {history.threshold:g}&nbsp;% or more in any model.</p>")
    labels = [_tick(site, index) for index in range(len(history.runs))]
    for offset, model in enumerate(history.models):
        chart_id = _chart_id(number, offset)
        measured = sum(point.median is not None for point in history.points[model])
        missing = site.missing(model)
        titles = [_title(site, model, index, missing.get(index))
                  for index in range(len(history.runs))]
        parts.append(f"<figure class=\"chart\" id=\"{chart_id}\" "
                     f"data-scenario=\"{html.escape(site.name)}\" "
                     f"data-model=\"{html.escape(model)}\" data-runs=\"{measured}\" "
                     f"data-failed=\"{len(missing)}\">")
        for axis in AXES:
            svg = chart_svg(history, model, chart_id=f"{chart_id}-{axis}", link=link, labels=labels,
                            titles=titles,
                            failed=missing, axis=axis)
            parts.append(f"<div class=\"v-{axis}\">{svg}</div>")
        failed = (f"; <span class=\"failed\">{len(missing)} without a result</span>" if missing
                  else "")
        parts.append(f"<figcaption>{html.escape(model)}: {measured} of {len(history.runs)} run(s) "
                     f"measured {html.escape(history.metric)}{failed}</figcaption></figure>")
    parts.append(_runs_table(site, link))
    if history.notes:
        parts.append("<ul class=\"note\">"
                     + "".join(f"<li>{html.escape(note)}</li>" for note in history.notes)
                     + "</ul>")
    parts.append("</section>")
    return _page(f"{history.scenario} · history", "\n".join(parts), "../", regressions)


def _runs_table(site: SiteScenario, link: Callable[[int], str]) -> str:
    # late: history imports pandas and matplotlib
    from fvp_harness.report.stored.history import point_cell

    history = site.history
    flags = {(step.model, step.index): step for step in history.steps if step.kind != "shift"}
    missing = {model: site.missing(model) for model in history.models}
    head = "".join(f"<th>{html.escape(h)}</th>"
                   for h in ["Run", "Commit", "Date", "Host", *history.models])
    rows = []
    # newest first: what a reader looks for
    for index, run in reversed(list(enumerate(history.runs))):
        cells = []
        for model in history.models:
            point = history.points[model][index]
            step = flags.get((model, index))
            mark = ""
            if step is not None:
                arrow = "▲" if step.kind == "regression" else "▼"
                mark = (f" <span class=\"{step.kind}\">{arrow} "
                        f"{html.escape(fmt.signed_percent(step.change_pct, 1))}</span>")
            why = missing[model].get(index)
            if why is not None:
                mark += f" <span class=\"failed\" title=\"{html.escape(why)}\">× no result</span>"
            npu = (f"<br>{html.escape(fmt.number(point.npu_cycles))} NPU cycles"
                   if point.npu_cycles is not None else "")
            cells.append(f"<td>{html.escape(point_cell(point, history.unit))}{mark}{npu}</td>")
        subject = _subject(site, index)
        commit = (run.commit or "")[:7] + (f" ({run.branch})" if run.branch else "")
        said = f"<br><small>{html.escape(subject)}</small>" if subject else ""
        rows.append("<tr><td><a "
                    f"href=\"{html.escape(link(index))}\">{html.escape(run.run_id)}</a></td>"
                    f"<td>{html.escape(commit or fmt.MISSING)}{said}</td>"
                    f"<td>{html.escape(_when(run.started) or fmt.MISSING)}</td>"
                    f"<td>{html.escape(run.host or fmt.MISSING)}</td>{''.join(cells)}</tr>")
    return f"<table class=\"runs\"><thead><tr>{head}</tr></thead><tbody>\n" + "\n".join(
        rows) + "\n</tbody></table>"


def _card(site: SiteScenario, number: int, offset: int, model: str) -> str:
    """One series on the overview: its name, newest value, state and sparkline, linking to its
    chart."""
    history = site.history
    points = history.points[model]
    missing = site.missing(model)
    measured = [point for point in points if point.median is not None]
    unit = f" {history.unit}" if history.unit else ""
    newest = fmt.number(measured[-1].median) + unit if measured else fmt.MISSING
    effect = [step for step in history.in_effect if step.model == model]
    states = [f"▲ {fmt.signed_percent(step.change_pct, 1)} since {_tick(site, step.index)}, "
              "in effect" for step in effect]
    if points and points[-1].median is None:
        states.append("× newest run: no result")
    if missing:
        states.append(f"{len(missing)} run(s) without a result")
    state = "; ".join(states) or f"steady: no step in effect over {len(points)} run(s)"
    spark = sparkline_svg(history, model, failed=missing,
                          label=f"{history.scenario} {model}: {history.metric} over {len(points)} "
                                "runs")
    href = f"{scenario_page_path(site.name)}#{_chart_id(number, offset)}"
    css = "card in-effect" if effect else "card"
    return (f"<a class=\"{css}\" href=\"{html.escape(href)}\" "
            f"data-scenario=\"{html.escape(site.name)}\" "
            f"data-model=\"{html.escape(model)}\" data-runs=\"{len(measured)}\" "
            f"data-failed=\"{len(missing)}\">"
            f"<span class=\"name\">{html.escape(model)}</span><span "
            f"class=\"value\">{html.escape(newest)}</span>"
            f"{spark}<span class=\"state\">{html.escape(state)}</span></a>")


def _overview_section(site: SiteScenario, number: int) -> str:
    history = site.history
    newest = len(history.runs) - 1
    cards = "".join(_card(site, number, offset, model)
                    for offset, model in enumerate(history.models))
    return (f"<section class=\"scenario\" id=\"{html.escape(_slug(site.name))}\">"
            f"<h2><a href=\"{html.escape(scenario_page_path(site.name))}\">"
            f"{html.escape(history.scenario)}</a>: "
            f"{html.escape(history.metric)} of build {html.escape(history.build)}</h2>"
            f"<p>{len(history.runs)} run(s); newest: "
            f"{_commit_html(site, newest, run_page_path(site.name, history.runs[newest].run_id))}. "
            "Each card: the series as change against its first level (at least "
            f"±{max(2.0 * history.threshold, 2.0):g}&nbsp;% tall), dashed lines the steps, an "
            "orange × a run with no result.</p>"
            f"<div class=\"grid\">{cards}</div></section>")


def _regression_item(site: SiteScenario, number: int, step: Step,
                     out_dir: Path) -> tuple[str, str]:
    """One step on the regressions page: in words, its two runs, links to its chart and (in effect)
    to the compare of the two runs, written into the site here, and the commands; and where the
    step is best seen (its compare, else its chart)."""
    # late: history loads pandas; this module is light
    from fvp_harness.report.stored.history import step_bisect

    history = site.history

    def run_text(index: int) -> str:
        return _commit_html(site, index, run_page_path(site.name, history.runs[index].run_id))

    offset = history.models.index(step.model)
    chart = f"{scenario_page_path(site.name)}#{_chart_id(number, offset)}"
    links = [f"<a class=\"chart-link\" href=\"{html.escape(chart)}\">chart</a>"]
    seen = chart
    said = ""
    commands = []
    pair = step_pair(history, step)
    if pair is not None:
        said = f"; before it: {run_text(pair.before)}"
        commands.append(compare_command(history, site.run_dirs, pair))
        if step.in_effect:
            runs = history.runs
            name = _slug(f"{runs[pair.before].run_id}-vs-{runs[pair.after].run_id}")
            where = f"{_slug(site.name)}/{COMPARE_FOLDER}/{name}"
            back = f"../../../{REGRESSIONS_PAGE}"
            refused = write_compare(history, site.run_dirs, pair, out_dir / where, back)
            if refused is None:
                seen = f"{where}/{RUN_PAGE}"
                links.append(f"<a class=\"compare-link\" href=\"{html.escape(where)}/{RUN_PAGE}\">"
                             "compare of the two runs</a>")
            else:
                why = " ".join(line.strip() for line in refused.splitlines())  # with its reasons
                links.append(f"<span class=\"note refused\">compare refused: {html.escape(why)}"
                             "</span>")
    bisect = step_bisect(history, step)
    if bisect is not None:
        commands.append(bisect)
    code = "".join(f"<br><code class=\"command\">{html.escape(line)}</code>" for line in commands)
    state = "step in-effect" if step.in_effect else "step"
    return (f"<li class=\"{state}\" data-kind=\"{step.kind}\" "
            f"data-scenario=\"{html.escape(site.name)}\" "
            f"data-model=\"{html.escape(step.model)}\">{html.escape(history.scenario)} · "
            f"{step_text(history, step, run_text)}{said}<br>{' · '.join(links)}{code}</li>", seen)


def _feed_entry(site: SiteScenario, step: Step, link: str) -> FeedEntry:
    history = site.history
    run = history.runs[step.index]
    at = f"commit {run.commit[:7]}" if run.commit else f"run {run.run_id}"
    subject = _subject(site, step.index)
    unit = f" {history.unit}" if history.unit else ""
    title = (f"{history.scenario} · {step.model}: {history.metric} "
             f"{fmt.signed_percent(step.change_pct, 1)} since {at}")
    summary = (f"{title}" + (f" ({subject})" if subject else "") + f", run {run.run_id}: level "
               f"{fmt.number(step.before)} -> {fmt.number(step.after)}{unit} (z = {step.z:.1f}), "
               "still in effect at the newest run")
    return FeedEntry(f"urn:fvp-harness:regression:{site.name}:{step.model}:{run.run_id}", title,
                     summary, run.started, link)


def _regressions_page(scenarios: Sequence[SiteScenario], out_dir: Path, regressions: int) -> str:
    """Every step in effect with its two runs compared (the compare written into the site), then the
    others."""
    current: list[str] = []
    others: list[str] = []
    entries: list[FeedEntry] = []
    for number, site in enumerate(scenarios):
        for step in site.history.steps:
            if step.kind != "shift":
                item, seen = _regression_item(site, number, step, out_dir)
                (current if step.in_effect else others).append(item)
                if step.in_effect:
                    entries.append(_feed_entry(site, step, seen))
    newest = max((site.history.runs[-1].started or "" for site in scenarios), default="")
    title = "Regressions: " + ", ".join(site.history.scenario for site in scenarios)
    atomic_write(out_dir / FEED, atom_feed(title, entries, newest or None, REGRESSIONS_PAGE))
    head = (f"<h1>Regressions in effect: {regressions}</h1>\n<p>Each: a step up of a series' level "
            "that <code>history</code>'s step detector found and that still holds at the newest "
            "run, the runs on either side of it, the compare of those two runs (its report, "
            "written into this site) and the command that writes it. The same as a feed: "
            f"<a class=\"feed\" href=\"{FEED}\">{FEED}</a> (Atom).</p>")
    body = [head, f"<ol class=\"regressions\">{''.join(current)}</ol>" if current
            else "<p>No regression in effect.</p>"]
    if others:
        body.append("<h2>Other steps</h2>\n<p>Regressions that no longer hold, and improvements."
                    f"</p>\n<ul class=\"steps\">{''.join(others)}</ul>")
    return _page("Regressions", "\n".join(body), "", regressions)


def _run_page(site: SiteScenario, index: int, out_dir: Path, regressions: int) -> None:
    """The run's report (``report.md`` rendered to HTML) and the images it links, into the run's
    folder of the site; a run without a report gets a page that says so and how to write one."""
    history = site.history
    run = history.runs[index]
    folder = out_dir / _slug(site.name) / _slug(run.run_id)
    folder.mkdir(parents=True, exist_ok=True)
    source = site.run_dirs[index]
    report = source / REPORT_FILES["markdown"]
    commit = f" · commit <code>{html.escape(run.commit)}</code>" if run.commit else ""
    header = (f"<p><a href=\"../{RUN_PAGE}\">← history of {html.escape(history.scenario)}</a> · "
              f"run <code>{html.escape(run.run_id)}</code>{commit}</p>")
    try:
        text = report.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        text = None
    if text is None:
        body = (f"{header}\n<h1>{html.escape(run.run_id)}</h1>\n<p>This run has no "
                f"{REPORT_FILES['markdown']}: write it from the stored records with "
                "<code>fvp-harness report</code> on the run's folder, then write the site "
                "again.</p>")
    else:
        rendered = markdown_html(text)
        linked = rendered.images
        charts = sorted(path.name for path in source.glob("report*.png") if path.name not in linked)
        for name in dict.fromkeys([*linked, *charts]):
            image = local_image(source, name)
            if image is not None:
                atomic_write(folder / name, image.read_bytes())
        shown = "".join(f"\n<p><img src=\"{html.escape(name)}\" alt=\"{html.escape(name)}\"></p>"
                        for name in charts)
        body = f"{header}\n{rendered.html}{shown}"
    atomic_write(folder / RUN_PAGE,
                 _page(f"{history.scenario} · {run.run_id}", body, "../../", regressions))


def write_dashboard(scenarios: Sequence[SiteScenario], out_dir: Path) -> Path:
    """Write the site of ``scenarios`` into ``out_dir`` (created): the overview ``index.html``, the
    regressions page, a page per scenario and per run, and a compare per regression in effect;
    returns the overview's path. Files of earlier sites there are replaced when their names come
    again, and left alone otherwise."""
    if not scenarios:
        raise ValueError("write_dashboard needs at least one scenario")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    regressions = sum(len(site.history.in_effect) for site in scenarios)
    title = "History: " + ", ".join(site.history.scenario for site in scenarios)
    sections = []
    contents = []
    for number, site in enumerate(scenarios):
        for index in range(len(site.history.runs)):
            _run_page(site, index, out_dir, regressions)
        atomic_write(out_dir / scenario_page_path(site.name),
                     _scenario_page(site, number, regressions))
        sections.append(_overview_section(site, number))
        in_effect = len(site.history.in_effect)
        state = (f", <span class=\"regression\">{in_effect} regression(s) in effect</span>"
                 if in_effect else "")
        contents.append(
            f"<li><a href=\"#{html.escape(_slug(site.name))}\">{html.escape(site.history.scenario)}"
                        f"</a>: {len(site.history.runs)} run(s), {len(site.history.models)} "
                        f"model(s){state}</li>")
    atomic_write(out_dir / REGRESSIONS_PAGE, _regressions_page(scenarios, out_dir, regressions))
    series = sum(len(site.history.models) for site in scenarios)
    summary = (f"<p class=\"summary\">{len(scenarios)} scenario(s), {series} series. "
               + (f"<a class=\"regression\" href=\"{REGRESSIONS_PAGE}\">{regressions} "
                  "regression(s) in effect</a>"
                  if regressions else f"<a href=\"{REGRESSIONS_PAGE}\">No regression in effect</a>")
               + ".</p>")
    body = (f"<h1>{html.escape(title)}</h1>\n{summary}\n<ul "
            f"class=\"contents\">{''.join(contents)}</ul>\n"
            + "\n".join(sections))
    return atomic_write(out_dir / DASHBOARD_INDEX, _page(title, body, "", regressions))
