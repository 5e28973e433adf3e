"""What was analysed from a stored run, kept beside its records (``summary-cache.json``), so that
reading the run again costs a file read instead of an analysis."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from fvp_harness.errors import HarnessError
from fvp_harness.files import atomic_write, file_sha256
from fvp_harness.store.folder import SUMMARY_CACHE_FILE

if TYPE_CHECKING:
    from fvp_harness.store.records import Record

__all__ = ["ANALYSIS_MODULES", "ANALYSIS_VERSION", "CACHE_FILE", "MAX_ENTRIES", "SummaryCache",
           "cache_key", "cached_run_points", "records_digest"]

log = logging.getLogger(__name__)

CACHE_FILE = SUMMARY_CACHE_FILE
"""Beside ``records.jsonl`` in a results or run folder (the store moves it with the run)."""
CACHE_FORMAT = 1
"""Version of the file's own layout."""
ANALYSIS_VERSION = 1
"""Bump when what an entry holds changes meaning without a code change the ``code`` digest sees
(e.g. a setting's default moved into another module)."""
MAX_ENTRIES = 32
"""Entries kept per file, newest last: a folder is read with a few settings at most; more would be
stale ones."""
ANALYSIS_MODULES = ("fvp_harness.report.format", *(f"fvp_harness.report.stats.{name}" for name in (
    "analysis", "bootstrap", "changes", "comparison", "drift", "findings", "frames", "geomean",
    "identity", "primary", "pvalues", "result", "samples", "spec",
    "summary", "verdicts")))
"""The modules of the analysis: ``analysis`` and every module of the report package it imports,
directly or not (``tests/report/test_summary_cache.py`` checks the list against the imports). Every
entry's ``code`` includes them, so an edit of any part of the analysis finds nothing kept before."""


def _code_digest(modules: Iterable[str]) -> str:
    """sha256 over the source files of ``modules`` (found, not imported: ``find_spec`` loads only
    the parent packages); a module without a file counts by its name alone."""
    digest = hashlib.sha256()
    for name in modules:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        try:
            digest.update(f"{name}={file_sha256(Path(origin))}\n".encode() if origin
                          else f"{name}\n".encode())
        except OSError:
            digest.update(f"{name}\n".encode())
    return digest.hexdigest()


def records_digest(records: Sequence[Record]) -> str:
    """sha256 of the records' JSON, in the order given: what an analysis of exactly these records
    depends on."""
    digest = hashlib.sha256()
    for record in records:
        digest.update(record.model_dump_json().encode())
        digest.update(b"\n")
    return digest.hexdigest()


def cache_key(kind: str, inputs: Mapping[str, Any], *, code: Sequence[str] = ()) -> str | None:
    """The key of ``kind`` computed from ``inputs`` (JSON-able: digests, settings, names) by the
    modules ``code``; None when ``inputs`` cannot be written as JSON (then nothing is cached)."""
    try:
        text = json.dumps({"kind": kind, "analysis": ANALYSIS_VERSION, "code": _code_digest(code),
                           "inputs": inputs}, sort_keys=True, separators=(",", ":"),
                          allow_nan=False)
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(text.encode()).hexdigest()


class SummaryCache:
    """The ``summary-cache.json`` of one results or run folder. ``get`` returns what ``put`` kept
    under a key, or None; ``write=False`` never writes (``put`` does nothing)."""

    def __init__(self, folder: Path, *, write: bool = True) -> None:
        self.path = Path(folder) / CACHE_FILE
        self.write = write
        self._entries: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        if self._entries is None:
            self._entries = {}
            try:
                data = json.loads(self.path.read_bytes().decode("utf-8"))
            except FileNotFoundError:
                return self._entries
            # damaged or unreadable: not trusted, replaced at the next put
            except (OSError, ValueError) as exc:
                log.debug("ignoring %s: %s", self.path, exc)
                return self._entries
            entries = (data.get("entries") if isinstance(data, dict) and
                       data.get("format") == CACHE_FORMAT else None)
            if isinstance(entries, dict):
                self._entries = {str(key): value for key, value in entries.items()}
            else:
                log.debug("ignoring %s: not a summary cache of format %d", self.path, CACHE_FORMAT)
        return self._entries

    def get(self, key: str | None) -> Any | None:
        """The value kept under ``key``, or None (no key, no file, a damaged file, no such
        entry)."""
        if key is None:
            return None
        return self._load().get(key)

    def put(self, key: str | None, value: Any) -> None:
        """Keep ``value`` (JSON-able) under ``key`` and write the file (atomically; the oldest
        entries beyond ``MAX_ENTRIES`` dropped). A folder that cannot be written keeps nothing and
        raises nothing."""
        if key is None or not self.write:
            return
        entries = self._load()
        entries.pop(key, None)
        entries[key] = value
        while len(entries) > MAX_ENTRIES:
            entries.pop(next(iter(entries)))
        try:
            text = json.dumps({"format": CACHE_FORMAT, "entries": entries}, separators=(",", ":"),
                              allow_nan=False)
            if not self.path.parent.is_dir():
                return
            atomic_write(self.path, text + "\n")
        # read-only, full, foreign: keep nothing
        except (OSError, HarnessError, TypeError, ValueError) as exc:
            log.debug("not keeping %s: %s", self.path, exc)


P = TypeVar("P")
S = TypeVar("S")
RunPoints = tuple[dict[str, P], str, str | None]


def _point_values(values: object) -> bool:
    """Whether a cached point is (median, ci_low, ci_high, n, npu_cycles) of numbers or None, n an
    int."""
    return (isinstance(values, list) and len(values) == 5 and isinstance(values[3], int)
            and all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
                    for v in (values[0], values[1], values[2], values[4])))


def cached_run_points(folder: Path, records: Sequence[Record], metric: str, settings: S,
                      compute: Callable[[Sequence[Record], str, S], RunPoints[P]],
                      point: Callable[..., P]) -> RunPoints[P]:
    """``history``'s numbers of one stored run (``compute(records, metric, settings)``: per model a
    point, the unit, the NPU cycle metric), kept in ``folder``'s cache under these very records,
    metric and settings. ``point`` builds a point from its five fields (``history.Point``), each
    kept as a plain list."""
    cache = SummaryCache(folder)
    try:
        shown = (dataclasses.asdict(settings) if dataclasses.is_dataclass(settings) and
                 not isinstance(settings, type)
            else repr(settings))
        inputs = {"records": records_digest(records), "metric": metric, "settings": shown}
    except TypeError:
        return compute(records, metric, settings)
    code = ("fvp_harness.report.stored.history",
            "fvp_harness.report.rendering.cells", *ANALYSIS_MODULES)  # cells: the NPU metrics
    key = cache_key("history points", inputs, code=code)
    kept = cache.get(key)
    if (isinstance(kept, dict) and isinstance(kept.get("unit"), str) and
        isinstance(kept.get("points"), list)
            and (kept.get("npu") is None or isinstance(kept.get("npu"), str))
            and
        all(isinstance(row, list) and len(row) == 6 and isinstance(row[0], str) and
            _point_values(row[1:])
                    for row in kept["points"])):
        return {row[0]: point(*row[1:]) for row in kept["points"]}, kept["unit"], kept["npu"]
    found, unit, npu = compute(records, metric, settings)
    try:
        rows = [[model, *dataclasses.astuple(value)] for model, value in found.items()]  # type: ignore[call-overload]
    except TypeError:
        return found, unit, npu
    cache.put(key, {"unit": unit, "npu": npu, "points": rows})
    return found, unit, npu
