"""The history dashboard as a reader meets it: six stored runs of the simulator, each at a commit of
its own (the fourth with the runner crashing, ``fvp.sim.runner_fault=crash``: a failed run; the
fifth and sixth with ``fvp.sim.runner_slowdown`` making resnet8 30 % slower), ``fvp-harness history
--html`` as a process, the site opened from a ``file://`` URL in headless Chromium: no console error
and nothing fetched from the network.

What a maintainer does every morning, checked where the browser shows it: the overview's grid (a
card and a sparkline per model, the failed run marked, resnet8's card flagged) leads to a model's
chart; the chart has one point per measured run on a commit axis (each tooltip naming the commit's
subject), the failed run an orange mark in its slot linking to that run, the regression marked in
resnet8's chart only; the y-axis switch shows the zoomed chart instead of the relative one; a click
on a point opens that run's report with its chart; the regressions page lists resnet8's step with
the runs on either side of it (the failed run skipped), and its compare link opens the comparison of
those two runs; the command printed there writes that comparison.

``FVP_HARNESS_SCREENSHOT=DIR`` also saves the overview and resnet8's chart as small PNGs there (how
docs/images/history-overview.png and history-dashboard.png are made:
``FVP_HARNESS_SCREENSHOT=docs/images pytest -n 0 tests/e2e/test_dashboard_browser.py``).
"""

from __future__ import annotations

import html
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.browser import chromium, require_chromium, small_png
from tests.e2e.cli import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.sim, pytest.mark.browser]

SCENARIO = """\
name: dash
description: two models of one build, five runs, for the history dashboard
platform: corstone1000-a320
vars:
  artifacts: ${scenario_dir}/.artifacts
fvp:
  binary: sim
  sim: {boot_seconds: 0.2}
builds:
  after:
    runner: ${vars.artifacts}/executor_runner-after
    build: "{fvp_harness} sim runner --driver reuse --cpu-time-report --build-id driver-reuse
      -o {output}"
    id: driver-reuse
models:
  ds_cnn:
    file: ${vars.artifacts}/ds_cnn.model
    build: "{fvp_harness} sim model ds_cnn --seed 1 --macs 256 -o {output}"
  resnet8:
    file: ${vars.artifacts}/resnet8.model
    build: "{fvp_harness} sim model resnet8 --seed 1 --macs 256 -o {output}"
run:
  command: "{runner} --model_path={model} --num_executions={iterations}"
  warmup: 1
  iterations: 3
  repetitions: 2
metrics:
  - name: cpu_time
    required: true
  - npu_cycles
"""
FAILED_AT = 3
"""The run (0-based) whose runner crashes: no result for any model."""
SLOWER_FROM = 4
"""The run (0-based) from which resnet8 is 30 % slower: the step the site must mark."""
RUNS = 6


