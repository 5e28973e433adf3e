"""A secret environment value on the simulator, through the real command line: the unit's shell gets
it, and no file under the results folder (manifest, records, unit logs, terminal and model logs,
reports) nor the CLI's own output shows it."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.sim]

SECRET = "s3cr3t-v4lue-from-the-vault"


def test_a_secret_reaches_the_unit_and_no_results_file(tmp_path: Path) -> None:
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    command = ("cd {unit_dir} && {runner} --model_path={model} --inputs={inputs} "
               "--num_executions={iterations} --output_file={output} && printf '%s' \"$API_TOKEN\" "
               "| sha256sum")
    args = ["run", "scenarios/smoke.yaml", "-o", "out/secret", "--set", "run.repetitions=1",
            "--set", f"run.env.API_TOKEN={SECRET}",  # secret by name (*TOKEN*)
            "--set", f"builds.after.env.LICENCE={{value: {SECRET}-2, secret: true}}",
            "--set", f"run.command={command}"]
    done = run_cli(tmp_path, *args, timeout=240)
    out, err = done.stdout, done.stderr
    assert done.returncode == 0, err + out
    folder = tmp_path / "out" / "secret"
    rows = [json.loads(line)
            for line in (folder / "records.jsonl").read_text().splitlines() if line.strip()]
    assert len(rows) == 2 and all(row["status"] == "ok" for row in rows)
    proof = hashlib.sha256(SECRET.encode()).hexdigest()
    # the unit's shell had the real value: its sha256 is in the unit's console text
    for row in rows:
        assert proof in (folder / row["log"]).read_text(encoding="utf-8")
    files = [path for path in folder.rglob("*") if path.is_file()]
    assert any(path.name == "console.log" or path.parent.name == "s0" for path in files)
    leaked = [str(path.relative_to(folder))
              for path in files if SECRET.encode() in path.read_bytes()]
    assert leaked == []
    assert SECRET not in out + err
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["scenario"]["resolved"]["run"]["env"]["API_TOKEN"] == "***"
    assert manifest["builds"]["after"]["env"]["LICENCE"] == "***"


CERT_LINES = ["-----BEGIN CERTIFICATE-----", "MIIBszCCAVmgAwIBAgIUQ2h1bmsx",
              "c2VjcmV0LWxpbmUtdHdvLXh5eg==", "-----END CERTIFICATE-----"]
CERT = "\n".join(CERT_LINES)


def test_a_multi_line_secret_is_masked_line_by_line_in_every_results_file(tmp_path: Path) -> None:
    """The docs' SERVER_CERT case: a certificate-like value with line breaks, printed by the unit's
    shell line by line; no file under the results folder holds any line of it, in any line-end
    form."""
    shutil.copytree(REPO / "scenarios", tmp_path / "scenarios")
    command = ("cd {unit_dir} && {runner} --model_path={model} --inputs={inputs} "
               "--num_executions={iterations} --output_file={output} && printf '%s\\n' "
               "\"$SERVER_CERT\" && printf '%s' \"$SERVER_CERT\" | sha256sum")
    cert = json.dumps(CERT)  # a YAML double-quoted scalar with \n escapes
    args = ["run", "scenarios/smoke.yaml", "-o", "out/cert", "--set", "run.repetitions=1",
            "--set", f"builds.after.env.SERVER_CERT={{value: {cert}, secret: true}}",
            "--set", f"run.command={command}"]
    done = run_cli(tmp_path, *args, timeout=240)
    out, err = done.stdout, done.stderr
    assert done.returncode == 0, err + out
    folder = tmp_path / "out" / "cert"
    rows = [json.loads(line)
            for line in (folder / "records.jsonl").read_text().splitlines() if line.strip()]
    after = [row for row in rows if row["build"] == "after"]
    assert len(rows) == 2 and all(row["status"] == "ok" for row in rows)
    # the runner's shell had the whole value, line breaks too
    proof = hashlib.sha256(CERT.encode()).hexdigest()
    assert proof in (folder / after[0]["log"]).read_text(encoding="utf-8")
    files = [path for path in folder.rglob("*") if path.is_file()]
    assert any(path.parent.name == "s0" and path.suffix == ".log" for path in files)
    forms = [*CERT_LINES, CERT, CERT.replace("\n", "\r\n"), json.dumps(CERT)[1:-1]]
    leaked = [(str(path.relative_to(folder)), form) for path in files for form in forms
              if form.encode() in path.read_bytes()]
    assert leaked == []
    assert not [line for line in CERT_LINES if line in out + err]
    assert "***" in (folder / after[0]["log"]).read_text(encoding="utf-8")
