"""``compare --html`` as a reader meets it: two stored runs with ETDump traces (synthetic: no
simulator needed for a page), ``fvp-harness compare A B --html DIR`` as a process, the page opened
from a ``file://`` URL in headless Chromium: no console error and nothing fetched, the tables
rendered (headline, events per inference and for the load), the charts loaded from the page itself,
and a hostile event name shown as text, not run as markup."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.browser import chromium, require_chromium
from tests.e2e.cli import run_cli
from tests.report.traced_runs import HOSTILE, traced_runs

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def test_the_compare_page_renders_its_tables_and_charts_in_chromium(tmp_path: Path) -> None:
    require_chromium()
    folder = traced_runs(tmp_path, traced=(True, True))
    done = run_cli(tmp_path, "compare", f"{folder}@main", f"{folder}@feature", "--build", "after",
                   "--html", "page")
    assert done.returncode == 0, done.stdout + done.stderr
    with chromium() as browser:
        page = browser.page
        page.goto((tmp_path / "page" / "index.html").as_uri())
        tables = page.locator("table")
        assert tables.count() >= 3  # the headline, the events per inference, the method load
        headline = tables.first
        assert headline.locator("th").first.inner_text().strip() == "Model"
        assert headline.locator("td", has_text="m1").count() >= 1
        events = page.locator("table", has=page.locator("th", has_text="Self time saved"))
        assert events.count() == 2
        names = events.first.locator("tbody tr td:first-child").all_inner_texts()
        assert "+NPU" in names and HOSTILE in names  # the hostile name is a cell's text
        assert page.locator("img[src='x']").count() == 0  # ... and no element of its own
        widths = page.evaluate("Array.from(document.images).map(image => image.naturalWidth)")
        assert widths and all(width > 0 for width in widths), (
            "the inlined charts load under the page's CSP")
        # a chart's link leads to its figure on the page
        page.locator("a[href^='#chart-']").first.click()
        assert page.url.endswith("#chart-report-png"), page.url
        assert page.locator("figure#chart-report-png img").is_visible()
        assert browser.problems == []
