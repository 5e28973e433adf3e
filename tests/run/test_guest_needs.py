"""``run.guest_needs``: what a runner needs of the guest, read from the file, and the problems the
guest's answer shows, each naming its fix.

Facts imitated: ExecuTorch's delegate opens /dev/ethosu0
(backends/arm/runtime/EthosUBackend_Cortex_A.cpp:44); meta-arm 2026.05 has the accel driver's
/dev/accel/accel0 instead (recipes-kernel/linux/files/corstone1000/ethosu.cfg); the A320 image is
musl and has no Dropbear (kas/corstone1000-firmware-only.yml).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from fvp_harness.errors import ConfigurationError
from fvp_harness.profiles import load_profile
from fvp_harness.run.guest_needs import (
    RunnerNeeds,
    check_answer,
    check_guest,
    deploy_kib,
    free_kib,
    needs_command,
    not_found_problem,
    runner_needs,
)
from fvp_harness.sim.networks.modelfile import RunnerArtifact, encode_runner


def _elf(interp: str | None) -> bytes:
    """A minimal little-endian ELF64 (aarch64) with one program header: PT_INTERP naming ``interp``,
    or PT_LOAD."""
    phoff, phentsize = 64, 56
    data_at = phoff + phentsize
    payload = (interp.encode() + b"\0") if interp else b""
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header += struct.pack("<HHIQQQIHHHHHH", 2, 183, 1, 0, phoff, 0, 0, 64, phentsize, 1, 64, 0, 0)
    ptype = 3 if interp else 1
    phdr = struct.pack("<IIQQQQQQ", ptype, 4, data_at, 0, 0, len(payload), len(payload), 1)
    return header + phdr + payload


@pytest.mark.parametrize(("content", "libc", "loader"), [
    (_elf("/lib/ld-musl-aarch64.so.1"), "musl", "/lib/ld-musl-aarch64.so.1"),
    (_elf("/lib/ld-linux-aarch64.so.1"), "glibc", "/lib/ld-linux-aarch64.so.1"),
    (_elf(None), "static", None),
    (encode_runner(RunnerArtifact("reuse")), "glibc", "/lib/ld-linux-aarch64.so.1"),
    (encode_runner(RunnerArtifact("reuse", libc="musl")), "musl", "/lib/ld-musl-aarch64.so.1"),
    (encode_runner(RunnerArtifact("reuse", libc="static")), "static", None),
])  # fmt: skip
def test_what_a_runner_file_needs(tmp_path: Path, content: bytes, libc: str,
                                  loader: str | None) -> None:
    path = tmp_path / "runner"
    path.write_bytes(content)
    assert runner_needs("b", path, "/dev/ethosu0") == RunnerNeeds("b", libc, loader, "/dev/ethosu0")


def test_a_sim_build_for_another_node_and_a_platform_without_npu(tmp_path: Path) -> None:
    path = tmp_path / "runner"
    path.write_bytes(encode_runner(RunnerArtifact("reuse", npu_device="/dev/ethosu1")))
    assert runner_needs("b", path, "/dev/ethosu0").npu_device == "/dev/ethosu1"
    assert runner_needs("b", path, None).npu_device is None
    script = tmp_path / "script"
    script.write_text("#!/bin/sh\necho hi\n")
    assert runner_needs("b", script, "/dev/ethosu0") == RunnerNeeds("b")
    assert (runner_needs("b", tmp_path / "unbuilt", "/dev/ethosu0")
            == RunnerNeeds("b", npu_device="/dev/ethosu0"))


STOCK = RunnerNeeds("before", "glibc", "/lib/ld-linux-aarch64.so.1", "/dev/ethosu0")
AFTER = RunnerNeeds("after", "glibc", "/lib/ld-linux-aarch64.so.1", "/dev/ethosu0")


def test_the_one_question_and_a_good_answer() -> None:
    command = needs_command([STOCK, AFTER], ssh=True)
    assert command is not None and command.startswith("ls -1d /dev/ethosu0 /dev/accel/accel0 ")
    assert "/usr/sbin/dropbear" in command and command.count("/dev/ethosu0") == 1
    answer = "/dev/ethosu0\n/lib/ld-linux-aarch64.so.1\n/usr/sbin/dropbear\n"
    assert check_answer([STOCK, AFTER], answer, ssh=True) == []
    assert needs_command([RunnerNeeds("x")], ssh=False) is None


def test_todays_image_names_both_nodes_and_the_fix() -> None:
    [problem, libc] = check_answer([STOCK, AFTER], "/dev/accel/accel0\n/lib/ld-musl-aarch64.so.1\n",
                                   ssh=False)
    assert problem.startswith("builds.before, builds.after: the runner opens /dev/ethosu0")
    assert ("/dev/accel/accel0" in problem and
            "Fix: boot an image with the ethos-u kernel driver" in problem)
    assert "fvp.sim.release=2025.12" in problem
    assert ("linked against glibc" in libc and "this is a musl image" in libc and
            "statically" in libc)


def test_musl_and_static_runners_on_a_musl_image_with_the_ethos_u_driver() -> None:
    """``fvp.sim.tclibc=musl`` on 2025.12: /dev/ethosu0 and only the musl loader; a glibc runner is
    refused."""
    musl = RunnerNeeds("before", "musl", "/lib/ld-musl-aarch64.so.1", "/dev/ethosu0")
    static = RunnerNeeds("after", "static", None, "/dev/ethosu0")
    answer = "/dev/ethosu0\n/lib/ld-musl-aarch64.so.1\n"
    assert check_answer([musl, static], answer, ssh=False) == []
    [problem] = check_answer([STOCK], answer, ssh=False)
    assert (problem.startswith("builds.before: the runner is linked against glibc") and
            "musl image" in problem)


def test_ssh_asked_of_an_image_without_a_server() -> None:
    [problem] = check_answer([], "", ssh=True)
    assert ("no ssh server" in problem and "kas/corstone1000-ssh.yml" in problem and
            "deploy.method: console" in problem)


def test_check_guest_asks_once_and_raises_a_configuration_error(tmp_path: Path) -> None:
    from fvp_harness.scenario.model import Scenario

    runner = tmp_path / "runner"
    runner.write_bytes(encode_runner(RunnerArtifact("reuse")))
    scenario = Scenario.model_validate({
        "name": "x", "platform": "corstone1000-a320", "builds": {"a": {"runner": str(runner)}},
        "models": {"m": {"file": str(runner)}}, "run": {"command": "{runner}"}})  # fmt: skip
    asked: list[str] = []

    def ask(command: str) -> str:
        asked.append(command)
        return "/dev/accel/accel0\n/lib/ld-linux-aarch64.so.1\n"

    with pytest.raises(ConfigurationError,
                       match=r"builds\.a: the runner opens /dev/ethosu0") as caught:
        check_guest(ask, scenario, load_profile("corstone1000-a320"), ["a"])
    assert caught.value.exit_code == 2 and len(asked) == 1
    # no NPU, not asked
    assert check_guest(ask, scenario, load_profile("qemu-aarch64-virt"), ["a"]) == {}


def test_a_units_not_found_for_a_deployed_runner_is_the_images_fault() -> None:
    runners = {"before": "/data/fh/abc/executor_runner"}
    output = "sh: /data/fh/abc/executor_runner: not found\n"
    problem = not_found_problem(output, 127, runners, {"before": STOCK})
    assert (problem is not None and "builds.before" in problem and
            "/lib/ld-linux-aarch64.so.1" in problem)
    assert not_found_problem(output, 1, runners, {}) is None
    assert not_found_problem("sh: gunzip: not found\n", 127, runners, {}) is None


BUSYBOX_DF = """Filesystem           1024-blocks    Used Available Capacity Mounted on
tmpfs                   1015544        12   1015532   0% /tmp
"""  # busybox df -kP (coreutils/df.c's POSIX format)


def test_free_space_for_the_deploy() -> None:
    assert free_kib(BUSYBOX_DF) == 1015532 and free_kib("sh: df: not found\n") is None
    # all files + the largest's base64 copy
    assert deploy_kib([3 * 1024 * 1024, 1024]) == 3 * 1024 + 1 + 4 * 1024
    assert check_answer([], BUSYBOX_DF, ssh=False, need_kib=1015532, space_dir="/tmp") == []
    [problem] = check_answer([], BUSYBOX_DF, ssh=False, need_kib=2_000_000, space_dir="/tmp")
    assert "needs about 2000000 KiB in /tmp" in problem and "1015532 KiB free" in problem
    assert "deploy.guest_dir" in problem
    # no df: not checked
    assert check_answer([], "", ssh=False, need_kib=2_000_000, space_dir="/tmp") == []
    command = needs_command([], ssh=False, space_dir="/tmp")
    assert command == "df -kP /tmp 2>/dev/null; true"
