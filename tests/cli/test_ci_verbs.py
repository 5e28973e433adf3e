"""The CI-facing verbs in process, on synthetic stored runs (no simulator): ``compare`` (exit codes,
refusal, ``--junit``, ``--github-summary``), ``history``, ``report --junit``, and what CI logs show
(``ProgressView``: one line per failure cut to width, the scenario named, no "ready after 0.0 s";
``make``'s one-line why; library warnings kept out of the log)."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import pytest
from rich.console import Console

from fvp_harness.cli import main as cli_main
from fvp_harness.cli.main import main
from fvp_harness.cli.progress import ProgressView, fit_line
from fvp_harness.cli.verb_make import _why
from fvp_harness.events import Event
from tests.report.stored_runs import write_run

xmlschema = pytest.importorskip("xmlschema")
XSD = Path(__file__).resolve().parent.parent / "report" / "junit-10.xsd"
BASE = {("before", "m1"): 2.0, ("after", "m1"): 1.0, ("before", "m2"): 3.0, ("after", "m2"): 1.5}


def _two_runs(tmp_path: Path, after_m1: float = 1.3, **changes: object) -> Path:
    folder = tmp_path / "results" / "demo"
    write_run(folder, BASE, run_id="20260301-100000-aaaa", commit="a" * 40, seed=1)
    write_run(folder, BASE | {("after", "m1"): after_m1}, run_id="20260302-100000-bbbb",
              commit="b" * 40, branch="feature", seed=2, changes=changes or None)
    return folder


def test_compare_verb_fails_on_a_violated_gate_and_writes_ci_outputs(tmp_path, capsys, monkeypatch):
    folder = _two_runs(tmp_path)
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    junit = tmp_path / "junit.xml"
    code = main(["compare", f"{folder}@main", f"{folder}@feature", "--junit", str(junit),
                 "--github-summary"])
    out = capsys.readouterr().out
    assert code == 1
    assert "verdict: FAIL" in out and "gate cpu_time" in out
    report = folder / "compare" / "20260301-100000-aaaa-vs-20260302-100000-bbbb" / "report.md"
    assert f"report: {report}" in out
    verdict = json.loads(report.with_name("report.json").read_text())["verdict"]
    assert verdict["status"] == "FAIL"
    assert ([(g["model"], g["candidate"]) for g in verdict["violated_gates"]]
            == [("m1", "after@bbbbbbb")])
    xmlschema.XMLSchema(str(XSD)).validate(str(junit))
    assert "after@bbbbbbb vs after@aaaaaaa" in junit.read_text()
    text = summary.read_text()
    assert (text.startswith("earlier step\n# demo: bbbbbbb vs aaaaaaa") and
            "**Verdict: FAIL**" in text)


def test_compare_verb_passes_when_nothing_changed(tmp_path, capsys):
    folder = _two_runs(tmp_path, after_m1=1.0)
    out_dir = tmp_path / "cmp"
    assert main(["compare", f"{folder}@latest#-1", str(folder), "-o", str(out_dir), "-q"]) == 0
    assert (out_dir / "report.md").is_file() and (out_dir / "report.png").is_file()


def test_compare_verb_refuses_runs_of_another_platform_with_exit_2(tmp_path, capsys):
    folder = _two_runs(tmp_path, platform="corstone300")
    assert main(["compare", f"{folder}@main", f"{folder}@feature"]) == 2
    err = capsys.readouterr().err
    assert ("cannot be compared" in err and
            "platform: 'corstone1000-a320' (A) -> 'corstone300' (B)" in err)


def test_compare_verb_warns_about_soft_differences(tmp_path, capsys):
    folder = _two_runs(tmp_path, after_m1=1.0, harness_version="1.0")
    assert main(["compare", f"{folder}@main", f"{folder}@feature", "-q"]) == 0
    assert "warning: harness version: '0.9' (A) -> '1.0' (B)" in capsys.readouterr().err


def test_history_verb_exits_1_while_a_regression_is_in_effect(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "results" / "demo"
    for index in range(5):
        values = BASE | ({("after", "m2"): 1.8} if index >= 2 else {})
        write_run(folder, values, run_id=f"run-{index}", commit=f"{index}" * 40, seed=index,
                  started=f"2026-03-0{index + 1}T10:00:00Z")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    junit = tmp_path / "history.xml"
    code = main(["history", "demo", "--results", str(tmp_path / "results"), "--junit", str(junit),
                 "--github-summary"])
    out = capsys.readouterr().out
    assert code == 1
    assert "REGRESSION: m2 +" in out and "at run run-2 (commit 2222222), in effect" in out
    assert "m1" not in [line.split()[1]
                        for line in out.splitlines() if line.startswith("REGRESSION")]
    assert (folder / "history" / "history.md").is_file() and (
        folder / "history" / "history-m2.png"
    ).is_file()
    xmlschema.XMLSchema(str(XSD)).validate(str(junit))
    assert summary.read_text().startswith("# demo: history of cpu_time (after)")


def test_history_verb_without_regression_exits_0(tmp_path, capsys):
    folder = tmp_path / "demo"
    for index in range(3):
        write_run(folder, BASE, run_id=f"run-{index}", seed=index,
                  started=f"2026-03-0{index + 1}T10:00:00Z")
    assert main(["history", str(folder), "--no-charts"]) == 0
    assert "no regression of 5% or more" in capsys.readouterr().out
    assert not list((folder / "history").glob("*.png"))


def test_history_verb_on_nothing_is_bad_input(tmp_path, capsys):
    assert main(["history", str(tmp_path / "nope")]) == 2


def test_github_summary_without_the_variable_does_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    folder = _two_runs(tmp_path, after_m1=1.0)
    assert main(["compare", f"{folder}@main", f"{folder}@feature", "--github-summary", "-q"]) == 0
    assert "step summary" not in capsys.readouterr().out


def test_report_verb_writes_junit_from_the_stored_records(tmp_path, capsys):
    folder = tmp_path / "demo"
    write_run(folder, {("before", "m1"): 2.0, ("after", "m1"): 1.0}, run_id="r1",
              failed=("r1-after-m1",))
    junit = tmp_path / "junit.xml"
    assert main(["report", str(folder), "--junit", str(junit), "-q"]) == 1
    xmlschema.XMLSchema(str(XSD)).validate(str(junit))
    text = junit.read_text()
    assert ('<testsuite name="demo"' in text and 'name="r1-after-m1"' in text and
            'type="test failure"' in text)
    first = junit.read_bytes()
    assert main(["report", str(folder), "--junit", str(junit), "-q"]) == 1
    assert junit.read_bytes() == first  # byte-stable


# --- what a CI log shows --------------------------------------------------------------------------


def _view(width: int = 100) -> tuple[ProgressView, io.StringIO]:
    buffer = io.StringIO()
    return ProgressView(Console(file=buffer, width=width, force_terminal=False),
                        width=width), buffer


def test_a_unit_failure_is_one_line_cut_to_the_width_with_its_log():
    view, buffer = _view(130)
    with view:
        view(Event("unit_done", session="smoke/s0", unit="r0-after-m1", status="failed",
                   detail="CommandFailed: the runner exited with status 139; last output: "
                          "Segmentation fault and a "
                   "great deal more text\nsecond line (log: "
                   "results/smoke/logs/s0/r0-after-m1.log)"))
    lines = buffer.getvalue().splitlines()
    assert len(lines) == 1 and len(lines[0]) <= 130
    assert lines[0].startswith("smoke/s0: r0-after-m1 FAILED: CommandFailed: the runner exited")
    assert "…" in lines[0] and lines[0].endswith("[results/smoke/logs/s0/r0-after-m1.log]")
    assert view.failed_shown == ["smoke/r0-after-m1"]


def test_make_lines_name_their_scenario_and_a_reused_instance_does_not_boot():
    view, buffer = _view()
    with view:
        view(Event("build", name="builds.after.runner", seconds=0.5, scenario="smoke"))
        view(Event("boot", session="smoke/s0"))
        view(Event("booted", session="smoke/s0", seconds=2.1))
        view(Event("boot", session="driver_reuse/s0", detail="reused"))
        view(Event("booted", session="driver_reuse/s0", seconds=0.0, detail="reused"))
        view(Event("analysis", scenario="driver_reuse"))
    text = buffer.getvalue()
    assert "smoke: built builds.after.runner (0.5 s)" in text
    assert "smoke/s0: ready after 2.1 s" in text
    assert "driver_reuse/s0: on the instance already booted for the previous job" in text
    assert "ready after 0.0 s" not in text and "driver_reuse/s0: booting" not in text
    assert "driver_reuse: analysing and writing the report" in text


def test_a_stored_baseline_is_named_and_its_differences_warned():
    view, buffer = _view()
    with view:
        view(Event("baseline", name="before", detail="from stored run 1 (commit abc) in results/x"))
        view(Event("baseline", name="before", status="warning",
                   detail="host: 'a' (stored) -> 'b' (this run)"))
    text = buffer.getvalue()
    assert "baseline before: from stored run 1" in text
    assert "warning: stored baseline differs: host: 'a' (stored) -> 'b' (this run)" in text


def test_fit_line_keeps_the_reason_before_the_log():
    line = fit_line("u FAILED: ", "x" * 200, 60, "a/very/long/path/to/the/unit.log")
    assert len(line) == 60 and line.startswith("u FAILED: xxx") and "…" in line
    assert fit_line("u: ", "short", 60, "log") == "u: short [log]"


def test_a_failing_scenario_says_why_in_one_line(tmp_path):
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"verdict": {"status": "FAIL", "reasons": [
        "gate load_time: +203% > +10% allowed (resnet8, CI +150 … +260%)",
        "2 unit(s) failed: a, b"]}}))
    line = _why("smoke", report, 120)
    assert line.startswith("smoke: FAIL: gate load_time: +203% > +10% allowed") and "\n" not in line
    assert line.endswith("(and 1 more: see the report)")
    assert _why("smoke", None, 120) == "smoke: FAIL: see the report"


def test_library_warnings_stay_out_of_the_log_unless_verbose():
    try:
        cli_main._configure_logging(0)
        assert not logging.getLogger("py.warnings").isEnabledFor(logging.WARNING)
        assert not logging.getLogger("distributed").isEnabledFor(logging.WARNING)
        # the harness's own warnings stay
        assert logging.getLogger("fvp_harness").isEnabledFor(logging.WARNING)
        cli_main._configure_logging(1)
        assert logging.getLogger("py.warnings").isEnabledFor(logging.WARNING)
    finally:
        logging.captureWarnings(False)
        for name in cli_main.LIBRARY_LOGGERS:
            logging.getLogger(name).setLevel(logging.NOTSET)


def test_make_writes_one_junit_suite_per_scenario_from_its_stored_records(tmp_path, capsys):
    import argparse

    from fvp_harness.batch.engine import Node
    from fvp_harness.cli.verb_make import _ci_outputs

    nodes = []
    for index, (stem, after) in enumerate((("fast", 1.0), ("slow", 2.5))):
        folder = tmp_path / stem
        write_run(folder, {("before", "m1"): 2.0, ("after", "m1"): after}, run_id=f"r-{stem}")
        nodes.append(Node(index=index, path=tmp_path / f"{stem}.yaml", stem=stem,
                          results_dir=folder))
    nodes.append(Node(index=2, path=tmp_path / "never.yaml", stem="never",
                      results_dir=tmp_path / "never"))
    junit = tmp_path / "junit.xml"
    _ci_outputs(argparse.Namespace(junit=junit, github_summary=False, quiet=0, verbose=0), nodes)
    xmlschema.XMLSchema(str(XSD)).validate(str(junit))
    text = junit.read_text()
    assert ('<testsuite name="fast"' in text and '<testsuite name="slow"' in text and
            "never" not in text)
    assert ('name="m1: gate cpu_time (≤ +10%)" classname="slow">' in text and
            'type="violated gate"' in text)