def _commit(root: Path, message: str) -> str:
    """A commit of the scenario's checkout, so each run is measured at a commit of its own (as CI's
    are)."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", message], cwd=root, env=env,
                   check=True, timeout=30)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                          check=True, timeout=30).stdout.strip()


def _shot(page: Any, name: str, tmp_path: Path) -> None:
    """A small PNG of the page: into ``FVP_HARNESS_SCREENSHOT`` when set, else a temp file that must
    be a PNG."""
    folder = os.environ.get("FVP_HARNESS_SCREENSHOT")
    path = small_png(page.screenshot(), Path(folder) / name if folder else tmp_path / name)
    assert path.read_bytes()[:4] == b"\x89PNG"


def _measure(tmp_path: Path) -> list[str]:
    """Six runs of the scenario, each at its own commit; their commits."""
    (tmp_path / "dash.yaml").write_text(SCENARIO, encoding="utf-8")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=tmp_path, check=True, timeout=30)
    commits = []
    for index in range(RUNS):
        commits.append(_commit(tmp_path, f"change {index}"))
        slowdown = "reuse:resnet8=1.3" if index >= SLOWER_FROM else "1"
        fault = "crash" if index == FAILED_AT else "none"
        done = run_cli(tmp_path, "run", "dash.yaml", "-q", "--set",
                       f"fvp.sim.runner_slowdown={slowdown}",
                       "--set", f"fvp.sim.runner_fault={fault}")
        assert done.returncode == (1 if index == FAILED_AT else 0), done.stdout + done.stderr
    return commits


def test_the_history_site_opens_in_chromium_with_the_regression_marked_and_links_to_runs(
        tmp_path: Path) -> None:
    require_chromium()  # before six simulator runs, not after
    commits = _measure(tmp_path)
    history = run_cli(tmp_path, "history", "dash", "--no-charts", "--html", "site")
    assert history.returncode == 1, history.stdout + history.stderr  # the regression is in effect
    assert "REGRESSION: resnet8" in history.stdout and "REGRESSION: ds_cnn" not in history.stdout
    runs = sorted(path.name for path in (tmp_path / "results/dash/runs").iterdir())
    assert len(runs) == RUNS - 1
    site = tmp_path / "site"

    with chromium() as browser:
        page = browser.page
        page.goto((site / "index.html").as_uri())
        _overview(page, tmp_path)
        with page.expect_navigation():
            page.locator("a.card[data-model='resnet8']").click()
        assert page.url.endswith("/site/dash/index.html#c0-1"), page.url
        _charts(page, commits, tmp_path)
        _run_pages(page, runs)
        _regressions(page, commits)
        assert browser.problems == []
    _compare_command(tmp_path, site)


def _overview(page: Any, tmp_path: Path) -> None:
    cards = page.locator("a.card")
    assert cards.count() == 2
    assert [cards.nth(i).get_attribute("data-model") for i in range(2)] == ["ds_cnn", "resnet8"]
    for i in range(2):
        card = cards.nth(i)
        assert card.locator("svg.spark").is_visible()
        assert card.locator("svg.spark polyline").count() == 1
        assert card.locator("svg.spark path.failed").count() == 1, (
            "the failed run is marked in each sparkline")
        assert card.get_attribute("data-runs") == str(RUNS - 1)
    assert page.locator("a.card.in-effect").count() == 1
    assert page.locator("a.card.in-effect").get_attribute("data-model") == "resnet8"
    assert "in effect" in page.locator("a.card[data-model='resnet8'] .state").inner_text()
    assert page.locator("a.card[data-model='ds_cnn'] svg line.regression").count() == 0
    assert page.locator("a[href='regressions.html']",
                        has_text="1 regression(s) in effect").is_visible()
    _shot(page, "history-overview.png", tmp_path)


def _charts(page: Any, commits: list[str], tmp_path: Path) -> None:
    charts = page.locator("figure.chart")
    assert charts.count() == 2
    assert [charts.nth(i).get_attribute("data-model") for i in range(2)] == ["ds_cnn", "resnet8"]
    measured = [i for i in range(RUNS) if i != FAILED_AT]
    for i in range(2):
        shown = charts.nth(i).locator("div.v-relative")
        assert shown.is_visible() and not charts.nth(i).locator("div.v-zoom").is_visible()
        assert shown.locator("g[id$='-points'] a").count() == len(measured)
        assert shown.locator("g[id$='-npu'] a").count() == len(measured)
        failed = shown.locator("g[id$='-failed'] a")
        assert failed.count() == 1 and failed.first.is_visible(), (
            "the failed run: a mark in its slot")
        assert "FAILED" in failed.first.locator("title").text_content()
        tooltip = shown.locator("g[id$='-points'] a").nth(measured.index(SLOWER_FROM)).locator(
            "title")
        assert f"commit {commits[SLOWER_FROM][:7]} change {SLOWER_FROM}" in tooltip.text_content()
    ds_cnn = page.locator("figure.chart[data-model='ds_cnn'] div.v-relative")
    assert ds_cnn.locator("svg text", has_text=commits[0][:7]).count() == 1, (
        "the x axis names the commits")
    resnet8 = page.locator("figure.chart[data-model='resnet8'] div.v-relative")
    assert resnet8.locator(f"[id$='-regression-{SLOWER_FROM}']").count() == 1
    assert resnet8.locator("text=▲ regression").count() == 1
    assert page.locator("figure.chart[data-model='ds_cnn'] [id*='-regression-']").count() == 0
    assert page.locator("li.regression", has_text="resnet8: regression").count() == 1
    # the page as it opens: the axis switch, the steps, both charts
    page.evaluate("window.scrollTo(0, 0)")
    _shot(page, "history-dashboard.png", tmp_path)
    page.locator("label[for='axis-zoom']").click()  # the y-axis switch: CSS only
    for i in range(2):
        assert charts.nth(i).locator("div.v-zoom").is_visible()
        assert not charts.nth(i).locator("div.v-relative").is_visible()
    page.locator("label[for='axis-relative']").click()
    assert resnet8.is_visible()


def _run_pages(page: Any, runs: list[str]) -> None:
    resnet8 = page.locator("figure.chart[data-model='resnet8'] div.v-relative")
    with page.expect_navigation():
        resnet8.locator("g[id$='-failed'] a").first.click()
    assert page.url.endswith(f"/site/dash/{runs[FAILED_AT]}/index.html"), page.url
    page.go_back()
    with page.expect_navigation():
        # the failed run has no point
        resnet8.locator("g[id$='-points'] a").nth(SLOWER_FROM - 1).click()
    assert page.url.endswith(f"/site/dash/{runs[SLOWER_FROM]}/index.html"), page.url
    assert page.locator("h1", has_text="dash").count() == 1
    assert page.locator("table td", has_text="resnet8").count() >= 1
    images = page.evaluate("Array.from(document.images).map(image => image.naturalWidth)")
    assert images and all(width > 0 for width in images), "the run's chart is in the site and loads"
    with page.expect_navigation():
        page.locator("a", has_text="history of dash").click()
    assert page.url.endswith("/site/dash/index.html")


def _regressions(page: Any, commits: list[str]) -> None:
    with page.expect_navigation():
        page.locator("nav.site a", has_text="Regressions").click()
    assert page.url.endswith("/site/regressions.html")
    assert page.locator("a.feed").get_attribute("href") == "regressions.xml"  # the same, as a feed
    items = page.locator("li.in-effect")
    assert items.count() == 1 and items.first.get_attribute("data-model") == "resnet8"
    text = items.first.inner_text()
    assert f"{commits[SLOWER_FROM][:7]} “change {SLOWER_FROM}”" in text
    assert f"before it: commit {commits[FAILED_AT - 1][:7]} “change {FAILED_AT - 1}”" in text, (
        "failed run skipped")
    with page.expect_navigation():
        items.first.locator("a.compare-link").click()
    assert "/site/dash/compare/" in page.url
    assert page.locator("table td", has_text="resnet8").count() >= 1
    assert page.locator("td", has_text="slower").count() >= 1
    widths = page.evaluate("Array.from(document.images).map(image => image.naturalWidth)")
    assert widths and all(width > 0 for width in widths), (
        "the compare's charts are inlined and load")
    with page.expect_navigation():
        page.locator("a", has_text="← regressions").click()
    assert page.url.endswith("/site/regressions.html")


def _compare_command(tmp_path: Path, site: Path) -> None:
    """The command the regressions page prints compares the same two runs when typed in the same
    folder."""
    page = (site / "regressions.html").read_text(encoding="utf-8")
    command = re.search(r'<code class="command">fvp-harness (compare [^<]+)</code>', page)
    assert command is not None
    done = run_cli(tmp_path, *html.unescape(command.group(1)).split(), "-o", "typed")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert re.search(r"\| resnet8 .*slower",
                     (tmp_path / "typed" / "report.md").read_text(encoding="utf-8"))
