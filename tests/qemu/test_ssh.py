"""What the real guest's ssh showed (issue 25), each checked on the real dropbear: procfs files read over SFTP
(their reported size is 0), and the host key algorithm the client picks (ed25519, which dropbear really has, not the
RSA it offers and then fails on or makes slowly)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fvp_harness.guest import GuestImage
from fvp_harness.profiles import load_profile
from fvp_harness.scenario.model import FvpConfig
from fvp_harness.targets.fvp_target import FvpTarget

pytestmark = [pytest.mark.qemu, pytest.mark.slow]


@pytest.fixture(scope="module")
def target(guest: GuestImage, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FvpTarget]:
    fvp = FvpConfig(binary="qemu-system-aarch64", firmware={"kernel": str(guest.kernel), "initrd": str(guest.initrd)})
    with FvpTarget(fvp, load_profile("qemu-aarch64-virt"), log_dir=tmp_path_factory.mktemp("qemu-ssh"),
                   transfer="ssh") as booted:
        yield booted


def test_procfs_reads_over_ssh_are_not_empty(target: FvpTarget) -> None:
    data = target.get("/proc/version")
    assert data.startswith(b"Linux version 6.") and data == target.run("cat /proc/version").output.encode()


def test_the_client_takes_the_ed25519_host_key(target: FvpTarget) -> None:
    ssh = target.ssh
    assert "dropbear" in (ssh.server_version or "").lower()
    key = ssh._require().get_server_host_key()
    assert key is not None and key.algorithm == b"ssh-ed25519"
