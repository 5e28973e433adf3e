"""The releases table (sim/corstone1000/releases.py) against meta-arm, and everything that reads it:
boot text, ``--version``, the guest's files, the shell's answer for a runner whose loader the image
lacks.

meta-arm files cited per fact (meta-arm master 94e19cb2, 2026-06-30; tag CORSTONE1000-2025.12
4f9c4109): meta-arm-bsp/conf/machine/include/corstone1000.inc (versions, LINUX_KERNEL_ARGS at line
35), meta-arm/recipes-devtools/fvp/fvp-corstone1000-a320.bb (PV) and fvp-corstone1000.bb
(PV:cortexa320 at the tag), kas/corstone1000-firmware-only.yml (TCLIBC musl, Dropbear removed, MMC
invalid.dat), meta-arm-bsp/recipes-kernel/linux/files/corstone1000/ethosu.cfg
(CONFIG_DRM_ACCEL_ARM_ETHOSU=y).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from fvp_harness.sim.corstone1000.boot import boot_steps
from fvp_harness.sim.corstone1000.platform import SimulatedModel
from fvp_harness.sim.corstone1000.releases import RELEASES, UnknownRelease, image_of
from fvp_harness.sim.fvp.cmdline import parse_args, version_banner
from fvp_harness.sim.guest.io import IO, BytesStdin
from fvp_harness.sim.guest.shell import Shell
from fvp_harness.sim.knobs import parse_knobs
from fvp_harness.sim.networks.modelfile import RunnerArtifact, encode_runner


def _text(*knobs: str, ssh: bool = True) -> str:
    return "\n".join(step.text for step in boot_steps(parse_knobs({}, knobs), ssh=ssh))


@pytest.mark.parametrize("name", ["2026.05", "next"])
def test_todays_image_is_meta_arms(name: str) -> None:
    rel = RELEASES[name]
    # corstone1000.inc:35
    assert rel.kernel_cmdline == "earlycon=pl011,0x1a510000 console=ttyAMA0,115200"
    assert rel.fast_models == "11.31.cs1000_a320_2"  # fvp-corstone1000-a320.bb: PV
    # corstone1000.inc, the recipes
    assert (rel.tfa, rel.uboot, rel.optee) == ("2.14.2", "2025.10", "4.9.0")
    assert rel.linux.startswith("6.19")  # PREFERRED_VERSION_linux-yocto ?= "6.19%"
    assert rel.poky_codename == "wrynose"  # meta-arm-bsp/conf/layer.conf LAYERSERIES_COMPAT
    # corstone1000-firmware-only.yml
    assert (rel.libc, rel.dropbear, rel.mmc_image) == ("musl", False, False)
    assert (rel.npu_device, rel.npu_driver, rel.npu_dt_node) == (
        "/dev/accel/accel0",
        "drm-accel",
        "ethosu@1A050000",
    )
    # MACHINE, meta-arm-bsp/conf/machine/corstone1000-a320-fvp.conf
    assert rel.hostname == "corstone1000-a320-fvp"


def test_the_default_image_boots_as_it_always_has() -> None:
    """2025.12 keeps its text (stored results stay comparable); its Fast Models version is the tag's
    (fvp-corstone1000.bb PV:cortexa320 = 11.30.27) and its NPU the ethos-u kernel driver's
    /dev/ethosu0."""
    text = _text()
    assert "U-Boot 2023.07.02 (Jan 01 2025 - 00:00:00 +0000)" in text
    assert "Kernel command line: console=ttyAMA0 loglevel=9 earlycon=pl011,0x1a510000" in text
    assert "ethosu 1a050000.ethosu: Ethos-U85 NPU, 256 MACs, /dev/ethosu0" in text
    assert ("Starting ethos-u services: done." in text and
            "Starting Dropbear SSH server: dropbear." in text)
    assert "Poky (Yocto Project Reference Distro) 5.2 corstone1000-fvp ttyAMA0" in text
    assert "Fast Models [11.30.27 " in version_banner(fast_models=RELEASES["2025.12"].fast_models)


def test_todays_boot_text_reads_the_row() -> None:
    text = _text("release=2026.05", ssh=False)
    assert "NOTICE:  BL2: v2.14.2(debug):v2.14.2" in text and "U-Boot 2025.10 (" in text
    assert "Linux version 6.19.0-yocto-standard" in text and "aarch64-poky-linux-musl-gcc" in text
    assert "Kernel command line: earlycon=pl011,0x1a510000 console=ttyAMA0,115200" in text
    assert "[drm] Initialized ethosu 1.0.0 for 1a050000.ethosu on minor 0" in text
    assert "/dev/ethosu0" not in text and "ethos-u services" not in text and "Dropbear" not in text
    assert "Poky (Yocto Project Reference Distro) 6.0 corstone1000-a320-fvp ttyAMA0" in text


def test_kas_options_on_top_of_a_release() -> None:
    """``tclibc`` is local.conf's TCLIBC; ``ssh_fragment`` is kas/corstone1000-ssh.yml (Dropbear
    back)."""
    image = image_of(parse_knobs({}, ["release=2025.12", "tclibc=musl"]))
    assert (image.libc, image.loader, image.npu_device) == (
        "musl",
        "/lib/ld-musl-aarch64.so.1",
        "/dev/ethosu0",
    )
    assert image_of(parse_knobs({}, ["release=2026.05", "ssh_fragment=1"])).dropbear
    with pytest.raises(UnknownRelease, match=r"2025\.12, 2026\.05, next"):
        image_of(parse_knobs({}, ["release=1999"]))
    with pytest.raises(UnknownRelease, match="tclibc"):
        image_of(parse_knobs({}, ["tclibc=uclibc"]))


@pytest.fixture
def guest(request: pytest.FixtureRequest) -> Iterator[tuple[SimulatedModel, Shell]]:
    """The guest as the platform composes it for the knobs (``request.param``), without booting."""
    model = SimulatedModel(parse_args([]), parse_knobs({}, request.param))
    try:
        yield model, Shell(model.machine, interrupted=lambda: False)
    finally:
        model.fs.cleanup()


def _run(shell: Shell, line: str) -> tuple[str, str, int]:
    out, err = bytearray(), bytearray()
    status = shell.run_line(line + "\n", IO(out.extend, err.extend, BytesStdin(b""), None, None))
    return out.decode(), err.decode(), status


@pytest.mark.parametrize("guest", [["release=2026.05"]], indirect=True)
def test_todays_guest_files(guest: tuple[SimulatedModel, Shell]) -> None:
    _, shell = guest
    out, _, _ = _run(shell, "ls -1d /dev/ethosu0 /dev/accel/accel0 /lib/ld-musl-aarch64.so.1 "
                            "/lib/ld-linux-aarch64.so.1 /usr/sbin/dropbear")
    assert out.split() == ["/dev/accel/accel0", "/lib/ld-musl-aarch64.so.1"]
    assert _run(shell, "uname -r")[0] == "6.19.0-yocto-standard\n"
    assert _run(shell, "hostname")[0] == "corstone1000-a320-fvp\n"
    table = _run(shell, "df -kP /tmp")[0].splitlines()  # busybox df: what backs the guest's files
    assert table[0].split()[:2] == ["Filesystem", "1K-blocks"] and table[1].split()[-1] == "/"
    assert int(table[1].split()[3]) > 0


@pytest.mark.parametrize("guest", [["release=2026.05"]], indirect=True)
@pytest.mark.parametrize(("libc", "status"), [("glibc", 127), ("musl", 134), ("static", 134)])
def test_a_runner_without_its_loader_is_not_found(
    guest: tuple[SimulatedModel, Shell], libc: str, status: int
) -> None:
    """busybox ash: execve(2) fails with ENOENT when the ELF's PT_INTERP is missing, and ash reports
    the file itself: ``sh: ./runner: not found``, 127. With its loader there (musl) or none needed
    (static), the runner starts: here it aborts on the missing model file (file_data_loader.cpp:110,
    executor_runner.cpp:461, 134)."""
    model, shell = guest
    model.fs.write("/root/runner", encode_runner(RunnerArtifact("per-inference", libc=libc)))
    os.chmod(model.fs.host_path("/root/runner"), 0o755)
    _, err, got = _run(shell, "cd /root && ./runner --model_path=nothing.pte")
    assert got == status
    if status == 127:
        assert err == "sh: ./runner: not found\n"
    else:
        # started: the loader was there (the model is not)
        assert "Failed to open nothing.pte" in err
