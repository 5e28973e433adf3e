"""A model's ``--version`` is asked once per process per binary file and simulator knobs
(``targets.fvp. query_version``): every boot asked it again, a second model start beside each boot's
own. Told by a stand-in binary that counts how often it is asked."""

from __future__ import annotations

import os
from pathlib import Path

from fvp_harness.targets.fvp import query_version


def _binary(tmp_path: Path, answer: str, status: int = 0) -> tuple[Path, Path]:
    calls = tmp_path / "calls"
    binary = tmp_path / "FVP_Counting"
    binary.write_text(f'#!/bin/sh\necho "$1" >> "{calls}"\necho "{answer}"\nexit {status}\n')
    binary.chmod(0o755)
    return binary, calls


def _asked(calls: Path) -> int:
    return len(calls.read_text().split()) if calls.exists() else 0


def test_a_banner_is_asked_once_per_binary_file_and_knobs(tmp_path: Path) -> None:
    binary, calls = _binary(tmp_path, "Fast Models [11.30.27 (Dec 1 2026)]")
    env = {"PATH": os.environ.get("PATH", ""), "FVP_SIM_SPEED": "0.2"}
    first = query_version([str(binary)], env, 30.0)
    assert first == (0, "Fast Models [11.30.27 (Dec 1 2026)]\n")
    assert (query_version([str(binary)], {**env, "UNRELATED": "1"}, 30.0) == first and
            _asked(calls) == 1)
    assert (query_version([str(binary)], {**env, "FVP_SIM_SPEED": "0"}, 30.0) == first and
            _asked(calls) == 2), (
        "other simulator knobs: asked again")
    # another file: another banner
    binary.write_text(binary.read_text().replace("11.30.27", "11.31.4"))
    assert query_version([str(binary)], env, 30.0) == (0, "Fast Models [11.31.4 (Dec 1 2026)]\n")
    assert _asked(calls) == 3


def test_a_failing_or_empty_answer_is_asked_again(tmp_path: Path) -> None:
    binary, calls = _binary(tmp_path, "ERROR: License checkout failed", status=1)
    for _ in range(2):
        assert query_version([str(binary)], {}, 30.0) == (1, "ERROR: License checkout failed\n")
    assert _asked(calls) == 2
