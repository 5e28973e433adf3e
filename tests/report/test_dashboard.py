"""The history dashboard (``history --html``) on synthetic stored runs: one chart per model with one
link per measured run, the step ``history`` found marked in that model's chart only, every link
reaching a page the site holds, a run's report rendered with its images (raw HTML in it escaped),
byte-stable output; the overview's grid of sparklines, a failed run marked in its slot, the commit
axis with the commits' subjects, the relative and from-zero axes that keep noise small, and the
regressions page with the compare of each step in effect. The browser test
(tests/e2e/test_dashboard_browser.py) opens the same kind of site from the simulator's runs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest

from fvp_harness.cli.main import main
from fvp_harness.report.stored.dashboard import (
    DASHBOARD_INDEX,
    REGRESSIONS_PAGE,
    SiteScenario,
    run_page_path,
    scenario_page_path,
    site_scenario,
    write_dashboard,
)
from fvp_harness.report.stored.history import history_from_runs, load_history, step_bisect
from tests.report.stored_runs import write_run

BASE = {("after", "m1"): 1.0, ("after", "m2"): 2.0, ("before", "m1"): 2.0, ("before", "m2"): 4.0}


def _five_runs(tmp_path: Path, *, skip_m2_at: int | None = None, count: int = 5,
               failed_at: int | None = None, commits: list[str] | None = None,
               regression: bool = True) -> Path:
    """``regression=False``: no step (and so no compare to write: 2 s a site)."""
    folder = tmp_path / "results" / "demo"
    for index in range(count):
        values = dict(BASE)
        if index >= 2 and regression:  # the third run brought a 20 % regression of m1, and it stays
            values[("after", "m1")] *= 1.2
        if index == skip_m2_at:
            values = {key: value for key, value in values.items() if key[1] != "m2"}
        failed = tuple(f"r{rep}-after-{model}" for rep in range(3)
                       for model in ("m1", "m2")) if index == failed_at \
            else ()
        commit = commits[index] if commits else f"{index + 1}" * 40
        write_run(folder, values, run_id=f"2026030{index + 1}-100000-000{index}", commit=commit,
                  started=f"2026-03-0{index + 1}T10:00:00Z", seed=index, failed=failed)
    return folder


def _scenario(folder: Path) -> SiteScenario:
    runs = load_history(folder)
    return SiteScenario(folder.name, history_from_runs(runs), tuple(run.run.path for run in runs))


def _site(folder: Path | SiteScenario, out: Path) -> str:
    """The site written; the page of its (one) scenario's charts."""
    site = folder if isinstance(folder, SiteScenario) else _scenario(folder)
    write_dashboard([site], out)
    return (out / scenario_page_path(site.name)).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def five(tmp_path_factory: pytest.TempPathFactory) -> SiteScenario:
    """Five runs, the third bringing a 20 % regression of m1 (analysed once for the tests that only
    read)."""
    return _scenario(_five_runs(tmp_path_factory.mktemp("five")))


@pytest.fixture(scope="module")
def five_site(tmp_path_factory: pytest.TempPathFactory, five: SiteScenario) -> Path:
    """The site of ``five``, written once for the tests that only read it."""
    out = tmp_path_factory.mktemp("five-site") / "site"
    _site(five, out)
    return out


def _charts(page: str) -> dict[str, str]:
    """model -> its ``<figure>``'s HTML."""
    found = re.findall(r'<figure class="chart" id="[^"]+" data-scenario="[^"]*" '
                       r'data-model="([^"]+)".*?</figure>', page, re.S)
    bodies = re.split(r'<figure class="chart"', page)[1:]
    return dict(zip(found, bodies, strict=True))


def _point_links(chart: str, group: str = "points", axis: str = "relative") -> list[str]:
    """The links of one group (points, npu, failed) of the chart drawn on ``axis``."""
    found = re.search(rf'<g id="c\d+-\d+-{axis}-{group}">(.*?)</g>', chart, re.S)
    assert found, f"the chart has its {group} group"
    return re.findall(r'<a href="([^"]+)">', found.group(1))


