"""The results folder: ``manifest.json``, ``records.jsonl``, ``logs/``, ``fetched/`` and the report
files.

Why it is shaped so: docs/architecture.md, "Inside `store/`"."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fvp_harness.errors import ConfigurationError, is_storage_failure, storage_error
from fvp_harness.files import atomic_write, fsync_dir
from fvp_harness.located import data_problems, shorten_text
from fvp_harness.store.records import RECORD_SCHEMA_VERSION, Record, upgrade_row

# POSIX; on other systems the lock degrades to a no-op (documented single-writer rule still holds)
try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "COMPARE_DIR",
    "DEFAULT_RESULTS_BASE",
    "EVENTS_CSV_FILE",
    "FETCHED_DIR",
    "HARNESS_JSON_FILES",
    "HISTORY_DIR",
    "KEY_METADATA",
    "LOCK_FILE",
    "LOGS_DIR",
    "MANIFEST_FILE",
    "MANIFEST_FORMAT_VERSION",
    "PARTIAL_RECORDS_PATTERN",
    "RECORDS_FILE",
    "REPORT_FILES",
    "REPORT_FILE_PATTERNS",
    "REPORT_INPUTS_FILE",
    "REPORT_SAMPLES_FILE",
    "RESERVE_FILE",
    "RESERVE_MIN_BYTES",
    "RUNS_DIR",
    "SUMMARY_CACHE_FILE",
    "VGF_REPORT_FILES",
    "ResultStore",
    "StoredRun",
    "free_instance_name",
    "key_metadata",
    "results_dir_for",
]

log = logging.getLogger(__name__)

# Every name in a results folder is defined here and imported by whoever reads or writes it.

DEFAULT_RESULTS_BASE = Path("results")
"""Where ``run`` and ``make`` put ``<scenario stem>/`` folders unless told otherwise (``-o``,
``--results``)."""
MANIFEST_FORMAT_VERSION = 5
"""2: the booted instances are under ``instances`` (was ``sessions``: they are instances, ``s0``,
``s0.2``; a plan session may use several). 3: ``run`` (the run's id and the scenario's git commit)
and ``plan.keys`` (the content key of every planned unit). 4: ``plan.spared`` (the units
``run.until``'s stopping rule spared). 5: the machine record (``host`` CPU model, memory, OS, load
before/after; ``harness``; ``fvp.path``/``sha256``/``simulator``; ``builds.X.source``).
``run.manifest`` reads formats 1 to 4 too."""
MANIFEST_FILE = "manifest.json"
RECORDS_FILE = "records.jsonl"
PARTIAL_RECORDS_PATTERN = f"{RECORDS_FILE}.partial-*"
"""Incomplete last lines of ``records.jsonl`` set aside by the next append
(``ResultStore._repair_tail``); they belong to the run and move with it (``archive``, ``reset``)."""
LOCK_FILE = ".lock"
RESERVE_FILE = ".manifest.reserve"
"""Room kept for the run's final manifest (``ResultStore.reserve_space``): a full disk must not
leave the run ``running``. Released before the final write, removed when the run ends; a killed
run's is reused by the next."""
RESERVE_MIN_BYTES = 256 * 1024
"""The least room kept: a started manifest of the smoke scenario is 13 KB and its final one 19 KB
(an instance adds about 6 KB: argv, ports, ``--stat``); the reserve is 8 times the started manifest,
at least this."""
RESERVE_FACTOR = 8
LOGS_DIR = "logs"
FETCHED_DIR = "fetched"
REPORT_FILES: dict[str, str] = {
    "markdown": "report.md",
    "csv": "report.csv",
    "json": "report.json",
    "png": "report.png",
}
"""The A/B report's files by output name (``report.outputs`` in a scenario chooses which are
written)."""
EVENTS_CSV_FILE = "report.events.csv"
"""The ETDump event comparison's rows (``report/stats/etdump_events.py``), beside ``report.csv``
when builds are traced."""
REPORT_SAMPLES_FILE = "report.samples.png"
"""Written with ``report.png`` (the ``png`` output): every sample per model, build and runner
process."""
VGF_REPORT_FILES: dict[str, str] = {
    "markdown": "vgf_report.md",
    "csv": "vgf_report.csv",
    "json": "vgf_report.json",
    "png": "vgf_report.png",
}
"""The VGF zero-copy report's files by output name."""
REPORT_INPUTS_FILE = "report.inputs"
"""Beside the report files (``make``): the hash parts of the report's inputs and the exit code they
gave (JSON)."""
REPORT_FILE_PATTERNS: tuple[str, ...] = ("report.*", "vgf_report.*")
"""Report files in a results folder (``REPORT_FILES``, ``REPORT_INPUTS_FILE``,
``VGF_REPORT_FILES``): what ``ResultStore.reset`` removes besides records, manifest, logs and
fetched files."""
RUNS_DIR = "runs"
"""``runs/<run id>/``: the earlier runs of a scenario folder, each a complete results folder of its
own. The scenario folder itself always holds the newest run, so ``results/<stem>/report.md`` is the
latest report."""
COMPARE_DIR = "compare"
"""``<scenario folder>/compare/<A>-vs-<B>/``: where ``fvp-harness compare`` writes a report of two
stored runs unless told otherwise (``-o``). Never inside a run: a run's folder holds only what that
run measured."""
HISTORY_DIR = "history"
"""``<scenario folder>/history/``: where ``fvp-harness history`` writes its table and trend charts
unless told otherwise (``-o``)."""
SUMMARY_CACHE_FILE = "summary-cache.json"
"""Beside the records: what was analysed from them, keyed by their content
(``report.summary_cache``); it belongs to the run and moves with it (``archive``, ``reset``); stale
or damaged, it is ignored and rewritten."""
HARNESS_JSON_FILES: frozenset[str] = frozenset({MANIFEST_FILE, REPORT_FILES["json"],
                                                VGF_REPORT_FILES["json"], SUMMARY_CACHE_FILE})
