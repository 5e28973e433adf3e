"""Run the real Ethos-U compiler (Vela) on a compiled model and keep its per-layer cycle estimates.

Why Vela and not only ``npu/cycles.py``: the analytic cycle model was fitted to two published Vela
figures and extrapolates everywhere else (its MAC scaling was off: DS-CNN 128 -> 2048 MACs x7 where
Vela says x4.5). Vela is a pip package (``ethos-u-vela``) with a compiler and a performance
estimator for every Ethos-U55/U85 configuration, so the simulator asks it, for the exact network it
runs (``networks/tflite_export.py``), and stores the answer in the model file
(``networks/estimate.py``); ``cycles.model_cycles`` returns it. ``cycles.py``'s model stays as the
fallback when Vela is not installed.

How: Vela's own command line entry point (``ethosu.vela.vela.main``), in this process (importing
Vela takes about 0.3 s, compiling one of the four networks 10-130 ms), with the flags ExecuTorch's
``EthosUCompileSpec`` passes (backends/arm/ethosu/compile_spec.py at pytorch/executorch cff6f4dd32):
``--accelerator-config <target> --config Arm/vela.ini --output-format=raw --system-config S
--memory-mode M``, where S and M default per family as ExecuTorch's do:

* ethos-u55: ``Ethos_U55_High_End_Embedded``, ``Shared_Sram`` (Corstone-300);
* ethos-u85: ``Ethos_U85_SYS_DRAM_Mid``, ``Sram_Only`` (Corstone-320, Corstone-1000 A320);

plus ``--verbose-performance`` for the per-layer CSV. Vela's printed report is captured (``sim
model`` prints one line of its own); its files go to a temporary folder unless the caller keeps them
(``sim model --vela-dir``). Estimates are cached per process by (TFLite sha256, accelerator, system
config, memory mode), so tests that compile the same model twice run Vela once.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import hashlib
import importlib.metadata
import io
import tempfile
from pathlib import Path

from fvp_harness.sim.networks.accelerator import Accelerator, Family
from fvp_harness.sim.networks.estimate import VelaEstimate, VelaLayer
from fvp_harness.sim.networks.modelfile import CompiledModel
from fvp_harness.sim.networks.tflite_export import export_tflite

__all__ = [
    "DEFAULT_SYSTEM",
    "VELA_CONFIG",
    "VelaFailed",
    "estimate_model",
    "run_vela",
    "vela_version",
]

VELA_CONFIG = "Arm/vela.ini"
"""The configuration file Vela ships and ExecuTorch names (``config_ini`` default)."""

DEFAULT_SYSTEM: dict[Family, tuple[str, str]] = {
    "ethos-u55": ("Ethos_U55_High_End_Embedded", "Shared_Sram"),
    "ethos-u85": ("Ethos_U85_SYS_DRAM_Mid", "Sram_Only"),
}
"""Family -> (system config, memory mode): ExecuTorch's EthosUCompileSpec defaults."""

VELA_DISTRIBUTION = "ethos-u-vela"

_CACHE: dict[tuple[str, str, str, str], VelaEstimate] = {}


class VelaFailed(RuntimeError):
    """Vela is missing, refused the network, or its report could not be read (the message says
    which)."""