def _ys(chart: str, axis: str) -> list[float]:
    """The y pixel of each point of the chart drawn on ``axis``."""
    found = re.search(rf'<g id="c\d+-\d+-{axis}-points">(.*?)</g>', chart, re.S)
    assert found
    return [float(y) for y in re.findall(r'<circle cx="[^"]+" cy="([^"]+)"', found.group(1))]


def test_one_chart_per_model_each_point_a_link_to_its_runs_page(five_site):
    out = five_site
    page = (out / scenario_page_path("demo")).read_text(encoding="utf-8")
    charts = _charts(page)
    assert list(charts) == ["m1", "m2"]
    for chart in charts.values():
        for axis in ("relative", "zero", "zoom"):
            links = _point_links(chart, axis=axis)
            runs = [f"2026030{i + 1}-100000-000{i}" for i in range(5)]
            assert [f"demo/{link}" for link in links] == [run_page_path("demo", r) for r in runs]
            assert all((out / "demo" / link).is_file() for link in links)
        assert 'target="_blank"' not in chart, "a point opens its run in the same tab"
        title = "<title>commit 1111111\n2026-03-01 10:00 · run 20260301-100000-0000\ncpu_time "
        assert title in chart
    assert 'id="c0-0-relative-regression-2"' in charts["m1"] and "▲ regression +" in charts["m1"]
    assert "-regression-" not in charts["m2"] and "-improvement-" not in charts["m2"]
    assert ('class="regression">m1: regression +' in page and
            "still in effect at the newest run" in page)
    for path in out.rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        assert "<script" not in text, f"no JavaScript: {path}"
        assert not re.findall(r'(?:src|href)="(?:[a-z]+:)?//', text), (
            f"nothing from the network: {path}")


def test_a_run_that_did_not_measure_a_model_is_a_gap_not_a_point(tmp_path):
    page = _site(_five_runs(tmp_path, skip_m2_at=3), tmp_path / "site")
    charts = _charts(page)
    assert len(_point_links(charts["m1"])) == 5
    links = _point_links(charts["m2"])
    assert len(links) == 4 and "20260304-100000-0003" not in "".join(links)
    assert 'data-model="m2" data-runs="4"' in page
    assert _point_links(charts["m2"], "failed") == ["20260304-100000-0003/index.html"], (
        "the gap is marked")


def test_the_same_runs_give_the_same_bytes(tmp_path, five):
    assert _site(five, tmp_path / "a") == _site(five, tmp_path / "b")


def test_a_runs_page_is_its_report_with_its_images_and_no_raw_html(tmp_path):
    folder = _five_runs(tmp_path, count=2)
    (folder / "report.md").write_text("# demo\n\n| Model | Median |\n|---|---|\n| m1 | 1.2 ms |\n\n"
                                      "![m1](report-m1.png)\n\n<script>alert(1)</script>\n",
                                      encoding="utf-8")
    (folder / "report-m1.png").write_bytes(b"\x89PNG m1")
    (folder / "report.png").write_bytes(b"\x89PNG all")
    out = tmp_path / "site"
    _site(folder, out)
    newest = out / run_page_path("demo", "20260302-100000-0001")
    page = newest.read_text(encoding="utf-8")
    assert "<table>" in page and "<td>1.2 ms</td>" in page
    assert '<img src="report-m1.png" alt="m1"' in page and '<img src="report.png"' in page
    assert (newest.parent / "report-m1.png").read_bytes() == b"\x89PNG m1"
    assert (newest.parent / "report.png").read_bytes() == b"\x89PNG all"
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert f'href="../../{DASHBOARD_INDEX}"' in page
    older = (out / run_page_path("demo", "20260301-100000-0000")).read_text(encoding="utf-8")
    assert "This run has no report.md" in older and "fvp-harness report" in older


def test_site_scenario_needs_one_folder_per_run(five):
    with pytest.raises(ValueError, match="4 run folders for 5 runs"):
        SiteScenario("demo", five.history, five.run_dirs[:4])


def test_history_verb_writes_the_site_with_html(tmp_path, capsys):
    folder = _five_runs(tmp_path, count=4)
    out = tmp_path / "site"
    # the regression is in effect
    # the regression is in effect
    assert main(["history", str(folder), "--no-charts", "--html", str(out)]) == 1
    assert f"dashboard: {out / DASHBOARD_INDEX}" in capsys.readouterr().out
    assert len(list(out.glob("demo/*/index.html"))) == 4


