"""A build killed halfway never leaves an artifact that looks built, and the harness's stop ends
builds at once (issue 23 item 1): staged ``{output}`` renamed on success, the build record written
last, every process ended."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from fvp_harness.errors import Interrupted, UnitFailure
from fvp_harness.run.artifacts import build_artifacts, build_record_path, pending_builds
from fvp_harness.scenario import load_scenario
from tests.proc_scan import processes_with_env


def _scenario(tmp_path: Path, build: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"name: b\nbuilds:\n  a: {{runner: out/runner, build: {build!r}}}\n"
                    "models:\n  m: {file: m.model}\n")
    (tmp_path / "m.model").write_text("m")
    return path


def _left(tmp_path: Path) -> list[str]:
    return (sorted(p.name for p in (tmp_path / "out").iterdir()) if (tmp_path / "out").is_dir()
            else [])


def test_the_output_is_staged_and_renamed_only_on_success(tmp_path: Path) -> None:
    loaded = load_scenario(_scenario(tmp_path,
                                     "printf PART1 > {output}; test -f {output} && printf done"))
    build_artifacts(loaded)
    assert (tmp_path / "out/runner").read_text() == "PART1"
    assert _left(tmp_path) == [".runner.build", "runner"], "no staging folder left"


def test_a_stop_ends_a_build_at_once_and_leaves_the_previous_artifact(tmp_path: Path) -> None:
    path = _scenario(tmp_path,
                     "printf PART1 > {output}; export T23_MARK=build; setsid sleep 1000 & sleep "
                     "1000; "
                               "printf PART2 >> {output}")
    (tmp_path / "out").mkdir()
    (tmp_path / "out/runner").write_text("OLD")  # no record: replaced only when forced
    stop = threading.Event()
    threading.Timer(0.8, stop.set).start()
    began = time.monotonic()
    with pytest.raises(Interrupted, match="stopped during the builds"):
        build_artifacts(load_scenario(path), stop=stop, force=True)
    assert time.monotonic() - began < 5
    assert (tmp_path / "out/runner").read_text() == "OLD"
    assert _left(tmp_path) == [".runner.build", "runner"], (
        "no staged file; the record says the build did not finish")
    assert ([step.reason for step in pending_builds(load_scenario(path))]
            == ["an earlier build of it did not finish"])
    assert not processes_with_env("T23_MARK", "build")


def test_a_build_that_writes_the_artifact_itself_leaves_nothing_when_it_fails(
        tmp_path: Path) -> None:
    loaded = load_scenario(_scenario(tmp_path, "mkdir -p out; printf PART1 > out/runner; exit 1"))
    with pytest.raises(UnitFailure, match="exit status 1"):
        build_artifacts(loaded)
    assert _left(tmp_path) == []
    assert not build_record_path(tmp_path / "out/runner").exists()


def test_a_timed_out_build_is_ended_with_its_children(tmp_path: Path) -> None:
    loaded = load_scenario(_scenario(tmp_path, "printf PART1 > {output}; export T23_MARK=slow; "
                                               "setsid sleep 1000 & sleep 1000"))
    with pytest.raises(UnitFailure, match="did not finish in 1 s"):
        build_artifacts(loaded, timeout=1.0)
    assert _left(tmp_path) == []
    assert not processes_with_env("T23_MARK", "slow")