"""The JSON files the harness itself writes into a results folder (a reader of fetched JSON reports
skips them)."""

KEY_METADATA: tuple[str, ...] = ("platform", "fvp.binary", "fvp.version", "artifacts",
                                 "parsers_version")
"""Manifest fields (dotted paths) that must match for two runs to share a results folder."""

_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


def _check_name(name: str, what: str) -> str:
    if not _SAFE_NAME.fullmatch(name) or name in (".", ".."):
        raise ConfigurationError(
            f"{what} {name!r} cannot be used as a folder or file name under results/ "
            "(allowed: letters, digits, "
            "'_', '.', '+', '-', not starting with '.'); rename it or pass -o DIR"
        )
    return name


def free_instance_name(logs: Path, session: str, start: int = 1) -> tuple[str, int]:
    """The name of a session's next instance and its number: ``s0`` (1), then ``s0.2``, ``s0.3``,
    ... from ``start`` on, the first whose log folder under ``logs`` does not exist yet, so an
    instance of a ``--resume``, of a retry or booted early never writes into logs an earlier record
    points at. One rule for ``run.execute``, the early boots of ``run.preboot`` and the batch lanes'
    pre-boots, which name an instance before its session exists."""
    count = max(1, start)
    while True:
        name = session if count == 1 else f"{session}.{count}"
        if not (logs / name).exists():
            return name, count
        count += 1


def results_dir_for(
    scenario_path: Path | str, base: Path | str = "results", override: Path | str | None = None
) -> Path:
    """The results folder of a scenario: ``<base>/<scenario file stem>``, or ``override`` (``-o
    DIR``) verbatim.

    A stem that would leave ``base`` (``..``, a hidden name, path separators, a symlink pointing
    elsewhere) is refused with a ConfigurationError: a scenario file name must never make the
    harness write outside ``results/``. ``override`` is the user's explicit choice and is not
    restricted.
    """
    if override is not None:
        return Path(override)
    stem = _check_name(Path(scenario_path).stem, "scenario file stem")
    base_path = Path(base)
    target = base_path / stem
    resolved_base = base_path.resolve()
    if not target.resolve().is_relative_to(resolved_base):
        raise ConfigurationError(
            f"results folder {target} resolves to {target.resolve()}, outside {resolved_base}; "
            "remove the link or pass -o DIR"
        )
    return target


