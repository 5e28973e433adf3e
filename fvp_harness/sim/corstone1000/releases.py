"""The Corstone-1000 A320 images the simulator can boot, as data: one row per meta-arm release.

Why a table: the boot text, ``--version``, the guest's file system (hostname, device nodes, dynamic
loaders, whether Dropbear is installed) and the programs that read them must agree about which image
is running. Each of them reads its facts from the row the ``release`` knob names, so a release is
added by adding a row, not by adding ``if``s.

Where each fact comes from (meta-arm file, or "not verified") is in docs/simulator.md, "Releases".
In short:

- ``2025.12`` is the simulator's default image, kept exactly as it has always booted so every stored
  result and every shipped scenario's numbers stay as they are. Its Fast Models version (11.30.27)
  and kernel command line match meta-arm's CORSTONE1000-2025.12 tag; its firmware and kernel version
  strings are the simulator's older plausible ones (meta-arm's tag builds TF-A 2.13.0, U-Boot
  2025.04, linux-yocto 6.12): the row says so in ``verified``.
- ``2026.05`` is what meta-arm's CORSTONE1000-2026.05 image gives: linux-yocto 6.19 with the in-tree
  DRM accel driver (``/dev/accel/accel0``, no ``/dev/ethosu0``), musl
  (kas/corstone1000-firmware-only.yml), no Dropbear and no MMC image.
- ``next`` is meta-arm master, which builds the same image today.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fvp_harness.sim.knobs import Knobs

__all__ = ["DEFAULT_RELEASE", "LOADERS", "RELEASES", "Release", "UnknownRelease", "get_release",
           "image_of"]


LOADERS: dict[str, str] = {
    "glibc": "/lib/ld-linux-aarch64.so.1",
    "musl": "/lib/ld-musl-aarch64.so.1",
}
"""The dynamic loader (ELF ``PT_INTERP``) an aarch64 program linked against each C library names."""


class UnknownRelease(ValueError):
    """A ``release`` knob that names no row of the table."""


@dataclass(frozen=True)
class Release:
    """One image: what its boot prints and what its guest holds."""

    name: str
    meta_arm: str  # the meta-arm ref the facts were checked against
    tfm: str  # TF-M version the Secure Enclave banner shows
    tfa: str  # TF-A BL2/BL31 version string
    optee: str
    uboot: str  # U-Boot banner version
    linux: str  # kernel release (uname -r)
    linux_build: str  # kernel version (uname -v)
    gcc: str  # the cross GCC the kernel log names
    binutils: str
    poky: str  # Poky version the getty banner shows
    poky_codename: str
    kernel_cmdline: str  # the "Kernel command line:" the kernel log shows
    fast_models: str  # Fast Models version of the FVP meta-arm fetches (--version)
    hostname: str
    libc: str  # "glibc" or "musl": which dynamic loader exists in /lib
    dropbear: bool  # an ssh server is installed and started
    # meta-arm's kas passes an MMC image (False: invalid.dat, "the device is absent")
    mmc_image: bool
    npu_device: str  # the device node of the NPU
    # "ethos-u" (ethos-u-linux-driver-stack kernel module) or "drm-accel" (in-tree accel/ethosu)
    npu_driver: str
    npu_dt_node: str  # the device-tree node name of the NPU
    verified: str  # what was checked against meta-arm and what was not

    @property
    def loader(self) -> str:
        """The dynamic loader this image has (``LOADERS[libc]``)."""
        return LOADERS[self.libc]


_TODAY = dict(
    tfm="2.2.2",
    tfa="2.14.2",
    optee="4.9.0",
    uboot="2025.10",
    linux="6.19.0-yocto-standard",
    linux_build="#1 SMP PREEMPT Tue Apr 14 00:00:00 UTC 2026",
    gcc="15.2.0",
    binutils="2.46",
    poky="6.0",
    poky_codename="wrynose",
    kernel_cmdline="earlycon=pl011,0x1a510000 console=ttyAMA0,115200",
    fast_models="11.31.cs1000_a320_2",
    hostname="corstone1000-a320-fvp",
    libc="musl",
    dropbear=False,
    mmc_image=False,
    npu_device="/dev/accel/accel0",
    npu_driver="drm-accel",
    npu_dt_node="ethosu@1A050000",
)

RELEASES: dict[str, Release] = {
    "2025.12": Release(
        name="2025.12",
        meta_arm="CORSTONE1000-2025.12 (4f9c4109)",
        tfm="2.2.2",
        tfa="2.12.0",
        optee="4.4.0",
        uboot="2023.07.02",
        linux="6.12.20-yocto-standard",
        linux_build="#1 SMP PREEMPT Wed Jan  1 00:00:00 UTC 2025",
        gcc="14.2.0",
        binutils="2.44",
        poky="5.2",
        poky_codename="walnascar",
        kernel_cmdline="console=ttyAMA0 loglevel=9 earlycon=pl011,0x1a510000",
        fast_models="11.30.27",
        hostname="corstone1000-fvp",
        libc="glibc",
        dropbear=True,
        mmc_image=True,
        npu_device="/dev/ethosu0",
        npu_driver="ethos-u",
        npu_dt_node="ethosu@1a050000",
        verified="Fast Models 11.30.27 (fvp-corstone1000.bb PV:cortexa320) and the ethos-u driver "
                 "(meta-ethos, arm-npu-ethosu) are the tag's; the version strings are the "
                 "simulator's historical ones, kept so results stay comparable (the tag builds "
                 "TF-A 2.13.0, U-Boot 2025.04, linux-yocto 6.12, OP-TEE 4.7.0); glibc, Dropbear "
                 "and the MMC image are a full image's, not firmware-only.yml's",
    ),
    "2026.05": Release(
        name="2026.05",
        meta_arm="CORSTONE1000-2026.05 (facts read at master 94e19cb2, 2026-06-30)",
        verified="TF-A, U-Boot, linux-yocto, OP-TEE, TF-M, the command line, Fast Models, musl, "
                 "Dropbear, MMC and the accel driver are meta-arm's; the kernel patch level, GCC, "
                 "binutils and the dates are not verified",
        **_TODAY,  # type: ignore[arg-type]
    ),
    "next": Release(
        name="next",
        meta_arm="master (94e19cb2, 2026-06-30; no change against 2026.05 known)",
        verified="as 2026.05: master builds the same image in the stored snapshot",
        **_TODAY,  # type: ignore[arg-type]
    ),
}
"""Every release the ``release`` knob accepts, by name."""

DEFAULT_RELEASE = "2025.12"


def get_release(name: str) -> Release:
    """The row for ``name``; raises ``UnknownRelease`` naming the choices."""
    try:
        return RELEASES[name]
    except KeyError:
        raise UnknownRelease(f"knob release: {name!r} is not one of "
                             f"{', '.join(RELEASES)}") from None


def image_of(knobs: Knobs) -> Release:
    """The image that boots: the ``release`` knob's row with the build options a user may add on
    top, as meta-arm's kas files do: ``tclibc`` (``TCLIBC`` in local.conf, which
    kas/corstone1000-firmware-only.yml sets to musl) and ``ssh_fragment`` (kas/corstone1000-ssh.yml,
    which adds Dropbear)."""
    release = get_release(knobs.release)
    if knobs.tclibc:
        if knobs.tclibc not in LOADERS:
            raise UnknownRelease(f"knob tclibc: {knobs.tclibc!r} is not one of "
                                 f"{', '.join(LOADERS)}")
        release = replace(release, libc=knobs.tclibc)
    if knobs.ssh_fragment:
        release = replace(release, dropbear=True)
    return release
