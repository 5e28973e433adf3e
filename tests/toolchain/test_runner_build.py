"""The runner build's logic without an SDK or a compiler: ELF reading, refused arguments and SDKs,
and a failing build step that names its log file (a stand-in cmake; the real builds are in
test_runner_real.py)."""

from __future__ import annotations

import platform
import shutil
import sys
import threading
from pathlib import Path

import pytest

from fvp_harness.errors import ConfigurationError
from fvp_harness.toolchain import runner_build
from tests.e2e.cli import run_cli
from tests.helpers import REPO

HOST = Path(sys.executable).resolve()


def _fake_sdk(root: Path, library: Path = HOST) -> Path:
    """A folder shaped like the wheel's SDK whose runtime library is ``library`` (an ELF of this
    host)."""
    (root / "include" / "executorch").mkdir(parents=True)
    (root / "share" / "cmake").mkdir(parents=True)
    (root / "share" / "cmake" / "executorch-config.cmake").write_text("")
    (root / "lib").mkdir()
    shutil.copyfile(library, root / "lib" / "libexecutorch.so")
    return root


def test_elf_machine_and_needed_of_a_host_binary() -> None:
    assert runner_build.elf_machine(HOST) == platform.machine()
    assert "libc.so.6" in runner_build.elf_needed(HOST)


def test_a_file_that_is_not_elf_is_refused(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a program\n" * 8)
    with pytest.raises(ConfigurationError, match="not a 64-bit little-endian ELF"):
        runner_build.elf_machine(text)


@pytest.mark.parametrize(
    ("arch", "variant", "message"),
    [("riscv64", "after", "--arch 'riscv64'"), ("x86_64", "sometimes", "--variant 'sometimes'")],
)
def test_bad_arguments_are_refused(tmp_path: Path, arch: str, variant: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        runner_build.build_runner(
            sdk=tmp_path,
            cmake=Path("cmake"),
            arch=arch,
            variant=variant,
            traced=False,
            output=tmp_path / "r",
            work=tmp_path,
        )


def test_a_folder_that_is_no_sdk_is_named(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigurationError, match=r"not an ExecuTorch SDK.*include/executorch is missing"
    ):
        runner_build.build_runner(
            sdk=tmp_path,
            cmake=Path("cmake"),
            arch="x86_64",
            variant="after",
            traced=False,
            output=tmp_path / "r",
            work=tmp_path,
        )


@pytest.mark.skipif(platform.machine() != "x86_64", reason="needs an x86_64 host")
def test_an_sdk_of_the_other_architecture_is_refused(tmp_path: Path) -> None:
    sdk = _fake_sdk(tmp_path / "sdk")
    with pytest.raises(ConfigurationError, match="built for x86_64, not aarch64"):
        runner_build.build_runner(
            sdk=sdk,
            cmake=Path("cmake"),
            arch="aarch64",
            variant="after",
            traced=False,
            output=tmp_path / "r",
            work=tmp_path,
        )


@pytest.mark.skipif(platform.machine() != "x86_64", reason="needs an x86_64 host")
def test_missing_cross_compiler_names_the_debian_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_build.shutil, "which", lambda _name: None)
    with pytest.raises(ConfigurationError, match="apt-get install g\\+\\+-aarch64-linux-gnu"):
        runner_build._toolchain_file("aarch64", runner_build.SOURCE_DIR)


def test_a_failing_build_step_names_its_log(tmp_path: Path) -> None:
    sdk = _fake_sdk(tmp_path / "sdk")
    cmake = tmp_path / "cmake"
    cmake.write_text("#!/bin/sh\necho 'CMake Error: something is wrong'\nexit 3\n")
    cmake.chmod(0o755)
    arch = platform.machine()
    with pytest.raises(runner_build.RunnerBuildError) as caught:
        runner_build.build_runner(
            sdk=sdk,
            cmake=cmake,
            arch=arch,
            variant="before",
            traced=True,
            output=tmp_path / "r",
            work=tmp_path / "work",
        )
    message = str(caught.value)
    log = next((tmp_path / "work").glob(f"runner-{arch}-before-traced-*/configure.log"))
    assert f"configuring the {arch} runner failed (exit 3); its output: {log}" in message
    assert (
        "CMake Error: something is wrong" in message and "-DFVP_RUNNER_TRACED=ON" in log.read_text()
    )
    assert not (tmp_path / "r").exists()


def test_cli_refuses_a_folder_that_is_no_sdk(tmp_path: Path) -> None:
    proc = run_cli(
        REPO,
        "toolchain",
        "runner",
        "--arch",
        "x86_64",
        "--variant",
        "after",
        "-o",
        str(tmp_path / "r"),
        "--sdk",
        str(tmp_path),
        "--cmake",
        "cmake",
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "not an ExecuTorch SDK" in proc.stderr and str(tmp_path) in proc.stderr


def test_two_callers_of_one_build_build_it_once(tmp_path: Path) -> None:
    sdk = _fake_sdk(tmp_path / "sdk")
    calls = tmp_path / "calls"
    cmake = tmp_path / "cmake"
    cmake.write_text(
        f'#!/bin/sh\necho "$1" >> {calls}\n'
        f'if [ "$1" = --build ]; then sleep 0.5; cp {HOST} "$2/executor_runner"; fi\n'
    )
    cmake.chmod(0o755)

    def build(name: str) -> None:
        runner_build.build_runner(
            sdk=sdk,
            cmake=cmake,
            arch=platform.machine(),
            variant="after",
            traced=False,
            output=tmp_path / name,
            work=tmp_path / "work",
        )

    threads = [threading.Thread(target=build, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert calls.read_text().split() == ["-S", "--build"]  # configured and compiled once
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes() == HOST.read_bytes()


def test_cli_takes_the_sdk_from_the_installed_toolchain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from fvp_harness import toolchain
    from fvp_harness.cli.main import main

    asked: list[str] = []

    class Installed:
        cmake = Path("cmake")

        def sdk(self, arch: str) -> Path:
            asked.append(arch)
            return tmp_path / f"sdk-{arch}"

    monkeypatch.setattr(toolchain, "find_toolchain", Installed, raising=False)
    argv = [
        "toolchain",
        "runner",
        "--arch",
        "aarch64",
        "--variant",
        "after",
        "-o",
        str(tmp_path / "r"),
    ]
    assert main(argv) == 2
    assert asked == ["aarch64"] and f"{tmp_path / 'sdk-aarch64'}: not an ExecuTorch SDK" in (
        capsys.readouterr().err
    )
