"""Reader for the VGF backend's benchmark JSON (``--vgf_perf_json=FILE``) -> the same Records as the
A/B path.

ExecuTorch's VGF backend, built with ``EXECUTORCH_VGF_IO_STATS=ON``, keeps one record per delegate
``execute()`` (copy bytes, memcpy time, imports, binding refresh, execution time, fallbacks, ...)
and a device-info block, and writes them to a JSON file. The field names are public; the layout of
the file is not. So this reader is tolerant by design (``docs/vgf.md`` documents the default layout
it expects first):

- the per-execute records are taken wherever they are: ``records`` / ``executions`` at the top, else
  any list of objects carrying the known fields, found by searching the whole document (several
  equal-length lists, one per delegate, are summed per inference);
- keys it does not know are listed in ``VgfRun.warnings`` (never fatal), so a newer runtime's
  additions show up instead of vanishing silently;
- what it cannot do without is an error naming the file and the JSON path (``runs/a.json:
  $.records[3] .execute_ns: expected a number >= 0, got 'abc' (str)``); broken JSON names
  ``file:line:col``.

``to_record`` turns a run into a ``records.Record`` (one unit, one sample per measured inference per
metric), so ``frames.to_frame`` and the rest of the analysis serve VGF runs exactly as they serve
A/B runs.

Pure apart from ``read_report`` (which reads one file): no printing, no clock.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter, deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from fvp_harness.errors import ConfigurationError
from fvp_harness.store.folder import HARNESS_JSON_FILES
from fvp_harness.store.records import Record

__all__ = [
    "DERIVED_METRICS",
    "DEVICE_FIELDS",
    "RECORD_FIELDS",
    "REQUIRED_RECORD_FIELDS",
    "VGF_METRIC_UNITS",
    "BufferInfo",
    "DeviceInfo",
    "NoVgfReports",
    "VgfConfig",
    "VgfFormatError",
    "VgfRun",
    "VgfSet",
    "find_reports",
    "load_pair",
    "load_results",
    "parse_report",
    "read_report",
    "to_record",
]

FieldKind = Literal["bytes", "ns", "count", "bool", "handle"]

RECORD_FIELDS: dict[str, FieldKind] = {
    "in_copy_bytes": "bytes",
    "out_copy_bytes": "bytes",
    "in_memcpy_ns": "ns",
    "out_memcpy_ns": "ns",
    "submit_wait_ns": "ns",
    "execute_ns": "ns",
    "imports": "count",
    "import_ns": "ns",
    "binding_refresh_ns": "ns",
    "in_zero_copy_bytes": "bytes",
    "out_zero_copy_bytes": "bytes",
    "fallback_count": "count",
    "rejection_count": "count",
    "success": "bool",
    "delegate_handle": "handle",
}
"""The per-``execute()`` fields of the runtime's record (public source), and what kind of value each
holds."""

REQUIRED_RECORD_FIELDS: tuple[str, ...] = ("execute_ns", "success")
"""Without these a record says nothing usable (how long did VGF run, did it work); every other field
may be missing (an older or trimmed runtime) and is then simply not compared, with a warning."""

LAYOUT_RECORD_FIELDS = ("iteration", "warmup", "latency_ns", "rejections")
"""Per-record keys of the documented default layout that are not runtime fields (docs/vgf.md)."""

DEVICE_FIELDS = ("vendor_id", "device_id", "api_version", "driver_version", "device_name",
                 "driver_name", "driver_info")  # fmt: skip
"""The device-info block's fields (public source)."""

TOP_LEVEL_KEYS = ("format", "format_version", "device", "model", "config", "buffers", "records",
                  "executions",
                  "rejections", "latency_ns", "summary", "started", "runner",
                  "program")  # fmt: skip
"""Top-level keys of the documented default layout; anything else is reported as unknown."""

CONFIG_KEYS = ("zero_copy", "warmup", "iterations", "method", "env")

DERIVED_METRICS: dict[str, tuple[str, ...]] = {
    "copy_bytes": ("in_copy_bytes", "out_copy_bytes"),
    "memcpy_ns": ("in_memcpy_ns", "out_memcpy_ns"),
    "zero_copy_bytes": ("in_zero_copy_bytes", "out_zero_copy_bytes"),
    "boundary_ns": ("in_memcpy_ns", "out_memcpy_ns", "import_ns", "binding_refresh_ns"),
}
"""Sums computed per inference, so the report can say what the boundary costs in total.
``boundary_ns`` is the time spent moving or exposing I/O across the ExecuTorch/VGF boundary (copies,
imports, binding refresh); it is only derived when at least one of its parts was reported (missing
parts count as 0)."""