def test_make_html_puts_every_scenario_with_stored_runs_on_one_site(tmp_path, capsys):
    from types import SimpleNamespace

    from fvp_harness.cli.verb_make import _dashboard

    base = tmp_path / "results"
    for stem in ("alpha", "beta"):
        for index in range(2):
            write_run(base / stem, BASE, run_id=f"2026030{index + 1}-100000-{stem}", seed=index,
                      started=f"2026-03-0{index + 1}T10:00:00Z")
    (base / "never-run").mkdir()
    nodes = [SimpleNamespace(stem=stem, results_dir=base / stem, error=None)
             for stem in ("alpha", "never-run", "beta")]
    _dashboard(tmp_path / "site", nodes, quiet=False)  # type: ignore[arg-type]
    assert (f"dashboard: {tmp_path / 'site' / DASHBOARD_INDEX} (2 scenario(s))"
            in capsys.readouterr().out)
    page = (tmp_path / "site" / DASHBOARD_INDEX).read_text(encoding="utf-8")
    assert (page.count('<section class="scenario"') == 2 and 'href="#alpha"' in page and
            'href="#beta"' in page)
    assert 'data-scenario="beta" data-model="m2"' in page
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "ids are unique in a page of several charts"
    assert all(ref in ids for ref in re.findall(r'(?:url\(#|xlink:href="#)([^)"]+)', page)), (
        "references resolve")
    assert (tmp_path / "site" / run_page_path("beta", "20260302-100000-beta")).is_file()


def _git_commits(root: Path, count: int) -> list[str]:
    """A checkout around ``root`` with ``count`` commits, subjects ``change <i>``."""
    import os
    import subprocess

    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True, timeout=30)
    commits = []
    for index in range(count):
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", f"change {index}"], cwd=root,
                       env=env,
                       check=True, timeout=30)
        commits.append(subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                                      text=True,
                                      check=True, timeout=30).stdout.strip())
    return commits


def test_the_x_axis_names_each_runs_commit_and_day_and_the_tooltip_its_subject(tmp_path):
    commits = _git_commits(tmp_path, 4)
    folder = _five_runs(tmp_path, count=4, commits=commits, regression=False)
    site = site_scenario(folder)
    assert site.subjects == {commit: f"change {i}" for i, commit in enumerate(commits)}
    page = _site(site, tmp_path / "site")
    chart = _charts(page)["m1"]
    labels = re.findall(r'rotate\(-30\)" text-anchor="end" fill="#333333">([^<]+)</text>', chart)
    assert labels[:4] == [f"{commits[i][:7]} 03-0{i + 1}" for i in range(4)]
    assert (f"<title>commit {commits[2][:7]} change 2\n2026-03-03 10:00 · run "
            "20260303-100000-0002\n" in chart)
    assert "<small>change 3</small>" in page, "the runs' table says each commit's subject"


def test_a_failed_run_is_a_mark_in_its_slot_saying_why_not_a_blank(tmp_path):
    site = site_scenario(_five_runs(tmp_path, failed_at=3, regression=False))
    page = _site(site, tmp_path / "site")
    for model, chart in _charts(page).items():
        assert 'data-failed="1"' in chart
        for axis in ("relative", "zero", "zoom"):
            assert _point_links(chart, "failed", axis) == ["20260304-100000-0003/index.html"], model
        assert "FAILED: 3 of 3 unit(s) of after failed; test: runner exited 1" in chart
    assert page.count('class="failed" title="FAILED: 3 of 3') == 2, (
        "the runs' table marks both cells")
    overview = (tmp_path / "site" / DASHBOARD_INDEX).read_text(encoding="utf-8")
    assert overview.count('<path class="failed"') == 2, "each sparkline marks the failed run"


