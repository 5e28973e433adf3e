"""The history dashboard: a static site of every stored run of one or more scenarios (``history --html DIR``).
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fvp_harness.files import atomic_write
from fvp_harness.report import format as fmt
from fvp_harness.report.rendering.report_page import local_image, markdown_html, page
from fvp_harness.store.folder import REPORT_FILES

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from fvp_harness.report.stored.history import History, Point, Step

__all__ = ["DASHBOARD_INDEX", "SiteScenario", "chart_svg", "run_page_path", "site_scenario", "write_dashboard"]

DASHBOARD_INDEX = "index.html"
"""The site's entry page, at the top of ``DIR``."""
RUN_PAGE = "index.html"
"""Each run's page, in ``<scenario folder>/<run id>/``."""

_REGRESSION, _IMPROVEMENT, _POINT, _NPU = "#c0392b", "#3b9b5b", "#1f6fb4", "#7b5aa6"


@dataclass(frozen=True)
class SiteScenario:
    """One scenario of the site: its history and, per run of ``history.runs`` (same order), the run's folder
    (where its ``report.md`` is). ``name`` is the scenario's results folder name: unique in a results base, it
    names the scenario's folder in the site."""

    name: str
    history: History
    run_dirs: tuple[Path, ...]

    def __post_init__(self) -> None:
        if len(self.run_dirs) != len(self.history.runs):
            raise ValueError(f"{self.name}: {len(self.run_dirs)} run folders for {len(self.history.runs)} runs")


def site_scenario(results_dir: Path) -> SiteScenario:
    """A scenario's results folder as the site shows it: every stored run, the history's defaults (the candidate
    build, the primary metric, ``compare.min_effect``). ``make --html`` builds its site from these; ``history
    --html`` from the history it was asked for."""
    # late: the history's analysis (pandas, scipy) loads only when a site is asked for
    from fvp_harness.report.stored.history import history_from_runs, load_history

    runs = load_history(results_dir)
    return SiteScenario(Path(results_dir).name, history_from_runs(runs), tuple(run.run.path for run in runs))


def _slug(text: str) -> str:
    """A file-name and id-safe form of a scenario, model or run name."""
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", text) or "_"


def run_page_path(scenario: str, run_id: str) -> str:
    """The page of one run, relative to the site's top (a URL path: always ``/``)."""
    return f"{_slug(scenario)}/{_slug(run_id)}/{RUN_PAGE}"


# --- charts -------------------------------------------------------------------------------------------------------


def _point_title(history: History, index: int, point: Point) -> str:
    """A point's tooltip: the run, its commit, the median with its CI and the NPU cycles."""
    from fvp_harness.report.stored.history import point_cell  # late: history imports pandas and matplotlib

    run = history.runs[index]
    bits = [f"{history.metric} {point_cell(point, history.unit)}"]
    if point.npu_cycles is not None:
        bits.append(f"NPU cycles {fmt.number(point.npu_cycles)}")
    return f"run {run.run_id}" + (f" (commit {run.commit[:7]})" if run.commit else "") + ": " + "; ".join(bits)


