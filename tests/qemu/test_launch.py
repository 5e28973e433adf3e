"""The QEMU profile kind without QEMU: the profile's rules, the argv, the one-group port banner, the
guest builder's refusals and its initramfs writer. Milliseconds; no marker."""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from fvp_harness import guest
from fvp_harness.errors import ConfigurationError
from fvp_harness.profiles import Profile, load_profile
from fvp_harness.targets.fvp import FvpProcess, build_launch


def _fvp(**fields: object) -> SimpleNamespace:
    base: dict[str, object] = {"binary": "sh", "params": {}, "args": [], "firmware": {}, "sim": {}}
    base.update(fields)
    return SimpleNamespace(**base)


def test_profile_is_a_qemu_linux_guest() -> None:
    profile = load_profile("qemu-aarch64-virt")
    assert profile.qemu and not profile.baremetal
    assert profile.params_option is None and profile.params == {}


def test_argv_is_qemus_own_command_line(tmp_path: Path) -> None:
    profile = load_profile("qemu-aarch64-virt")
    spec = build_launch(profile,
                        _fvp(firmware={"kernel": "Image", "initrd": "initrd.gz"},
                             args=["-m", "256"]),
                        ssh_port=42022, base_dir=tmp_path)
    assert "-C" not in spec.argv and "--stat" not in spec.argv
    assert "user,id=n0,hostfwd=tcp:127.0.0.1:42022-:22" in spec.argv
    assert spec.argv[-6:] == ["-kernel", str(tmp_path / "Image"), "-initrd",
                              str(tmp_path / "initrd.gz"), "-m", "256"]
    assert spec.ssh_ports == [42022] and not spec.simulated


def test_qemu_takes_no_dash_c_parameters() -> None:
    with pytest.raises(ConfigurationError, match="no -C parameters"):
        build_launch(load_profile("qemu-aarch64-virt"), _fvp(params={"x.y": 1}))


def test_a_qemu_profile_must_not_carry_fvp_parameters() -> None:
    data = load_profile("qemu-aarch64-virt").model_dump()
    data["params"] = {"board.x": 1}
    with pytest.raises(ValueError, match="no -C"):
        Profile.model_validate(data)


def test_the_one_group_banner_names_the_console(tmp_path: Path) -> None:
    profile = load_profile("qemu-aarch64-virt")
    process = FvpProcess(build_launch(profile, _fvp(), ssh_port=1), profile,
                         log_path=tmp_path / "fvp.log")
    process._on_line("QEMU waiting for connection on: disconnected:tcp:127.0.0.1:40123,server=on")
    assert process.ports == {"terminal_0": 40123}


def test_guest_build_refuses_without_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(ConfigurationError, match="needs root"):
        guest.build_guest(tmp_path)


def test_guest_build_names_missing_apt(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigurationError, match="apt-get"):
        guest.build_guest(tmp_path)


def test_a_current_guest_is_not_rebuilt(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    image = guest.guest_image(tmp_path)
    image.kernel.write_bytes(b"k")
    image.initrd.write_bytes(b"i")
    (tmp_path / "recipe").write_text(f"recipe {guest.RECIPE}\nlinux-image-x\n")
    monkeypatch.setenv("PATH", str(tmp_path))  # no apt: a rebuild would fail
    assert guest.build_guest(tmp_path) == image


def test_private_apt_state_leaves_the_systems_alone(tmp_path: Path) -> None:
    options = " ".join(guest.apt_options(tmp_path))
    for wanted in ("APT::Architecture=arm64", f"Dir::State::Lists={tmp_path}/lists",
                   f"Dir::State::status={tmp_path}/status", f"Dir::Cache={tmp_path}/cache"):
        assert wanted in options


def test_initramfs_is_a_newc_archive(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "busybox").write_bytes(b"\x7fELF")
    (tmp_path / "bin" / "sh").symlink_to("busybox")
    archive = guest._cpio(tmp_path)
    assert archive.startswith(b"070701") and b"TRAILER!!!" in archive
    assert b"bin/busybox\0" in archive and len(archive) % 4 == 0
    assert gzip.decompress(gzip.compress(archive)) == archive
