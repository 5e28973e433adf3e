"""Measured NPU cycles next to the Ethos-U compiler's (Vela's) estimate, per model and build."""

from __future__ import annotations

import csv
import importlib.metadata
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from fvp_harness.report import format as fmt
from fvp_harness.report.stats.result import AnalysisResult
from fvp_harness.scenario.vela import VelaEstimates

__all__ = [
    "MEASURED_METRICS",
    "VelaCsvError",
    "VelaEstimateFile",
    "VelaInputs",
    "VelaRow",
    "VelaSpec",
    "load_vela_inputs",
    "npu_cycles_source",
    "read_vela_csv",
    "vela_rows",
    "vela_section",
]

MEASURED_METRICS = ("npu_cycles", "bm_npu_cycles")
"""The per-inference NPU cycle counters a platform reports (Linux delegate, bare-metal), first one
present wins."""

MAX_CSV_BYTES = 16 * 1024 * 1024
"""Vela's reports of real networks are kilobytes; a bigger file is not one of them."""


class VelaCsvError(ValueError):
    """A file that is not a readable Vela summary or per-layer CSV; the message starts with
    ``file:line``."""


@dataclass(frozen=True)
class VelaEstimateFile:
    """One Vela report, read: the estimated NPU cycles of one inference and what it was estimated
    for."""

    path: str
    kind: Literal["summary", "per-layer"]
    cycles: float
    accelerator: str | None = None
    system_config: str | None = None
    memory_mode: str | None = None

    @property
    def configuration(self) -> str:
        """``Ethos_U85_256, Ethos_U85_SYS_DRAM_Mid, Sram_Only`` (what the summary names), or
        ``per-layer CSV``."""
        parts = [p for p in (self.accelerator, self.system_config, self.memory_mode) if p]
        return ", ".join(parts) if parts else f"{self.kind} CSV"


def _float(value: str | None, where: str, column: str) -> float:
    try:
        number = float(value if value is not None else "")
    except ValueError:
        raise VelaCsvError(f"{where}: {column}: {value!r} is not a number") from None
    if not math.isfinite(number) or number < 0:
        raise VelaCsvError(f"{where}: {column}: {value!r} is not a cycle count")
    return number


