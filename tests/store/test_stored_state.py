"""Stored state you can lean on (issue 23, item 7): a damaged manifest or records file is a clear
error naming the file and what to do (exit 2), a read-only results folder is refused before anything
boots, and an append never deletes a valid last record (a missing newline is repaired; a partial
line is set aside, never silently dropped). In process, through the store and through the CLI verbs
(``run``, ``report``, ``runs``, ``compare``)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from fvp_harness.cli.main import main
from fvp_harness.errors import ConfigurationError, StorageError
from fvp_harness.store.folder import PARTIAL_RECORDS_PATTERN, ResultStore
from tests.helpers import mounted_tmpfs, record
from tests.report.stored_runs import write_run

REPO = Path(__file__).resolve().parents[2]
BASE = {("before", "m1"): 2.0, ("after", "m1"): 1.0}


def _line(unit: str) -> str:
    return json.dumps(record(unit).model_dump(mode="json"), separators=(",", ":"))


# --- records.jsonl: the last line -----------------------------------------------------------------


def test_a_valid_last_record_without_newline_counts_and_is_repaired_not_deleted(
        tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.records_path.write_text(_line("u1") + "\n" + _line("u2"))  # newline lost
    # counted: --resume does not measure it again
    assert [r.unit_id for r in store.records()] == ["u1", "u2"]
    assert store.read_warnings == [] and store.done_keys() == {"key-u1", "key-u2"}
    store.append(record("u3"))
    text = store.records_path.read_text()
    assert text == _line("u1") + "\n" + _line("u2") + "\n" + _line("u3") + "\n"
    assert [r.unit_id for r in ResultStore(tmp_path).records()] == ["u1", "u2", "u3"]
    assert not list(tmp_path.glob(PARTIAL_RECORDS_PATTERN))


def test_a_partial_last_line_is_set_aside_before_appending(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.append(record("u1"))
    with open(store.records_path, "a", encoding="utf-8") as handle:
        handle.write(_line("u2")[:40])
    resumed = ResultStore(tmp_path)
    resumed.append(record("u3"))
    assert [r.unit_id for r in resumed.records()] == ["u1", "u3"] and resumed.read_warnings == []
    (aside,) = tmp_path.glob(PARTIAL_RECORDS_PATTERN)
    assert aside.read_text() == _line("u2")[:40]  # kept, byte for byte
    resumed.archive("old")  # it belongs to the run and moves with it
    assert not list(tmp_path.glob(PARTIAL_RECORDS_PATTERN))
    assert len(list((tmp_path / "runs" / "old").glob(PARTIAL_RECORDS_PATTERN))) == 1


# --- damaged files --------------------------------------------------------------------------------


def test_a_manifest_that_is_not_utf8_is_an_error_naming_the_file(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.manifest_path.write_bytes(b'{"format_version": 3, "x": "\xff\xfe"}\n')
    with pytest.raises(ConfigurationError,
                       match=r"manifest.json is damaged: not valid UTF-8.*-o DIR") as caught:
        store.read_manifest()
    assert str(store.manifest_path) in str(caught.value)


def test_a_records_line_that_is_not_utf8_is_an_error_naming_the_line(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.records_path.write_bytes(_line("u1").encode() + b"\n" + b'{"unit_id": "\xff"}\n'
                                   + _line("u3").encode() + b"\n")
    with pytest.raises(ConfigurationError,
                       match=r"records.jsonl:2: damaged: not valid UTF-8.*--resume"):
        store.records()


# --- a read-only results folder -------------------------------------------------------------------


def _read_only_folder(path: Path) -> contextlib.AbstractContextManager[Path]:
    """A real read-only file system (chmod does not stop root): a small tmpfs mounted read-only."""
    return mounted_tmpfs(path, "ro,size=1m")


def test_a_read_only_results_folder_is_refused_before_anything_runs(tmp_path: Path, capsys) -> None:
    with _read_only_folder(tmp_path / "ro") as folder:
        store = ResultStore(folder)
        with pytest.raises(StorageError,
                           match=r"results folder .*ro is not writable \(Read-only file system"):
            store.check_writable()
        artifacts = tmp_path / "artifacts"
        code = main(["run", str(REPO / "scenarios" / "smoke.yaml"), "-o", str(folder), "-q",
                     "--set", f"vars.artifacts={artifacts}"])
        err = capsys.readouterr().err
        assert code == 3 and f"{folder} is not writable" in err and "Traceback" not in err
        assert not artifacts.exists()  # refused at the lock, before builds and boots
        assert os.listdir(folder) == []


def test_a_read_only_results_folder_is_exit_3_from_every_verb(tmp_path: Path, capsys) -> None:
    """Issue 36, finding 9: ``report``, ``prune`` and ``make`` said 2 (bad input), ``history`` and
    ``compare`` 3; the README puts a file of this host that cannot be written under 3, for every
    verb."""
    base = tmp_path / "results"
    with mounted_tmpfs(base, "size=2m") as results:
        folder = results / "smoke"
        write_run(folder, BASE, run_id="20260301-100000-aaaa", commit="a" * 40, seed=1)
        write_run(folder, BASE, run_id="20260302-100000-bbbb", commit="b" * 40, seed=2)
        write_run(folder, BASE, run_id="20260303-100000-cccc", commit="c" * 40, seed=3)
        done = subprocess.run(["mount", "-o", "remount,ro", str(results)], capture_output=True,
                              check=False)
        assert done.returncode == 0, done.stderr
        before = sorted(str(path.relative_to(results)) for path in results.rglob("*"))
        smoke = str(REPO / "scenarios" / "smoke.yaml")
        artifacts = f"vars.artifacts={tmp_path / 'artifacts'}"
        verbs = {
            "report": ["report", str(folder)],
            "prune": ["prune", str(folder), "--keep", "0"],
            "make": ["make", smoke, "--results", str(results), "-q", "--set", artifacts],
            "history": ["history", str(folder)],
            "compare": ["compare", f"{folder}@latest#-1", str(folder)],
            "run": ["run", smoke, "-o", str(folder), "-q", "--set", artifacts],
        }
        codes = {}
        for verb, argv in verbs.items():
            codes[verb] = main(argv)
            err = capsys.readouterr().err
            assert "Traceback" not in err and "Read-only file system" in err, (verb, err)
        assert codes == dict.fromkeys(verbs, 3)
        assert sorted(str(path.relative_to(results)) for path in results.rglob("*")) == before


# --- through the CLI ------------------------------------------------------------------------------


def _damaged_run(tmp_path: Path) -> Path:
    folder = tmp_path / "results" / "demo"
    write_run(folder, BASE, run_id="20260301-100000-aaaa", commit="a" * 40, seed=1)
    write_run(folder, BASE, run_id="20260302-100000-bbbb", commit="b" * 40, seed=2)
    manifest = folder / "manifest.json"
    manifest.write_bytes(manifest.read_bytes().replace(b'"', b'\xff', 1))
    return folder


def test_report_runs_and_compare_on_a_damaged_manifest_exit_2_naming_it(
    tmp_path: Path, capsys
) -> None:
    folder = _damaged_run(tmp_path)
    wanted = f"{folder / 'manifest.json'} is damaged: not valid UTF-8"
    assert main(["report", str(folder)]) == 2
    assert wanted in capsys.readouterr().err
    assert main(["runs", str(folder)]) == 2  # the other runs are still listed
    out, err = capsys.readouterr()
    assert "20260301-100000-aaaa" in out and wanted in err
    assert main(["compare", f"{folder}@latest#-1", str(folder), "-o", str(tmp_path / "cmp")]) == 2
    err = capsys.readouterr().err
    assert wanted in err and "Traceback" not in err
    # newer, not damaged: listed, exit 0
    (folder / "manifest.json").write_text('{"format_version": 99}')
    assert main(["runs", str(folder)]) == 0


def test_report_and_compare_on_a_damaged_records_file_exit_2_naming_the_line(
    tmp_path: Path, capsys
) -> None:
    folder = tmp_path / "results" / "demo"
    write_run(folder, BASE, run_id="20260301-100000-aaaa", commit="a" * 40, seed=1)
    write_run(folder, BASE, run_id="20260302-100000-bbbb", commit="b" * 40, seed=2)
    records = folder / "records.jsonl"
    lines = records.read_bytes().split(b"\n")
    lines[1] = lines[1][:10] + b"\xc3" + lines[1][11:]
    records.write_bytes(b"\n".join(lines))
    assert main(["report", str(folder)]) == 2
    assert f"{records}:2: damaged: not valid UTF-8" in capsys.readouterr().err
    assert main(["compare", f"{folder}@latest#-1", str(folder), "-o", str(tmp_path / "cmp")]) == 2
    assert f"{records}:2: damaged" in capsys.readouterr().err


def test_run_resume_on_a_damaged_folder_exits_2_before_building(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "smoke"
    folder.mkdir()
    (folder / "manifest.json").write_bytes(b'{"format_version": 3, \xff}')
    artifacts = tmp_path / "artifacts"
    code = main(["run", str(REPO / "scenarios" / "smoke.yaml"), "-o", str(folder), "--resume", "-q",
                 "--set", f"vars.artifacts={artifacts}"])
    err = capsys.readouterr().err
    assert code == 2 and f"{folder / 'manifest.json'} is damaged: not valid UTF-8" in err
    assert not artifacts.exists()  # nothing built, nothing booted
    # left for the user
    assert (folder / "manifest.json").read_bytes() == b'{"format_version": 3, \xff}'


def test_prune_skips_a_symlink_in_runs_and_never_deletes_what_it_points_at(
    tmp_path: Path, capsys
) -> None:
    """Issue 36, finding 8: ``prune --keep 1`` with a link in ``runs/`` gave a traceback (``Cannot
    call rmtree on a symbolic link``), exit 1."""
    import shutil

    folder = tmp_path / "results" / "demo"
    for day, commit in ((1, "a"), (2, "b"), (3, "c"), (4, "d")):
        write_run(folder, BASE, run_id=f"2026030{day}-100000-{commit * 4}", commit=commit * 40,
                  seed=day, started=f"2026-03-0{day}T10:00:00Z")
    outside = tmp_path / "elsewhere" / "kept-run"
    shutil.copytree(folder / "runs" / "20260301-100000-aaaa", outside)
    shutil.rmtree(folder / "runs" / "20260301-100000-aaaa")
    (folder / "runs" / "20260301-100000-aaaa").symlink_to(outside, target_is_directory=True)
    inside = sorted(path.relative_to(outside) for path in outside.rglob("*"))
    code = main(["prune", str(folder), "--keep", "1"])
    out, err = capsys.readouterr()
    assert code == 0 and "Traceback" not in out + err, err
    assert (f"skipped {folder / 'runs' / '20260301-100000-aaaa'}: a symbolic link (to "
            f"{outside})" in out)
    assert sorted(path.relative_to(outside) for path in outside.rglob("*")) == inside, (
        "the target survives")
    assert (folder / "runs" / "20260301-100000-aaaa").is_symlink()
    assert sorted(path.name for path in (folder / "runs").iterdir()) == [
        "20260301-100000-aaaa",
        "20260303-100000-cccc",
    ]


# --- a full disk: the final status is recorded all the same (issue 36, finding 6) -----------------


def _fill(folder: Path) -> None:
    """Fill the file system of ``folder`` to its last byte."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for size in (1 << 20, 65536, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)


