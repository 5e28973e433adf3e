"""The README's first command, verbatim, in a copy of the repository: it installs only what the main
job needs and writes the report (README: "installs only what that job needs")."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_doc_commands import doc_blocks
from tests.helpers import REPO

pytestmark = pytest.mark.slow

TEST_ONLY = ("pytest", "ruff", "mypy", "dask", "playwright")
"""Packages of the ``test`` extra that the main job must not install."""


def _first_command() -> str:
    readme = [b for b in doc_blocks([REPO / "README.md"]) if b.lang == "sh"]
    return readme[0].text.splitlines()[0]


def _copy_of_repository(root: Path) -> Path:
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard"],
                            capture_output=True, text=True, check=True,
                            timeout=60).stdout.split("\n")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    return root


def test_the_first_command_installs_only_the_main_job_and_writes_its_report(tmp_path: Path) -> None:
    command = _first_command()
    assert "pip install -e . " in command and "[test]" not in command, command
    work = _copy_of_repository(tmp_path / "clone")
    env = {k: v
           for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (work / "results" / "driver_reuse" / "report.md").is_file()
    installed = subprocess.run([str(work / ".venv" / "bin" / "python"), "-m", "pip", "list",
                                "--format=freeze"], capture_output=True, text=True, check=True,
                               timeout=120)
    names = {line.split("==")[0].lower() for line in installed.stdout.splitlines()}
    assert not names & set(TEST_ONLY), sorted(names & set(TEST_ONLY))
    assert "fvp-harness" in names and "pandas" in names