def test_noise_on_a_flat_series_stays_a_thin_band_on_the_relative_and_zero_axes(tmp_path):
    folder = tmp_path / "results" / "demo"
    for index in range(8):  # ±0.5 % of noise around a flat 2 ms, no step
        write_run(folder,
                  {("after", "m1"): 2.0 * (1 + 0.005 * (-1) ** index), ("before", "m1"): 4.0},
                  run_id=f"2026030{index + 1}-100000-000{index}", seed=index, spread=0.001)
    site = _scenario(folder)
    assert not [step for step in site.history.steps if step.kind != "shift"]
    chart = _charts(_site(site, tmp_path / "site"))["m1"]
    height = 230  # the main panel's height in pixels (site_chart.MAIN_HEIGHT)
    spread = {axis: max(_ys(chart, axis)) - min(_ys(chart, axis))
              for axis in ("relative", "zero", "zoom")}
    assert spread["zoom"] > 0.4 * height, spread  # autoscaled: the noise fills the chart
    # ±10 % shown at least (threshold 5 %): 1 % is thin
    assert spread["relative"] < 0.08 * height, spread
    assert spread["zero"] < 0.03 * height, spread
    assert ">+10 %</text>" in chart and ">-10 %</text>" in chart


def test_the_overview_is_a_grid_of_sparklines_each_linking_to_its_chart(five_site):
    out = five_site
    overview = (out / DASHBOARD_INDEX).read_text(encoding="utf-8")
    cards = re.findall(r'<a class="(card[^"]*)" href="([^"]+)" data-scenario="demo" '
                       r'data-model="(\w+)"', overview)
    assert [(css, model) for css, _, model in cards] == [("card in-effect", "m1"), ("card", "m2")]
    page = (out / scenario_page_path("demo")).read_text(encoding="utf-8")
    for _, href, model in cards:
        path, anchor = href.split("#")
        assert ((out / path).is_file() and
                f'<figure class="chart" id="{anchor}" data-scenario="demo" ' \
            f'data-model="{model}"' in page)
    assert overview.count('<svg class="spark"') == 2 and overview.count("<polyline") == 2
    assert re.search(r"▲ \+(19|20)\.\d% since 3333333 03-03, in effect", overview)
    assert f'href="{REGRESSIONS_PAGE}">1 regression(s) in effect</a>' in overview


def test_the_regressions_page_gives_each_step_in_effect_with_the_compare_of_its_two_runs(
    tmp_path, capsys
):
    folder = tmp_path / "results" / "demo"
    # m1 20 % slower from the third run on; m2 10 % slower for runs 3 and 4 only
    for index in range(6):
        values = dict(BASE)
        if index >= 2:
            values[("after", "m1")] *= 1.2
        if index in (2, 3):
            values[("after", "m2")] *= 1.1
        write_run(folder, values, run_id=f"2026030{index + 1}-100000-000{index}",
                  commit=f"{index + 1}" * 40,
                  started=f"2026-03-0{index + 1}T10:00:00Z", seed=index)
    out = tmp_path / "site"
    _site(_scenario(folder), out)
    page = (out / REGRESSIONS_PAGE).read_text(encoding="utf-8")
    in_effect = re.findall(r'<li class="step in-effect" data-kind="regression" '
                           r'data-scenario="demo" '
                           r'data-model="(\w+)">(.*?)</li>', page, re.S)
    assert [model for model, _ in in_effect] == ["m1"]
    item = in_effect[0][1]
    assert ("from commit <code>3333333</code>" in item and
            "before it: commit <code>2222222</code>" in item)
    compare = re.search(r'<a class="compare-link" href="([^"]+)">', item)
    assert (compare and compare.group(1)
            == "demo/compare/20260302-100000-0001-vs-20260303-100000-0002/index.html")
    report = (out / compare.group(1)).read_text(encoding="utf-8")
    assert re.search(r'>m1</td>\s*<td[^>]*>1\.\d+ -&gt; 1\.\d+ ms</td>\s*<td[^>]*>(19|20)\.\d% '
                     r'slower', report)
    assert "data:image/png;base64," in report, "the compare's charts are in its page"
    assert f'href="../../../{REGRESSIONS_PAGE}"' in report
    command = re.search(r'<code class="command">(fvp-harness compare [^<]+)</code>', item)
    assert command is not None
    args = command.group(1).split()[1:]
    assert args[1:3] == [str(folder / "runs" / "20260302-100000-0001"),
                         str(folder / "runs" / "20260303-100000-0002")]
    assert main([*args, "-o", str(tmp_path / "cmp")]) == 1, (
        "the command given compares the same two runs (FAIL)")
    assert re.search(r"\| m1 .*\| +(19|20)\.\d% slower \|",
                     (tmp_path / "cmp" / "report.md").read_text(encoding="utf-8"))
    capsys.readouterr()
    others = re.findall(r'<li class="step" data-kind="(\w+)" data-scenario="demo" '
                        r'data-model="(\w+)">', page)
    assert ("regression", "m2") in others and ("improvement", "m2") in others, (
        "the steps no longer in effect")
    assert page.count('class="compare-link"') == 1, (
        "a compare is written for the steps in effect only")
    feed = ElementTree.parse(out / "regressions.xml").getroot()  # the same as an Atom feed
    atom = "{http://www.w3.org/2005/Atom}"
    assert feed.tag == f"{atom}feed" and feed.findtext(f"{atom}updated") == "2026-03-06T10:00:00Z"
    entries = feed.findall(f"{atom}entry")
    assert [entry.findtext(f"{atom}id") for entry in entries] == [
        "urn:fvp-harness:regression:demo:m1:20260303-100000-0002"]
    assert entries[0].findtext(f"{atom}updated") == "2026-03-03T10:00:00Z"
    assert re.fullmatch(r"demo · m1: cpu_time \+(19|20)\.\d% since commit 3333333",
                        entries[0].findtext(f"{atom}title") or "")
    link = entries[0].find(f"{atom}link")
    assert link is not None and link.get("href") == compare.group(1)


