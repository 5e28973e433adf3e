"""Where the tests find the ExecuTorch toolchain's Python (torch, executorch and the Arm flow; kept
apart from the harness's own environment), and real programs made with it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.toolchain.lane import require_lane

__all__ = ["ENV_PYTHON", "export_programs", "toolchain_python"]

ENV_PYTHON = "FVP_HARNESS_TOOLCHAIN_PYTHON"
"""A Python with torch 2.13.0 and executorch 1.5.1 (and the Arm flow's pins for Ethos-U programs).
"""
EXPORTER = Path(__file__).with_name("export_programs.py")


def toolchain_python() -> str:
    """The toolchain's Python: ``$FVP_HARNESS_TOOLCHAIN_PYTHON``, else the installed toolchain's;
    skips (fails under ``CI=true``) when there is none."""
    given = os.environ.get(ENV_PYTHON)
    if given:
        return given
    return str(require_lane().python)


def export_programs(folder: Path, *kinds: str) -> dict[str, Path]:
    """Real ``.pte`` files of a small network, one per kind (portable, xnnpack, ethos-u85-256), made
    in ``folder``."""
    python = toolchain_python()
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [python, str(EXPORTER), str(folder), *kinds],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=folder,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(
            f"exporting with {python} failed ({done.returncode}):\n{done.stderr[-3000:]}"
        )
    return {
        kind: folder / f"{kind}.pte" for kind in kinds or ("portable", "xnnpack", "ethos-u85-256")
    }