def read_vela_csv(path: Path | str) -> VelaEstimateFile:
    """Read a Vela summary or per-layer CSV (see the module docstring); VelaCsvError says what is
    wrong, where."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_CSV_BYTES:
            raise VelaCsvError(f"{path}: {path.stat().st_size} bytes is too big for a Vela report")
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise VelaCsvError(f"{path}: not found (run Vela with --verbose-performance, or the "
                           "model's build)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise VelaCsvError(f"{path}: cannot be read: {exc}") from None
    try:
        rows = list(csv.reader(text.splitlines()))
    except csv.Error as exc:
        raise VelaCsvError(f"{path}: not CSV: {exc}") from None
    if not rows or not rows[0]:
        raise VelaCsvError(f"{path}:1: empty; expected Vela's summary or per-layer CSV")
    header = [name.strip() for name in rows[0]]
    records = [(line, dict(zip(header, row, strict=False)))
               for line, row in enumerate(rows[1:], start=2) if row]
    if "cycles_total" in header:
        if len(records) != 1:
            raise VelaCsvError(f"{path}: a Vela summary CSV has one row of values; found "
                               f"{len(records)}")
        line, row = records[0]
        cycles = _float(row.get("cycles_total"), f"{path}:{line}", "cycles_total")
        return VelaEstimateFile(str(path), "summary", cycles,
                                row.get("accelerator_configuration") or None,
                                row.get("system_config") or None, row.get("memory_mode") or None)
    if "Op Cycles" in header:
        if not records:
            raise VelaCsvError(f"{path}:2: a Vela per-layer CSV without layers")
        total = sum(
            _float(row.get("Op Cycles"), f"{path}:{line}", "Op Cycles")
            for line, row in records
            if row.get("Target", "NPU").strip() == "NPU"
        )
        return VelaEstimateFile(str(path), "per-layer", total)
    raise VelaCsvError(f"{path}:1: neither a Vela summary CSV (no cycles_total column) nor a "
                       "per-layer CSV (no 'Op Cycles' column)")


@dataclass(frozen=True)
class VelaSpec:
    """A model's ``vela`` entry with absolute paths (plain data: ``report.json`` shows it under
    ``context.vela``)."""

    file: str | None
    builds: Mapping[str, str]
    band: tuple[float, float]

    def file_for(self, build: str) -> str | None:
        return self.builds.get(build, self.file)


@dataclass(frozen=True)
class VelaInputs:
    """What ``load_vela_inputs`` read: each model's spec, and each named file's estimate or its
    problem."""

    specs: Mapping[str, VelaSpec]
    files: Mapping[str, VelaEstimateFile | str] = field(default_factory=dict)
    """Absolute path -> the estimate, or the problem text."""
    simulated: bool = False
    """The run was on the embedded simulator (whose counter is itself Vela's estimate: see
    ``vela_section``)."""

    def estimate_for(self, model: str, build: str) -> tuple[VelaEstimateFile | None, str | None]:
        """(estimate, problem) of one model and build; both None when the model names no file for
        that build."""
        spec = self.specs.get(model)
        name = spec.file_for(build) if spec is not None else None
        if name is None:
            return None, None
        found = self.files.get(name)
        if isinstance(found, VelaEstimateFile):
            return found, None
        return None, found or f"{name}: not read"


def load_vela_inputs(manifest: Mapping[str, Any] | None) -> VelaInputs | None:
    """Read every Vela file the manifest's resolved scenario names (``models.<name>.vela``); None
    when none is named. The only I/O of this module: a missing or malformed file becomes a problem
    line, never an exception."""
    if not manifest:
        return None
    scenario = manifest.get("scenario")
    resolved = scenario.get("resolved") if isinstance(scenario, Mapping) else None
    models = resolved.get("models") if isinstance(resolved, Mapping) else None
    if not isinstance(models, Mapping):
        return None
    scenario_file = scenario.get("file") if isinstance(scenario, Mapping) else None
    base = Path(str(scenario_file)).parent if scenario_file else Path.cwd()
    specs: dict[str, VelaSpec] = {}
    files: dict[str, VelaEstimateFile | str] = {}
    for name, model in models.items():
        raw = model.get("vela") if isinstance(model, Mapping) else None
        if raw is None:
            continue
        try:
            spec = VelaEstimates.model_validate(raw)
        except ValidationError as exc:
            files[f"models.{name}.vela"] = f"models.{name}.vela: {exc.errors()[0]['msg']}"
            continue
        absolute = {build: str(base / path) for build, path in spec.builds.items()}
        file = str(base / spec.file) if spec.file else None
        specs[str(name)] = VelaSpec(file, absolute, spec.band)
        for path in sorted({p for p in (file, *absolute.values()) if p}):
            if path not in files:
                try:
                    files[path] = read_vela_csv(path)
                except VelaCsvError as exc:
                    files[path] = str(exc)
    if not specs and not files:
        return None
    fvp = manifest.get("fvp")
    simulated = isinstance(fvp, Mapping) and fvp.get("binary") == "sim"
    return VelaInputs(specs, files, simulated)


@dataclass(frozen=True)
class VelaRow:
    """One model and build of the section."""

    model: str
    build: str
    metric: str | None
    measured: float | None
    estimate: VelaEstimateFile | None
    band: tuple[float, float]
    problem: str | None = None

    @property
    def ratio(self) -> float | None:
        if self.measured is None or self.estimate is None or self.estimate.cycles <= 0:
            return None
        return self.measured / self.estimate.cycles

    @property
    def outside(self) -> bool:
        """The ratio leaves the band (a missing ratio is not flagged: ``problem`` or the measured
        cell says why)."""
        ratio = self.ratio
        return ratio is not None and not self.band[0] <= ratio <= self.band[1]


def _measured(result: AnalysisResult) -> dict[tuple[str, str], tuple[str, float]]:
    """(model, build) -> (metric, median) of the first NPU cycle counter present, in the summary's
    order."""
    found: dict[tuple[str, str], tuple[str, float]] = {}
    summary = result.summary
    if not len(summary):
        return found
    for metric in MEASURED_METRICS:
        for row in summary[summary["metric"] == metric].itertuples(index=False):
            found.setdefault((str(row.model), str(row.build)), (metric, float(row.median)))
    return found


def vela_rows(result: AnalysisResult, inputs: VelaInputs) -> list[VelaRow]:
    """Every model with a spec x every build that ran it or has an estimate of its own; builds in
    the order they first ran (the scenario's order, as the rest of the report)."""
    measured = _measured(result)
    ran = set(measured) | (
        {
            (str(m), str(b))
            for m, b in zip(result.summary["model"], result.summary["build"], strict=True)
        }
        if len(result.summary)
        else set()
    )
    order = [str(b) for b in dict.fromkeys(result.summary["build"])] if len(result.summary) else []
    rows = []
    for model, spec in inputs.specs.items():
        builds = [b for b in order if (model, b) in ran]
        builds += [b for b in spec.builds if b not in builds]
        for build in builds:
            estimate, problem = inputs.estimate_for(model, build)
            if estimate is None and problem is None:
                continue
            metric, value = measured.get((model, build), (None, None))
            rows.append(VelaRow(model, build, metric, value, estimate, spec.band, problem))
    return rows


def _flag(row: VelaRow) -> str:
    if row.problem is not None:
        return "estimate unreadable"
    if row.measured is None:
        return "no NPU cycles measured"
    low, high = row.band
    return f"⚠ outside {low:g}–{high:g}" if row.outside else "✓ within"


def vela_section(result: AnalysisResult, inputs: VelaInputs | None) -> list[str]:
    """The report's ``NPU cycles: measured vs Vela`` section (markdown lines); empty without Vela
    inputs."""
    if inputs is None:
        return []
    rows = vela_rows(result, inputs)
    lines = ["## NPU cycles: measured vs Vela", ""]
    lines += [
        "Measured: the median per-inference counter (`npu_cycles`, or `bm_npu_cycles` on "
        "bare-metal platforms). Estimate: Vela's `cycles_total` (summary CSV) or the sum of its "
        "per-layer `Op Cycles`. A ratio measured / estimate outside the model's band is flagged.",
        "",
    ]
    if inputs.simulated:
        lines += [
            "On the embedded simulator the counter *is* Vela's estimate for the model file when "
            "`fvp-harness sim model` ran Vela (else its analytic cycle model; `fvp-harness sim "
            "info FILE` says which): a ratio of 1 checks the wiring, not the hardware. See "
            "docs/vela.md for a real FVP.", "",
        ]
    if rows:
        table = [
            [
                row.model,
                row.build,
                fmt.number(row.measured),
                fmt.number(row.estimate.cycles) if row.estimate else fmt.MISSING,
                f"{row.ratio:.3f}" if row.ratio is not None else fmt.MISSING,
                _flag(row),
                row.estimate.configuration if row.estimate else fmt.MISSING,
            ]
            for row in rows
        ]

        headers = ["Model", "Build", "Measured NPU cycles", "Vela estimate", "Measured / Vela",
                   "Band check", "Vela config"]
        lines += [fmt.markdown_table(table, headers,
                                     ["left", "left", "right", "right", "right", "left", "left"]),
                  ""]
    elif inputs.specs:
        lines += [f"No unit of {', '.join(sorted(inputs.specs))} ran, so nothing is compared.", ""]
    problems = sorted({text for text in inputs.files.values() if isinstance(text, str)})
    if problems:
        lines += [*(f"- {fmt.markdown_cell(text)}" for text in problems), ""]
    flagged = [row for row in rows if row.outside]
    if flagged:
        shown = ", ".join(f"{row.model} ({row.build}) {row.ratio:.3f}"
                          for row in flagged if row.ratio is not None)
        lines += [f"**{len(flagged)} of {len(rows)} ratios outside their band:** {shown}.", ""]
    return lines


def npu_cycles_source(simulated: bool) -> tuple[Literal["ok", "warn", "skip"], str, str]:
    """``fvp-harness doctor``'s line on where NPU cycle estimates come from: (status, detail,
    fix)."""
    try:
        version: str | None = importlib.metadata.version("ethos-u-vela")
    except importlib.metadata.PackageNotFoundError:
        version = None
    if simulated:
        if version is not None:
            return "ok", (f"Vela {version}: `sim model` stores its estimates; the simulated "
                          "counter follows them"), ""
        return ("warn",
                "ethos-u-vela is not installed: `sim model` falls back to the simulator's analytic "
                "cycle model (NPU cycles differ from Vela's)",
                "pip install ethos-u-vela (a dependency of fvp-harness)")
    if version is not None:
        return "ok", (f"Vela {version} installed (models.<name>.vela compares measured cycles with "
                      "its CSVs)"), ""
    return "skip", ("ethos-u-vela not installed (only needed to make estimates; reading Vela's "
                    "CSVs needs nothing)"), ""