def test_commit_subjects_skips_unknown_commits_and_places_outside_a_checkout(tmp_path):
    from fvp_harness.report.stored.commit_subjects import commit_subjects

    outside = tmp_path / "outside"
    outside.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    commits = _git_commits(repo, 2)
    assert commit_subjects([*commits, "f" * 40, None, "not-a-hash"], [outside, repo]) == {
        commits[0]: "change 0", commits[1]: "change 1"}
    assert commit_subjects(commits, [outside]) == {}, "no checkout there: no subjects, no error"


def test_a_steps_bisect_starts_at_the_last_run_that_measured_not_at_a_failed_one(tmp_path):
    # m1 20 % slower from the third run, which failed; each run records its runner's source commit
    folder = _five_runs(tmp_path, failed_at=2, count=6)
    for index, run in enumerate([*sorted((folder / "runs").iterdir()), folder]):
        manifest = run / "manifest.json"
        data = json.loads(manifest.read_text(encoding="utf-8"))
        data["builds"]["after"]["source"] = {"origin": "scenario", "commit": 'abcdef'[index] * 40}
        manifest.write_text(json.dumps(data), encoding="utf-8")
    site = _scenario(folder)
    step = next(step for step in site.history.steps if step.kind == "regression")
    assert step.model == "m1" and step.index == 3
    command = step_bisect(site.history, step)
    assert command is not None and f"--good {'b' * 12} --bad {'d' * 12}" in command, command
    page = _site(site, tmp_path / "site")
    assert f"--good {'b' * 12} --bad {'d' * 12}" in page and f"--good {'c' * 12}" not in page


def test_a_step_whose_runs_compare_refuses_says_why_instead_of_a_compare_page(tmp_path):
    folder = tmp_path / "results" / "demo"
    for index in range(6):  # the fourth run measured another platform: compare refuses that pair
        values = dict(BASE)
        if index >= 3:
            values[("after", "m1")] *= 1.2
        changes = {"platform": "corstone300"} if index >= 3 else None
        write_run(folder, values, run_id=f"2026030{index + 1}-100000-000{index}", seed=index,
                  started=f"2026-03-0{index + 1}T10:00:00Z", changes=changes)
    out = tmp_path / "site"
    _site(_scenario(folder), out)
    page = (out / REGRESSIONS_PAGE).read_text(encoding="utf-8")
    item = re.search(r'<li class="step in-effect"[^>]*data-model="m1">(.*?)</li>', page, re.S)
    assert item is not None and 'class="compare-link"' not in item.group(1)
    refused = re.search(r'<span class="note refused">compare refused: ([^<]*)</span>',
                        item.group(1))
    assert refused is not None and "measured different things" in refused.group(1)
    assert "platform" in refused.group(1), "the reason is named"
    assert '<code class="command">fvp-harness compare ' in item.group(1), "the command is given"
    assert not (out / "demo" / "compare").exists()
