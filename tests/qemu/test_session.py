"""The session layer against a real kernel, busybox and dropbear: boot, login, framed commands, exit codes,
here-documents, pipes, procfs, transfers both ways on both paths. One boot serves the module (3-20 s under TCG)."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from fvp_harness.guest import GuestImage
from fvp_harness.profiles import load_profile
from fvp_harness.scenario.model import FvpConfig
from fvp_harness.targets.fvp_target import FvpTarget

pytestmark = [pytest.mark.qemu, pytest.mark.slow]


@pytest.fixture(scope="module")
def target(guest: GuestImage, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FvpTarget]:
    fvp = FvpConfig(binary="qemu-system-aarch64", firmware={"kernel": str(guest.kernel), "initrd": str(guest.initrd)})
    logs = tmp_path_factory.mktemp("qemu-logs")
    with FvpTarget(fvp, load_profile("qemu-aarch64-virt"), log_dir=logs) as booted:
        yield booted
    assert booted.process is not None and not booted.process.alive()


def test_boot_is_the_real_kernel_and_busybox(target: FvpTarget) -> None:
    assert target.metadata["version"] and str(target.metadata["version"])[0].isdigit()
    assert re.match(r"Linux \S+ 6\.\d+\.\d+-\d+-arm64 .* aarch64", target.run("uname -a").output)
    assert "Booting Linux on physical CPU" in (target.log_dir / "terminal_0.log").read_text()
    assert "BusyBox" in target.run("busybox 2>&1 | head -1").output


def test_exit_codes_pipes_and_here_documents(target: FvpTarget) -> None:
    assert target.run("false").exit_status == 1
    assert target.run("sh -c 'exit 7'").exit_status == 7
    assert target.run("printf 'b\\na\\n' | sort | head -1").output == "a\n"
    result = target.run("cat <<'EOF'\nline one\n$HOME stays\nEOF")
    assert result.output == "line one\n$HOME stays\n"


def test_procfs_and_hashing(target: FvpTarget) -> None:
    assert target.run("cat /proc/version").output.startswith("Linux version 6.")
    digest = hashlib.sha256(b"fvp-harness\n").hexdigest()
    assert target.run("echo fvp-harness | sha256sum").output.split()[0] == digest
    assert target.run("echo x | gzip -c | gzip -dc").output == "x\n"


@pytest.mark.parametrize("method", ["console", "ssh"])
def test_transfer_both_ways(target: FvpTarget, tmp_path: Path, method: str) -> None:
    local = tmp_path / "blob.txt"
    local.write_text("".join(f"{os.urandom(24).hex()}\n" for _ in range(256)))
    target.transfer = method  # type: ignore[assignment]
    try:
        target.put(local, f"/tmp/{method}.txt")
        assert target.get(f"/tmp/{method}.txt") == local.read_bytes()
    finally:
        target.transfer = "console"


def test_a_console_upload_announces_its_measured_rate(target: FvpTarget, tmp_path: Path,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    local = tmp_path / "random.bin"
    local.write_bytes(os.urandom(48 * 1024))  # incompressible: typed as base64, ~64 KiB over the UART
    with caplog.at_level("INFO", logger="fvp_harness.targets.transfer"):
        target.put(local, "/tmp/random.bin")
    said = [r.getMessage() for r in caplog.records if "console upload of /tmp/random.bin at" in r.getMessage()]
    assert said and re.search(r"at \d+\.\d KiB/s: the remaining \d+ KiB will take about \d+ s", said[0]), said
