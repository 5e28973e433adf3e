"""The kind of a target (``run.unit.kind_of``): chosen once from the abilities it declares, and
what deploy and a unit then ask of it instead of the target's class; ``errors.storing``, the one
rewrap of a storage failure."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from fvp_harness.errors import StorageError, storing
from fvp_harness.run.deploy import Deployer
from fvp_harness.run.guest_unit import GuestCommands, HostProcess
from fvp_harness.run.launch_unit import ModelLaunch
from fvp_harness.run.unit import kind_of
from fvp_harness.targets.baremetal import BaremetalLaunch, LaunchResult
from fvp_harness.targets.fake import FakeTarget
from fvp_harness.targets.host import HostTarget


class _Launcher(HostTarget):
    """A host target that also launches models (as ``BaremetalTarget`` does)."""

    def launch(self, request: BaremetalLaunch, timeout: float | None = None) -> LaunchResult:
        return LaunchResult(command="FVP", exit_status=0, output="")


def test_a_guest_a_host_and_a_launching_target_each_get_their_kind(tmp_path: Path) -> None:
    guest = kind_of(FakeTarget())
    assert type(guest) is GuestCommands and guest.ssh is None and not guest.in_place
    assert guest.guest_dir() is None  # the scenario's guest folder
    with HostTarget(log_dir=tmp_path / "h") as host:
        kind = kind_of(host)
        assert (type(kind) is HostProcess and kind.guest_dir() == host.guest_dir and
                not kind.in_place)
    with _Launcher(log_dir=tmp_path / "b") as bare:
        kind = kind_of(bare)
        assert type(kind) is ModelLaunch and kind.in_place and kind.guest_dir() == bare.guest_dir


def test_a_guest_units_line_runs_in_the_unit_phase() -> None:
    fake = FakeTarget()
    kind = kind_of(fake)
    assert isinstance(kind, GuestCommands)
    kind.run_unit("true", 5.0)
    assert fake.phases == ["unit"]  # a timeout message then names fvp.timeouts.unit


def test_deploy_asks_the_kind_a_host_copy_and_a_launch_in_place(tmp_path: Path) -> None:
    local = tmp_path / "model.pte"
    local.write_bytes(b"model")
    with HostTarget(log_dir=tmp_path / "h") as host:
        copied = Deployer(host, method="console").deploy(local)
        assert copied.method == "host" and copied.guest_path.startswith(host.guest_dir)
    with _Launcher(log_dir=tmp_path / "b") as bare:
        kept = Deployer(bare, method="console").deploy(local)
        assert kept.method == "in place" and kept.guest_path == str(local)


def test_storing_names_the_file_of_a_storage_failure_and_passes_any_other(tmp_path: Path) -> None:
    path = tmp_path / "unit.log"
    with pytest.raises(StorageError, match=f"cannot write {path}: .*ENOSPC"), storing(path):
        raise OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(FileNotFoundError), storing(path):
        raise FileNotFoundError(errno.ENOENT, "gone")
