"""The ETDump event comparison (``report/stats/etdump_events.py``) on synthetic traces: self times,
matching by name and position, shares of the saving, events of one build only, warmup blocks left
out, unreadable files as warnings, and the section's absence when nothing is traced."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np

from fvp_harness.report.rendering.etdump_tables import (
    event_rows,
    events_csv,
    events_json,
    events_markdown,
)
from fvp_harness.report.stats.etdump import EtdumpEvent, read_etdump
from fvp_harness.report.stats.etdump_events import Trace, compare_traces, load_traces
from fvp_harness.report.stats.etdump_events import _self_times as self_times
from fvp_harness.report.stats.spec import Settings
from fvp_harness.sim.workloads.etdump import ProfileEvent, RunBlock, encode_etdump
from tests.helpers import record

SETTINGS = Settings(resamples=300)


def _block(setup: int, npu: int, copy: int = 10, jitter: int = 0) -> RunBlock:
    """One Execute block as the Ethos-U runner writes it (inner events first), starting at 0."""
    t0, t1 = 8, 12
    npu_start = t1 + 3 + copy
    npu_end = npu_start + setup + npu + jitter
    return RunBlock("Execute", (
        ProfileEvent(t1 + 3, t1 + 3 + copy, name="+copy"),
        ProfileEvent(npu_start, npu_end, name="+NPU", instruction_id=0),
        ProfileEvent(t1, npu_end, name="backend", instruction_id=0),
        ProfileEvent(t0 - 4, npu_end, name="DELEGATE_CALL", instruction_id=0),
        ProfileEvent(0, npu_end + 8, name="Method::execute", chain_index=-1, instruction_id=0),
    ))


def _trace(unit: str, build: str, setup: int, seed: int, blocks: int = 6) -> Trace:
    rng = np.random.default_rng(seed)
    runs = [RunBlock("Default", (ProfileEvent(0, 500, name="Program::load_method"),))]
    runs += [_block(setup, 1000, jitter=int(rng.integers(0, 20))) for _ in range(blocks)]
    return Trace(unit, build, "m", "ns", read_etdump(encode_etdump(runs)))


def test_self_time_is_the_duration_less_the_enclosed_events() -> None:
    events = read_etdump(encode_etdump([_block(100, 1000)])).events
    own = dict(zip((e.event for e in events), self_times(events), strict=True))
    assert own == {"+copy": 10, "+NPU": 1100, "backend": 3, "DELEGATE_CALL": 8,
                   "Method::execute": 12}
    assert sum(own.values()) == events[-1].duration


def test_identical_spans_nest_in_writing_order() -> None:
    """Method::init and Program::load_method can end at the same tick: the one written later is
    outer."""
    same = [
        EtdumpEvent(0, "Default", 0, "inner", -1, 0, None, 0, 50),
        EtdumpEvent(0, "Default", 1, "outer", -1, 0, None, 0, 50),
    ]
    assert self_times(same) == [50, 0]


def test_the_saving_is_placed_in_the_event_that_lost_it_and_shares_add_up() -> None:
    traces = [_trace(f"r{r}-{b}-m", b, setup, seed=10 * r + i) for r in range(3)
              for i, (b, setup) in enumerate((("before", 1700), ("after", 0)))]
    report = compare_traces(traces, [("before", "after")], SETTINGS, warmup=1)
    c, load = report.comparisons
    # the load's table follows, apart
    assert (c.run_block, load.run_block) == ("Execute", "Default")
    assert [r.event for r in load.rows] == ["Program::load_method"] and load.rows[0].n_baseline == 3
    rows = {r.event: r for r in c.rows}
    assert (c.rows[0].event == "+NPU" and rows["+NPU"].share_pct is not None and
            rows["+NPU"].share_pct > 95)
    assert (c.total_event == "Method::execute" and c.total_saved is not None and
            1650 < c.total_saved < 1750)
    for name in ("+copy", "Method::execute", "DELEGATE_CALL", "backend"):
        assert rows[name].n_baseline == 15  # 3 units x (6 blocks - 1 warmup)
    low, high = rows["+copy"].change_ci
    assert low is not None and high is not None and low <= 0 <= high  # unchanged: its CI holds 0
    assert c.shares_within_ci is True
    assert abs(sum(r.share_pct or 0 for r in c.rows) - 100.0
               * (c.self_saved_sum or 0) / c.total_saved) < 1e-6


def test_an_event_of_one_build_only_is_listed_as_such() -> None:
    before = RunBlock("Execute",
                      (ProfileEvent(0, 5, name="+setup"),
                       ProfileEvent(0, 9, name="Method::execute")))
    traces = [Trace("r0-before-m", "before", "m", "ns", read_etdump(encode_etdump([before] * 3))),
              _trace("r0-after-m", "after", 0, 2)]
    report = compare_traces(traces, [("before", "after")], SETTINGS)
    rows = {r.event: r for r in report.comparisons[0].rows}
    assert rows["+setup"].present == "before only" and rows["+setup"].candidate_median is None
    assert rows["+NPU"].present == "after only" and rows["+NPU"].baseline_median is None
    assert rows["Method::execute"].present == "both"
    text = "\n".join(events_markdown(report))
    assert "| before only |" in text and "| after only |" in text


def test_positions_tell_two_calls_of_one_name_apart() -> None:
    two = RunBlock("Execute", (ProfileEvent(0, 10, name="DELEGATE_CALL", instruction_id=0),
                               ProfileEvent(12, 40, name="DELEGATE_CALL", instruction_id=2),
                               ProfileEvent(0, 41, name="Method::execute")))
    traces = [Trace(f"r0-{b}-m", b, "m", "cycles", read_etdump(encode_etdump([two] * 4)))
              for b in ("x", "y")]
    rows = compare_traces(traces, [("x", "y")], SETTINGS).comparisons[0].rows
    assert {(r.event, r.occurrence, r.instruction_id) for r in rows} >= {
        ("DELEGATE_CALL", 0, 0),
        ("DELEGATE_CALL", 1, 2),
    }


def test_csv_and_json_carry_the_same_rows() -> None:
    traces = [_trace(f"r0-{b}-m", b, setup, seed=i)
              for i, (b, setup) in enumerate((("before", 900), ("after", 0)))]
    report = compare_traces(traces, [("before", "after")], SETTINGS)
    from_csv = list(csv.DictReader(io.StringIO(events_csv(report))))
    from_json = json.loads(json.dumps(events_json(report)))["rows"]
    assert ([(r["event"], r["present"]) for r in from_csv]
            == [(r["event"], r["present"]) for r in from_json])
    # the Execute events and the load's one
    assert len(from_csv) == len(event_rows(report)) == 5 + 1
    assert [r["run_block"] for r in from_csv] == ["Execute"] * 5 + ["Default"]
    for a, b in zip(from_csv, from_json, strict=True):
        assert float(a["baseline_median"]) == float(f"{b['baseline_median']:.6g}")


def test_unreadable_files_are_warnings_naming_the_unit(tmp_path: Path) -> None:
    good = encode_etdump([_block(0, 1000)])
    for unit, data in (("r0-after-resnet8", good), ("r1-after-resnet8", good[:40]),
                       ("r2-after-resnet8", None)):
        folder = tmp_path / "fetched" / unit
        folder.mkdir(parents=True)
        if data is not None:
            (folder / "etdump.bin").write_bytes(data)
    records = [record(u, extra={"etdump": "etdump.bin", "etdump_sha256": "0" * 64})
               for u in ("r0-after-resnet8", "r1-after-resnet8", "r2-after-resnet8")]
    records.append(record("r3-after-resnet8"))  # not traced: not looked for
    traces, warnings = load_traces(tmp_path, records)
    assert [t.unit_id for t in traces] == ["r0-after-resnet8"] and traces[0].time_unit == "ns"
    assert len(warnings) == 2
    assert warnings[0].startswith("r1-after-resnet8: fetched/r1-after-resnet8/etdump.bin cannot be "
                                  "read (")
    assert "truncated" in warnings[0]
    assert warnings[1].startswith("r2-after-resnet8: fetched/r2-after-resnet8/etdump.bin cannot be "
                                  "read (")


def test_no_traced_unit_no_section() -> None:
    assert events_markdown(None) == [] and events_json(None) is None
