"""``compare A B`` on synthetic stored runs that kept ETDump traces: the run report's event section,
compared across the two runs (both traced: the table and ``report.events.csv``; one traced: one line
saying which; none: nothing), ``compare --html DIR`` (one self-contained page: the tables, the
charts inlined, a hostile event name escaped) and the terminal's words for a candidate that got
slower. tests/e2e/test_etdump_e2e.py runs the same on the simulator."""

from __future__ import annotations

import csv
import html
import json
import re
from pathlib import Path

from fvp_harness.cli.main import main
from fvp_harness.report.rendering.etdump_tables import EVENT_CSV_COLUMNS
from tests.report.traced_runs import HOSTILE, RUN_A, RUN_B, traced_runs


def _out(folder: Path) -> Path:
    return folder / "compare" / f"{RUN_A}-vs-{RUN_B}"


def test_both_runs_traced_compares_their_events_as_a_run_report_does(tmp_path, capsys):
    folder = traced_runs(tmp_path, traced=(True, True))
    assert main(["compare", f"{folder}@main", f"{folder}@feature", "-q"]) == 0
    out = _out(folder)
    markdown = (out / "report.md").read_text()
    section = markdown[markdown.index("## Where the time went (ETDump events)"):]
    assert markdown.index("| Model ") < markdown.index("## Where the time went")
    # run B's build against run A's, as labelled above
    assert "### m1: after@bbbbbbb vs after@aaaaaaa" in section
    assert ("| Event | Instruction | after@aaaaaaa | after@bbbbbbb | Change | Self time saved | "
            "Share of saving |") \
        in section
    # B's NPU call is longer
    assert "Method load (`Default` block" in section and "Total saving -" in section
    data = json.loads((out / "report.json").read_text())["etdump_events"]
    npu = next(r for r in data["rows"] if r["event"] == "+NPU" and r["run_block"] == "Execute"
               and r["baseline"] == "after@aaaaaaa")
    assert (npu["baseline"], npu["candidate"]) == ("after@aaaaaaa", "after@bbbbbbb")
    assert npu["n_baseline"] == npu["n_candidate"] == 9  # 3 units x (4 executions - 1 warmup)
    assert 280 < npu["change"] < 320 and npu["share_pct"] > 95
    assert "note" not in data and data["warnings"] == []
    with (out / "report.events.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == EVENT_CSV_COLUMNS and len(rows) == len(data["rows"])


def test_one_traced_run_is_one_line_and_none_is_no_section(tmp_path, capsys):
    folder = traced_runs(tmp_path, traced=(False, True))
    assert main(["compare", f"{folder}@main", f"{folder}@feature"]) == 0
    note = ("Only run B kept ETDump traces (before@bbbbbbb, after@bbbbbbb); run A has none, so "
            "there is no event-by-event comparison: trace the builds in both runs "
            "(`builds.<name>.traced`).")
    assert f"note: {note}" in capsys.readouterr().out
    markdown = (_out(folder) / "report.md").read_text()
    section = markdown[markdown.index("## Where the time went (ETDump events)"):]
    assert section.split("\n")[2] == note and "| Event |" not in section
    assert "No model has an ETDump" not in section

    untraced = traced_runs(tmp_path / "none", traced=(False, False))
    assert main(["compare", f"{untraced}@main", f"{untraced}@feature", "-q"]) == 0
    assert "ETDump" not in (_out(untraced) / "report.md").read_text()
    assert not (_out(untraced) / "report.events.csv").exists()
    assert "etdump_events" not in json.loads((_out(untraced) / "report.json").read_text())


def test_compare_html_is_one_page_with_its_tables_charts_and_nothing_raw(tmp_path, capsys):
    folder = traced_runs(tmp_path, traced=(True, True))
    site = tmp_path / "page"
    assert main(["compare", f"{folder}@main", f"{folder}@feature", "--html", str(site)]) == 0
    index = site / "index.html"
    assert f"page: {index}" in capsys.readouterr().out
    # self-contained: nothing beside it
    assert sorted(p.name for p in site.iterdir()) == ["index.html"]
    text = index.read_text(encoding="utf-8")
    assert text.count("<table>") >= 3  # the headline, the events per inference, the load
    assert "<h2>Where the time went (ETDump events)</h2>" in text
    images = re.findall(r'<img src="([^"]+)"', text)
    assert images and all(src.startswith("data:image/png;base64,") for src in images)
    assert HOSTILE not in text and html.escape(HOSTILE, quote=False) in text
    assert "<script" not in text and "Content-Security-Policy" in text
    assert f"A: run {RUN_A}" in text
    again = tmp_path / "again"
    assert main(["compare", f"{folder}@main", f"{folder}@feature", "--html", str(again), "-q"]) == 0
    # the same runs, the same bytes
    assert (again / "index.html").read_bytes() == index.read_bytes()


def test_a_slower_candidate_is_a_cost_in_the_terminal_as_in_the_report(tmp_path, capsys):
    folder = traced_runs(tmp_path, traced=(False, False), after_m1=1.3)
    # gate: ≤ 10 % slower
    assert main(["compare", f"{folder}@main", f"{folder}@feature", "--build", "after"]) == 1
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("  m1 "))
    assert re.search(r" 3\d\.\d% slower +\d\d\.\d … \d\d\.\d% slower +slower ", row), row
    assert "saved -" not in out and "-3" not in row
    saved = re.search(r"(3\d\.\d% slower)", row)
    assert saved is not None
    report = (_out(folder) / "report.md").read_text()
    assert f"| {saved.group(1)} |" in report, "the report says it in the same words"
