"""``scenarios/driver_reuse_traced.yaml`` end to end on the embedded simulator (the CLI as a
process): both builds' ETDump files are fetched, and the report's event table puts the saving inside
the delegate call (the driver set-up the "after" build no longer does per inference), leaves the
other events unchanged within their CIs, and its shares add up to the total saving within its CI.
Then one unit's file is truncated: ``report DIR`` warns about that unit and changes nothing else."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.sim]

SMALL = ("--set", "run.repetitions=2", "--set", "run.iterations=6")


def test_the_traced_scenario_shows_where_the_driver_reuse_saving_went(tmp_path: Path) -> None:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    done = run_cli(tmp_path, "run", "scenarios/driver_reuse_traced.yaml", "-q", *SMALL)
    assert done.returncode == 0, done.stderr + done.stdout
    folder = tmp_path / "results" / "driver_reuse_traced"
    records = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]
    assert len(records) == 8
    for r in records:  # each unit's trace is kept and hashed, and is no output
        kept = folder / "fetched" / r["unit_id"] / "etdump.bin"
        assert hashlib.sha256(kept.read_bytes()).hexdigest() == r["extra"]["etdump_sha256"]
        assert "etdump.bin" not in r["outputs"]

    report = json.loads((folder / "report.json").read_text())["etdump_events"]
    per_inference = [t for t in report["totals"] if t["run_block"] == "Execute"]
    assert {t["model"] for t in per_inference} == {"resnet8", "ds_cnn"}
    for total in per_inference:
        assert total["shares_within_ci"] is True, total
        rows = [r for r in report["rows"] if r["model"] == total["model"] and
                r["run_block"] == "Execute"]
        top = rows[0]
        assert top["event"] == "+EthosUBackend::execute()NPU" and top["share_pct"] > 95, top
        copy = next(r for r in rows
                    if r["event"] == "+EthosUBackend::execute()handles.input.memcpy()")
        assert copy["change_ci_low"] <= 0 <= copy["change_ci_high"], copy  # unchanged within its CI
        for row in rows[1:]:  # no other event's own time moved: unchanged within its CI
            assert row["self_saved_ci_low"] <= 0 <= row["self_saved_ci_high"], row
    # the load: the "after" build creates the driver objects there instead
    for total in report["totals"]:
        if total["run_block"] == "Default":
            assert total["total_saved_ci_high"] < 0, total
    markdown = (folder / "report.md").read_text()
    assert markdown.index("| Model ") < markdown.index("## Where the time went (ETDump events)")
    csv_rows = (folder / "report.events.csv").read_text().splitlines()
    assert len(csv_rows) == 1 + len(report["rows"])

    before = {name: (folder / name).read_text() for name in ("report.md", "report.csv")}
    broken = folder / "fetched" / records[0]["unit_id"] / "etdump.bin"
    broken.write_bytes(broken.read_bytes()[:100])
    again = run_cli(tmp_path, "report", str(folder), "-q")
    assert again.returncode == 0, again.stderr + again.stdout
    assert "Traceback" not in again.stderr
    markdown = (folder / "report.md").read_text()
    unit = records[0]["unit_id"]
    assert f"- {unit}: fetched/{unit}/etdump.bin cannot be read (the size prefix says" in markdown
    assert (folder / "report.csv").read_text() == before["report.csv"]
    headline = before["report.md"][:before["report.md"].index("## Where the time went")]
    assert markdown.startswith(headline)


def _rows(report: dict) -> dict[tuple[str, str, int, str], dict]:
    """The event rows of a report.json by (model, run block, event, occurrence)."""
    return {(r["model"], r["run_block"], r["event"], r["occurrence"]): r
            for r in report["etdump_events"]["rows"]}


def test_a_stored_baseline_run_compares_its_candidate_with_the_stored_baselines_traces(
        tmp_path: Path) -> None:
    """``run --baseline-from``: the event table's baseline side is the stored run's traces of
    ``before`` (its medians, CIs and counts, not this run's re-run drift-check units), the candidate
    this run's; a stored run that kept no traces is one line."""
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    one = ("--only-model", "resnet8", "--set", "run.repetitions=2", "--set", "run.iterations=6")
    stored = run_cli(tmp_path, "run", "scenarios/driver_reuse_traced.yaml", "-q", *one, "-o",
                     "results/main")
    assert stored.returncode == 0, stored.stderr + stored.stdout
    stored_report = json.loads((tmp_path / "results/main/report.json").read_text())
    pr = run_cli(tmp_path, "run", "scenarios/driver_reuse_traced.yaml", "-q", *one,
                 "--baseline-from",
                 "results/main", "-o", "results/pr", "--set", "fvp.sim.runner_seed=13")
    assert pr.returncode == 0, pr.stderr + pr.stdout
    folder = tmp_path / "results/pr"
    # the drift check's unit was traced too
    assert (folder / "fetched/r0-before-resnet8/etdump.bin").exists()
    report = json.loads((folder / "report.json").read_text())
    ours, theirs = _rows(report), _rows(stored_report)
    npu = ours[("resnet8", "Execute", "+EthosUBackend::execute()NPU", 0)]
    assert (npu["baseline"], npu["candidate"]) == ("before", "after")
    # 2 stored units x 6; no re-run unit mixed in
    assert npu["n_baseline"] == npu["n_candidate"] == 12
    assert npu["share_pct"] > 95
    both = [key for key, row in ours.items() if row["present"] == "both"]
    assert both and set(both) <= set(theirs)
    for key in both:  # the stored run's traces of `before`, exactly as its own report read them
        for column in ("n_baseline", "baseline_median", "baseline_ci_low", "baseline_ci_high"):
            assert ours[key][column] == theirs[key][column], (key, column)
    # measured now
    assert any(ours[key]["candidate_median"] != theirs[key]["candidate_median"] for key in both)
    # no `before (re-run)` side
    assert {r["baseline"] for r in report["etdump_events"]["rows"]} == {"before"}
    markdown = (folder / "report.md").read_text()
    assert (
        "### resnet8: after vs before"
        in markdown[markdown.index("## Where the time went (ETDump events)") :]
    )
    assert (folder / "report.events.csv").read_text().count("\n") == 1 + len(ours)

    untraced = run_cli(tmp_path, "run", "scenarios/driver_reuse_traced.yaml", "-q", *one, "-o",
                       "results/plain",
                       "--set", "builds.before.traced=false", "--set", "builds.after.traced=false")
    assert untraced.returncode == 0, untraced.stderr + untraced.stdout
    alone = run_cli(tmp_path, "run", "scenarios/driver_reuse_traced.yaml", "-q", *one,
                    "--baseline-from", "results/plain", "-o", "results/pr-plain")
    assert alone.returncode == 0, alone.stderr + alone.stdout
    plain_id = json.loads((tmp_path / "results/plain/manifest.json").read_text())["run"]["id"]
    note = (f"The stored baseline run {plain_id} kept no ETDump traces of before, so there is no "
            "event-by-event comparison of after against it: trace before in the stored run "
            "(`builds.<name>.traced`).")
    markdown = (tmp_path / "results/pr-plain/report.md").read_text()
    section = markdown[markdown.index("## Where the time went (ETDump events)"):]
    assert section.split("\n")[2] == note and "| Event |" not in section
    data = json.loads((tmp_path / "results/pr-plain/report.json").read_text())["etdump_events"]
    assert data["note"] == note and data["rows"] == []
