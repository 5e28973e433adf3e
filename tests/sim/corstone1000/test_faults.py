"""Every fault knob, seen from outside as the harness would see it."""

from __future__ import annotations

import asyncio
import re
import socket
import time

import asyncssh
import pytest

from tests.helpers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.sim]

LOGIN = b"corstone1000-fvp login: "
PROMPT = b"root@corstone1000-fvp:~# "
PANIC = b"Kernel panic - not syncing"


@pytest.mark.parametrize(("stage", "last_text"), [
    ("uboot", b"U-Boot 2023"), ("kernel", b"Linux version"), ("login", b"Poky (Yocto"),
])
def test_boot_hang_at_a_stage(sim, stage: str, last_text: bytes) -> None:
    s = sim(knobs={"fault_boot_hang": stage})
    t = s.term()
    t.expect(last_text)
    rest = t.read_for(1.5)  # well past the 0.4 s boot
    assert LOGIN not in rest
    assert s.proc.poll() is None  # still running, as a hung model does


def test_panic_during_boot(sim) -> None:
    s = sim(knobs={"fault_panic": "boot"})
    t = s.term()
    text = t.expect(b"---[ end Kernel panic - not syncing")
    assert PANIC in text and b"Booting Linux" in text
    t.send(b"root\n")
    assert LOGIN not in t.read_for(1.0)


def test_panic_at_nth_command(sim) -> None:
    s = sim(knobs={"fault_panic": 2})
    t = s.login()
    assert t.run("echo first") == "first\n"
    t.send(b"echo second\n")
    text = t.expect(b"---[ end Kernel panic")
    assert PANIC in text and b"second\r\n" not in text.split(b"echo second")[-1]
    t.send(b"echo third\n")
    assert b"third" not in t.read_for(1.0)


def test_console_drop_at_nth_command(sim) -> None:
    s = sim(knobs={"fault_console_drop": 1})
    t = s.login()
    t.send(b"echo bye\n")
    t.read_for(0.1)

    def closed() -> bool:
        t.read_for(0.2)  # reading is what notices the closed connection
        return t.closed

    wait_until(closed, timeout=20, interval=0, message="the simulator to drop the console")
    assert t.closed
    with socket.socket() as probe:
        # refused: nobody listens
        assert probe.connect_ex(("127.0.0.1", s.ports()["host_terminal_0"])) != 0
    assert s.proc.poll() is None


@pytest.mark.parametrize("when", ["boot", "2"])
def test_crash(sim, when: str) -> None:
    s = sim("--stat", knobs={"fault_crash": when})
    if when == "2":
        t = s.login()
        t.run("echo one")
        t.send(b"echo two\n")
    assert s.wait() == 139
    assert "Stopping" not in s.stdout and "statistics" not in s.stdout
    assert not s.guest_dirs()


def test_slow_console(sim) -> None:
    s = sim(knobs={"fault_slow_console": 4000})
    t = s.login()
    start = time.monotonic()
    t.send(b"printf '%0800d\\n' 0; printf '%0800d\\n' 0; printf '%0800d\\n' 0\n")
    t.expect(re.compile(rb"(0{800}\r\n){3}"))
    assert time.monotonic() - start >= 0.5  # 2.4 kB at 4 kB/s


def test_garbage_bytes(sim) -> None:
    s = sim(knobs={"fault_garbage": 0.5, "seed": 7})
    t = s.term()
    # early enough that the garbage cannot have hit it every time
    text = t.expect(b"Starting kernel")
    text += t.read_for(1.0)
    assert re.search(rb"[\x80-\xfe]", text)
    assert b"\xff" not in text


def test_refuse_ssh(sim, free_ports) -> None:
    port = free_ports(1)
    s = sim("-C", "board.hostbridge.userNetworking=true", "-C",
            f"board.hostbridge.userNetPorts={port}=22", knobs={"fault_refuse_ssh": "true"})
    s.login()

    async def go() -> None:
        with pytest.raises((OSError, asyncssh.Error)):
            await asyncssh.connect("127.0.0.1", port, username="root", password="",
                                   known_hosts=None, connect_timeout=10)

    asyncio.run(go())


def test_busy_ports(sim, free_ports) -> None:
    base = free_ports(8)
    args = []
    for prefix in ("host.host_terminal_0", "host.host_terminal_1", "se.secenc_terminal"):
        args += ["-C", f"{prefix}.start_port={base}", "-C", f"{prefix}.mode=raw"]
    s = sim(*args, knobs={"fault_busy_ports": 2}, default_ports=False)
    assert s.ports() == {"host_terminal_0": base + 2, "host_terminal_1": base + 3,
                         "secenc_terminal": base + 4}


STAMP = re.compile(rb"\[ *\d+\.\d{6}\] ")
KERNEL_LINE = re.compile(rb"\[ *\d+\.\d{6}\] (?:(?!\[ *\d+\.\d{6}\] )[^\r\n])*\r\n")
"""One printk line, innermost first: noise is inserted at any byte of the undelivered output (inside
an echo, a prompt, or another noise line), so the console is matched with these lines looked
through."""


def test_kernel_noise_lands_anywhere_and_dmesg_n_silences_it(sim) -> None:
    s = sim(knobs={"kernel_noise_rate": 40, "seed": 3})
    # the login prompt and the shell prompt may be split by noise too
    t = s.login(ignore=KERNEL_LINE)
    seen = t.read_for(1.0)
    assert STAMP.search(seen)
    t.send(b"dmesg -n 1\n")
    t.expect(b"dmesg -n 1\r\n")  # the echo, even with a kernel line landed in the middle of it
    t.expect(PROMPT)  # the command has run: from here the console loglevel is 1
    t.read_for(0.3)  # messages printk'd before the command, still on their way to the socket
    assert not STAMP.search(t.read_for(1.0))
