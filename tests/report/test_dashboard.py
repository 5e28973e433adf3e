"""The history dashboard (``history --html``) on synthetic stored runs: one chart per model with one link per
measured run, the step ``history`` found marked in that model's chart only, every link reaching a page the site
holds, a run's report rendered with its images (raw HTML in it escaped), byte-stable output. The browser test
(tests/e2e/test_dashboard_browser.py) opens the same kind of site from the simulator's runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fvp_harness.cli.main import main
from fvp_harness.report.stored.dashboard import (
    DASHBOARD_INDEX,
    SiteScenario,
    run_page_path,
    write_dashboard,
)
from fvp_harness.report.stored.history import history_from_runs, load_history
from tests.report.stored_runs import write_run

BASE = {("after", "m1"): 1.0, ("after", "m2"): 2.0, ("before", "m1"): 2.0, ("before", "m2"): 4.0}


def _five_runs(tmp_path: Path, *, skip_m2_at: int | None = None, count: int = 5) -> Path:
    folder = tmp_path / "results" / "demo"
    for index in range(count):
        values = dict(BASE)
        if index >= 2:  # the third run brought a 20 % regression of m1, and it stays
            values[("after", "m1")] *= 1.2
        if index == skip_m2_at:
            values = {key: value for key, value in values.items() if key[1] != "m2"}
        write_run(folder, values, run_id=f"2026030{index + 1}-100000-000{index}", commit=f"{index + 1}" * 40,
                  started=f"2026-03-0{index + 1}T10:00:00Z", seed=index)
    return folder


def _scenario(folder: Path) -> SiteScenario:
    runs = load_history(folder)
    return SiteScenario(folder.name, history_from_runs(runs), tuple(run.run.path for run in runs))


def _site(folder: Path | SiteScenario, out: Path) -> str:
    site = folder if isinstance(folder, SiteScenario) else _scenario(folder)
    return write_dashboard([site], out).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def five(tmp_path_factory: pytest.TempPathFactory) -> SiteScenario:
    """Five runs, the third bringing a 20 % regression of m1 (analysed once for the tests that only read)."""
    return _scenario(_five_runs(tmp_path_factory.mktemp("five")))


def _charts(page: str) -> dict[str, str]:
    """model -> its ``<figure>``'s HTML."""
    found = re.findall(r'<figure class="chart" id="[^"]+" data-scenario="[^"]*" data-model="([^"]+)".*?</figure>',
                       page, re.S)
    bodies = re.split(r'<figure class="chart"', page)[1:]
    return dict(zip(found, bodies, strict=True))


def _point_links(chart: str) -> list[str]:
    group = re.search(r'<g id="c\d+-\d+-points">(.*?)\n   </g>', chart, re.S)
    assert group, "the chart has its points group"
    return re.findall(r'<a xlink:href="([^"]+)">', group.group(1))


def test_one_chart_per_model_each_point_a_link_to_its_runs_page(tmp_path, five):
    out = tmp_path / "site"
    page = _site(five, out)
    charts = _charts(page)
    assert list(charts) == ["m1", "m2"]
    for chart in charts.values():
        links = _point_links(chart)
        assert links == [run_page_path("demo", f"2026030{i + 1}-100000-000{i}") for i in range(5)]
        assert all((out / link).is_file() for link in links)
        assert 'target="_blank"' not in chart, "a point opens its run in the same tab"
        assert "<title>run 20260301-100000-0000 (commit 1111111): cpu_time " in chart
    assert 'id="c0-0-regression-2"' in charts["m1"] and "▲ regression +" in charts["m1"]
    assert "-regression-" not in charts["m2"] and "-improvement-" not in charts["m2"]
    assert 'class="regression">m1: regression +' in page and "still in effect at the newest run" in page
    assert "<script" not in page, "no JavaScript"
    assert not re.findall(r'(?:src|href)="(?:[a-z]+:)?//', page), "nothing from the network"


def test_a_run_that_did_not_measure_a_model_is_a_gap_not_a_point(tmp_path):
    page = _site(_five_runs(tmp_path, skip_m2_at=3), tmp_path / "site")
    charts = _charts(page)
    assert len(_point_links(charts["m1"])) == 5
    links = _point_links(charts["m2"])
    assert len(links) == 4 and "20260304-100000-0003" not in "".join(links)
    assert 'data-model="m2" data-runs="4"' in page


def test_the_same_runs_give_the_same_bytes(tmp_path, five):
    assert _site(five, tmp_path / "a") == _site(five, tmp_path / "b")


def test_a_runs_page_is_its_report_with_its_images_and_no_raw_html(tmp_path):
    folder = _five_runs(tmp_path, count=2)
    (folder / "report.md").write_text("# demo\n\n| Model | Median |\n|---|---|\n| m1 | 1.2 ms |\n\n"
                                      "![m1](report-m1.png)\n\n<script>alert(1)</script>\n", encoding="utf-8")
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
    assert main(["history", str(folder), "--no-charts", "--html", str(out)]) == 1  # the regression is in effect
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
    nodes = [SimpleNamespace(stem=stem, results_dir=base / stem, error=None) for stem in ("alpha", "never-run", "beta")]
    _dashboard(tmp_path / "site", nodes, quiet=False)  # type: ignore[arg-type]
    assert f"dashboard: {tmp_path / 'site' / DASHBOARD_INDEX} (2 scenario(s))" in capsys.readouterr().out
    page = (tmp_path / "site" / DASHBOARD_INDEX).read_text(encoding="utf-8")
    assert page.count('<section class="scenario"') == 2 and 'href="#alpha"' in page and 'href="#beta"' in page
    assert 'data-scenario="beta" data-model="m2"' in page
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "ids are unique in a page of several charts"
    assert all(ref in ids for ref in re.findall(r'(?:url\(#|xlink:href="#)([^)"]+)', page)), "references resolve"
    assert (tmp_path / "site" / run_page_path("beta", "20260302-100000-beta")).is_file()
