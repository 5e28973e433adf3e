"""Only what the harness made is replaced, and never while a writer of an earlier build lives (issue
36, findings 1 and 2): a file without a build record is refused before anything is written beside
it."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from fvp_harness.errors import ConfigurationError, InfrastructureError
from fvp_harness.run import artifacts
from fvp_harness.run.artifacts import (
    build_artifacts,
    build_record_path,
    check_replaceable,
    outside_tree,
)
from fvp_harness.scenario import load_scenario
from fvp_harness.targets.leftovers import Owner


def _scenario(folder: Path, runner: str, build: str = "printf built > {output}") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "s.yaml"
    path.write_text(f"name: b\nbuilds:\n  a: {{runner: {json.dumps(runner)}, build: "
                    f"{json.dumps(build)}}}\nmodels:\n  m: {{file: m.model}}\n")
    (folder / "m.model").write_text("m")
    return path


def _beside(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir())


def test_a_file_the_harness_did_not_make_is_refused_and_left_alone(tmp_path: Path) -> None:
    victim = tmp_path / "system" / "passwd"  # the issue's /etc/passwd, as a file of this test's own
    victim.parent.mkdir()
    victim.write_text("root:x:0:0\n")
    loaded = load_scenario(_scenario(tmp_path / "scenario", str(victim)))
    with pytest.raises(ConfigurationError) as refused:
        build_artifacts(loaded)
    text = str(refused.value)
    assert f"builds.a.runner: {victim} exists and was not built by fvp-harness" in text
    assert "--rebuild" in text and str(loaded.path) in text
    assert victim.read_text() == "root:x:0:0\n"
    assert _beside(victim) == ["passwd"], (
        "no record, no staging folder beside a file that is not ours")


def test_rebuild_replaces_it_and_from_then_on_it_is_ours(tmp_path: Path) -> None:
    made = tmp_path / "scenario" / "out" / "runner"
    made.parent.mkdir(parents=True)
    made.write_text("by hand")
    loaded = load_scenario(_scenario(tmp_path / "scenario", "out/runner"))
    with pytest.raises(ConfigurationError):
        check_replaceable(loaded)
    build_artifacts(loaded, force=True)
    assert made.read_text() == "built" and build_record_path(made).is_file()
    check_replaceable(loaded)  # ours now


def test_a_missing_file_and_a_file_without_build_command_are_not_refused(tmp_path: Path) -> None:
    loaded = load_scenario(_scenario(tmp_path / "scenario", "out/runner"))
    check_replaceable(loaded)
    build_artifacts(loaded)  # m.model exists, has no build command: never touched, never refused


def test_outputs_outside_the_scenario_folder_are_warned_about(tmp_path: Path) -> None:
    loaded = load_scenario(_scenario(tmp_path / "a" / "b" / "scenario", "../../../runner"))
    warnings = outside_tree(loaded)
    assert len(warnings) == 1
    assert ("builds.a.runner: warning:" in warnings[0] and
            "is outside the scenario's tree" in warnings[0])
    assert not outside_tree(load_scenario(_scenario(tmp_path / "inside", "out/runner")))
    # scenarios/x.yaml writing ../.artifacts: in its checkout
    (tmp_path / "project" / ".git").mkdir(parents=True)
    assert not outside_tree(
        load_scenario(_scenario(tmp_path / "project" / "scenarios", "../.artifacts/runner"))
    )


def _interrupted(path: Path, writer: int) -> None:
    """The record a SIGKILLed harness leaves: building, its writer (the build's supervisor)
    named."""
    dead = subprocess.Popen(["true"])
    owner = Owner.of(dead.pid)
    dead.wait()
    process = Owner.of(writer)
    assert process is not None
    record = {"command": "x", "building": {"owner": owner.as_json() if owner else None,
                                           "writer": process.as_json()}}
    build_record_path(path).write_text(json.dumps(record))


def test_a_build_waits_until_the_writer_of_an_interrupted_one_is_gone(tmp_path: Path) -> None:
    loaded = load_scenario(_scenario(tmp_path / "scenario", "out/runner"))
    runner = tmp_path / "scenario" / "out" / "runner"
    runner.parent.mkdir()
    runner.write_text("AAAA")
    writer = subprocess.Popen(["sleep", "1"])
    try:
        _interrupted(runner, writer.pid)
        began = time.monotonic()
        results, _ = build_artifacts(loaded)
        assert time.monotonic() - began >= 0.5, "it waited for the earlier writer"
        assert writer.poll() is not None
    finally:
        writer.kill()
        writer.wait()
    assert [r.step.reason for r in results] == ["an earlier build of it did not finish"]
    assert runner.read_text() == "built"


def test_a_writer_that_does_not_end_fails_the_build_and_names_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(artifacts, "WRITER_WAIT_S", 0.3)
    loaded = load_scenario(_scenario(tmp_path / "scenario", "out/runner"))
    runner = tmp_path / "scenario" / "out" / "runner"
    runner.parent.mkdir()
    runner.write_text("AAAA")
    writer = subprocess.Popen(["sleep", "30"])
    try:
        _interrupted(runner, writer.pid)
        with pytest.raises(InfrastructureError, match=f"its supervisor, pid {writer.pid}"):
            build_artifacts(loaded)
    finally:
        writer.kill()
        writer.wait()
    assert runner.read_text() == "AAAA", "not replaced while it may still be written"
