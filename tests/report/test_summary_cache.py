"""``summary-cache.json``: what history and the ``run.until`` replay keep beside a stored run's
records is found again for the same records, never for others, never trusted when damaged, and never
required (a folder that cannot be written works without it)."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from fvp_harness.report.stored import history, summary_cache
from fvp_harness.report.stored.history import history_from_runs, load_history
from fvp_harness.report.stored.summary_cache import CACHE_FILE, SummaryCache, cache_key
from fvp_harness.run import adaptive
from fvp_harness.scenario.model import Compare, Until
from fvp_harness.store.folder import HARNESS_JSON_FILES, ResultStore
from fvp_harness.store.records import Record
from tests.helpers import interleaved, record
from tests.report.stored_runs import write_run

BASE = {("after", "m1"): 1.0, ("after", "m2"): 2.0, ("before", "m1"): 2.0, ("before", "m2"): 4.0}


def _runs(tmp_path: Path, count: int = 4) -> Path:
    folder = tmp_path / "demo"
    for index in range(count):
        values = {key: value * (1.1 if index >= 2 and key == ("after", "m1") else 1.0)
                  for key, value in BASE.items()}
        write_run(folder, values, run_id=f"2026030{index + 1}-100000-000{index}",
                  started=f"2026-03-0{index + 1}T10:00Z", seed=index)
    return folder


def _unanalysed(*_args: object, **_kwargs: object) -> object:
    raise AssertionError("analysed again: the cache was not used")


def test_history_reads_each_run_once_and_then_from_its_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _runs(tmp_path)
    first = history_from_runs(load_history(folder))
    runs = ResultStore(folder, create=False).stored_runs()
    assert all((run.path / CACHE_FILE).is_file() for run in runs), (
        "one cache beside every run's records")
    monkeypatch.setattr(history, "summarise", _unanalysed)
    assert history_from_runs(load_history(folder)) == first, "the kept points are the computed ones"


def test_another_record_or_metric_is_analysed_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _runs(tmp_path, 2)
    history_from_runs(load_history(folder))
    calls: list[int] = []
    real = history.summarise

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(history, "summarise", counted)
    history_from_runs(load_history(folder), metric="npu_cycles")
    assert len(calls) == 2, "another metric: another key in each of the 2 runs"
    newest = folder / "records.jsonl"
    lines = newest.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    row["samples"]["cpu_time"] = [value * 2 for value in row["samples"]["cpu_time"]]
    newest.write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n", encoding="utf-8")
    calls.clear()
    history_from_runs(load_history(folder))
    assert len(calls) == 1, "only the run whose records changed is analysed again"


@pytest.mark.parametrize("damage", [b"{not json", b'{"format": 1, "entries": []}', b"\xff\xfe",
                                    b'{"format": 99, "entries": {}}'])
def test_a_damaged_cache_is_ignored_and_rewritten(tmp_path: Path, damage: bytes) -> None:
    folder = _runs(tmp_path, 1)
    expected = history_from_runs(load_history(folder))
    (folder / CACHE_FILE).write_bytes(damage)
    assert history_from_runs(load_history(folder)) == expected
    data = json.loads((folder / CACHE_FILE).read_text(encoding="utf-8"))
    assert data["format"] == summary_cache.CACHE_FORMAT and len(data["entries"]) == 1


def test_an_entry_of_the_wrong_shape_is_not_trusted(tmp_path: Path) -> None:
    folder = _runs(tmp_path, 1)
    expected = history_from_runs(load_history(folder))
    data = json.loads((folder / CACHE_FILE).read_text(encoding="utf-8"))
    for key in data["entries"]:
        data["entries"][key]["points"] = [["m1", "fast", None, None, 3, None]]
    (folder / CACHE_FILE).write_text(json.dumps(data), encoding="utf-8")
    assert history_from_runs(load_history(folder)) == expected


def test_a_folder_that_cannot_be_written_works_without_a_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _runs(tmp_path, 2)

    def read_only(path: object, data: object, **_: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(summary_cache, "atomic_write", read_only)
    first = history_from_runs(load_history(folder))
    assert not list(folder.rglob(CACHE_FILE)), "nothing kept, nothing raised"
    assert history_from_runs(load_history(folder)) == first


def test_the_key_moves_with_every_input() -> None:
    base = cache_key("k", {"records": "a", "metric": "cpu_time"})
    assert base == cache_key("k", {"metric": "cpu_time", "records": "a"}), "key order is no input"
    others = {cache_key("k", {"records": "b", "metric": "cpu_time"}),
              cache_key("j", {"records": "a", "metric":
              "cpu_time"}),
              cache_key("k", {"records": "a", "metric": "cpu_time"}, code=("fvp_harness.errors",))}
    assert base not in others and len(others) == 3
    assert cache_key("k", {"records": object()}) is None, "no JSON form: nothing cached"


def test_the_cache_is_no_fetched_report_and_moves_with_its_run(tmp_path: Path) -> None:
    assert CACHE_FILE in HARNESS_JSON_FILES, "the VGF reader must not take it for a fetched report"
    folder = _runs(tmp_path, 1)
    history_from_runs(load_history(folder))
    store = ResultStore(folder, create=False)
    moved = store.archive("20260309-000000-0009")
    assert (moved / CACHE_FILE).is_file() and not (folder / CACHE_FILE).exists()


# --- the run.until replay -------------------------------------------------------------------------

SPEC = Compare(baseline="before", candidate="after", primary="cpu_time", min_effect=5)
UNTIL = Until(ci_width=50, min_repetitions=2, max_repetitions=4)


def _until_records() -> list[Record]:
    """Three rounds of two builds x two models (repetitions from 0, as a plan numbers them)."""
    centres = {("before", "m1"): 2.0, ("after", "m1"): 1.0, ("before", "m2"): 4.0,
               ("after", "m2"): 3.9}
    return [record(f"r{rep}-{build}-{model}", build=build, model=model, repetition=rep,
                   samples={"cpu_time": [centres[build, model] * (1 + 0.002 * ((rep + i) % 3))
                                         for i in range(5)]})
            for _, rep, model, build in interleaved(range(3), ["m1", "m2"], ["before", "after"])]


def test_the_replay_is_kept_and_found_in_any_model_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = _until_records()
    cache = SummaryCache(tmp_path)
    state = adaptive.replay(records, SPEC, UNTIL, models=["m1", "m2"], builds=["before", "after"],
                            cache=cache)
    monkeypatch.setattr(adaptive, "primary_comparisons", _unanalysed)
    reader = SummaryCache(tmp_path, write=False)
    again = adaptive.replay(records, SPEC, UNTIL, models=["m2", "m1"], builds=["after", "before"],
                            cache=reader)
    assert [m.model for m in again.models] == ["m2", "m1"]
    assert {m.model: m for m in again.models} == {m.model: m for m in state.models}
    # the report passes records in the plan's order (run.pipeline.in_plan_order), make's check as
    # they are stored: the models interleave differently, each model's own records keep their order;
    # the same question, kept
    regrouped = sorted(records, key=lambda r: r.model != "m2")
    assert regrouped != records
    again = adaptive.replay(regrouped, SPEC, UNTIL, models=["m1", "m2"], builds=["before", "after"],
                            cache=reader)
    assert {m.model: m for m in again.models} == {m.model: m for m in state.models}
    with pytest.raises(AssertionError, match="analysed again"):  # one record less: another question
        adaptive.replay(records[:-1], SPEC, UNTIL, models=["m1", "m2"], builds=["before", "after"],
                        cache=reader)


def test_a_read_only_cache_writes_nothing(tmp_path: Path) -> None:
    adaptive.replay(_until_records(), SPEC, UNTIL, models=["m1", "m2"], builds=["before", "after"],
                    cache=SummaryCache(tmp_path, write=False))
    assert not (tmp_path / CACHE_FILE).exists(), "make's up-to-date check writes nothing"


def test_the_analysis_modules_are_every_module_the_analysis_imports() -> None:
    """An entry's key covers the bytes of the code that computed it: ``ANALYSIS_MODULES`` must be
    ``analysis`` and every report module it reaches (through any import, at the top, in a function
    or for type hints), or an edit of a part it missed would find the numbers of the old code."""
    from tests.test_layers import PACKAGE, _module_name, import_graph

    sources = {_module_name(path): (path.read_text(encoding="utf-8"), path.name == "__init__.py")
               for path in PACKAGE.rglob("*.py")}
    graph = import_graph(sources)
    reached, todo = set(), ["fvp_harness.report.stats.analysis"]
    while todo:
        module = todo.pop()
        if module not in reached and module.startswith("fvp_harness.report."):
            reached.add(module)
            todo.extend(graph[module])
    assert sorted(summary_cache.ANALYSIS_MODULES) == sorted(reached)
