"""``builds.X.libraries`` on the simulator and on this host, through the real command line: the
library is deployed beside the runner at its content-addressed guest path, its bytes there are
the host file's, and the build's command sees its folder first on ``LD_LIBRARY_PATH``; the other
build's units (same shell, later) do not inherit it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.sim]


def test_a_build_library_is_deployed_hash_checked_and_on_the_runners_library_path(
    tmp_path: Path,
) -> None:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    library = tmp_path / "lib" / "libdelegate.so"
    library.parent.mkdir()
    library.write_bytes(b"\x7fELF not really a library, but bytes to deploy and hash " * 50)
    digest = hashlib.sha256(library.read_bytes()).hexdigest()
    command = (
        "cd {unit_dir} && {runner} --model_path={model} --inputs={inputs} "
        "--num_executions={iterations} --output_file={output} && printf 'LDPATH=[%s]\\n' "
        "\"$LD_LIBRARY_PATH\" "
        '&& sha256sum "$LD_LIBRARY_PATH/libdelegate.so" || true'
    )
    args = [
        "run",
        "scenarios/smoke.yaml",
        "-o",
        "out/libs",
        "--set",
        "run.repetitions=1",
        "--set",
        f"builds.after.libraries=[{library}]",
        "--set",
        f"run.command={command}",
    ]
    done = run_cli(tmp_path, *args, timeout=240)
    assert done.returncode == 0, done.stderr + done.stdout
    folder = tmp_path / "out" / "libs"
    rows = {
        json.loads(line)["unit_id"]: json.loads(line)
        for line in (folder / "records.jsonl").read_text().splitlines()
        if line.strip()
    }
    assert set(rows) == {"r0-before-ds_cnn", "r0-after-ds_cnn"}
    assert all(row["status"] == "ok" for row in rows.values())
    guest_dir = json.loads((folder / "manifest.json").read_text())["scenario"]["resolved"][
        "deploy"
    ]["guest_dir"]
    where = f"{guest_dir}/{digest[:16]}"
    after = (folder / rows["r0-after-ds_cnn"]["log"]).read_text(encoding="utf-8")
    assert f"LDPATH=[{where}]" in after
    assert (
        f"{digest}  {where}/libdelegate.so" in after
    )  # the guest's copy has the host file's bytes
    before = (folder / rows["r0-before-ds_cnn"]["log"]).read_text(encoding="utf-8")
    assert (
        "LDPATH=[]" in before
    )  # the other build's command, in the same guest shell, does not inherit it
    plan = run_cli(
        tmp_path,
        "plan",
        "scenarios/smoke.yaml",
        "--set",
        f"builds.after.libraries=[{library}]",
        timeout=60,
    )
    assert plan.returncode == 0, plan.stderr
    assert "builds.after.libraries[0].file" in plan.stdout and digest[:12] in plan.stdout


HOST_RUNNER = """\
#!/bin/sh
echo "LDPATH=[$LD_LIBRARY_PATH]"
cat "${LD_LIBRARY_PATH%%:*}/libx.so"; echo
prefix='I 00:00:00.000100 executorch:executor_runner.cpp'
echo "$prefix:779] Iteration 1 of 1: 1.500000 ms"
echo "$prefix:789] Model executed successfully 1 time(s) in 1.500000 ms."
"""

HOST_SCENARIO = """\
name: hostlibs
target: host
builds:
  a: {runner: run.sh, libraries: [lib/libx.so]}
  b: {runner: run.sh}
models:
  m: {file: m.bin}
run: {command: "{runner} --model_path={model}", repetitions: 1, warmup: 0, iterations: 1}
metrics:
  - {name: iteration_time, required: true}
"""


def test_on_this_host_the_library_folder_goes_before_the_callers_library_path(
    tmp_path: Path,
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libx.so").write_text("the library's bytes")
    (tmp_path / "m.bin").write_bytes(b"model")
    runner = tmp_path / "run.sh"
    runner.write_text(HOST_RUNNER)
    runner.chmod(0o755)
    (tmp_path / "s.yaml").write_text(HOST_SCENARIO)
    env = {**os.environ, "LD_LIBRARY_PATH": "/opt/outer"}
    done = run_cli(tmp_path, "run", "s.yaml", "-o", "out", timeout=120, env=env)
    assert done.returncode == 0, done.stderr + done.stdout
    folder = tmp_path / "out"
    rows = {
        json.loads(line)["unit_id"]: json.loads(line)
        for line in (folder / "records.jsonl").read_text().splitlines()
        if line.strip()
    }
    with_library = (folder / rows["r0-a-m"]["log"]).read_text(encoding="utf-8")
    digest = hashlib.sha256(b"the library's bytes").hexdigest()
    line = next(text for text in with_library.splitlines() if text.startswith("LDPATH=["))
    assert line.endswith(f"/{digest[:16]}:/opt/outer]"), (
        line
    )  # the deployed copy's folder, then the caller's
    assert "the library's bytes" in with_library
    without = (folder / rows["r0-b-m"]["log"]).read_text(encoding="utf-8")
    assert "LDPATH=[/opt/outer]" in without
