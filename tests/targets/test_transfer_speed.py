"""Faster deploys: gzip over the console when the guest has gunzip, and ``deploy.method: auto`` (ssh
when it answers, else the console, chosen once per instance)."""

from __future__ import annotations

import gzip
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from fvp_harness.errors import SshUnavailable
from fvp_harness.run.deploy import Deployer
from fvp_harness.sim.clock import SimClock
from fvp_harness.sim.corstone1000.machine import Machine
from fvp_harness.sim.guest.fs import GuestFS
from fvp_harness.sim.knobs import parse_knobs
from fvp_harness.targets.base import CommandResult
from fvp_harness.targets.fake import FakeTarget
from fvp_harness.targets.transfer import LINE_BUDGET, guest_can_gunzip, upload_console
from tests.sim.guest.test_shell_language import Guest


class ShellTarget:
    """The simulator's guest shell, in-process, as a ``Target`` (no boot): the real busybox-like
    applets."""

    def __init__(self, guest: Guest) -> None:
        self.guest, self.name, self.log_dir, self.metadata = guest, "shell", Path("."), {}
        self.commands: list[str] = []

    def run(self, command: str, timeout: float | None = None) -> CommandResult:
        self.commands.append(command)
        out, err, status = self.guest.run(command)
        return CommandResult(command, status, out + err)

    def open(self) -> None: ...
    def close(self) -> None: ...
    def put(self, local: Path, remote: str) -> None: raise NotImplementedError
    def get(self, remote: str) -> bytes: raise NotImplementedError


@pytest.fixture
def shell() -> Iterator[ShellTarget]:
    fs = GuestFS()
    try:
        yield ShellTarget(Guest(Machine(fs, SimClock(), {}, parse_knobs({}))))
    finally:
        fs.cleanup()


def test_a_compressible_file_goes_gzip_when_the_guest_has_gunzip(
    shell: ShellTarget, tmp_path: Path
) -> None:
    local = tmp_path / "runner"
    data = b"\x7fELF" + bytes(range(256)) * 200 + os.urandom(500)
    local.write_bytes(data)
    assert guest_can_gunzip(shell)
    assert upload_console(shell, local, "/opt/a/runner") == "gzip"
    assert shell.guest.machine.fs.read("/opt/a/runner") == data, (
        "sha256-checked in the guest, and intact")
    lines = [c for c in shell.commands if c.startswith("printf %s ") and ">>" in c]
    assert sum(len(c) for c in lines) < len(data), "fewer characters typed than the file has bytes"
    assert all(len(c) <= LINE_BUDGET for c in lines)
    random_file = tmp_path / "random"
    random_file.write_bytes(os.urandom(20000))
    assert upload_console(shell, random_file, "/opt/a/random") == "plain", (
        "incompressible: sent as it is")
    assert hashlib.sha256(shell.guest.machine.fs.read("/opt/a/random")).digest() == hashlib.sha256(
        random_file.read_bytes()).digest()


def test_a_guest_without_gunzip_gets_plain_base64(tmp_path: Path) -> None:
    fake = FakeTarget()  # the fake has no pipes and no gunzip: the probe fails, nothing breaks
    local = tmp_path / "model"
    local.write_bytes(b"a" * 5000)
    assert not guest_can_gunzip(fake)
    assert upload_console(fake, local, "/g/model") == "plain"
    assert fake.files["/g/model"] == b"a" * 5000
    # it would have compressed, had the guest been able to
    assert gzip.compress(b"a" * 5000) != b"a" * 5000


class SshFake(FakeTarget):
    """A fake whose ssh copies work, or refuse (``answers`` False), counting the attempts."""

    def __init__(self, answers: bool) -> None:
        super().__init__()
        self.answers, self.ssh_calls = answers, 0

    def ssh_put(self, local: Path, remote: str, timeout: float | None = None) -> str:
        self.ssh_calls += 1
        if not self.answers:
            raise SshUnavailable("no SSH server answered on 127.0.0.1:2222 (fake)")
        self.write(remote, Path(local).read_bytes())
        return "sftp"


def _files(tmp_path: Path) -> list[Path]:
    paths = [tmp_path / "runner", tmp_path / "model"]
    for path in paths:
        path.write_bytes(path.name.encode() * 100)
    return paths


def test_auto_uses_ssh_when_it_answers(tmp_path: Path) -> None:
    target = SshFake(answers=True)
    deployer = Deployer(target, method="auto", guest_dir="/g")
    methods = [deployer.deploy(path).method for path in _files(tmp_path)]
    assert methods == ["ssh/sftp", "ssh/sftp"] and deployer.transport == "ssh"


def test_auto_falls_back_to_the_console_once_per_instance(tmp_path: Path) -> None:
    target = SshFake(answers=False)
    deployer = Deployer(target, method="auto", guest_dir="/g")
    placed = [deployer.deploy(path) for path in _files(tmp_path)]
    assert [p.method for p in placed] == ["console", "console"]
    assert target.ssh_calls == 1, "the first file decides; the next ones do not wait for ssh again"
    assert (deployer.transport is not None and
            deployer.transport.startswith("console (ssh did not answer"))
    assert all(target.files[p.guest_path] == p.local.read_bytes() for p in placed)
    plain = Deployer(FakeTarget(), method="auto", guest_dir="/g")
    assert plain.deploy(_files(tmp_path)[0]).method == "console"
    assert plain.transport == "console (the target has no ssh)"


def test_the_instances_transport_reaches_the_manifest_and_the_report(tmp_path: Path) -> None:
    from fvp_harness.report.rendering.captions import context_line
    from fvp_harness.report.rendering.context import ReportContext  # late: only this test renders
    from fvp_harness.run.execute import default_deploy
    from fvp_harness.scenario.model import Scenario

    scenario = Scenario.model_validate({"name": "s", "builds": {"a": {"runner": "r"}},
                                        "models": {"m": {"file": "m"}},
                                        "deploy": {"method": "auto"}})
    target = SshFake(answers=False)
    default_deploy(scenario)(target, [(path, False) for path in _files(tmp_path)])
    assert str(target.metadata["deploy"]).startswith("console (ssh did not answer")
    context = ReportContext.from_manifest(
        {"instances": {"s0": {"deploy": "ssh"}, "s0.2": {"deploy": None}}}
    )
    assert context_line(context, [], []) == "deploy: s0 ssh"
