"""The Vela part of ``fvp-harness sim model``: write the TFLite file, run Vela, keep its estimate in
the model.

Why apart from ``tools.py``: the options and the decisions (when Vela runs, what happens when it is
missing or fails, where the TFLite file goes) are one job; ``tools.py`` only calls ``add_arguments``
and ``apply``.

    sim model NAME -o FILE [--tflite PATH | --no-tflite] [--npu-cycles auto|vela|analytic]
              [--vela-system-config NAME] [--vela-memory-mode NAME] [--vela-dir DIR]

* The TFLite file (``networks/tflite_export.py``) is written next to the model as ``<FILE without
  suffix>.tflite`` unless ``--tflite PATH`` names another place or ``--no-tflite`` asks for none. It
  needs Vela's schema code; without Vela the default file is skipped with a note (an explicit
  ``--tflite`` fails).
* ``--npu-cycles auto`` (default): Vela's estimate when ``ethos-u-vela`` is installed, else the
  analytic model (a note says so); ``vela``: Vela or fail; ``analytic``: never run Vela (the file
  carries no estimate).
* A Vela that is installed but fails (an unsupported layer, an unknown system config) fails the
  command: a model whose counter silently fell back would measure something else.
* ``--vela-dir DIR`` keeps Vela's own output there (``<stem>_summary_<system config>.csv``,
  ``<stem>_per-layer.csv``, ``<stem>_vela.npz``): the files a scenario's ``models.<name>.vela`` can
  name.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from fvp_harness.sim.networks.modelfile import CompiledModel
from fvp_harness.sim.networks.tflite_export import export_tflite
from fvp_harness.sim.npu.vela import DEFAULT_SYSTEM, VelaFailed, estimate_model, vela_version

__all__ = ["NPU_CYCLE_SOURCES", "VelaFailed", "add_arguments", "apply"]

NPU_CYCLE_SOURCES = ("auto", "vela", "analytic")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``sim model`` options of this module."""
    parser.add_argument(
        "--tflite",
        type=Path,
        default=None,
        metavar="PATH",
        help="where to write the model as an int8 TFLite flatbuffer (default: next to the output, "
             "suffix .tflite)",
    )
    parser.add_argument("--no-tflite", action="store_true", help="write no TFLite file")
    parser.add_argument(
        "--npu-cycles",
        choices=NPU_CYCLE_SOURCES,
        default="auto",
        help="where the NPU cycle counter comes from: Vela's estimate (vela), the analytic model "
             "(analytic), or "
        "Vela when ethos-u-vela is installed (auto, default)",
    )
    u55, u85 = DEFAULT_SYSTEM["ethos-u55"], DEFAULT_SYSTEM["ethos-u85"]
    parser.add_argument(
        "--vela-system-config",
        default=None,
        metavar="NAME",
        help=f"Vela system config (default as ExecuTorch: {u55[0]} for ethos-u55, {u85[0]} for "
             "ethos-u85)",
    )
    parser.add_argument(
        "--vela-memory-mode",
        default=None,
        metavar="NAME",
        help=f"Vela memory mode (default as ExecuTorch: {u55[1]} for ethos-u55, {u85[1]} for "
             "ethos-u85)",
    )
    parser.add_argument(
        "--vela-dir", type=Path, default=None, metavar="DIR",
        help="keep Vela's output files (CSV reports) in DIR"
    )


def _tflite_path(args: argparse.Namespace) -> Path | None:
    if args.no_tflite:
        return None
    if args.tflite is not None:
        return Path(args.tflite)
    output = Path(args.output)
    if output.suffix == ".tflite":
        raise VelaFailed(f"{output} ends in .tflite, where the TFLite file would go: name it with "
                         "--tflite PATH")
    return output.with_suffix(".tflite")


def apply(
    args: argparse.Namespace, model: CompiledModel, write: Callable[[Path, bytes], None]
) -> tuple[CompiledModel, list[str]]:
    """Run the Vela step for ``sim model``: returns the model to write (with Vela's estimate when it
    ran) and the lines to print; writes the TFLite file with ``write``. VelaFailed when a requested
    step cannot be done."""
    tflite_path = _tflite_path(args)
    installed = vela_version()
    use_vela = args.npu_cycles == "vela" or (args.npu_cycles == "auto" and installed is not None)
    if args.npu_cycles == "vela" and installed is None:
        raise VelaFailed("--npu-cycles vela: Vela is not installed (pip install ethos-u-vela)")
    if (args.vela_dir or args.vela_system_config or args.vela_memory_mode) and not use_vela:
        raise VelaFailed("--vela-dir/--vela-system-config/--vela-memory-mode need Vela "
                         "(--npu-cycles vela|auto with ethos-u-vela installed)")
    notes: list[str] = []
    tflite: bytes | None = None
    if use_vela:
        if args.vela_dir is not None:
            Path(args.vela_dir).mkdir(parents=True, exist_ok=True)
        stem = Path(args.output).stem
        model, tflite = estimate_model(
            model, args.vela_system_config, args.vela_memory_mode, args.vela_dir, stem=stem
        )
        assert model.vela is not None
        notes.append(f"NPU cycles {model.vela.cycles} per inference: {model.vela.describe}")
        if args.vela_dir is not None:
            notes.append("Vela's reports: "
                         f"{args.vela_dir}/{stem}_summary_{model.vela.system_config}.csv, "
                         f"{stem}_per-layer.csv")
    else:
        reason = ("--npu-cycles analytic" if args.npu_cycles == "analytic"
                  else "Vela is not installed")
        notes.append(f"NPU cycles from the analytic cycle model ({reason})")
    if tflite_path is not None:
        if tflite is None:
            try:
                tflite = export_tflite(model)
            except ImportError as exc:
                if args.tflite is not None:
                    raise VelaFailed(str(exc)) from exc
                notes.append(f"no TFLite file: {exc}")
        if tflite is not None:
            write(tflite_path, tflite)
            notes.append(f"TFLite: {tflite_path} ({len(tflite)} bytes)")
    return model, notes
