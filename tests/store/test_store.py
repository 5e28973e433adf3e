"""The results folder: atomic appends, crash tolerance, resume keys, escapes, versions, merge
refusal."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from fvp_harness.errors import ConfigurationError
from fvp_harness.store.folder import (
    MANIFEST_FORMAT_VERSION,
    ResultStore,
    atomic_write,
    key_metadata,
    results_dir_for,
)
from fvp_harness.store.records import RECORD_SCHEMA_VERSION
from tests.helpers import record

MANIFEST = {
    "scenario": {"name": "driver_reuse", "file": "scenarios/driver_reuse.yaml"},
    "platform": "corstone1000-a320",
    "fvp": {"binary": "sim", "version": "0.1.0", "argv": ["fvp-sim", "-C", "x=1"]},
    "artifacts": {"before/runner": "a" * 64, "after/runner": "b" * 64, "resnet8/model": "c" * 64},
    "parsers_version": 1,
    "started": "2026-03-01T10:00:00Z",
}


# --- folder naming --------------------------------------------------------------------------------


def test_results_dir_for_uses_the_file_stem(tmp_path: Path) -> None:
    assert (results_dir_for("scenarios/driver_reuse.yaml", base=tmp_path)
            == tmp_path / "driver_reuse")
    assert (results_dir_for("x.yaml", base=tmp_path, override=tmp_path / "elsewhere")
            == tmp_path / "elsewhere")


@pytest.mark.parametrize("name", ["...yaml", "..yaml", ".hidden.yaml", "a b.yaml", "evil;rm.yaml"])
def test_results_dir_for_refuses_escaping_or_odd_names(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigurationError, match="-o DIR"):
        results_dir_for(name, base=tmp_path)


def test_results_dir_for_refuses_a_symlink_out_of_results(tmp_path: Path) -> None:
    base = tmp_path / "results"
    base.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (base / "linked").symlink_to(outside)
    with pytest.raises(ConfigurationError, match="outside"):
        results_dir_for("linked.yaml", base=base)


def test_log_and_report_paths_stay_inside(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "r")
    path = store.log_path("s0", "r1-after-resnet8.log")
    assert path == tmp_path / "r" / "logs" / "s0" / "r1-after-resnet8.log" and path.parent.is_dir()
    assert store.relative(path) == "logs/s0/r1-after-resnet8.log"
    assert store.report_path("report.md") == tmp_path / "r" / "report.md"
    for bad in ("..", "../x", "a/b", ""):
        with pytest.raises(ConfigurationError):
            store.log_path(bad, "x.log")
        with pytest.raises(ConfigurationError):
            store.log_path("s0", bad)


# --- records --------------------------------------------------------------------------------------


def test_append_and_read_back_round_trip(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    first, second = record("u1"), record("u2", status="failed")
    store.append(first)
    store.append(second)
    assert store.records() == [first, second]
    assert store.records_path.read_bytes().count(b"\n") == 2
    assert store.done_keys() == {"key-u1"}


def test_partial_trailing_line_is_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = ResultStore(tmp_path)
    store.append(record("u1"))
    line = json.dumps(record("u2").model_dump(mode="json"))
    with open(store.records_path, "a", encoding="utf-8") as handle:
        handle.write(line[: len(line) // 2])  # the crash happened here
    with caplog.at_level(logging.WARNING, logger="fvp_harness.store.folder"):
        records = ResultStore(tmp_path).records()
    assert [r.unit_id for r in records] == ["u1"]
    assert "incomplete last line" in caplog.text


def test_append_after_a_crash_cuts_the_partial_line_first(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.append(record("u1"))
    with open(store.records_path, "a", encoding="utf-8") as handle:
        handle.write('{"schema_version": 1, "scen')
    resumed = ResultStore(tmp_path)
    resumed.append(record("u2"))
    assert [r.unit_id for r in resumed.records()] == ["u1", "u2"]
    assert resumed.read_warnings == []
    assert resumed.records_path.read_text().endswith("}\n")


def test_corrupt_middle_line_is_an_error_naming_the_line(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.append(record("u1"))
    with open(store.records_path, "a", encoding="utf-8") as handle:
        handle.write("not json\n")
    store.append(record("u2"))
    with pytest.raises(ConfigurationError, match=r"records.jsonl:2"):
        store.records()


def test_newer_record_schema_is_refused(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    row = record("u1").model_dump(mode="json")
    row["schema_version"] = RECORD_SCHEMA_VERSION + 1
    row["new_field"] = "from the future"
    store.records_path.write_text(json.dumps(row) + "\n")
    with pytest.raises(ConfigurationError, match="newer than this fvp-harness reads"):
        store.records()


def test_resume_keys_only_count_ok_records(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.append(record("u1", status="failed", key="k1"))
    store.append(record("u2", key="k2"))
    assert store.done_keys() == {"k2"}
    store.append(record("u1", key="k1", attempt=2))
    assert store.done_keys() == {"k1", "k2"}


def test_missing_folder_reads_as_empty(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "new")
    assert store.records() == [] and store.done_keys() == set() and store.read_manifest() is None


def test_append_fsyncs_each_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd)))
    store = ResultStore(tmp_path)
    store.append(record("u1"))
    store.append(record("u2"))
    assert len(calls) == 2


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# --- manifest -------------------------------------------------------------------------------------


def test_manifest_written_atomically_and_versioned(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.write_manifest(MANIFEST)
    data = store.read_manifest()
    assert data is not None and data["format_version"] == MANIFEST_FORMAT_VERSION
    assert data["fvp"]["version"] == "0.1.0"
    assert not list(tmp_path.glob(".manifest.json.*"))  # no temp files left behind
    assert store.manifest_path.stat().st_mode & 0o777 == 0o666 & ~_umask()
    first = store.manifest_path.read_bytes()
    store.write_manifest(dict(reversed(list(MANIFEST.items()))))
    assert store.manifest_path.read_bytes() == first  # sorted keys: same content, same bytes


def test_newer_manifest_is_refused(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.manifest_path.write_text(json.dumps({"format_version": MANIFEST_FORMAT_VERSION + 1}))
    with pytest.raises(ConfigurationError, match="upgrade fvp-harness"):
        store.read_manifest()


def test_check_compatible_names_what_differs(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.check_compatible(MANIFEST)  # empty folder: anything goes
    store.write_manifest(MANIFEST)
    store.check_compatible({**MANIFEST, "started": "2026-03-02T00:00:00Z"})  # not key metadata
    changed = {
        **MANIFEST,
        "fvp": {**MANIFEST["fvp"], "version": "0.2.0"},  # type: ignore[dict-item]
        "artifacts": {**MANIFEST["artifacts"], "after/runner": "d" * 64},  # type: ignore[dict-item]
    }
    with pytest.raises(ConfigurationError) as info:
        store.check_compatible(changed)
    message = str(info.value)
    assert "fvp.version: '0.1.0' (stored) -> '0.2.0' (this run)" in message
    assert "artifacts.after/runner" in message and "before/runner" not in message
    assert "-o DIR" in message and "delete" in message


def test_key_metadata_flattens_artifacts() -> None:
    flat = key_metadata(MANIFEST)
    assert flat["platform"] == "corstone1000-a320"
    assert flat["artifacts.resnet8/model"] == "c" * 64


# --- locking and reset ----------------------------------------------------------------------------


def test_second_writer_is_refused(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    with (
        store.lock(),
        pytest.raises(ConfigurationError, match="another fvp-harness process"),
        ResultStore(tmp_path).lock(),
    ):
        pass
    with store.lock():  # released again
        pass


def test_reset_removes_results_only(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.write_manifest(MANIFEST)
    store.append(record())
    store.log_path("s0", "a.log").write_text("x")
    store.report_path("report.md").write_text("# r")
    (tmp_path / "notes.txt").write_text("mine")
    store.reset()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_reset_removes_fetched_files_vgf_reports_and_stale_temp_files(tmp_path: Path) -> None:
    """A plain re-run must not find the last run's fetched VGF reports (they would be reported
    again) or its ``vgf_report.*`` (stale next to a fresh A/B report)."""
    store = ResultStore(tmp_path)
    store.append(record())
    fetched = tmp_path / "fetched" / "r1-after-resnet8"
    fetched.mkdir(parents=True)
    (fetched / "report.json").write_text("{}")
    for name in ("report.md", "report.inputs", "vgf_report.md", "vgf_report.csv", "vgf_report.json",
                 "vgf_report.png"):
        store.report_path(name).write_text("old")
    (tmp_path / ".report.md.1234abcd.tmp").write_text("half")  # an atomic write killed mid-way
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "reports").mkdir()  # not a report file: a folder the user made
    with store.lock():
        store.reset()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock", "notes.txt", "reports"]


# --- atomic_write ---------------------------------------------------------------------------------


def test_atomic_write_replaces_whole_files_with_normal_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "a.txt", "héllo\r\n")
        atomic_write(tmp_path / "b.bin", b"\x00\x01")
        os.umask(0o027)
        atomic_write(tmp_path / "c.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").read_bytes() == "héllo\r\n".encode()  # UTF-8, line ends untouched
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    # 0o666 & ~umask, not mkstemp's 0o600
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "c.txt").stat().st_mode & 0o777 == 0o640
    atomic_write(tmp_path / "a.txt", "new")
    assert (tmp_path / "a.txt").read_text() == "new"
    # no temp files left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.bin", "c.txt"]


def test_atomic_write_keeps_the_old_file_when_writing_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "manifest.json"
    target.write_text("old")

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space") as raised:
        atomic_write(target, "new")
    assert raised.value.filename == str(target), (
        "a write's ENOSPC names no file: the error names the target")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]  # the temp file was removed


def test_schema_1_rows_are_read_with_their_fields_renamed(tmp_path: Path) -> None:
    """Folders written before the field renames (schema 1: unit, session, units) keep working."""
    store = ResultStore(tmp_path)
    row = record("u1").model_dump(mode="json")
    for old, new in (("unit", "unit_id"), ("session", "instance"), ("units", "metric_units")):
        row[old] = row.pop(new)
    row["schema_version"] = 1
    store.records_path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    (stored,) = store.records()
    assert (stored.unit_id, stored.instance, stored.metric_units) == (
        "u1",
        "s0",
        {"cpu_time": "ms"},
    )
    assert stored.schema_version == RECORD_SCHEMA_VERSION