def chart_svg(history: History, model: str, *, chart_id: str, link: Callable[[int], str]) -> str:
    """One model's chart as an SVG element for inlining into HTML: the median of ``history.metric`` per run with
    its CI, the fitted level, each step of ``history.steps`` marked at the run it starts (red: regression, green:
    improvement; the change written beside it), and below it the NPU cycles per run. Each point links to
    ``link(run index)`` and carries a tooltip (SVG ``<title>``). ``chart_id`` prefixes every element id, so several
    charts can share one page."""
    # late: matplotlib loads only when a dashboard is written (the CLI's start-up stays light)
    import matplotlib
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure

    points = history.points[model]
    steps = [step for step in history.steps if step.model == model and step.kind != "shift"]
    measured = [i for i, point in enumerate(points) if point.median is not None]
    with_npu = [i for i, point in enumerate(points) if point.npu_cycles is not None]
    with matplotlib.rc_context({"svg.hashsalt": chart_id, "svg.fonttype": "none"}):
        figure = Figure(figsize=(9, 4.6 if with_npu else 3.4), dpi=72)
        FigureCanvasSVG(figure)
        if with_npu:
            axes, npu_axes = figure.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1.2]})
        else:
            axes, npu_axes = figure.add_subplot(), None
        low = [max(0.0, points[i].median - points[i].ci_low)  # type: ignore[operator]
               if points[i].ci_low is not None else 0.0 for i in measured]
        high = [max(0.0, points[i].ci_high - points[i].median)  # type: ignore[operator]
                if points[i].ci_high is not None else 0.0 for i in measured]
        medians = [points[i].median for i in measured]
        axes.errorbar(measured, medians, yerr=[low, high], fmt="none", ecolor="#555555", capsize=3,
                      label="95 % CI")
        dots = axes.scatter(measured, medians, s=36, color=_POINT, zorder=3, label=f"median ({history.build})")
        dots.set_urls([link(i) for i in measured])
        dots.set_gid(f"{chart_id}-points")
        fitted = [(i, level) for i, level in enumerate(history.levels[model]) if level is not None]
        if fitted:
            axes.step([i for i, _ in fitted], [level for _, level in fitted], where="mid", color="#8c8c8c",
                      linewidth=1.3, label="fitted level", zorder=1)
        for step in steps:
            _mark_step(axes, npu_axes, step, chart_id)
        unit = f" ({history.unit})" if history.unit else ""
        axes.set_ylabel(f"{history.metric}{unit}")
        axes.set_title(f"{history.scenario}: {model}", fontsize=12, loc="left")
        axes.margins(y=0.25)
        axes.legend(frameon=False, fontsize=9, loc="upper left", ncols=3)
        last = npu_axes if npu_axes is not None else axes
        if npu_axes is not None:
            cycles = npu_axes.scatter(with_npu, [points[i].npu_cycles for i in with_npu], s=22, marker="s",
                                      color=_NPU, zorder=3)
            cycles.set_urls([link(i) for i in with_npu])
            cycles.set_gid(f"{chart_id}-npu")
            npu_axes.set_ylabel("NPU cycles", fontsize=9)
            npu_axes.margins(y=0.4)
        for ax in (axes, npu_axes):
            if ax is not None:
                ax.spines[["top", "right"]].set_visible(False)
                ax.grid(axis="y", color="#eeeeee")
        labels = [run.label for run in history.runs]
        if len(set(labels)) < len(labels):  # several runs of one commit: their ids tell them apart
            labels = [run.run_id for run in history.runs]
        last.set_xticks(range(len(history.runs)), labels, rotation=30, ha="right", fontsize=8)
        last.set_xlim(-0.5, max(0.5, len(history.runs) - 0.5))
        figure.align_ylabels()
        figure.tight_layout()
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg"):]  # inline in HTML: no XML declaration, no DOCTYPE, no RDF metadata
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, count=1, flags=re.S)
    label = html.escape(f"{history.scenario}: {model}, {history.metric} over {len(points)} runs", quote=True)
    svg = svg.replace("<svg ", f'<svg role="img" aria-label="{label}" ', 1)
    titles = {html.escape(link(index), quote=True): html.escape(_point_title(history, index, point), quote=False)
              for index, point in enumerate(points)}

    def anchor(match: re.Match[str]) -> str:
        # the run opens in the same tab (matplotlib asks for a new one), and a tooltip says what the point is
        href = match.group(1)
        title = titles.get(href)
        return f'<a xlink:href="{href}">' + (f"<title>{title}</title>" if title else "")

    return _own_ids(_ANCHOR.sub(anchor, svg), chart_id)


_ANCHOR = re.compile(r'<a xlink:href="([^"]*)"(?: target="_blank")?>')
_ID = re.compile(r'\bid="([^"]+)"')
_REFERENCE = re.compile(r'(url\(#|xlink:href="#)([^)"]+)')


def _own_ids(svg: str, chart_id: str) -> str:
    """Every id of one chart under its ``chart_id`` (matplotlib names its groups ``figure_1``, ``axes_1``... in every
    chart, and ids must be unique in a page holding several), the references to them following."""
    ids = {name for name in _ID.findall(svg) if not name.startswith(chart_id + "-")}
    svg = _ID.sub(lambda m: f'id="{chart_id}-{m.group(1)}"' if m.group(1) in ids else m.group(0), svg)
    return _REFERENCE.sub(lambda m: f"{m.group(1)}{chart_id}-{m.group(2)}" if m.group(2) in ids else m.group(0), svg)