def vela_version() -> str | None:
    """The installed ``ethos-u-vela`` version, or None when it is not installed."""
    try:
        return importlib.metadata.version(VELA_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def _number(row: dict[str, str], column: str, where: str) -> float:
    try:
        return float(row[column])
    except KeyError:
        raise VelaFailed(f"{where}: no {column!r} column (is this Vela 5.x output?)") from None
    except ValueError:
        raise VelaFailed(f"{where}: {column} {row[column]!r} is not a number") from None


def _read_csv(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="") as handle:
            return list(csv.DictReader(handle))
    except OSError as exc:
        raise VelaFailed(f"Vela wrote no {path.name}: {exc}") from None


def _parse(out_dir: Path, stem: str,
           system_config: str) -> tuple[float, float, float, list[VelaLayer]]:
    """(cycles_total, cycles_npu, core_clock, per-layer rows) from the two CSVs Vela wrote."""
    summary_path = out_dir / f"{stem}_summary_{system_config}.csv"
    summary = _read_csv(summary_path)
    if len(summary) != 1:
        raise VelaFailed(f"{summary_path.name}: expected one row, found {len(summary)}")
    total = _number(summary[0], "cycles_total", f"{summary_path.name}:2")
    npu = _number(summary[0], "cycles_npu", f"{summary_path.name}:2")
    clock = _number(summary[0], "core_clock", f"{summary_path.name}:2")
    layers_path = out_dir / f"{stem}_per-layer.csv"
    layers = []
    off_npu = []
    for line, row in enumerate(_read_csv(layers_path), start=2):
        where = f"{layers_path.name}:{line}"
        if row.get("Target", "NPU") != "NPU":
            off_npu.append(f"{row.get('Name')} ({row.get('Original Operator')})")
        layers.append(
            VelaLayer(
                row.get("Name", ""),
                row.get("Original Operator", ""),
                row.get("NNG Operator", ""),
                round(_number(row, "Op Cycles", where)),
                round(_number(row, "MAC Count", where)),
            )
        )
    if off_npu:
        raise VelaFailed(
            f"Vela placed {', '.join(off_npu)} on the CPU: the simulator runs fully delegated "
            "programs only"
        )
    return total, npu, clock, layers


def run_vela(
    tflite: bytes,
    accelerator: Accelerator,
    system_config: str | None = None,
    memory_mode: str | None = None,
    keep_dir: Path | None = None,
    stem: str = "model",
) -> VelaEstimate:
    """Compile ``tflite`` with Vela for ``accelerator`` and return its estimate (VelaFailed says why
    not).

    ``keep_dir``: write Vela's outputs there (``<stem>_summary_<system config>.csv``,
    ``<stem>_per-layer.csv``, ``<stem>_vela.npz``) instead of a temporary folder; that always runs
    Vela (the files must exist).
    """
    version = vela_version()
    if version is None:
        raise VelaFailed(f"Vela is not installed (pip install {VELA_DISTRIBUTION})")
    default_system, default_memory = DEFAULT_SYSTEM[accelerator.family]
    system_config = system_config or default_system
    memory_mode = memory_mode or default_memory
    digest = hashlib.sha256(tflite).hexdigest()
    key = (digest, accelerator.name, system_config, memory_mode)
    if keep_dir is None and key in _CACHE:
        return _CACHE[key]
    try:
        from ethosu.vela import vela  # late: an optional heavy import, only when compiling
    except ImportError as exc:
        raise VelaFailed(f"Vela {version} is installed but cannot be imported: {exc}") from exc
    with tempfile.TemporaryDirectory(prefix="fvp-sim-vela-") as tmp:
        network = Path(tmp) / f"{stem}.tflite"
        network.write_bytes(tflite)
        out_dir = keep_dir if keep_dir is not None else Path(tmp) / "out"
        argv = [
            str(network),
            f"--accelerator-config={accelerator.name}",
            f"--config={VELA_CONFIG}",
            "--output-format=raw",
            f"--system-config={system_config}",
            f"--memory-mode={memory_mode}",
            f"--output-dir={out_dir}",
            "--verbose-performance",
        ]
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
                status = vela.main(argv)
        except SystemExit as exc:  # argparse: a system config or memory mode vela.ini does not have
            status = exc.code if isinstance(exc.code, int) else 2
        # Vela's own errors (unsupported operator, bad config) end the compile
        except Exception as exc:
            raise VelaFailed(f"Vela {version} failed: {exc}") from exc
        if status:
            tail = " ".join(printed.getvalue().strip().splitlines()[-3:])
            raise VelaFailed(f"Vela {version} exited with status {status}: {tail}")
        total, npu, clock, layers = _parse(out_dir, stem, system_config)
    estimate = VelaEstimate(
        version=version,
        accelerator=accelerator.name,
        config=VELA_CONFIG,
        system_config=system_config,
        memory_mode=memory_mode,
        clock_hz=round(clock),
        tflite_sha256=digest,
        cycles=round(total),
        npu_cycles=round(npu),
        layers=tuple(layers),
    )
    _CACHE[key] = estimate
    return estimate


def estimate_model(
    model: CompiledModel,
    system_config: str | None = None,
    memory_mode: str | None = None,
    keep_dir: Path | None = None,
    stem: str | None = None,
) -> tuple[CompiledModel, bytes]:
    """``model`` with Vela's estimate attached (``model.vela``), and the TFLite bytes Vela
    compiled."""
    tflite = export_tflite(model)
    estimate = run_vela(
        tflite, model.accelerator, system_config, memory_mode, keep_dir, stem or model.arch.name
    )
    return dataclasses.replace(model, vela=estimate), tflite
