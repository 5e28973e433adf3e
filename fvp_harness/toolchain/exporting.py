"""Run ``export.py`` in the toolchain's python: the harness's side of ``fvp-harness toolchain
export``.

Why a subprocess: torch lives only in the toolchain's venv. The script gets the harness's source on
``PYTHONPATH`` (it reads the simulator's networks) and writes to a staged file beside the output,
renamed into place only when it succeeded, so a failed or timed-out export never leaves a
half-written ``.pte``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from fvp_harness.errors import ConfigurationError, InfrastructureError
from fvp_harness.toolchain import Toolchain, find_toolchain, process

__all__ = [
    "EXPORT_SCRIPT",
    "EXPORT_TIMEOUT_S",
    "KINDS",
    "ExportFailed",
    "export_argv",
    "run_export",
]

EXPORT_SCRIPT = Path(__file__).with_name("export.py")
EXPORT_TIMEOUT_S = 1200.0
"""The longest one export may take (MobileNet through Vela on a loaded 2-core machine takes about a
minute)."""
KINDS = ("portable", "xnnpack", "ethos-u85-256")


class ExportFailed(InfrastructureError):
    """The exporter failed in the toolchain's python (torch, ExecuTorch or Vela raised)."""


def export_argv(
    chain: Toolchain,
    network: str,
    *,
    kind: str,
    output: Path,
    input_out: Path | None = None,
    input_only: bool = False,
    vela_report: Path | None = None,
    seed: int = 0,
) -> list[str]:
    """The exporter's command line (list argv: no shell)."""
    argv = [str(chain.python), str(EXPORT_SCRIPT), network, "--kind", kind, "-o", str(output)]
    if seed:
        argv += ["--seed", str(seed)]
    if input_out is not None:
        argv += ["--input-out", str(input_out)]
    if input_only:
        argv.append("--input-only")
    if vela_report is not None:
        argv += ["--vela-report", str(vela_report)]
    return argv


def _staged(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.partial")


def run_export(
    network: str,
    *,
    kind: str,
    output: Path,
    input_out: Path | None = None,
    input_only: bool = False,
    vela_report: Path | None = None,
    folder: Path | None = None,
    timeout: float = EXPORT_TIMEOUT_S,
    seed: int = 0,
) -> dict[str, Any]:
    """Export ``network`` (the simulator's weights and input of ``seed``) as a ``kind`` program to
    ``output`` (or only its input, ``input_only``);
    returns the exporter's summary (sizes, seconds, Vela's rows). ``ToolchainError`` when the
    toolchain is not built, ``ConfigurationError`` for an unknown network or kind, ``ExportFailed``
    when the exporter fails or times out."""
    if kind not in KINDS:
        raise ConfigurationError(f"unknown export kind {kind!r} (known: {', '.join(KINDS)})")
    chain = find_toolchain(folder)
    targets = [path for path in (output, input_out, vela_report) if path is not None]
    staged = {path: _staged(path) for path in targets}
    argv = export_argv(
        chain,
        network,
        kind=kind,
        output=staged[output],
        input_only=input_only,
        input_out=staged.get(input_out) if input_out else None,
        vela_report=staged.get(vela_report) if vela_report else None,
        seed=seed,
    )
    env = {
        key: value for key, value in os.environ.items() if key not in ("PYTHONHOME", "VIRTUAL_ENV")
    }
    env["PYTHONPATH"] = str(EXPORT_SCRIPT.parent.parent.parent)
    # torch keeps compile caches in $TMPDIR/torchinductor_<user> unless told otherwise: keep them in
    # the toolchain's own folder, which the harness names, never in a temporary folder it would
    # leave
    cache = chain.folder / "cache"
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache / "torchinductor")
    env["TRITON_CACHE_DIR"] = str(cache / "triton")
    for path in targets:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        try:
            proc = process.run_whole(argv, timeout=timeout, env=env)
        except subprocess.TimeoutExpired as exc:
            raise ExportFailed(
                f"exporting {network} ({kind}) took longer than {timeout:.0f} s ({' '.join(argv)})"
            ) from exc
        if proc.returncode == 2:
            raise ConfigurationError(
                proc.stderr.strip().removeprefix("error: ").splitlines()[-1]
                if proc.stderr.strip()
                else f"exporter refused: {' '.join(argv)}"
            )
        if proc.returncode != 0:
            raise ExportFailed(
                f"exporting {network} ({kind}) failed (exit {proc.returncode}): "
                f"{' '.join(argv)}\n{proc.stderr.strip()[-2000:]}"
            )
        lines = proc.stdout.strip().splitlines()
        try:
            summary: dict[str, Any] = json.loads(lines[-1])
        except (IndexError, ValueError) as exc:
            raise ExportFailed(
                f"the exporter printed no summary line: {' '.join(argv)}\n"
                f"{proc.stdout.strip()[-1000:]}"
            ) from exc
        for path in targets:
            staged[path].replace(path)
    finally:
        for path in staged.values():
            path.unlink(missing_ok=True)
    if "output" in summary:
        summary["output"] = str(output)
    if isinstance(summary.get("input"), dict):
        summary["input"]["path"] = str(output if input_only else input_out)
    return summary
