"""Small ExecuTorch programs made by ``flatc`` from JSON with the harness's ``program.fbs``: real
``.pte`` bytes (the ``ET12`` flatbuffer the runtime loads) without the ExecuTorch toolchain, for
fast tests of what reads them."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from fvp_harness.formats.pte import SCHEMA_FILE
from tests.helpers import skip_or_fail_in_ci

__all__ = ["flatc", "flatc_program"]


def flatc() -> str:
    found = shutil.which("flatc")
    if found is None:
        skip_or_fail_in_ci(
            "flatc is missing: apt-get install flatbuffers-compiler",
            "flatc is missing: .ci/run installs Debian's flatbuffers-compiler for this test",
        )
    return found


def flatc_program(
    path: Path, *, backend: str | None = None, plan: dict[str, Any] | None = None
) -> Path:
    """Write a program to ``path``: ``plan`` as given, else one ``forward`` method of a convolution
    and, with ``backend``, one partition delegated to it (``EthosUBackend``, ``XnnpackBackend``)."""
    if plan is None:
        plan = {
            "version": 0,
            "execution_plan": [
                {
                    "name": "forward",
                    "inputs": [0],
                    "outputs": [1],
                    "operators": [{"name": "aten::convolution", "overload": "out"}],
                    "delegates": [{"id": backend, "processed": {"location": "SEGMENT", "index": 0}}]
                    if backend
                    else [],
                    "non_const_buffer_sizes": [0, 1024],
                }
            ],
        }
    path.parent.mkdir(parents=True, exist_ok=True)
    source = path.with_name(path.stem + ".program.json")
    source.write_text(json.dumps(plan))
    subprocess.run(
        [flatc(), "-b", "-o", str(path.parent), str(SCHEMA_FILE), str(source)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    built = path.with_name(source.stem + ".pte")
    built.replace(path)
    source.unlink()
    return path
