"""Copy vs zero-copy comparison on synthetic reports with known answers, the report files, and the
``vgf`` verb."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from fvp_harness.cli.main import main
from fvp_harness.report.stats.frames import to_frame
from fvp_harness.report.stats.spec import Settings
from fvp_harness.store.folder import VGF_REPORT_FILES, ResultStore
from fvp_harness.store.records import Record
from fvp_harness.vgf.reader import VgfFormatError, load_pair, load_results
from fvp_harness.vgf.report import (
    compare_vgf,
    render_vgf_csv,
    render_vgf_json,
    render_vgf_markdown,
    render_vgf_report,
    report_results_folder,
)
from tests.helpers import record

N = 200
FAST = Settings(resamples=400)


def copy_record(i: int) -> dict[str, Any]:
    wiggle = (i % 10) * 10  # 0..90 ns, each value 20 times: median = 45 above the base
    return {
        "iteration": i, "latency_ns": 150_000 + wiggle, "in_copy_bytes": 4096, "out_copy_bytes": 16,
        "in_memcpy_ns": 4000, "out_memcpy_ns": 1000, "submit_wait_ns": 110_000 + wiggle,
        "execute_ns": 100_000 + wiggle,
        "imports": 0, "import_ns": 0, "binding_refresh_ns": 0, "in_zero_copy_bytes": 0,
        "out_zero_copy_bytes": 0,
        "fallback_count": 0, "rejection_count": 0, "success": True, "delegate_handle": 7,
    }  # fmt: skip


def zero_record(i: int, execute_scale: float = 1.0) -> dict[str, Any]:
    rec = copy_record(i)
    wiggle = (i % 10) * 10
    rec.update(
        latency_ns=148_500 + wiggle, in_copy_bytes=0, out_copy_bytes=0, in_memcpy_ns=0,
        out_memcpy_ns=0,
        imports=2, import_ns=3000, binding_refresh_ns=500, in_zero_copy_bytes=4096,
        out_zero_copy_bytes=16, execute_ns=round((100_000 + wiggle) * execute_scale),
    )  # fmt: skip
    return rec


def doc(zero: bool, records: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "format": "executorch-vgf-perf",
        "device": {"vendor_id": 5045, "device_name": "G720", "driver_name": "arm",
                   "driver_version": "1"},
        "model": {"name": "net"},
        "config": {"zero_copy": zero, "warmup": 20, "iterations": len(records)},
        "records": records,
        **extra,
    }


def write(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    copy = write(tmp_path / "copy.json", doc(False, [copy_record(i) for i in range(N)]))
    zero = write(tmp_path / "zero.json", doc(True, [zero_record(i) for i in range(N)]))
    return copy, zero


def compared(copy: list[Path], zero: list[Path], min_effect: float = 2.0):
    data = load_pair(copy, zero)
    return compare_vgf(
        to_frame(data.records), "copy", "zero_copy", runs=data.runs, min_effect=min_effect,
        settings=FAST
    )


def test_known_answers_removed_remaining_and_execution(pair):
    c = compared([pair[0]], [pair[1]])
    row = c.row
    assert (row("net", "in_copy_bytes").baseline_median,
            row("net", "in_copy_bytes").candidate_median) == (4096, 0)
    assert row("net", "in_copy_bytes").verdict == "removed"
    assert (row("net", "memcpy_ns").baseline_median == 5000 and
            row("net", "memcpy_ns").change == -5000)
    assert (row("net", "imports").candidate_median == 2 and
            row("net", "imports").verdict == "appeared")
    assert row("net", "import_ns").change == 3000
    assert row("net", "binding_refresh_ns").candidate_median == 500
    assert row("net", "fallback_count").verdict == "none"
    boundary = row("net", "boundary_ns")
    assert (boundary.baseline_median, boundary.candidate_median, boundary.verdict) == (
        5000,
        3500,
        "less",
    )
    execute = row("net", "execute_ns")
    assert execute.baseline_median == execute.candidate_median == 100_045
    assert execute.change == 0 and execute.change_pct == 0
    assert execute.verdict == "no change"
    assert execute.ci_low is not None and -2 <= execute.ci_low <= 0 <= execute.ci_high <= 2
    latency = row("net", "latency_ns")
    assert latency.change == -1500
    assert latency.change_pct == pytest.approx(-1500 / 150_045 * 100)
    assert latency.verdict == "no change"  # -1% is inside the ±2% that counts as a change
    assert latency.n_baseline == latency.n_candidate == N
    assert {e.name: e.status for e in c.expectations} == {
        "copies removed": "pass", "execution unchanged": "pass", "executes succeeded": "pass",
        "modes as given": "pass", "one device": "pass",
    }  # fmt: skip
    assert not c.violated


def test_a_smaller_min_effect_makes_the_latency_gain_a_verdict(pair):
    c = compared([pair[0]], [pair[1]], min_effect=0.5)
    assert c.row("net", "latency_ns").verdict == "faster"
    assert c.row("net", "execute_ns").verdict == "no change"


def test_changed_execution_fails_the_expectation(tmp_path, pair):
    zero = write(tmp_path / "slow.json",
                 doc(True, [zero_record(i, execute_scale=1.10) for i in range(N)]))
    c = compared([pair[0]], [zero])
    execute = c.row("net", "execute_ns")
    assert execute.verdict == "slower"
    assert execute.change_pct == pytest.approx(10.0, abs=0.01)
    assert next(e for e in c.expectations if e.name == "execution unchanged").status == "fail"
    assert c.violated


def test_rejected_buffer_keeps_its_copy_and_the_reason_is_shown(tmp_path, pair):
    records = [zero_record(i) for i in range(N)]
    for rec in records:
        rec.update(in_copy_bytes=4096, in_memcpy_ns=4000, in_zero_copy_bytes=0, imports=1,
                   fallback_count=1, rejection_count=1)  # fmt: skip
    reason = [{"buffer": "input0", "reason": "host pointer not aligned to 4096", "count": N}]
    zero = write(tmp_path / "rejected.json", doc(True, records, rejections=reason))
    c = compared([pair[0]], [zero])
    assert c.row("net", "in_copy_bytes").verdict == "not removed"
    assert c.row("net", "out_copy_bytes").verdict == "removed"
    assert c.row("net", "fallback_count").verdict == "appeared"
    assert c.rejections["zero_copy"] == {"input0: host pointer not aligned to 4096": N}
    failed = next(e for e in c.expectations if e.name == "copies removed")
    assert failed.status == "fail" and "host pointer not aligned" in failed.detail
    text = render_vgf_markdown(c)
    assert "- zero_copy: input0: host pointer not aligned to 4096 (×200)" in text


def test_swapped_arguments_and_failed_executes_are_caught(tmp_path, pair):
    c = compared([pair[1]], [pair[0]])
    modes = next(e for e in c.expectations if e.name == "modes as given")
    assert modes.status == "fail" and "arguments swapped" in modes.detail
    failing = [zero_record(i) for i in range(N)]
    failing[3]["success"] = False
    zero = write(tmp_path / "fails.json", doc(True, failing))
    c = compared([pair[0]], [zero])
    assert (next(e for e in c.expectations if e.name == "executes succeeded").detail
            == "zero_copy: 1 failed")


def test_repetitions_pool_runs_and_different_devices_are_flagged(tmp_path, pair):
    other = doc(True, [zero_record(i) for i in range(N)])
    other["device"]["device_name"] = "another GPU"
    zero2 = write(tmp_path / "zero2.json", other)
    c = compared([pair[0], pair[0]], [pair[1], zero2])
    assert c.row("net", "import_ns").n_candidate == 2 * N
    assert len(c.runs["zero_copy"]) == 2
    assert next(e for e in c.expectations if e.name == "one device").status == "fail"


def test_report_files_are_complete_and_deterministic(tmp_path, pair):
    c = compared([pair[0]], [pair[1]])
    old_umask = os.umask(0o022)
    try:
        written = render_vgf_report(c, tmp_path / "out")
    finally:
        os.umask(old_umask)
    assert {p.name for p in written.values()} == set(VGF_REPORT_FILES.values())
    # no temp files
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(VGF_REPORT_FILES.values())
    # 0o666 & ~umask, not 0o600
    assert {p.stat().st_mode & 0o777 for p in written.values()} == {0o644}
    md = written["markdown"].read_text(encoding="utf-8")
    for heading in ("## Per-inference latency", "## Boundary cost removed",
                    "## Boundary cost remaining",
                    "## Execution changed?", "## Fallbacks and rejections",
                    "## Expectations"):  # fmt: skip
        assert heading in md
    cells = [[cell.strip() for cell in line.split("|")[1:-1]]
             for line in md.splitlines() if line.startswith("| net")]
    assert ["net", "input copy bytes", "4,096 B", "0 B", "4,096 B", "removed"] in cells
    assert ["net", "imports", "0", "2", "+2", "appeared"] in cells
    assert "**net**: memcpy 5 µs -> 0 ns; import + refresh +3.5 µs; net boundary saves 1.5 µs" in md
    assert written["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(written["json"].read_text(encoding="utf-8"))
    assert data["format"] == "fvp-harness-vgf-report" and data["expectations_violated"] is False
    lines = written["csv"].read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("model,section,metric,unit,baseline,candidate,baseline_median")
    assert any(line.startswith("net,execution,execute_ns,ns,copy,zero_copy,100045,")
               for line in lines)
    again = compared([pair[0]], [pair[1]])
    assert render_vgf_markdown(again) == md
    assert (render_vgf_csv(again) == render_vgf_csv(c) and
            render_vgf_json(again) == render_vgf_json(c))


def test_cli_writes_the_report_and_exits_by_expectations(tmp_path, pair, capsys):
    out = tmp_path / "report"
    assert (main(["vgf", str(pair[0]), str(pair[1]), "-o", str(out), "--outputs", "markdown,csv"])
            == 0)
    printed = capsys.readouterr().out
    assert "net: memcpy 5 µs -> 0 ns" in printed and "PASS" in printed
    assert sorted(p.name for p in out.iterdir()) == ["vgf_report.csv", "vgf_report.md"]
    assert main(["vgf", str(pair[1]), str(pair[0]), "-o", str(out)]) == 1  # swapped
    assert "modes as given" in capsys.readouterr().err


def test_cli_bad_input_exits_2_naming_the_file(tmp_path, pair, capsys):
    broken = tmp_path / "broken.json"
    broken.write_text('{"records": [', encoding="utf-8")
    assert main(["vgf", str(pair[0]), str(broken), "-o", str(tmp_path)]) == 2
    assert f"{broken}:1:14: not valid JSON" in capsys.readouterr().err
    assert main(["vgf", str(pair[0])]) == 2
    assert "give a copy report and a zero-copy report" in capsys.readouterr().err


def _stored(unit: str, build: str) -> Record:
    return record(unit, key=unit, scenario="s", build=build, model="net", repetition=0,
                  metric_units={},
                  samples={"iteration_time": [0.1]}, started="2026-01-01T00:00:00Z")


def test_results_folder_reports_are_matched_to_units_and_stale_ones_skipped(tmp_path, pair):
    root = tmp_path / "results" / "vgf_zero_copy"
    store = ResultStore(root)
    for unit, build in (("r0-cp-net", "cp"), ("r0-zc-net", "zc")):
        store.append(_stored(unit, build))
    write(root / "fetched" / "r0-cp-net" / "r0-cp-net.vgf.json", json.loads(pair[0].read_text()))
    write(root / "fetched" / "r0-zc-net" / "r0-zc-net.vgf.json", json.loads(pair[1].read_text()))
    write(root / "fetched" / "r9-old-net" / "r9-old-net.vgf.json", json.loads(pair[1].read_text()))
    write(root / "fetched" / "r1-zc-net" / "r1-zc-net.vgf.json", json.loads(pair[1].read_text()))
    store.append(_stored("r1-zc-net",
                         "zc").model_copy(update={"status": "failed", "failure_class": "test"}))
    data = load_results(root, records=store.records())
    assert (data.baseline, data.candidate) == ("cp", "zc")
    assert any("unit r1-zc-net failed in this run" in w for w in data.warnings)
    assert [r.unit_id for r in data.records] == ["r0-cp-net", "r0-zc-net"]
    assert any("r9-old-net" in w and "belongs to no stored unit" in w for w in data.warnings)
    result = report_results_folder(root, store.records(), settings=FAST)
    assert result is not None
    comparison, written = result
    assert not comparison.violated and written["markdown"] == root / "vgf_report.md"
    assert "left from an earlier run" in written["markdown"].read_text(encoding="utf-8")
    assert main(["vgf", "--results", str(root), "--outputs", "json"]) == 0


def test_results_folder_without_reports_gives_none_and_the_cli_says_why(tmp_path, capsys):
    root = tmp_path / "plain"
    ResultStore(root)
    assert report_results_folder(root, []) is None
    assert main(["vgf", "--results", str(root)]) == 2
    assert "no VGF report (*.json) found" in capsys.readouterr().err


def test_results_folder_ignores_other_json_and_reports_broken_vgf_files(tmp_path, pair):
    root = tmp_path / "r"
    store = ResultStore(root)
    for unit, build in (("r0-cp-net", "cp"), ("r0-zc-net", "zc")):
        store.append(_stored(unit, build))
    write(root / "fetched" / "r0-cp-net" / "r0-cp-net.vgf.json", json.loads(pair[0].read_text()))
    write(root / "fetched" / "r0-zc-net" / "r0-zc-net.vgf.json", json.loads(pair[1].read_text()))
    # not a VGF report: ignored
    write(root / "fetched" / "r0-zc-net" / "trace.json", {"events": [1, 2]})
    (root / "fetched" / "r0-cp-net" / "second.vgf.json").write_text(
        '{"records": [', encoding="utf-8"
    )
    data = load_results(root, records=store.records())
    assert len(data.records) == 2
    assert len(data.warnings) == 1 and "second.vgf.json:1:14: not valid JSON" in data.warnings[0]
    for name in ("r0-cp-net.vgf.json", "r0-zc-net.vgf.json"):
        next(root.rglob(name)).unlink()
    with pytest.raises(VgfFormatError, match="no readable VGF report"):
        report_results_folder(root, store.records())
    next(root.rglob("second.vgf.json")).unlink()
    # only other JSON left: not a VGF scenario
    assert report_results_folder(root, store.records()) is None
