"""``build_toolchain`` and ``find_toolchain``'s logic with pip faked (the real build:
``test_real_toolchain.py``).

What must hold whatever pip does: torch is installed before executorch (executorch does not declare
it, and only the exact pin takes the CPU build), only ``include``, ``lib`` and ``share`` of the
aarch64 wheel are unpacked, the stamp is written last (a killed build is never current), a second
call does nothing, a changed pin rebuilds, and each failure says what is missing and where pip's
output is.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import zipfile
from collections import namedtuple
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import fvp_harness.toolchain as tc
from fvp_harness.errors import ConfigurationError
from tests.e2e.cli import run_cli
from tests.helpers import eventually

Usage = namedtuple("Usage", "total used free")


class FakePip:
    """Stands in for ``subprocess.run`` of the builder: makes the files each step would make,
    records the argv."""

    def __init__(self, fail_step: str = "") -> None:
        self.calls: list[list[str]] = []
        self.fail_step = fail_step

    def __call__(self, argv: Sequence[str], **_kwargs: Any) -> subprocess.CompletedProcess[str]:
        argv = list(argv)
        self.calls.append(argv)
        if self.fail_step and self.fail_step in argv:
            return subprocess.CompletedProcess(
                argv, 1, f"Collecting x\nERROR: No matching distribution for {self.fail_step}\n"
            )
        if argv[1:3] == ["-m", "venv"]:
            bin_dir = Path(argv[3]) / "bin"
            bin_dir.mkdir(parents=True)
            (bin_dir / "python").write_text("")
        elif "install" in argv and tc.EXECUTORCH_PIN in argv:
            python = Path(argv[0])
            (python.parent.parent / "lib/python3.11/site-packages/executorch/lib").mkdir(
                parents=True
            )
        elif "install" in argv and tc.CMAKE_PIN in argv:
            Path(argv[0]).with_name("cmake").write_text("")
        elif "download" in argv:
            folder = Path(argv[argv.index("-d") + 1])
            folder.mkdir(parents=True)
            with zipfile.ZipFile(
                folder / "executorch-1.5.1-cp311-cp311-manylinux_2_28_aarch64.whl", "w"
            ) as wheel:
                for name in (
                    "include/executorch/runtime/x.h",
                    "lib/libexecutorch.so",
                    "share/cmake/executorch-config.cmake",
                    "exir/__init__.py",
                    "data/bin/flatc",
                ):
                    wheel.writestr(f"executorch/{name}", "x")
        elif argv[1] == "-c":
            return subprocess.CompletedProcess(
                argv, 0, json.dumps({"torch": "2.13.0", "executorch": "1.5.1"})
            )
        return subprocess.CompletedProcess(argv, 0, "Successfully installed\n")


@pytest.fixture
def fake_pip(monkeypatch: pytest.MonkeyPatch) -> FakePip:
    fake = FakePip()
    monkeypatch.setattr(tc.process, "run_whole", fake)
    return fake


def test_a_build_installs_torch_first_unpacks_only_the_sdk_and_stamps_last(
    tmp_path: Path, fake_pip: FakePip
) -> None:
    lines: list[str] = []
    chain = tc.build_toolchain(tmp_path, log=lines.append)
    installs = [call for call in fake_pip.calls if "install" in call]
    assert [call[-1] for call in installs[:2]] == [tc.TORCH_PIN, tc.EXECUTORCH_PIN]
    assert installs[2][-4:] == [*tc.ARM_PINS, tc.CMAKE_PIN]
    download = next(call for call in fake_pip.calls if "download" in call)
    assert download[download.index("--platform") + 1] == "manylinux_2_28_aarch64"
    assert (
        download[download.index("--python-version") + 1]
        == f"{sys.version_info[0]}.{sys.version_info[1]}"
    )
    sdk = chain.sdk("aarch64")
    assert sdk == tmp_path / "sdk/aarch64/executorch"
    assert sorted(path.name for path in sdk.iterdir()) == ["include", "lib", "share"]
    assert chain.sdk("x86_64") == tmp_path / "venv/lib/python3.11/site-packages/executorch"
    stamp = json.loads((tmp_path / tc.STAMP).read_text())
    assert stamp["pins"]["torch"] == tc.TORCH_PIN and stamp["versions"]["executorch"] == "1.5.1"
    assert set(stamp["seconds"]) >= {"venv", "torch", "executorch", "aarch64 wheel", "total"}
    assert stamp["bytes"]["sdk_aarch64"] > 0 and not (tmp_path / "downloads").exists()
    assert tc.find_toolchain(tmp_path) == chain
    assert "=== torch:" in (tmp_path / "install.log").read_text()
    assert lines[-1].startswith("built in")

    fake_pip.calls.clear()
    again: list[str] = []
    assert tc.build_toolchain(tmp_path, log=again.append) == chain
    assert fake_pip.calls == [] and again[0].startswith("already current")


def test_a_killed_build_or_a_changed_pin_is_never_taken_as_current(
    tmp_path: Path, fake_pip: FakePip, monkeypatch: pytest.MonkeyPatch
) -> None:
    tc.build_toolchain(tmp_path)
    (tmp_path / tc.STAMP).unlink()  # what a build killed before its last step leaves
    with pytest.raises(
        tc.ToolchainError, match=r"no ExecuTorch toolchain .*fvp-harness toolchain build"
    ):
        tc.find_toolchain(tmp_path)
    fake_pip.calls.clear()
    tc.build_toolchain(tmp_path)
    assert fake_pip.calls and fake_pip.calls[0][1:3] == ["-m", "venv"], (
        "a half-made folder is rebuilt"
    )

    monkeypatch.setattr(tc, "EXECUTORCH_PIN", "executorch==1.6.0")
    with pytest.raises(tc.ToolchainError, match="built with other pins"):
        tc.find_toolchain(tmp_path)
    fake_pip.calls.clear()
    tc.build_toolchain(tmp_path)
    assert [call[-1] for call in fake_pip.calls if "executorch==1.6.0" in call][:1] == [
        "executorch==1.6.0"
    ]


def test_a_missing_piece_says_what_to_run(tmp_path: Path, fake_pip: FakePip) -> None:
    chain = tc.build_toolchain(tmp_path)
    chain.cmake.unlink()
    with pytest.raises(tc.ToolchainError, match=r"incomplete \(missing .*cmake\).*--force"):
        tc.find_toolchain(tmp_path)
    with pytest.raises(tc.ToolchainError, match="no ExecuTorch SDK for architecture 'riscv64'"):
        chain.sdk("riscv64")


def test_pip_failing_gives_its_last_lines_and_the_log_and_no_stamp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tc.process, "run_whole", FakePip(fail_step=tc.EXECUTORCH_PIN))
    with pytest.raises(tc.ToolchainError) as failed:
        tc.build_toolchain(tmp_path)
    message = str(failed.value)
    assert "executorch failed (exit 1)" in message and "No matching distribution" in message
    assert str(tmp_path / "install.log") in message
    assert isinstance(failed.value, ConfigurationError) and not (tmp_path / tc.STAMP).exists()


def test_too_little_disk_or_no_venv_module_is_refused_before_anything_runs(
    tmp_path: Path, fake_pip: FakePip, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tc.shutil, "disk_usage", lambda _path: Usage(10**10, 10**10 - 10**9, 10**9))
    with pytest.raises(
        tc.ToolchainError, match=r"not enough free disk .*1\.0 GB free.*2\.5 GB needed"
    ):
        tc.build_toolchain(tmp_path / "new" / "folder")
    monkeypatch.undo()
    monkeypatch.setattr(tc.process, "run_whole", fake_pip)
    real_find_spec = tc.importlib.util.find_spec
    monkeypatch.setattr(
        tc.importlib.util,
        "find_spec",
        lambda name: None if name == "ensurepip" else real_find_spec(name),
    )
    with pytest.raises(
        tc.ToolchainError, match=r"has no ensurepip module.*apt-get install python3-venv"
    ):
        tc.build_toolchain(tmp_path)
    assert fake_pip.calls == []


def test_the_default_folder_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(tc.ENV_VAR, str(tmp_path / "tc"))
    assert tc.default_toolchain_dir() == tmp_path / "tc"
    monkeypatch.delenv(tc.ENV_VAR)
    assert tc.default_toolchain_dir() == Path.home() / ".cache" / "fvp-harness" / "executorch"


def test_export_without_a_toolchain_exits_2_naming_the_build(tmp_path: Path) -> None:
    done = run_cli(
        tmp_path,
        "toolchain",
        "export",
        "ds_cnn",
        "--kind",
        "portable",
        "-o",
        "x.pte",
        "--dir",
        str(tmp_path / "none"),
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert f"fvp-harness toolchain build --dir {tmp_path / 'none'}" in done.stderr
    assert not (tmp_path / "x.pte").exists()


def test_a_command_that_outlives_its_timeout_is_ended_with_what_it_started(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = f"sleep 60 & echo $! > {pid_file}; echo started; wait"
    began = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as timed_out:
        tc.process.run_whole(["sh", "-c", script], timeout=1.0)
    assert time.monotonic() - began < 10 and "started" in (timed_out.value.output or "")
    child = int(pid_file.read_text())
    eventually(lambda: not _alive(child), timeout=5.0, interval=0.05)
    assert not _alive(child), "the command's own child outlived it"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[-1][:1] != "Z"
    except FileNotFoundError:
        return False
