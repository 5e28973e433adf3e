"""The history dashboard as a reader meets it: five stored runs of the simulator (the fourth and fifth with
``fvp.sim.runner_slowdown`` making resnet8 30 % slower), ``fvp-harness history --html`` as a process, the site opened
from a ``file://`` URL in headless Chromium: no console error and nothing fetched from the network, one chart per
model with one point per run, the regression marked in resnet8's chart only, and a click on a point opening that
run's report with its chart.

``FVP_HARNESS_SCREENSHOT=PATH`` also saves the page as a small PNG there (how docs/images/history-dashboard.png is
made: ``FVP_HARNESS_SCREENSHOT=docs/images/history-dashboard.png pytest -n 0 -m browser``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

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
    build: "{fvp_harness} sim runner --driver reuse --cpu-time-report --build-id driver-reuse -o {output}"
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
SLOWER_FROM = 3
"""The run (0-based) from which resnet8 is 30 % slower: the step the site must mark."""


def _commit(root: Path, message: str) -> str:
    """A commit of the scenario's checkout, so each run is measured at a commit of its own (as CI's are)."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", message], cwd=root, env=env, check=True, timeout=30)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True,
                          timeout=30).stdout.strip()


def test_the_history_site_opens_in_chromium_with_the_regression_marked_and_links_to_runs(tmp_path: Path) -> None:
    require_chromium()  # before five simulator runs, not after
    (tmp_path / "dash.yaml").write_text(SCENARIO, encoding="utf-8")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=tmp_path, check=True, timeout=30)
    commits = []
    for index in range(5):
        commits.append(_commit(tmp_path, f"change {index}"))
        slowdown = "reuse:resnet8=1.3" if index >= SLOWER_FROM else "1"
        done = run_cli(tmp_path, "run", "dash.yaml", "-q", "--set", f"fvp.sim.runner_slowdown={slowdown}")
        assert done.returncode == 0, done.stdout + done.stderr
    history = run_cli(tmp_path, "history", "dash", "--no-charts", "--html", "site")
    assert history.returncode == 1, history.stdout + history.stderr  # the regression is in effect
    assert "REGRESSION: resnet8" in history.stdout and "REGRESSION: ds_cnn" not in history.stdout
    runs = sorted(path.name for path in (tmp_path / "results/dash/runs").iterdir())
    assert len(runs) == 4

    with chromium() as browser:
        page = browser.page
        page.goto((tmp_path / "site/index.html").as_uri())
        charts = page.locator("figure.chart")
        assert charts.count() == 2
        assert [charts.nth(i).get_attribute("data-model") for i in range(2)] == ["ds_cnn", "resnet8"]
        for i in range(2):
            assert charts.nth(i).locator("g[id$='-points'] a").count() == 5
            assert charts.nth(i).locator("g[id$='-npu'] a").count() == 5
        assert page.locator("figure.chart[data-model='ds_cnn'] svg text", has_text=commits[0][:7]).count() == 1
        resnet8 = page.locator("figure.chart[data-model='resnet8']")
        assert resnet8.locator(f"[id$='-regression-{SLOWER_FROM}']").count() == 1
        assert resnet8.locator("text=▲ regression").count() == 1
        assert page.locator("figure.chart[data-model='ds_cnn'] [id*='-regression-']").count() == 0
        assert page.locator("li.regression", has_text="resnet8: regression").count() == 1
        if os.environ.get("FVP_HARNESS_SCREENSHOT"):
            small_png(page.screenshot(), Path(os.environ["FVP_HARNESS_SCREENSHOT"]))
        else:
            assert small_png(page.screenshot(), tmp_path / "shot.png").read_bytes()[:4] == b"\x89PNG"

        with page.expect_navigation():
            resnet8.locator("g[id$='-points'] a").nth(SLOWER_FROM).click()
        assert page.url.endswith(f"/site/dash/{runs[SLOWER_FROM]}/index.html"), page.url
        assert page.locator("h1", has_text="dash").count() == 1
        assert page.locator("table td", has_text="resnet8").count() >= 1
        images = page.evaluate("Array.from(document.images).map(image => image.naturalWidth)")
        assert images and all(width > 0 for width in images), "the run's chart is in the site and loads"
        with page.expect_navigation():
            page.locator("a", has_text="history of dash").click()
        assert page.url.endswith("/site/index.html")
        assert browser.problems == []