def _mark_step(axes: Axes, npu_axes: Axes | None, step: Step, chart_id: str) -> None:
    """A step as a dashed line between the last run of the old level and the first of the new, with its change
    written beside it; the group's id names its kind and run index."""
    colour = _REGRESSION if step.kind == "regression" else _IMPROVEMENT
    where = step.index - 0.5
    line = axes.axvline(where, color=colour, linestyle="--", linewidth=1.4)
    line.set_gid(f"{chart_id}-{step.kind}-{step.index}")
    arrow = "▲" if step.kind == "regression" else "▼"
    note = axes.annotate(
        f"{arrow} {step.kind} {fmt.signed_percent(step.change_pct, 1)}", (where, step.after),
        textcoords="offset points", xytext=(5, 8), color=colour, fontsize=10)
    note.set_gid(f"{chart_id}-{step.kind}-{step.index}-label")
    if npu_axes is not None:
        npu_axes.axvline(where, color=colour, linestyle="--", linewidth=1.0)


# --- pages --------------------------------------------------------------------------------------------------------


def _page(title: str, body: str) -> str:
    return page(title, body, "fvp-harness history --html")


def _step_line(history: History, step: Step, href: str) -> str:
    run = history.runs[step.index]
    commit = f" (commit {html.escape(run.commit[:7])})" if run.commit else ""
    unit = f" {history.unit}" if history.unit else ""
    state = ""
    if step.kind == "regression":
        state = "; still in effect at the newest run" if step.in_effect else "; no longer in effect"
    # late: history loads pandas; this module is light
    from fvp_harness.report.stored.history import step_bisect

    command = step_bisect(history, step)
    bisect = f"<br><code>{html.escape(command)}</code>" if command is not None else ""
    return (f"<li class=\"{step.kind}\">{html.escape(step.model)}: {step.kind} "
            f"{html.escape(fmt.signed_percent(step.change_pct, 1))} at run "
            f"<a href=\"{html.escape(href)}\">{html.escape(run.run_id)}</a>{commit}: level "
            f"{html.escape(fmt.number(step.before))} → {html.escape(fmt.number(step.after) + unit)} "
            f"(z = {step.z:.1f}){state}{bisect}</li>")


def _scenario_section(site: SiteScenario, number: int) -> str:
    history = site.history
    link = lambda index: run_page_path(site.name, history.runs[index].run_id)  # noqa: E731
    unit = f" ({history.unit})" if history.unit else ""
    parts = [f"<section class=\"scenario\" id=\"{html.escape(_slug(site.name))}\">",
             f"<h2>{html.escape(history.scenario)}: {html.escape(history.metric)}{html.escape(unit)} of build "
             f"{html.escape(history.build)}</h2>",
             f"<p>{len(history.runs)} stored run(s), oldest first. Each point: the median per inference with its "
             f"95 % CI; grey: the fitted level; a dashed line: a step of at least {history.threshold:g}&nbsp;% found "
             "over the whole series (red a regression, green an improvement). Below: the NPU cycles. Each point "
             "opens its run's report.</p>"]
    shown = [step for step in history.steps if step.kind != "shift"]
    if shown:
        parts.append("<ul class=\"steps\">" + "".join(
            _step_line(history, step, link(step.index)) for step in shown) + "</ul>")
    else:
        parts.append(f"<p>No step of {history.threshold:g}&nbsp;% or more in any model.</p>")
    for offset, model in enumerate(history.models):
        chart_id = f"c{number}-{offset}"
        measured = sum(point.median is not None for point in history.points[model])
        parts.append(f"<figure class=\"chart\" id=\"{chart_id}\" data-scenario=\"{html.escape(site.name)}\" "
                     f"data-model=\"{html.escape(model)}\" data-runs=\"{measured}\">")
        parts.append(chart_svg(history, model, chart_id=chart_id, link=link))
        parts.append(f"<figcaption>{html.escape(model)}: {measured} of {len(history.runs)} run(s) measured "
                     f"{html.escape(history.metric)}</figcaption></figure>")
    parts.append(_runs_table(site, link))
    if history.notes:
        parts.append("<ul class=\"note\">" + "".join(f"<li>{html.escape(note)}</li>" for note in history.notes)
                     + "</ul>")
    parts.append("</section>")
    return "\n".join(parts)


