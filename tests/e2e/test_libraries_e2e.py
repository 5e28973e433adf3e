"""``builds.X.libraries`` on the simulator, through the real command line: the library is deployed beside the runner
at its content-addressed guest path, its bytes there are the host file's, and the build's command sees its folder
first on ``LD_LIBRARY_PATH``; the other build's units (same shell, later) do not inherit it."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.sim]


def test_a_build_library_is_deployed_hash_checked_and_on_the_runners_library_path(tmp_path: Path) -> None:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    library = tmp_path / "lib" / "libdelegate.so"
    library.parent.mkdir()
    library.write_bytes(b"\x7fELF not really a library, but bytes to deploy and hash " * 50)
    digest = hashlib.sha256(library.read_bytes()).hexdigest()
    command = ("cd {unit_dir} && {runner} --model_path={model} --inputs={inputs} --num_executions={iterations} "
               "--output_file={output} && printf 'LDPATH=[%s]\\n' \"$LD_LIBRARY_PATH\" "
               "&& sha256sum \"$LD_LIBRARY_PATH/libdelegate.so\" || true")
    args = ["run", "scenarios/smoke.yaml", "-o", "out/libs", "--set", "run.repetitions=1",
            "--set", f"builds.after.libraries=[{library}]", "--set", f"run.command={command}"]
    done = run_cli(tmp_path, *args, timeout=240)
    assert done.returncode == 0, done.stderr + done.stdout
    folder = tmp_path / "out" / "libs"
    rows = {json.loads(line)["unit_id"]: json.loads(line)
            for line in (folder / "records.jsonl").read_text().splitlines() if line.strip()}
    assert set(rows) == {"r0-before-ds_cnn", "r0-after-ds_cnn"}
    assert all(row["status"] == "ok" for row in rows.values())
    guest_dir = json.loads((folder / "manifest.json").read_text())["scenario"]["resolved"]["deploy"]["guest_dir"]
    where = f"{guest_dir}/{digest[:16]}"
    after = (folder / rows["r0-after-ds_cnn"]["log"]).read_text(encoding="utf-8")
    assert f"LDPATH=[{where}]" in after
    assert f"{digest}  {where}/libdelegate.so" in after  # the guest's copy has the host file's bytes
    before = (folder / rows["r0-before-ds_cnn"]["log"]).read_text(encoding="utf-8")
    assert "LDPATH=[]" in before  # the other build's command, in the same guest shell, does not inherit it
    plan = run_cli(tmp_path, "plan", "scenarios/smoke.yaml", "--set", f"builds.after.libraries=[{library}]",
                   timeout=60)
    assert plan.returncode == 0, plan.stderr
    assert "builds.after.libraries[0].file" in plan.stdout and digest[:12] in plan.stdout
