"""Leftovers of dead processes are collected, and nothing else (issue 36, finding 5): each owned
folder records its owner by pid, start time and boot, so a reused pid is not mistaken for the
owner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fvp_harness.run.artifacts import STAGING_PATTERN, build_artifacts
from fvp_harness.scenario import load_scenario
from fvp_harness.sim.guest.fs import GuestFS
from fvp_harness.targets.host import HostTarget
from fvp_harness.targets.leftovers import OWNER_FILE, Owner, collect, owner_of, write_owner

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")


def _dead_owner() -> Owner:
    """A process that has exited (its pid may be reused later: the start time tells them apart)."""
    proc = subprocess.Popen(["sleep", "30"])
    owner = Owner.of(proc.pid)
    proc.kill()
    proc.wait()
    assert owner is not None and not owner.alive()
    return owner


def _folder(parent: Path, name: str, owner: Owner | None, size: int = 1000) -> Path:
    folder = parent / name
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "data").write_bytes(b"x" * size)
    if owner is not None:
        write_owner(folder, owner)
    return folder


def test_only_folders_of_dead_owners_are_removed_and_counted(tmp_path: Path) -> None:
    dead = _folder(tmp_path, "fvp-harness-host-dead", _dead_owner(), size=5000)
    live = _folder(tmp_path, "fvp-harness-host-live", Owner.of())
    unknown = _folder(tmp_path, "fvp-harness-host-unknown", None)
    other = _folder(tmp_path, "someone-else", _dead_owner())
    (tmp_path / "fvp-harness-host-link").symlink_to(dead)
    done = collect([tmp_path], "fvp-harness-host-*")
    assert done.folders == (dead,) and not dead.exists()
    assert done.size >= 5000 and "removed 1 leftover folder" in done.describe()
    assert live.is_dir() and unknown.is_dir() and other.is_dir(), (
        "a live, an unprovable and a foreign folder stay")


def test_a_reused_pid_is_not_taken_for_the_owner(tmp_path: Path) -> None:
    me = Owner.of()
    assert me is not None
    # this pid, another process (started at another time)
    impostor = Owner(me.pid, me.start + 1, me.boot)
    folder = _folder(tmp_path, "fvp-sim-reused", impostor)
    assert not impostor.alive()
    assert collect([tmp_path], "fvp-sim-*").folders == (folder,)


def test_the_simulator_writes_an_owner_record_the_harness_reads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    fs = GuestFS()
    try:
        assert fs.holder.parent == tmp_path.resolve() and owner_of(fs.holder) == Owner.of()
        assert not (fs.root / OWNER_FILE).exists(), (
            "the record is beside the guest's root, not in it")
        assert not collect([tmp_path], "fvp-sim-*").folders, "a live model's root stays"
        record = json.loads((fs.holder / OWNER_FILE).read_text())
        record["start"] += 1  # as if the model had died and its pid were reused
        (fs.holder / OWNER_FILE).write_text(json.dumps(record))
        assert collect([tmp_path], "fvp-sim-*").folders == (fs.holder,)
    finally:
        fs.cleanup()


def test_opening_a_host_target_removes_dead_working_folders(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    dead = _folder(tmp_path, "fvp-harness-host-old", _dead_owner())
    with HostTarget(log_dir=tmp_path / "logs") as target:
        assert not dead.exists()
        assert target.workdir is not None and owner_of(target.workdir) == Owner.of()
        assert not collect([tmp_path], "fvp-harness-host-*").folders, (
            "the open target's folder is live")


def test_a_build_removes_staging_folders_of_dead_harnesses_only(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    dead = _folder(out, ".runner.building-dead", _dead_owner())
    live = _folder(out, ".runner.building-live", Owner.of())
    unknown = _folder(out, ".model.building-unknown", None)
    path = tmp_path / "s.yaml"
    path.write_text("name: b\nbuilds:\n  a: {runner: out/runner, build: 'printf r > {output}'}\n"
                    "models:\n  m: {file: m.model}\n")
    (tmp_path / "m.model").write_text("m")
    build_artifacts(load_scenario(path))
    assert (out / "runner").read_text() == "r"
    assert not dead.exists() and live.is_dir() and unknown.is_dir()
    assert (sorted(p.name for p in out.glob(STAGING_PATTERN))
            == [".model.building-unknown", ".runner.building-live"])
    assert os.path.exists(out / ".runner.build")
