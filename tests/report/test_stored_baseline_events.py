"""The ETDump event section of a ``compare.baseline_from`` run
(``stored_compare.stored_baseline_events``) on two synthetic stored runs whose traces are the
simulator's writer's bytes: run A is the stored baseline, run B the run measuring the candidate, its
own ``before`` units the drift check's re-run. The baseline side of every row is run A's traces (as
run A's own report reads them), never run B's re-run units; a stored run without traces is one line.
tests/e2e/test_etdump_e2e.py runs the same through ``fvp-harness run --baseline-from`` on the
simulator."""

from __future__ import annotations

from pathlib import Path

from fvp_harness.report.stats.analysis import analyse
from fvp_harness.report.stats.etdump_events import EventReport, compare_events
from fvp_harness.report.stored.stored_compare import (
    LoadedRun,
    StoredBaseline,
    analyse_with_stored_baseline,
    load_run,
    stored_baseline_events,
)
from fvp_harness.store.locate import find_run
from tests.report.traced_runs import _trace, traced_runs


def _runs(tmp_path: Path, traced: tuple[bool, bool]) -> tuple[LoadedRun, LoadedRun, StoredBaseline]:
    folder = traced_runs(tmp_path, traced=traced)
    a, b = load_run(find_run(f"{folder}@main")), load_run(find_run(f"{folder}@feature"))
    # run B's re-run `before` units: a much longer NPU call, so mixing them in would show
    if traced[1]:
        for record in b.records:
            if record.build == "before":
                (b.run.path / "fetched" / record.unit_id
                 / "etdump.bin").write_bytes(_trace(2600, 3))
    label = a.run.run_id
    labelled = tuple(r.model_copy(update={"unit_id": f"{r.unit_id}@{label}"}) for r in a.records
                     if r.build == "before")
    return a, b, StoredBaseline(a.run, a, "before", labelled)


def _events(b: LoadedRun, stored: StoredBaseline) -> EventReport | None:
    result, _ = analyse_with_stored_baseline(b.records, b.scenario, b.manifest, b.planned,
                                             b.run.path, stored)
    return stored_baseline_events(b.records, result, b.run.path, stored,
                                  warmup=b.scenario.run.warmup, planned=b.planned)


def _own(run: LoadedRun) -> EventReport:
    """The run's own in-run event section (its two builds' traces)."""
    result = analyse(run.records, run.scenario.compare, run.scenario.metrics, planned=run.planned)
    report = compare_events(run.run.path, run.records, result, warmup=run.scenario.run.warmup,
                            planned=run.planned)
    assert report is not None
    return report


def _npu(report: EventReport):
    execute = next(c for c in report.comparisons if c.run_block == "Execute")
    assert (execute.baseline, execute.candidate, execute.model) == ("before", "after", "m1")
    return next(r for r in execute.rows if r.event == "+NPU")


def test_the_baseline_side_is_the_stored_runs_traces_and_the_candidate_this_runs(
        tmp_path: Path) -> None:
    a, b, stored = _runs(tmp_path, (True, True))
    report = _events(b, stored)
    assert report is not None and report.note is None and report.warnings == ()
    npu, in_a, in_b = _npu(report), _npu(_own(a)), _npu(_own(b))
    assert 2000 <= npu.baseline_median < 2011  # run A's `before` NPU call, not the re-run's 2600
    assert (npu.n_baseline, npu.baseline_median, npu.baseline_ci) == (
        in_a.n_baseline,
        in_a.baseline_median,
        in_a.baseline_ci,
    )
    # what the re-run units measured
    assert in_b.baseline_median is not None and in_b.baseline_median >= 2600
    # B's `after`
    assert (npu.n_candidate, npu.candidate_median) == (in_b.n_candidate, in_b.candidate_median)
    assert 1300 <= npu.candidate_median < 1311 and npu.change is not None and npu.change < -600
    builds = {name for c in report.comparisons for name in (c.baseline, c.candidate)}
    assert builds == {"before", "after"}  # no `before (re-run)` side


def test_a_stored_baseline_without_traces_is_one_line_and_none_anywhere_is_no_section(
        tmp_path: Path) -> None:
    _, b, stored = _runs(tmp_path, (False, True))
    report = _events(b, stored)
    assert report is not None and report.comparisons == ()
    assert report.note == (f"The stored baseline run {stored.label} kept no ETDump traces of "
                           "before, so there is no event-by-event comparison of after against it: "
                           "trace before in the stored run (`builds.<name>.traced`).")

    _, b, stored = _runs(tmp_path / "only-stored", (True, False))
    report = _events(b, stored)
    assert report is not None and report.comparisons == ()
    assert (report.note is not None and
            report.note.startswith(f"Only the stored baseline run {stored.label} kept"))

    _, b, stored = _runs(tmp_path / "none", (False, False))
    assert _events(b, stored) is None
