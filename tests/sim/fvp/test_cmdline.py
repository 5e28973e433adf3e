"""The model's command line: what it prints and how it refuses bad input, before anything starts."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sim.conftest import ANY_PROMPT

pytestmark = pytest.mark.sim


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fvp_harness.sim", *args], capture_output=True,
                          text=True, timeout=60, env=env)


def test_version_banner_is_fast_models_style_and_honest() -> None:
    out = run("--version")
    assert out.returncode == 0
    first = out.stdout.splitlines()[0]
    assert re.fullmatch(r"Fast Models \[11\.\d+\.\d+ \(simulated by fvp-harness sim\)\]", first)
    assert "not an Arm product" in out.stdout


def test_help_lists_the_model_options() -> None:
    out = run("-h")
    assert out.returncode == 0
    for option in ("--parameter", "--data", "--stat", "--timelimit", "--simlimit", "--list-params",
                   "--sim"):
        assert option in out.stdout


def test_list_params_is_parseable_and_complete() -> None:
    out = run("--list-params")
    assert out.returncode == 0
    line = re.compile(r"^(\S+)=(\S*)\s+# \((bool|int|string)\s*, init-time\) default = '([^']*)' : "
                      r".+$")
    params = {}
    for text in out.stdout.splitlines():
        m = line.match(text)
        assert m, f"unparseable line: {text!r}"
        assert m.group(2) == m.group(4)
        params[m.group(1)] = m.group(2)
    for term in ("host.host_terminal_0", "host.host_terminal_1", "se.secenc_terminal"):
        assert params[f"{term}.start_port"] == "5000"
        assert params[f"{term}.mode"] == "telnet"
        assert f"{term}.start_telnet" in params and f"{term}.quiet" in params
    assert params["host.ethosu.num_macs"] == "256"
    for name in ("board.hostbridge.userNetworking", "board.hostbridge.userNetPorts",
                 "board.msd_mmc.p_mmc_file",
                 "disable_visualisation", "se.trustedBootROMloader.fname"):
        assert name in params


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["-C", "host.host_terminal_0.strat_port=5000"], "host.host_terminal_0.strat_port"),
        (["-C", "host.host_terminal_0.start_telnet=maybe"], "not a valid bool"),
        (["-C", "host.ethosu.num_macs=lots"], "not a valid int"),
        (["-C", "host.host_terminal_0.mode=serial"], "not telnet or raw"),
        (["-C", "disable_visualisation"], "expected NAME=VALUE"),
        (["--bogus"], "unrecognised option"),
        (["--data", "board.flash0=/nonexistent/image.wic@0x68000000"], "cannot open file"),
        (["-C", "board.virtio_net.enabled=maybe"], "not a valid bool"),
        (["-C", "board.virtio_net.hostbridge.userNetworking=on"], "not a valid bool"),
        (["-C", "board.xnvm_size=64MB"], "not a valid int"),
        (["-C", "board.msd_mmc_2.p_max_block_count=lots"], "not a valid int"),
        (["-C", "board.virtio_net.enabeld=1"], 'Parameter "board.virtio_net.enabeld" not found'),
        (["-C", "extsys_harness0.extsys_flashloader.fname=es_flashfw.bin"],
         "not found in the model"),
        (["-C", "se.trustedBootROMloader.fname=/nonexistent/bl1.bin"], "cannot open file"),
        (["--timelimit", "soon"], "expects a number"),
        (["--sim", "fault_bogus=1"], "unknown fault knob"),
        (["--sim", "boot_seconds=fast"], "not a number"),
        (["--sim", "release=1999"], "release"),
        # runner_utils.py:606
        (["-C", "host.ethosu.extra_args=--fast"], "does not model the NPU's fast mode"),
        (["--platform", "corstone320", "-C", "mps4_board.subsystem.ethosu.extra_args=-F"],
         "drop --fast"),
    ],
)
def test_bad_command_lines_are_refused_before_starting(args: list[str], needle: str) -> None:
    out = run(*args)
    assert out.returncode == 1
    assert needle in out.stderr
    assert "Listening for serial connection" not in out.stdout


def test_knob_from_environment_is_checked_too(tmp_path: Path) -> None:
    import os

    env = dict(os.environ, FVP_SIM_FAULT_PANIK="1")
    out = run("--version", env=env)
    assert out.returncode == 0  # --version does not read knobs
    out = run("-C", "host.host_terminal_0.start_port=70000", env=env)
    assert out.returncode == 1


def test_config_file_parameters(tmp_path: Path) -> None:
    cfg = tmp_path / "params.txt"
    cfg.write_text("# comment\nhost.ethosu.num_macs=512\nhost.nonsense=1\n")
    out = run("-f", str(cfg))
    assert out.returncode == 1
    assert "host.nonsense" in out.stderr


META_ARM_TYPES = {
    # every parameter meta-arm passes to the Corstone-1000 FVP
    # (meta-arm-bsp/conf/machine/corstone1000-fvp.conf and corstone1000-a320-fvp.conf, master
    # 2026-07-14; the kas files add board.msd_mmc.p_mmc_file=invalid.dat) and the type it has here
    "se.trustedBootROMloader.fname": "string",
    "board.xnvm_size": "int",
    "se.trustedSRAM_config": "int",
    "se.BootROM_config": "int",
    "board.hostbridge.interfaceName": "string",
    "board.smsc_91c111.enabled": "bool",
    "board.hostbridge.userNetworking": "bool",
    "board.hostbridge.userNetPorts": "string",
    "board.se_flash_size": "int",
    "diagnostics": "int",
    "disable_visualisation": "bool",
    "se.nvm.update_raw_image": "bool",
    "se.cryptocell.USER_OTP_FILTERING_DISABLE": "bool",
    "board.msd_mmc.card_type": "string",
    "board.msd_mmc.p_fast_access": "bool",
    "board.msd_mmc.diagnostics": "int",
    "board.msd_mmc.p_max_block_count": "int",
    "board.msd_config.pl180_fifo_depth": "int",
    "board.msd_mmc.support_unpadded_images": "bool",
    "board.msd_mmc.p_mmc_file": "string",
    "board.msd_mmc_2.card_type": "string",
    "board.msd_mmc_2.p_fast_access": "bool",
    "board.msd_mmc_2.diagnostics": "int",
    "board.msd_mmc_2.p_max_block_count": "int",
    "board.msd_config_2.pl180_fifo_depth": "int",
    "board.msd_mmc_2.support_unpadded_images": "bool",
    "board.msd_mmc_2.p_mmc_file": "string",
    "board.virtio_net.enabled": "bool",
    "board.virtio_net.hostbridge.interfaceName": "string",
    "board.virtio_net.hostbridge.userNetworking": "bool",
    "board.virtio_net.hostbridge.userNetPorts": "string",
    "board.virtio_net.transport": "string",
    "host.ethosu.num_macs": "int",
}


def test_list_params_has_every_meta_arm_parameter_with_its_type() -> None:
    out = run("--list-params")
    types = dict(re.findall(r"^(\S+?)=\S*\s+# \((\w+)\s*,", out.stdout, re.M))
    assert {name: types.get(name) for name in META_ARM_TYPES} == META_ARM_TYPES


def meta_arm_argv(images: Path, ssh_port: int, mmc_file: str | None = None) -> list[str]:
    """The argv meta-arm's runfvp builds for corstone1000-a320-fvp (meta-arm/lib/fvp/runner.py
    cli_from_config: ``--parameter`` per FVP_CONFIG, ``--data`` per FVP_DATA, ``start_telnet=0`` per
    terminal with --terminals=none) from the conf values, with the image files in ``images`` and
    host port 2222 replaced by ``ssh_port``."""
    forwards = f"5555=5555,8080=80,{ssh_port}=22"
    config = {
        "se.trustedBootROMloader.fname": str(images / "trusted-firmware-m" / "bl1.bin"),
        "board.xnvm_size": "64",
        "se.trustedSRAM_config": "6",
        "se.BootROM_config": "3",
        "board.hostbridge.interfaceName": "tap0",
        "board.smsc_91c111.enabled": "1",
        "board.hostbridge.userNetworking": "true",
        "board.hostbridge.userNetPorts": forwards,
        "board.se_flash_size": "8192",
        "diagnostics": "4",
        "disable_visualisation": "true",
        "se.nvm.update_raw_image": "0",
        "se.cryptocell.USER_OTP_FILTERING_DISABLE": "1",
        "board.msd_mmc.card_type": "SDHC",
        "board.msd_mmc.p_fast_access": "0",
        "board.msd_mmc.diagnostics": "0",
        "board.msd_mmc.p_max_block_count": "0xFFFF",
        "board.msd_config.pl180_fifo_depth": "16",
        "board.msd_mmc.support_unpadded_images": "true",
        "board.msd_mmc.p_mmc_file": mmc_file or
        str(images / "core-image-minimal-corstone1000-a320-fvp.wic"),
        "board.msd_mmc_2.card_type": "SDHC",
        "board.msd_mmc_2.p_fast_access": "0",
        "board.msd_mmc_2.diagnostics": "0",
        "board.msd_mmc_2.p_max_block_count": "0xFFFF",
        "board.msd_config_2.pl180_fifo_depth": "16",
        "board.msd_mmc_2.support_unpadded_images": "true",
        "board.msd_mmc_2.p_mmc_file": str(images
                                          / "corstone1000-esp-image-corstone1000-a320-fvp.wic"),
        "board.virtio_net.enabled": "1",
        "board.virtio_net.hostbridge.interfaceName": "eth1",
        "board.virtio_net.hostbridge.userNetworking": "true",
        "board.virtio_net.hostbridge.userNetPorts": forwards,
        "board.virtio_net.transport": "legacy",
        "host.ethosu.num_macs": "256",
    }
    assert set(config) == set(META_ARM_TYPES)
    argv: list[str] = []
    for name, value in config.items():
        argv += ["--parameter", f"{name}={value}"]
    argv += [
        "--data",
        f"board.flash0={images / 'corstone1000-flash-firmware-image-corstone1000-a320-fvp.wic'}"
             "@0x68000000"]
    for terminal in ("host.host_terminal_0", "host.host_terminal_1", "se.secenc_terminal"):
        argv += ["--parameter", f"{terminal}.start_telnet=0"]
    return argv


def _images(tmp_path: Path) -> Path:
    images = tmp_path / "deploy"
    (images / "trusted-firmware-m").mkdir(parents=True)
    (images / "trusted-firmware-m" / "bl1.bin").write_bytes(b"\0" * 1024)
    for name, size in (("corstone1000-flash-firmware-image-corstone1000-a320-fvp.wic", 1 << 20),
                       ("core-image-minimal-corstone1000-a320-fvp.wic", 3 << 20),
                       ("corstone1000-esp-image-corstone1000-a320-fvp.wic", 1 << 20)):
        with open(images / name, "wb") as fh:
            fh.truncate(size)
    return images


@pytest.mark.slow
@pytest.mark.parametrize("mmc_file", [None, "invalid.dat"], ids=["conf", "kas-invalid-dat"])
def test_meta_arms_command_line_boots_to_the_login_prompt(
    sim, free_ports, tmp_path: Path, mmc_file: str | None
) -> None:
    """The conf's own MMC image, and the kas files' ``invalid.dat`` ("ensure the Mass Storage device
    is absent"): a real model boots without a card, so the simulator does too, with a warning."""
    import asyncio

    import asyncssh

    port = free_ports(1)
    s = sim(*meta_arm_argv(_images(tmp_path), port, mmc_file),
            knobs={"release": "next", "ssh_fragment": "1"})
    t = s.term()
    boot = t.expect(b"corstone1000-a320-fvp login: ")
    assert b"Ethos-U85 NPU, 256 MACs" in boot
    assert (b"mmcblk0: mmc0:4567 FVP   3.0 MiB" in boot) is (mmc_file is None)
    assert ("cannot open MMC image 'invalid.dat'" in s.stdout) is (mmc_file is not None)
    t.send(b"root\n")
    t.expect(ANY_PROMPT)
    assert t.run("uname -n") == "corstone1000-a320-fvp\n"

    async def ssh() -> str:
        async with asyncssh.connect("127.0.0.1", port, username="root", password="",
                                    known_hosts=None) as conn:
            return (await conn.run("uname -n")).stdout

    # 2222=22 on both devices: one listener serves it
    assert asyncio.run(ssh()) == "corstone1000-a320-fvp\n"
