"""The guest's gzip/gunzip/zcat applets, in-process (no boot): busybox 1.36's behaviour and
messages."""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import pytest

from fvp_harness.sim.clock import SimClock
from fvp_harness.sim.corstone1000.machine import Machine
from fvp_harness.sim.guest.fs import GuestFS
from fvp_harness.sim.knobs import parse_knobs
from tests.sim.guest.test_shell_language import Guest


@pytest.fixture
def guest() -> Iterator[Guest]:
    fs = GuestFS()
    try:
        yield Guest(Machine(fs, SimClock(), {}, parse_knobs({})))
    finally:
        fs.cleanup()


def test_gzip_then_gunzip_round_trips_and_replaces_the_input(guest: Guest) -> None:
    blob = bytes(range(256)) * 40
    guest.machine.fs.write("/tmp/blob", blob)
    assert guest.run("gzip /tmp/blob") == ("", "", 0)
    assert guest.run("ls /tmp/blob")[2] != 0
    packed = guest.machine.fs.read("/tmp/blob.gz")
    assert packed[:2] == b"\x1f\x8b" and len(packed) < len(blob) and gzip.decompress(packed) == blob
    assert guest.run("gunzip /tmp/blob.gz") == ("", "", 0)
    assert guest.machine.fs.read("/tmp/blob") == blob
    assert guest.run("ls /tmp/blob.gz")[2] != 0


def test_stdin_to_stdout_keep_and_pipelines(guest: Guest) -> None:
    assert guest.out("echo hello | gzip | gunzip") == "hello\n"
    assert guest.out("echo hi | gzip -c | zcat") == "hi\n"
    guest.machine.fs.write("/tmp/a", b"abc")
    assert guest.run("gzip -k /tmp/a")[2] == 0
    assert guest.machine.fs.read("/tmp/a") == b"abc"
    assert guest.out("gunzip -c /tmp/a.gz") == "abc"
    assert guest.run("gzip -d -t /tmp/a.gz") == ("", "", 0)


def test_busybox_messages_and_statuses(guest: Guest) -> None:
    assert guest.run("gunzip /tmp/none.gz") == (
        "", "gunzip: can't open '/tmp/none.gz': No such file or directory\n", 1)
    guest.machine.fs.write("/tmp/plain", b"x")
    assert (guest.run("gunzip /tmp/plain")
            == ("", "gunzip: /tmp/plain: unknown suffix - ignored\n", 1))
    guest.machine.fs.write("/tmp/bad.gz", b"not gzip")
    assert guest.run("gunzip /tmp/bad.gz") == ("", "gunzip: invalid magic\n", 1)
    guest.machine.fs.write("/tmp/cut.gz", gzip.compress(b"y" * 1000)[:12])
    assert guest.run("gunzip /tmp/cut.gz") == ("", "gunzip: corrupted data\n", 1)
    guest.machine.fs.write("/tmp/two", b"2")
    guest.machine.fs.write("/tmp/two.gz", gzip.compress(b"old"))
    assert guest.run("gzip /tmp/two") == ("", "gzip: can't open '/tmp/two.gz': File exists\n", 1)
    assert (guest.run("gzip -f /tmp/two")[2] == 0 and
            gzip.decompress(guest.machine.fs.read("/tmp/two.gz")) == b"2")
    _out, err, status = guest.run("gunzip -z x.gz")
    assert status == 1 and err.startswith("gunzip: invalid option -- 'z'\nBusyBox v1.36.1")