def _runs_table(site: SiteScenario, link: Callable[[int], str]) -> str:
    from fvp_harness.report.stored.history import point_cell  # late: history imports pandas and matplotlib

    history = site.history
    flags = {(step.model, step.index): step for step in history.steps if step.kind != "shift"}
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ["Run", "Commit", "Date", "Host", *history.models])
    rows = []
    for index, run in reversed(list(enumerate(history.runs))):  # newest first: what a reader looks for
        cells = []
        for model in history.models:
            point = history.points[model][index]
            step = flags.get((model, index))
            mark = ""
            if step is not None:
                arrow = "▲" if step.kind == "regression" else "▼"
                mark = (f" <span class=\"{step.kind}\">{arrow} "
                        f"{html.escape(fmt.signed_percent(step.change_pct, 1))}</span>")
            npu = f"<br>{html.escape(fmt.number(point.npu_cycles))} NPU cycles" if point.npu_cycles is not None else ""
            cells.append(f"<td>{html.escape(point_cell(point, history.unit))}{mark}{npu}</td>")
        commit = (run.commit or "")[:7] + (f" ({run.branch})" if run.branch else "")
        when = (run.started or "")[:16].replace("T", " ")
        rows.append(f"<tr><td><a href=\"{html.escape(link(index))}\">{html.escape(run.run_id)}</a></td>"
                    f"<td>{html.escape(commit or fmt.MISSING)}</td><td>{html.escape(when or fmt.MISSING)}</td>"
                    f"<td>{html.escape(run.host or fmt.MISSING)}</td>{''.join(cells)}</tr>")
    return f"<table class=\"runs\"><thead><tr>{head}</tr></thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table>"


def _run_page(site: SiteScenario, index: int, out_dir: Path) -> None:
    """The run's report (``report.md`` rendered to HTML) and the images it links, into the run's folder of the
    site; a run without a report gets a page that says so and how to write one."""
    history = site.history
    run = history.runs[index]
    folder = out_dir / _slug(site.name) / _slug(run.run_id)
    folder.mkdir(parents=True, exist_ok=True)
    source = site.run_dirs[index]
    report = source / REPORT_FILES["markdown"]
    back = "../../" + DASHBOARD_INDEX
    header = (f"<p><a href=\"{back}\">← history of {html.escape(history.scenario)}</a> · run "
              f"<code>{html.escape(run.run_id)}</code>" + (f" · commit <code>{html.escape(run.commit)}</code>"
                                                           if run.commit else "") + "</p>")
    try:
        text = report.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        text = None
    if text is None:
        body = (f"{header}\n<h1>{html.escape(run.run_id)}</h1>\n<p>This run has no {REPORT_FILES['markdown']}: "
                "write it from the stored records with <code>fvp-harness report</code> on the run's folder, then "
                "write the site again.</p>")
    else:
        rendered = markdown_html(text)
        linked = rendered.images
        charts = sorted(path.name for path in source.glob("report*.png") if path.name not in linked)
        for name in dict.fromkeys([*linked, *charts]):
            image = local_image(source, name)
            if image is not None:
                atomic_write(folder / name, image.read_bytes())
        shown = "".join(f"\n<p><img src=\"{html.escape(name)}\" alt=\"{html.escape(name)}\"></p>" for name in charts)
        body = f"{header}\n{rendered.html}{shown}"
    atomic_write(folder / RUN_PAGE, _page(f"{history.scenario} · {run.run_id}", body))


def write_dashboard(scenarios: Sequence[SiteScenario], out_dir: Path) -> Path:
    """Write the site of ``scenarios`` into ``out_dir`` (created): ``index.html`` and one page per run; returns the
    index's path. Files of earlier sites there are replaced when their names come again, and left alone
    otherwise."""
    if not scenarios:
        raise ValueError("write_dashboard needs at least one scenario")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    title = "History: " + ", ".join(site.history.scenario for site in scenarios)
    sections = []
    contents = []
    for number, site in enumerate(scenarios):
        for index in range(len(site.history.runs)):
            _run_page(site, index, out_dir)
        sections.append(_scenario_section(site, number))
        in_effect = len(site.history.in_effect)
        state = f", <span class=\"regression\">{in_effect} regression(s) in effect</span>" if in_effect else ""
        contents.append(f"<li><a href=\"#{html.escape(_slug(site.name))}\">{html.escape(site.history.scenario)}"
                        f"</a>: {len(site.history.runs)} run(s), {len(site.history.models)} model(s){state}</li>")
    body = f"<h1>{html.escape(title)}</h1>\n<ul class=\"contents\">{''.join(contents)}</ul>\n" + "\n".join(sections)
    return atomic_write(out_dir / DASHBOARD_INDEX, _page(title, body))