VGF_METRIC_UNITS: dict[str, str] = {
    **{name: {"bytes": "B", "ns": "ns", "count": "", "bool": ""}[kind]
       for name, kind in RECORD_FIELDS.items() if kind != "handle"},
    "latency_ns": "ns",
    "copy_bytes": "B",
    "memcpy_ns": "ns",
    "zero_copy_bytes": "B",
    "boundary_ns": "ns",
}  # fmt: skip
"""Every metric a VGF record can carry, with its unit (as stored in ``Record.metric_units``)."""

_LATENCY_KEY = re.compile(
    r"^(?:per_)?(?:iteration_|inference_)?(?:latency|latencies|wall|total|iteration)"
                          r"(?:_(ns|us|ms|s))?$")  # fmt: skip
_UNIT_SCALE = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9, None: 1.0}


class VgfFormatError(ConfigurationError):
    """A VGF report cannot be read: broken JSON, no records, or a required field missing or of the
    wrong type.

    The message starts with the file (and ``line:col`` or the JSON path) so the user can open it at
    the spot. ``path`` is the file, ``json_path`` the place inside it (``$`` for the whole
    document).
    """

    def __init__(self, message: str, *, path: str, json_path: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.json_path = json_path


class NoVgfReports(VgfFormatError):
    """A results folder holds no VGF report at all (a scenario that is not a VGF benchmark)."""


@dataclass(frozen=True)
class DeviceInfo:
    """The Vulkan device the run used. Ids are kept as given (Vulkan reports them as integers; some
    tools write hex text); ``api_version`` is decoded to ``major.minor.patch`` when it arrives
    packed as one integer."""

    vendor_id: int | str | None = None
    device_id: int | str | None = None
    api_version: str | None = None
    driver_version: str | None = None
    device_name: str | None = None
    driver_name: str | None = None
    driver_info: str | None = None

    def label(self) -> str:
        """One line for report headers: ``Mali-G720 (vendor 0x13b5, driver arm 1.2, Vulkan
        1.3.275)``."""
        name = self.device_name or "unknown device"
        bits = []
        if self.vendor_id is not None:
            bits.append(f"vendor {_hex(self.vendor_id)}")
        if self.device_id is not None:
            bits.append(f"device {_hex(self.device_id)}")
        driver = " ".join(str(x) for x in (self.driver_name, self.driver_version) if x)
        if driver:
            bits.append(f"driver {driver}")
        if self.api_version:
            bits.append(f"Vulkan {self.api_version}")
        return f"{name} ({', '.join(bits)})" if bits else name

    def as_dict(self) -> dict[str, int | str | None]:
        return {name: getattr(self, name) for name in DEVICE_FIELDS}


@dataclass(frozen=True)
class VgfConfig:
    """How the runner was configured: zero-copy or copy, warmup and measured iteration counts (None:
    not said)."""

    zero_copy: bool | None = None
    warmup: int | None = None
    iterations: int | None = None


@dataclass(frozen=True)
class BufferInfo:
    """One I/O buffer as the report describes it (name, direction, size, whether it went
    zero-copy)."""

    name: str
    direction: str | None = None
    nbytes: int | None = None
    zero_copy: bool | None = None


@dataclass(frozen=True)
class VgfRun:
    """One report, read and checked: device, model, config, buffers, rejection reasons, and per
    measured inference one value per metric (``samples``, warmup already dropped, delegates summed
    per inference).

    ``warnings`` lists what was tolerated (unknown keys, missing optional fields, guesses made); a
    report with warnings is still usable, and the report shows them so nobody trusts a number that
    was not there.
    """

    path: str
    sha256: str
    device: DeviceInfo
    model: str | None
    model_details: dict[str, Any]
    config: VgfConfig
    buffers: tuple[BufferInfo, ...]
    rejections: dict[str, int]
    """Rejection reason -> how many times it was reported."""
    samples: dict[str, list[float]]
    records_at: str
    """JSON path(s) where the per-execute records were found, e.g. ``$.records``."""
    delegate_handles: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    started: str | None = None

    @property
    def inferences(self) -> int:
        """Measured inferences in the report."""
        return len(self.samples.get("execute_ns", ()))

    @property
    def failures(self) -> int:
        """Measured inferences whose record says ``success: false``."""
        return sum(1 for value in self.samples.get("success", ()) if not value)


# --- reading --------------------------------------------------------------------------------------


def read_report(path: Path | str) -> VgfRun:
    """Read and check one VGF report file. Raises ``VgfFormatError`` (a ConfigurationError) naming
    the file."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise VgfFormatError(f"{path}: cannot read the VGF report: {exc.strerror or exc}",
                             path=str(path)) from exc
    return parse_report(data, str(path))


def parse_report(data: bytes | str, path: str = "<report>") -> VgfRun:
    """Parse a report's text. ``path`` is only used in messages (and stored in the result)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    text = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
    if not text.strip():
        raise VgfFormatError(f"{path}: the VGF report is empty (did the runner finish?)", path=path,
                             json_path="$")
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise VgfFormatError(
            f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg} (a runner killed "
            "mid-write leaves a cut file; re-run the unit)",
            path=path,
        ) from exc
    except ValueError as exc:  # NaN / Infinity literals
        raise VgfFormatError(f"{path}: not valid JSON: {exc}", path=path) from exc
    return _Reader(path, hashlib.sha256(raw).hexdigest()).read(doc)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _hex(value: int | str) -> str:
    return f"0x{value:04x}" if isinstance(value, int) else str(value)


def _json_path(parts: Sequence[str | int]) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _walk(node: Any,
          parts: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Every (path, value) of the document, breadth-first, so shallower matches come first."""
    queue: deque[tuple[tuple[str | int, ...], Any]] = deque([(parts, node)])
    while queue:
        here, value = queue.popleft()
        yield here, value
        if isinstance(value, Mapping):
            queue.extend(((*here, str(k)), v) for k, v in value.items())
        elif isinstance(value, list):
            queue.extend(((*here, i), v) for i, v in enumerate(value))


def _known_hits(item: object) -> int:
    return sum(1 for key in item if key in RECORD_FIELDS) if isinstance(item, Mapping) else 0


def _is_record_list(value: object) -> bool:
    """A list of objects, most of which carry at least two known record fields."""
    if (not isinstance(value, list) or not value or
        not all(isinstance(item, Mapping) for item in value)):
        return False
    return sum(1 for item in value if _known_hits(item) >= 2) * 2 >= len(value)


@dataclass
class _Reader:
    path: str
    sha256: str
    warnings: list[str] = field(default_factory=list)

    def fail(self, parts: Sequence[str | int], message: str) -> VgfFormatError:
        where = _json_path(parts)
        return VgfFormatError(f"{self.path}: {where}: {message}", path=self.path, json_path=where)

    # -- whole document ----------------------------------------------------------------------------

    def read(self, doc: Any) -> VgfRun:
        if isinstance(doc, list) and _is_record_list(doc):
            self.warnings.append("the report is a bare list of records: no device, model or config "
                                 "block")
            doc = {"records": doc}
        if not isinstance(doc, Mapping):
            raise self.fail((),
                            "expected a JSON object (or a list of per-execute records), got "
                            f"{_type_name(doc)}")
        unknown = [key for key in doc if key not in TOP_LEVEL_KEYS]
        if unknown:
            self.warnings.append("unknown top-level keys (ignored): "
                                 + ", ".join(f"$.{k}" for k in unknown))
        config = self.config(doc)
        lists = self.find_records(doc)
        samples, handles = self.merge(lists, config)
        latency = self.latency(doc, lists, config, len(samples["execute_ns"]))
        if latency is not None:
            samples["latency_ns"] = latency
        for name, parts in DERIVED_METRICS.items():
            present = [samples[p] for p in parts if p in samples]
            if present:
                samples[name] = [float(sum(values)) for values in zip(*present, strict=True)]
        model, details = self.model(doc)
        return VgfRun(
            path=self.path,
            sha256=self.sha256,
            device=self.device(doc),
            model=model,
            model_details=details,
            config=config,
            buffers=self.buffers(doc),
            rejections=self.rejections(doc, lists),
            samples=samples,
            records_at=", ".join(_json_path(parts) for parts, _ in lists),
            delegate_handles=tuple(handles),
            warnings=tuple(self.warnings),
            started=str(doc["started"]) if isinstance(doc.get("started"), str) else None,
        )

    # -- records -----------------------------------------------------------------------------------

    def find_records(self, doc: Mapping[str, Any]) -> list[tuple[tuple[str | int, ...], list[Any]]]:
        """The default keys first; else every record-looking list anywhere (one per delegate,
        say)."""
        for key in ("records", "executions"):
            value = doc.get(key)
            if value is None:
                continue
            if not isinstance(value, list):
                raise self.fail((key,),
                                f"expected a list of per-execute records, got {_type_name(value)}")
            if not value:
                raise self.fail((key,),
                                "the list of per-execute records is empty: the runner measured "
                                "nothing")
            return [((key,), value)]
        found = [(parts, value) for parts, value in _walk(doc) if _is_record_list(value)]
        # a record list nested inside another record list's items is part of that list, not another
        # delegate
        found = [(p, v) for p, v in found if not any(p[: len(q)] == q and p != q for q, _ in found)]
        if not found:
            keys = ", ".join(str(k) for k in doc) or "none"
            raise self.fail(
                (),
                "no per-execute records found: expected a list of objects with fields such as "
                f"{', '.join(list(RECORD_FIELDS)[:6])}, ... (searched the whole document; "
                f"top-level keys: {keys})",
            )
        self.warnings.append(
            "records found by search at "
            + ", ".join(_json_path(p) for p, _ in found)
            + " (not at $.records, the documented default)"
        )
        lengths = {len(v) for _, v in found}
        if len(found) > 1 and len(lengths) > 1:
            biggest = max(found, key=lambda item: len(item[1]))
            self.warnings.append(
                "record lists of different lengths found; using the longest at "
                f"{_json_path(biggest[0])} and ignoring "
                + ", ".join(_json_path(p) for p, v in found if v is not biggest[1])
            )
            found = [biggest]
        return found

    def merge(
        self, lists: list[tuple[tuple[str | int, ...], list[Any]]], config: VgfConfig
    ) -> tuple[dict[str, list[float]], list[str]]:
        """Checked per-record values -> per measured inference sums (delegates of one inference
        added up)."""
        per_list: list[list[dict[str, float]]] = []
        handles: dict[str, None] = {}
        unknown: Counter[str] = Counter()
        missing: Counter[str] = Counter()
        total = 0
        for parts, items in lists:
            rows: list[tuple[int | None, bool, dict[str, float]]] = []
            for index, item in enumerate(items):
                here = (*parts, index)
                if not isinstance(item, Mapping):
                    raise self.fail(here,
                                    "expected a per-execute record (object), got "
                                    f"{_type_name(item)}")
                for key in item:
                    if (key not in RECORD_FIELDS and key not in LAYOUT_RECORD_FIELDS and
                        not _LATENCY_KEY.match(key)):
                        unknown[key] += 1
                for name in REQUIRED_RECORD_FIELDS:
                    if name not in item:
                        present = ", ".join(sorted(str(k) for k in item)) or "none"
                        raise self.fail(here,
                                        f"required field {name!r} is missing (present: {present})")
                for name in RECORD_FIELDS:
                    if name not in item:
                        missing[name] += 1
                values = {
                    name: self.value(item, name, here)
                    for name in RECORD_FIELDS
                    if name in item and name != "delegate_handle"
                }
                handle = item.get("delegate_handle")
                if handle is not None:
                    if isinstance(handle, bool) or not isinstance(handle, int | str):
                        raise self.fail(
                            (*here, "delegate_handle"),
                            f"expected an integer or text handle, got {handle!r} "
                            f"({_type_name(handle)})",
                        )
                    handles[_hex(handle) if isinstance(handle, int) else handle] = None
                iteration = item.get("iteration")
                if (iteration is not None and
                    (isinstance(iteration, bool) or not isinstance(iteration, int))):
                    raise self.fail((*here, "iteration"), f"expected an integer, got {iteration!r}")
                warm = item.get("warmup", False)
                if not isinstance(warm, bool):
                    raise self.fail((*here, "warmup"), f"expected true or false, got {warm!r}")
                rows.append((iteration, warm, values))
                total += 1
            per_list.append(self._measured(rows, config, parts))
        if unknown:
            self.warnings.append(
                "unknown record keys (ignored): "
                + ", ".join(f"{k} (in {n} of {total})" for k, n in sorted(unknown.items()))
            )
        absent = [name for name in RECORD_FIELDS if missing[name] and name != "delegate_handle"]
        if absent:
            self.warnings.append(
                "fields missing from records (not compared where absent): "
                + ", ".join(f"{name} (in {missing[name]} of {total})" for name in absent)
            )
        inferences = self._group(per_list)
        fields = [name for name in RECORD_FIELDS if name != "delegate_handle"]
        samples: dict[str, list[float]] = {}
        for name in fields:
            column = [row[name] for row in inferences if name in row]
            if column and len(column) == len(inferences):
                samples[name] = column
            elif column:
                self.warnings.append(
                    f"{name} is present in only {len(column)} of {len(inferences)} inferences; not "
                    "compared"
                )
        return samples, list(handles)

    def _measured(
        self, rows: list[tuple[int | None, bool, dict[str, float]]], config: VgfConfig,
        parts: Sequence[str | int]
    ) -> list[dict[str, float]]:
        """Drop warmup records: those marked ``warmup: true``, or the first ``config.warmup`` when
        the list holds exactly warmup + iterations records and none is marked. Then group by
        ``iteration`` when given."""
        if any(warm for _, warm, _ in rows):
            rows = [row for row in rows if not row[1]]
        elif config.warmup and config.iterations and len(rows) == config.warmup + config.iterations:
            self.warnings.append(
                f"{_json_path(parts)} holds warmup + measured records ({config.warmup} + "
                f"{config.iterations}); the first {config.warmup} were dropped as warmup"
            )
            rows = rows[config.warmup :]
        if not rows:
            raise self.fail(parts, "every record is marked warmup: no measured execution")
        if all(iteration is not None for iteration, _, _ in rows):
            grouped: dict[int, dict[str, float]] = {}
            for iteration, _, values in rows:
                assert iteration is not None
                into = grouped.setdefault(iteration, {})
                for name, value in values.items():
                    into[name] = _combine(name, into.get(name), value)
            return [grouped[i] for i in sorted(grouped)]
        return [values for _, _, values in rows]

    def _group(self, per_list: list[list[dict[str, float]]]) -> list[dict[str, float]]:
        """Several lists (one per delegate) of equal length: inference i is the sum of every list's
        item i."""
        if len(per_list) == 1:
            return per_list[0]
        lengths = {len(rows) for rows in per_list}
        if len(lengths) != 1:
            longest = max(per_list, key=len)
            self.warnings.append("delegate record lists differ in measured length; using the "
                                 "longest only")
            return longest
        merged: list[dict[str, float]] = []
        for items in zip(*per_list, strict=True):
            into: dict[str, float] = {}
            for values in items:
                for name, value in values.items():
                    into[name] = _combine(name, into.get(name), value)
            merged.append(into)
        return merged

    def value(self, item: Mapping[str, Any], name: str, here: tuple[str | int, ...]) -> float:
        """One checked field value as a float (success: 1.0/0.0). Wrong types are errors naming the
        path."""
        kind = RECORD_FIELDS[name]
        raw = item[name]
        at = (*here, name)
        if kind == "bool":
            if isinstance(raw, bool):
                return 1.0 if raw else 0.0
            if isinstance(raw, int) and raw in (0, 1):
                return float(raw)
            if isinstance(raw, str) and raw.lower() in ("true", "false"):
                return 1.0 if raw.lower() == "true" else 0.0
            raise self.fail(at, f"expected true or false, got {raw!r} ({_type_name(raw)})")
        return _number(raw, lambda message: self.fail(at, message))

    # -- the rest ----------------------------------------------------------------------------------

    def latency(
        self,
        doc: Mapping[str, Any],
        lists: list[tuple[tuple[str | int, ...], list[Any]]],
        config: VgfConfig,
        measured: int,
    ) -> list[float] | None:
        """Per-inference latency in ns: ``latency_ns`` (or ``latency_us``/``_ms``) in each record,
        else a list of numbers under a latency-looking key anywhere; warmup entries dropped when the
        list is longer."""
        if len(lists) == 1:
            parts, items = lists[0]
            for item in items:
                keys = [k for k in item if isinstance(k, str) and _LATENCY_KEY.match(k) and
                        k != "iteration"]
                if keys:
                    break
            else:
                keys = []
            if keys:
                key = keys[0]
                unit_match = _LATENCY_KEY.match(key)
                assert unit_match is not None  # keys were chosen by this pattern
                scale = _UNIT_SCALE[unit_match.group(1)]
                measured_items = [it for it in items if not it.get("warmup", False)]
                warm = config.warmup or 0
                if len(measured_items) == len(items) and warm and len(items) == measured + warm:
                    measured_items = items[warm:]
                if len(measured_items) == measured and all(key in it for it in measured_items):
                    return [
                        _number(it[key], lambda m, i=i: self.fail((*parts, i, key), m)) * scale
                        for i, it in enumerate(measured_items)
                    ]
        for parts, value in _walk(doc):
            if not parts or not isinstance(parts[-1], str):
                continue
            match = _LATENCY_KEY.match(parts[-1])
            if not match or not isinstance(value, list) or not value:
                continue
            if not all(isinstance(v, int | float | str) and not isinstance(v, bool) for v in value):
                continue
            numbers = [_number(v, lambda m, i=i, p=parts: self.fail((*p, i), m))
                       for i, v in enumerate(value)]
            if match.group(1) is None:
                self.warnings.append(f"{_json_path(parts)} has no unit suffix; read as nanoseconds")
            if len(numbers) == measured + (config.warmup or 0) and len(numbers) != measured:
                numbers = numbers[config.warmup or 0 :]
            if len(numbers) != measured:
                self.warnings.append(
                    f"{_json_path(parts)} holds {len(numbers)} latencies for {measured} measured "
                    "records; latency not compared"
                )
                return None
            return [n * _UNIT_SCALE[match.group(1)] for n in numbers]
        self.warnings.append("no per-inference latency in the report (latency_ns); latency not "
                             "compared")
        return None

    def config(self, doc: Mapping[str, Any]) -> VgfConfig:
        raw = doc.get("config")
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise self.fail(("config",), f"expected an object, got {_type_name(raw)}")
        unknown = [k for k in raw if k not in CONFIG_KEYS]
        if unknown:
            self.warnings.append("unknown config keys (ignored): "
                                 + ", ".join(f"$.config.{k}" for k in unknown))
        zero = raw.get("zero_copy")
        env = raw.get("env")
        if zero is None and isinstance(env, Mapping):
            zero = env.get("ET_VGF_ZERO_COPY")
        if zero is not None:
            if isinstance(zero, bool):
                pass
            elif zero in (0, 1, "0",
                          "1") or (isinstance(zero, str) and zero.lower() in ("true", "false")):
                zero = str(zero).lower() in ("1", "true")
            else:
                raise self.fail(("config", "zero_copy"),
                                f"expected true or false (or 0/1), got {zero!r}")
        counts: dict[str, int | None] = {}
        for key in ("warmup", "iterations"):
            value = raw.get(key)
            if (value is not None and
                (isinstance(value, bool) or not isinstance(value, int) or value < 0)):
                raise self.fail(("config", key), f"expected a whole number >= 0, got {value!r}")
            counts[key] = value
        return VgfConfig(zero, counts["warmup"], counts["iterations"])

    def device(self, doc: Mapping[str, Any]) -> DeviceInfo:
        parts: tuple[str | int, ...] = ("device",)
        raw = doc.get("device")
        if raw is None:
            hit = next(
                ((p, v) for p, v in _walk(doc)
                 if isinstance(v, Mapping) and sum(1 for k in v if k in DEVICE_FIELDS) >= 2),
                None,
            )  # fmt: skip
            if hit is None:
                self.warnings.append("no device-info block (vendor_id, device_name, ...): device "
                                     "unknown")
                return DeviceInfo()
            parts, raw = hit
            self.warnings.append(f"device info found at {_json_path(parts)} (not at $.device)")
        if not isinstance(raw, Mapping):
            raise self.fail(parts,
                            f"expected an object with {', '.join(DEVICE_FIELDS)}, got "
                            f"{_type_name(raw)}")
        unknown = [k for k in raw if k not in DEVICE_FIELDS]
        if unknown:
            self.warnings.append(
                "unknown device keys (ignored): "
                + ", ".join(f"{_json_path(parts)}.{k}" for k in unknown)
            )
        values: dict[str, Any] = {}
        for name in DEVICE_FIELDS:
            value = raw.get(name)
            at = (*parts, name)
            if value is None:
                values[name] = None
            elif name in ("vendor_id", "device_id"):
                if isinstance(value, bool) or not isinstance(value, int | str):
                    raise self.fail(at,
                                    f"expected an integer (or hex text), got {value!r} "
                                    f"({_type_name(value)})")
                values[name] = value
            elif name in ("api_version", "driver_version"):
                if isinstance(value, bool) or not isinstance(value, int | str):
                    raise self.fail(at,
                                    f"expected a version (text or packed integer), got {value!r}")
                values[name] = _vulkan_version(value) if name == "api_version" else str(value)
            else:
                if not isinstance(value, str):
                    raise self.fail(at, f"expected text, got {value!r} ({_type_name(value)})")
                values[name] = value
        return DeviceInfo(**values)

    def model(self, doc: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
        raw = doc.get("model")
        if raw is None:
            return None, {}
        if isinstance(raw, str):
            return Path(raw).stem or raw, {"path": raw}
        if not isinstance(raw, Mapping):
            raise self.fail(("model",), f"expected an object or a path, got {_type_name(raw)}")
        name = raw.get("name") or (Path(str(raw["path"])).stem if raw.get("path") else None)
        return (str(name) if name else None), dict(raw)

    def buffers(self, doc: Mapping[str, Any]) -> tuple[BufferInfo, ...]:
        raw = doc.get("buffers")
        if raw is None:
            return ()
        if not isinstance(raw, list):
            raise self.fail(("buffers",),
                            f"expected a list of buffer objects, got {_type_name(raw)}")
        out = []
        for i, item in enumerate(raw):
            if not isinstance(item, Mapping):
                raise self.fail(("buffers", i), f"expected an object, got {_type_name(item)}")
            size = next((item[k] for k in ("nbytes", "bytes", "size") if k in item), None)
            if size is not None:
                size = int(_number(size, lambda m, i=i: self.fail(("buffers", i, "nbytes"), m)))
            zero = item.get("zero_copy")
            out.append(BufferInfo(
                str(item.get("name", f"buffer{i}")),
                str(item["direction"]) if item.get("direction") is not None else None,
                size,
                bool(zero) if zero is not None else None,
            ))  # fmt: skip
        return tuple(out)

    def rejections(
        self, doc: Mapping[str, Any], lists: list[tuple[tuple[str | int, ...], list[Any]]]
    ) -> dict[str, int]:
        """Reasons from ``$.rejections`` (objects with ``reason`` and an optional ``count``, or
        plain text), or from ``rejections`` lists inside records when the top level has none."""
        reasons: Counter[str] = Counter()

        def take(value: Any, parts: tuple[str | int, ...]) -> None:
            if not isinstance(value, list):
                raise self.fail(parts, f"expected a list of rejections, got {_type_name(value)}")
            for i, item in enumerate(value):
                if isinstance(item, str):
                    reasons[item] += 1
                elif isinstance(item, Mapping):
                    reason = str(item.get("reason") or item.get("message") or "no reason given")
                    buffer = item.get("buffer") or item.get("name")
                    text = f"{buffer}: {reason}" if buffer else reason
                    count = item.get("count", 1)
                    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                        raise self.fail((*parts, i, "count"),
                                        f"expected a whole number >= 0, got {count!r}")
                    reasons[text] += count
                else:
                    raise self.fail((*parts, i),
                                    f"expected text or an object with a reason, got {item!r}")

        if "rejections" in doc:
            take(doc["rejections"], ("rejections",))
        else:
            for parts, items in lists:
                for index, item in enumerate(items):
                    if isinstance(item, Mapping) and "rejections" in item:
                        take(item["rejections"], (*parts, index, "rejections"))
        return dict(reasons)


def _combine(name: str, old: float | None, new: float) -> float:
    """Delegates of one inference: costs add up, success only if every delegate succeeded."""
    if old is None:
        return new
    return min(old, new) if RECORD_FIELDS.get(name) == "bool" else old + new


def _number(raw: Any, fail: Any) -> float:
    """A finite number >= 0; decimal text is accepted (64-bit counters are sometimes written as
    strings)."""
    value: float
    if isinstance(raw, bool) or raw is None:
        raise fail(f"expected a number >= 0, got {raw!r} ({_type_name(raw)})")
    if isinstance(raw, int | float):
        value = float(raw)
    elif isinstance(raw, str):
        try:
            value = float(raw.strip())
        except ValueError:
            raise fail(f"expected a number >= 0, got {raw!r} (str)") from None
    else:
        raise fail(f"expected a number >= 0, got {_type_name(raw)}")
    if not math.isfinite(value) or value < 0:
        raise fail(f"expected a finite number >= 0, got {raw!r}")
    return value


def _vulkan_version(value: int | str) -> str:
    """VK_MAKE_API_VERSION packs variant:3, major:7, minor:10, patch:12 bits; text is kept as it
    is."""
    if isinstance(value, str):
        return value
    return f"{(value >> 22) & 0x7F}.{(value >> 12) & 0x3FF}.{value & 0xFFF}"


# --- conversion -----------------------------------------------------------------------------------


def to_record(
    run: VgfRun,
    *,
    scenario: str,
    build: str,
    model: str | None = None,
    unit_id: str | None = None,
    repetition: int = 0,
    instance: str = "vgf",
    started: str | None = None,
) -> Record:
    """One ``Record`` for one report: samples per metric (``VGF_METRIC_UNITS``), identity, and
    device/config facts in ``extra``. The key is the report's sha256, so the same file always gives
    the same record.

    Status is ``failed`` (class ``test``) when no measured inference succeeded: the numbers of a run
    whose every execute failed describe an error path, not the workload.
    """
    name = model or run.model or Path(run.path).stem
    extra: dict[str, str | float | int | bool | None] = {
        "vgf_report": run.path,
        "vgf_records_at": run.records_at,
        "zero_copy": run.config.zero_copy,
        "warmup": run.config.warmup,
        "iterations": run.config.iterations,
        "delegate_handles": ",".join(run.delegate_handles) or None,
        "rejections": "; ".join(f"{reason} x{count}" for reason, count in run.rejections.items()) or
        None, "warnings": len(run.warnings),
    }
    for key, value in run.device.as_dict().items():
        extra[f"device.{key}"] = value
    ok = run.inferences > 0 and run.failures < run.inferences
    return Record(
        scenario=scenario,
        key=run.sha256,
        unit_id=unit_id or f"r{repetition}-{build}-{name}",
        instance=instance,
        build=build,
        model=name,
        repetition=repetition,
        status="ok" if ok else "failed",
        failure_class=None if ok else "test",
        failure=None if ok
        else f"every one of {run.inferences} measured VGF executions failed (success: false)",
        samples={metric: list(values) for metric, values in run.samples.items()},
        metric_units={metric: VGF_METRIC_UNITS.get(metric, "") for metric in run.samples},
        started=started or run.started or "",
        extra=extra,
    )


# --- sets of reports ------------------------------------------------------------------------------


@dataclass(frozen=True)
class VgfSet:
    """Reports ready for comparison: one Record per report, and the parsed reports by build."""

    records: tuple[Record, ...]
    runs: dict[str, list[VgfRun]]
    baseline: str
    candidate: str
    warnings: tuple[str, ...] = ()
    """Reports that were left out, and why (e.g. kept from an older run whose unit is no longer
    stored)."""


def load_pair(
    copy: Sequence[Path | str],
    zero_copy: Sequence[Path | str],
    *,
    baseline: str = "copy",
    candidate: str = "zero_copy",
    scenario: str = "vgf",
    model: str | None = None,
) -> VgfSet:
    """Reports given on the command line: ``copy`` files are the baseline build, ``zero_copy`` the
    candidate; several files per side are repetitions. Models come from each report
    (``model.name``), else ``model``, else one shared name, so a copy run and a zero-copy run of the
    same model always meet in one comparison."""
    records: list[Record] = []
    runs: dict[str, list[VgfRun]] = {baseline: [], candidate: []}
    for build, paths in ((baseline, copy), (candidate, zero_copy)):
        for repetition, path in enumerate(paths):
            run = read_report(path)
            runs[build].append(run)
            name = model or run.model or "model"
            records.append(to_record(run, scenario=scenario, build=build, model=name,
                                     repetition=repetition))
    return VgfSet(tuple(records), runs, baseline, candidate)


def find_reports(folder: Path | str) -> list[Path]:
    """Candidate VGF report files under a results folder: every ``*.json`` except the harness's own
    files, sorted, so the same folder always gives the same order."""
    root = Path(folder)
    return sorted(p
                  for p in root.rglob("*.json") if p.is_file() and p.name not in HARNESS_JSON_FILES)


def load_results(
    folder: Path | str,
    *,
    baseline: str | None = None,
    candidate: str | None = None,
    records: Sequence[Record] = (),
) -> VgfSet:
    """The VGF reports a ``run`` kept in a results folder, matched to their units.

    A report belongs to the unit whose id (``r0-zero_copy-resnet8``) appears in its path; the unit's
    stored ``Record`` (``records``, from ``store.ResultStore.records()``; the last one per unit
    counts) gives build, model and repetition. Reports of units that are not stored, or whose last
    attempt failed, are left out with a warning (``VgfSet.warnings``): they are leftovers of an
    earlier run. A report that names no known unit is placed by its own ``config.zero_copy``
    (``copy`` / ``zero_copy``). Builds default to the one whose reports say ``zero_copy: false``
    (baseline) and ``true`` (candidate).
    """
    root = Path(folder)
    by_unit = {r.unit_id: r for r in records}
    units_longest_first = sorted(by_unit, key=len, reverse=True)
    found: list[Record] = []
    runs: dict[str, list[VgfRun]] = {}
    modes: dict[str, set[bool | None]] = {}
    counters: Counter[tuple[str, str]] = Counter()
    skipped: list[str] = []
    for path in find_reports(root):
        rel = path.relative_to(root).as_posix()
        unit = next((u for u in units_longest_first if u in rel), None)
        if unit is None and by_unit and rel.startswith("fetched/"):
            skipped.append(f"{rel}: belongs to no stored unit (left from an earlier run?); not "
                           "compared")
            continue
        if unit is not None and by_unit[unit].status != "ok":
            # the harness fetches only after a unit succeeded: this file is older than the unit's
            # last attempt
            skipped.append(f"{rel}: unit {unit} failed in this run; its report is from an earlier "
                           "run, not compared")
            continue
        try:
            run = read_report(path)
        except VgfFormatError as exc:
            # another JSON a scenario fetched is not ours to judge; a broken VGF report is worth
            # saying
            if "vgf" in path.name.lower():
                skipped.append(f"{exc}; not compared")
            continue
        if unit is not None:
            stored = by_unit[unit]
            build, name, repetition, instance = (stored.build, stored.model, stored.repetition,
                                                 stored.instance)
            started = stored.started
        else:
            zero_copy = run.config.zero_copy
            build = "unknown" if zero_copy is None else "zero_copy" if zero_copy else "copy"
            name = run.model or "model"
            repetition = counters[(build, name)]
            instance, started = "vgf", None
            counters[(build, name)] += 1
        runs.setdefault(build, []).append(run)
        modes.setdefault(build, set()).add(run.config.zero_copy)
        found.append(
            to_record(run, scenario=root.name, build=build, model=name, repetition=repetition,
                      unit_id=unit, instance=instance, started=started)
        )  # fmt: skip
    if not found and skipped:
        raise VgfFormatError(f"{root}: no readable VGF report: " + "; ".join(skipped),
                             path=str(root))
    if not found:
        raise NoVgfReports(
            f"{root}: no VGF report (*.json) found; did the scenario fetch them (run.fetch) and "
            "the run finish?", path=str(root),
        )
    if baseline is None:
        baseline = next((b for b, m in modes.items() if m == {False}), None) or "copy"
    if candidate is None:
        candidate = (next((b for b, m in modes.items() if m == {True} and b != baseline), None) or
                     "zero_copy")
    for name in (baseline, candidate):
        if name not in runs:
            raise VgfFormatError(
                f"{root}: no VGF report of build {name!r} (builds found: "
                f"{', '.join(sorted(runs))}); pass --baseline/--candidate",
                path=str(root),
            )
    return VgfSet(tuple(found), runs, baseline, candidate, tuple(skipped))