def test_the_final_manifest_is_written_on_a_disk_that_filled_up(tmp_path: Path) -> None:
    """A real 1 MiB tmpfs: the room kept when the run started takes the final status; without it,
    the same write fails (the disk really is full)."""
    with mounted_tmpfs(tmp_path / "disk", "size=1m") as disk:
        store = ResultStore(disk / "out")
        started = {"status": "running", "plan": {"keys": {f"u{i}": "k" * 64 for i in range(300)}}}
        store.reserve_space(started)
        store.write_manifest(started)
        assert store.reserve_path.stat().st_size >= 8 * len(json.dumps(started))
        _fill(disk)
        grown = {
            **started,
            "status": "aborted",
            "instances": {f"s{i}": {"argv": ["x" * 200] * 20} for i in range(8)},
        }
        with pytest.raises(OSError) as full:
            store.write_manifest(grown)  # not the final write: the room is not given up
        assert full.value.errno == 28 and full.value.filename == str(store.manifest_path)
        store.write_manifest(grown, final=True)
        assert json.loads(store.manifest_path.read_text())["status"] == "aborted"
        assert not store.reserve_path.exists()
        assert [path.name for path in store.root.iterdir()] == ["manifest.json"], (
            "no temp file left")
        store.release_reserve()  # idempotent


def test_a_disk_without_room_for_the_reserve_is_a_storage_error(tmp_path: Path) -> None:
    with mounted_tmpfs(tmp_path / "disk", "size=1m") as disk:
        store = ResultStore(disk / "out")
        _fill(disk)
        with pytest.raises(StorageError,
                           match=r"cannot write .*\.manifest\.reserve: No space left on device"):
            store.reserve_space({"status": "running"})
        assert not store.reserve_path.exists()