def _manifest_text(manifest: Mapping[str, Any]) -> str:
    """``manifest.json``'s text: ``format_version`` set, keys sorted (equal manifests give equal
    bytes)."""
    data = dict(manifest)
    data["format_version"] = MANIFEST_FORMAT_VERSION
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n"


def _get(mapping: Mapping[str, Any], dotted: str) -> Any:
    value: Any = mapping
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def key_metadata(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The ``KEY_METADATA`` fields of a manifest, flattened; ``artifacts`` gives one entry per
    artifact."""
    flat: dict[str, Any] = {}
    for path in KEY_METADATA:
        value = _get(manifest, path)
        if isinstance(value, Mapping):
            for name in sorted(value):
                flat[f"{path}.{name}"] = value[name]
        else:
            flat[path] = value
    return flat


class StoredRun:
    """One stored run of a scenario folder: where it is, and what its manifest says of it (id,
    start, status, git commit and branch, planned units); the folder's own name and ``None`` where
    the manifest is missing or unreadable."""

    def __init__(self, path: Path, run_id: str, *, current: bool, started: str | None = None,
                 status: str | None = None, commit: str | None = None, units: int | None = None,
                 branch: str | None = None, problem: str | None = None, spared: int = 0) -> None:
        self.path, self.run_id, self.current = path, run_id, current
        self.started, self.status, self.commit, self.units = started, status, commit, units
        self.branch = branch
        self.problem = problem
        """Why the manifest could not be read (damaged, unreadable), or None; a missing manifest is
        no problem."""
        self.spared = spared
        """``units``: the units the run accounts for (asked for, less those ``run.until`` spared:
        ``spared``)."""

    def __repr__(self) -> str:
        return f"StoredRun({self.run_id!r}, {str(self.path)!r}, current={self.current})"

    @classmethod
    def of(cls, folder: Path, *, current: bool) -> StoredRun:
        problem: str | None = None
        try:  # not read_manifest: a listing shows a run of a newer format too
            data = json.loads((folder / MANIFEST_FILE).read_bytes().decode("utf-8"))
        except FileNotFoundError:
            data = {}
        except (OSError, ValueError):
            data = {}
            try:
                ResultStore(folder, create=False).read_manifest()
            # the same words as every other reader of a damaged manifest
            except ConfigurationError as exc:
                problem = str(exc)
        data = data if isinstance(data, dict) else {}

        def text(value: object) -> str | None:
            return value if isinstance(value, str) else None

        run = data.get("run") if isinstance(data.get("run"), dict) else {}
        plan = data.get("plan") if isinstance(data.get("plan"), dict) else {}
        units = plan.get("units") if isinstance(plan, dict) else None
        selected = plan.get("selected") if isinstance(plan, dict) else None
        if isinstance(selected, list):  # the units this run was asked for (--only-*)
            units = len(selected)
        spared = plan.get("spared") if isinstance(plan, dict) else None
        spared_count = len(spared) if isinstance(spared, list) else 0
        # what the run accounts for: run.until's spared units are none of it
        if isinstance(units, int):
            units -= spared_count
        return cls(folder, text(run.get("id") if isinstance(run, dict) else None) or folder.name,
                   current=current,
                   started=text(data.get("started")), status=text(data.get("status")),
                   commit=text(run.get("commit") if isinstance(run, dict) else None),
                   units=units if isinstance(units, int) else None,
                   branch=text(run.get("branch") if isinstance(run, dict) else None),
                   problem=problem, spared=spared_count)


class ResultStore:
    """One scenario's results folder. Creating the object creates the folder.

    Not thread-safe by design: one process writes (see the module docstring); take ``lock()`` around
    a run.
    """

    def __init__(self, root: Path | str, *, create: bool = True) -> None:
        self.root = Path(root)
        if create:
            self.root.mkdir(parents=True, exist_ok=True)
        self.manifest_path = self.root / MANIFEST_FILE
        self.records_path = self.root / RECORDS_FILE
        self.logs_dir = self.root / LOGS_DIR
        self.fetched_dir = self.root / FETCHED_DIR
        """``fetched/<unit>/``: the files a scenario's ``run.fetch`` copies back (written by
        execute)."""
        self.read_warnings: list[str] = []
        """Problems the last ``records()`` call skipped over (a partial trailing line)."""
        self._tail_checked = False

    def __repr__(self) -> str:
        return f"ResultStore({str(self.root)!r})"

    # --- locking ----------------------------------------------------------------------------------

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold an exclusive lock on the folder: a second writer fails at once instead of mixing
        records."""
        self.check_writable()
        if fcntl is None:  # pragma: no cover
            yield
            return
        with open(self.root / LOCK_FILE, "a+") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                raise ConfigurationError(
                    f"another fvp-harness process is writing to {self.root}; wait for it or pass "
                    "-o DIR"
                ) from exc
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def check_writable(self) -> None:
        """Refuse a results folder this process cannot write (read-only file system, no permission,
        full disk), before a command boots anything, instead of a traceback at the first record:
        ``StorageError``, exit 3, from every verb that writes (the README's exit codes). Probes by
        creating and removing a file: ``os.access`` is wrong for root and for read-only mounts
        alike."""
        probe = self.root / f".write-probe-{os.getpid()}"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.close(fd)
            probe.unlink()
        except OSError as exc:
            if not is_storage_failure(exc):
                raise ConfigurationError(f"results folder {self.root} cannot be used "
                                         f"({exc.strerror or exc}); write elsewhere with -o "
                                         "DIR") from exc
            error = storage_error(self.root, exc)
            error.message = (f"results folder {self.root} is not writable ({exc.strerror or exc}); "
                             "make it writable or write elsewhere with -o DIR")
            raise error from exc

    # --- manifest ---------------------------------------------------------------------------------

    def write_manifest(self, manifest: Mapping[str, Any], *, final: bool = False) -> Path:
        """Atomically replace ``manifest.json``; ``format_version`` is set here. Keys are sorted so
        equal manifests give equal bytes. ``final``: the run's last status; the room
        ``reserve_space`` kept is given back first, so the status is recorded on a disk that filled
        up during the run. A write that fails raises ``OSError`` naming the manifest."""
        text = _manifest_text(manifest)
        if final:
            self.release_reserve()
        atomic_write(self.manifest_path, text)
        return self.manifest_path

    @property
    def reserve_path(self) -> Path:
        return self.root / RESERVE_FILE

    def reserve_space(self, manifest: Mapping[str, Any] | None = None) -> None:
        """Keep room on the folder's file system for the final manifest: a file of allocated blocks
        (``fallocate``; zeros where the file system cannot) that ``write_manifest(final=True)``
        removes before it writes. Why a reserve and not a rewrite in place: the final manifest is
        larger than the first (the instances, measured: 13 -> 19 KB for one instance), and a rewrite
        in place is not atomic (a crash mid-write would leave half a manifest). The room:
        ``RESERVE_FACTOR`` times ``manifest`` as written, at least ``RESERVE_MIN_BYTES``. A disk
        that has not even this room is a ``StorageError`` before any unit runs."""
        written = len(_manifest_text(manifest).encode("utf-8")) if manifest is not None else 0
        size = max(RESERVE_MIN_BYTES, RESERVE_FACTOR * written)
        try:
            fd = os.open(self.reserve_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        except OSError as exc:
            raise storage_error(self.reserve_path, exc) from exc
        try:
            try:
                os.posix_fallocate(fd, 0, size)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
                # a file system without fallocate: real blocks all the same
                os.pwrite(fd, b"\0" * size, 0)
            os.fsync(fd)
        except OSError as exc:
            os.close(fd)
            self.reserve_path.unlink(missing_ok=True)
            raise storage_error(self.reserve_path, exc) from exc
        os.close(fd)

    def release_reserve(self) -> None:
        """Give the kept room back (idempotent; never raises: it runs on every way out of a run)."""
        with contextlib.suppress(OSError):
            self.reserve_path.unlink(missing_ok=True)

    def read_manifest(self) -> dict[str, Any] | None:
        """The stored manifest, or None when the folder has none yet. Refuses a newer format."""
        try:
            text = self.manifest_path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            return None
        except UnicodeDecodeError as exc:
            raise ConfigurationError(
                f"{self.manifest_path} is damaged: not valid UTF-8 (byte {exc.start}); restore it, "
                f"move {self.root} away, or write elsewhere with -o DIR"
            ) from exc
        except OSError as exc:
            raise ConfigurationError(
                f"{self.manifest_path} cannot be read ({exc.strerror or exc}); fix it or write "
                "elsewhere with -o DIR"
            ) from exc
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(
                f"{self.manifest_path} is damaged: not valid JSON ({exc}); restore it, move "
                f"{self.root} away, or write elsewhere with -o DIR"
            ) from exc
        version = data.get("format_version", 1) if isinstance(data, dict) else None
        if not isinstance(version, int) or version > MANIFEST_FORMAT_VERSION:
            raise ConfigurationError(
                f"{self.manifest_path} has format_version {version!r}; this fvp-harness reads up "
                f"to {MANIFEST_FORMAT_VERSION}: upgrade fvp-harness or use another results folder "
                "(-o DIR)"
            )
        return data

    def check_compatible(self, manifest: Mapping[str, Any]) -> None:
        """Refuse to add this run's results to a folder whose stored run had different key metadata.

        Compares ``KEY_METADATA`` (platform, FVP binary and version, every artifact hash, parsers
        version). Passes when the folder has no manifest yet. The error lists each difference as
        ``field: stored -> this run``.
        """
        stored = self.read_manifest()
        if stored is None:
            return
        old, new = key_metadata(stored), key_metadata(manifest)
        diffs = [
            f"  {name}: {old.get(name)!r} (stored) -> {new.get(name)!r} (this run)"
            for name in sorted(set(old) | set(new))
            if old.get(name) != new.get(name)
        ]
        if diffs:
            raise ConfigurationError(
                f"results in {self.root} come from a different setup and cannot be merged with "
                "this run:\n" + "\n".join(diffs)
                + f"\nwrite elsewhere with -o DIR, or delete {self.root} to start over"
            )

    # --- records ----------------------------------------------------------------------------------

    def append(self, record: Record) -> None:
        """Append one record as one JSON line, flushed and fsynced before returning.

        Before the first append of this object the last line is repaired (``_repair_tail``): a
        complete record without its newline gets one, a partial line is set aside, so the new line
        cannot be glued to either. A write that fails (disk full, read-only, I/O error) takes back
        the part of the line that got in and raises ``StorageError``: the file keeps only whole
        records.
        """
        if not self._tail_checked:
            self._repair_tail()
            self._tail_checked = True
        line = json.dumps(record.model_dump(mode="json"), ensure_ascii=False,
                          separators=(",", ":")) + "\n"
        data = line.encode("utf-8")
        try:
            fd = os.open(self.records_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise storage_error(self.records_path, exc) from exc
        try:
            size = os.lseek(fd, 0, os.SEEK_END)
            try:  # the whole line, or (disk full, ...) none of it: a part that got in is taken back
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)
                raise storage_error(self.records_path, exc) from exc
        finally:
            os.close(fd)

    def records(self) -> list[Record]:
        """Every stored record in file (= execution) order.

        A last line without its newline counts when it is a complete record; otherwise (a crash
        mid-write) it is skipped and noted in ``read_warnings`` and the log. A corrupt line
        elsewhere (not UTF-8, not JSON, not a record) or a record of a newer schema raises
        ConfigurationError naming the file and line.
        """
        self.read_warnings = []
        try:
            data = self.records_path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ConfigurationError(
                f"{self.records_path} cannot be read ({exc.strerror or exc}); fix it or write "
                "elsewhere with -o DIR"
            ) from exc
        lines = data.split(b"\n")
        partial = lines.pop()  # b"" when the file ends with a newline
        out: list[Record] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            out.append(self._parse_line(self._decode(line, number), number))
        if partial.strip():
            last = self._complete_record(partial)
            if last is not None:
                out.append(last)
            else:
                message = (
                    f"{self.records_path}: ignoring an incomplete last line ({len(partial)} bytes, "
                    "probably a crash while writing); that unit will run again with --resume"
                )
                self.read_warnings.append(message)
                log.warning("%s", message)
        return out

    def _decode(self, line: bytes, number: int) -> str:
        try:
            return line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigurationError(
                f"{self.records_path}:{number}: damaged: not valid UTF-8 (byte {exc.start} of the "
                f"line); remove that line (its unit runs again with --resume), or move {self.root} "
                "away"
            ) from exc

    def _complete_record(self, line: bytes) -> Record | None:
        """The record an unterminated last line holds, or None when it is not one whole record."""
        try:
            return self._parse_line(line.decode("utf-8"), 0)
        except (UnicodeDecodeError, ConfigurationError):
            return None

    def _parse_line(self, line: str, number: int) -> Record:
        where = f"{self.records_path}:{number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"{where}: damaged: not a JSON record ({exc}); remove that "
                                     "line (its unit runs again with --resume), or move the folder "
                                     "away") from exc
        if not isinstance(raw, dict):
            raise ConfigurationError(f"{where}: a record must be a JSON object; remove the line or "
                                     "the folder")
        version = raw.get("schema_version", 1)
        if not isinstance(version, int) or version > RECORD_SCHEMA_VERSION:
            raise ConfigurationError(
                f"{where}: record schema_version {version!r} is newer than this fvp-harness reads "
                f"({RECORD_SCHEMA_VERSION}); upgrade fvp-harness or use another results folder (-o "
                "DIR)"
            )
        try:
            return Record.model_validate(upgrade_row(raw))
        # the project's file:line: field: message, never pydantic's own text
        except ValidationError as exc:
            lines = [f"{where}: {problem}" for problem in data_problems(exc)]
            raise ConfigurationError("\n".join(lines)
                                     + "\n(an invalid record: remove that line, its unit runs "
                                     "again with --resume, or move the folder away)") from exc
        except ValueError as exc:
            raise ConfigurationError(f"{where}: invalid record: {shorten_text(str(exc))}") from exc

    def done_keys(self) -> set[str]:
        """Content keys of units already measured successfully: what ``--resume`` skips."""
        return {record.key for record in self.records() if record.status == "ok"}

    # --- stored runs ------------------------------------------------------------------------------

    @property
    def runs_dir(self) -> Path:
        """``runs/``: the earlier runs kept beside the newest one."""
        return self.root / RUNS_DIR

    def has_run(self) -> bool:
        """True when the folder holds a run (a manifest or records)."""
        return self.manifest_path.is_file() or self.records_path.is_file()

    def archive(self, run_id: str) -> Path:
        """Move the run this folder holds into ``runs/<run_id>/`` (a complete results folder of its
        own) and leave the folder empty for the next run; returns the new place. Nothing is deleted.
        A ``run_id`` already taken gets a numbered suffix."""
        name = _check_name(run_id, "run id")
        target = self.runs_dir / name
        number = 2
        while target.exists():
            target = self.runs_dir / f"{name}.{number}"
            number += 1
        target.mkdir(parents=True)
        moved = [self.records_path, self.manifest_path, self.root / SUMMARY_CACHE_FILE,
                 self.logs_dir, self.fetched_dir]
        for pattern in (*REPORT_FILE_PATTERNS, PARTIAL_RECORDS_PATTERN):
            moved += sorted(self.root.glob(pattern))
        for path in moved:
            if path.exists() or path.is_symlink():
                os.replace(path, target / path.name)
        fsync_dir(self.root)
        self._tail_checked = False
        log.info("kept the previous run of %s in %s", self.root, target)
        return target

    def stored_runs(self) -> list[StoredRun]:
        """Every run of this scenario folder, oldest first: the archived ones (``runs/``) and, last,
        the current one when there is one. Each with its folder and the manifest's run id and start
        time (what the folder says when a manifest is missing or unreadable)."""
        found: list[StoredRun] = []
        if self.runs_dir.is_dir():
            for folder in sorted(path for path in self.runs_dir.iterdir() if path.is_dir()):
                found.append(StoredRun.of(folder, current=False))
        if self.has_run():
            found.append(StoredRun.of(self.root, current=True))
        return sorted(found, key=lambda run: (run.current, run.started or "", run.path.name))

    def reset(self) -> None:
        """Remove the current run: records, manifest, ``logs/``, ``fetched/``, the report files
        (``REPORT_FILE_PATTERNS``: the A/B and VGF reports and their inputs) and temp files of an
        interrupted ``atomic_write``. Only ``run --replace`` asks for it (a plain run archives
        instead); ``runs/`` and files it does not know (and ``.lock``) stay."""
        for path in (self.records_path, self.manifest_path, self.root / SUMMARY_CACHE_FILE):
            path.unlink(missing_ok=True)
        for pattern in (*REPORT_FILE_PATTERNS, PARTIAL_RECORDS_PATTERN, ".*.tmp"):
            for path in self.root.glob(pattern):
                if path.is_file() or path.is_symlink():
                    path.unlink()
        for folder in (self.logs_dir, self.fetched_dir):
            if folder.is_symlink():
                folder.unlink()
            elif folder.exists():
                shutil.rmtree(folder)
        self._tail_checked = False

    # --- paths ------------------------------------------------------------------------------------

    def log_path(self, session: str, name: str) -> Path:
        """``logs/<session>/<name>``, folder created; both parts must be plain names (no ``/``, no
        ``..``)."""
        folder = self.logs_dir / _check_name(session, "session name")
        folder.mkdir(parents=True, exist_ok=True)
        return folder / _check_name(name, "log file name")

    def report_path(self, name: str) -> Path:
        """Path of a report file in the folder, e.g. ``report_path("report.md")``."""
        return self.root / _check_name(name, "report file name")

    def relative(self, path: Path) -> str:
        """A path inside the folder as stored in records (``Record.log``): relative, with forward
        slashes."""
        return Path(path).relative_to(self.root).as_posix()

    # --- helpers ----------------------------------------------------------------------------------

    def _repair_tail(self) -> None:
        """Make the file end with a newline without losing anything: a complete last record gets its
        newline; a partial last line is copied to ``records.jsonl.partial-<UTC time>`` (logged) and
        then cut off."""
        try:
            handle = open(self.records_path, "rb+")  # noqa: SIM115 - closed below, after the repair
        except FileNotFoundError:
            return
        with handle:
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return
            handle.seek(size - 1)
            if handle.read(1) == b"\n":
                return
            # find the last newline; everything after it is the unterminated last line
            block = 1 << 16
            end = size
            keep = 0
            while end > 0:
                start = max(0, end - block)
                handle.seek(start)
                chunk = handle.read(end - start)
                pos = chunk.rfind(b"\n")
                if pos >= 0:
                    keep = start + pos + 1
                    break
                end = start
            handle.seek(keep)
            tail = handle.read()
            if self._complete_record(tail) is not None:
                log.warning("%s: the last record had no newline; added it", self.records_path)
                handle.seek(0, os.SEEK_END)
                handle.write(b"\n")
            else:
                stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
                aside = self.root / f"{RECORDS_FILE}.partial-{stamp}-{os.getpid()}"
                with open(aside, "wb") as out:
                    out.write(tail)
                    out.flush()
                    os.fsync(out.fileno())
                log.warning("%s: moved an incomplete last line (%d bytes) to %s before appending",
                            self.records_path, len(tail), aside)
                handle.truncate(keep)
            handle.flush()
            os.fsync(handle.fileno())
