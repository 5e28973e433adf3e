"""The manifest's machine record (``run/machine.py``, ``run/manifest.py``) and ``builds.X.source``
in scenarios."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fvp_harness.errors import ScenarioError
from fvp_harness.run import machine
from fvp_harness.run.manifest import Manifest, RunSettings
from fvp_harness.run.plan import build_plan
from fvp_harness.scenario import load_scenario
from tests.helpers import REPO

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _manifest(*overrides: str) -> Manifest:
    loaded = load_scenario(REPO / "scenarios" / "smoke.yaml", overrides, check_files=False)
    return Manifest.start(loaded, build_plan(loaded), "11.30.27 (simulated by fvp-harness sim)", "",
                          RunSettings(), [])


def test_the_manifest_records_the_machine_the_harness_and_the_simulator() -> None:
    manifest = _manifest("builds.after.source={repository: pytorch/executorch, commit: "
                         f"{COMMIT.upper()}}}")
    host = manifest.host
    assert host.cpus and host.os and host.memory_bytes and host.memory_bytes > 2**20
    assert host.load_before is not None and len(host.load_before) == 3 and host.load_after is None
    assert (manifest.fvp.simulator == f"fvp-harness {manifest.harness_version}" and
            manifest.fvp.path is None)
    assert manifest.harness is not None and manifest.harness.version == manifest.harness_version
    source = manifest.builds["after"].source
    assert source is not None and (source.origin, source.repository, source.commit) == (
        "scenario", "pytorch/executorch", COMMIT)  # lower-cased by the scenario
    manifest.finish([])
    assert manifest.host.load_after is not None and len(manifest.host.load_after) == 3
    again = Manifest.from_json(manifest.to_json())
    assert again.host == manifest.host and again.builds == manifest.builds


def test_a_format_4_manifest_without_the_record_still_reads() -> None:
    data = _manifest().to_json()
    for name in ("cpu_model", "memory_bytes", "os", "load_before", "load_after"):
        data["host"].pop(name)
    for name in ("path", "sha256", "simulator"):
        data["fvp"].pop(name)
    for build in data["builds"].values():
        build.pop("source")
    data.pop("harness")
    data["format_version"] = 4
    old = Manifest.from_json(data)
    assert (old.host.cpu_model is None and old.harness is None and
            old.builds["before"].source is None)


@pytest.mark.skipif(shutil.which("git") is None and os.environ.get("CI") != "true",
                    reason="needs git")
def test_a_runner_in_a_git_checkout_records_its_commit_and_describe(tmp_path: Path) -> None:
    repo = tmp_path / "executorch"
    (repo / "cmake-out").mkdir(parents=True)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    (repo / "README").write_text("x\n")
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    subprocess.run([*git, "tag", "v1.0"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()
    runner = repo / "cmake-out" / "executor_runner"
    assert machine.git_head(runner.parent)[0] == head
    assert machine.git_describe(runner) == "v1.0"
    (repo / "README").write_text("changed\n")
    assert machine.git_describe(runner.parent) == "v1.0-dirty"
    manifest = _manifest(f"builds.before.runner={runner}")
    source = manifest.builds["before"].source
    assert (source is not None and
            (source.origin, source.commit, source.describe) == ("checkout", head, "v1.0-dirty"))
    assert machine.git_describe(tmp_path) is None  # outside any checkout: no git process at all


def test_cpu_model_memory_and_os_from_this_hosts_files(tmp_path: Path) -> None:
    (tmp_path / "cpuinfo").write_text("processor\t: 0\nvendor_id\t: X\nmodel name\t: Neoverse-N1 "
                                      "by Example\n")
    assert machine.cpu_model(tmp_path / "cpuinfo") == "Neoverse-N1 by Example"
    (tmp_path / "arm").write_text("processor\t: 0\nCPU part\t: 0xd0c\nHardware\t: Example SoC\n")
    assert machine.cpu_model(tmp_path / "arm") == "Example SoC"
    (tmp_path / "os-release").write_text('NAME="Debian"\nPRETTY_NAME="Debian GNU/Linux 12 '
                                         '(bookworm)"\n')
    assert machine.os_name(tmp_path / "os-release") == "Debian GNU/Linux 12 (bookworm)"
    assert machine.os_name(tmp_path / "missing")  # platform.platform() then


def test_a_real_binary_is_identified_by_path_and_sha256(tmp_path: Path) -> None:
    binary = tmp_path / "FVP_Corstone-1000-A320"
    binary.write_bytes(b"#!/bin/sh\n")
    path, digest = machine.resolve_binary(str(binary))
    assert path == str(binary.resolve())
    assert digest == hashlib.sha256(b"#!/bin/sh\n").hexdigest()
    assert machine.resolve_binary(str(tmp_path / "nothing")) == (None, None)


@pytest.mark.parametrize(("source", "message"), [
    ("{repository: pytorch/executorch, commit: xyz}",
     "expected a commit of 7 to 40 hexadecimal digits"),
    ("{repository: 'pytorch executorch', commit: 0123abc}",
     "expected a URL or owner/name without spaces"),
    ("{repository: pytorch/executorch}", "commit: required field is missing"),
    ("{repository: pytorch/executorch, commit: 0123abc, branch: main}", "branch"),
])
def test_a_bad_build_source_names_the_file_line_and_field(write, source: str, message: str) -> None:
    path = write("s.yaml", f"""\
        name: s
        builds:
          before: {{runner: r1, build: "make {{output}}"}}
          after: {{runner: r2, build: "make {{output}}", source: {source}}}
        models:
          m: {{file: m, build: "make {{output}}"}}
        """)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    problems = info.value.problems
    assert len(problems) == 1 and ":4:" in problems[0] and "builds.after.source" in problems[0], (
        problems)
    assert message in problems[0], problems
