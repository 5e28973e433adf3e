"""Terminals: port banners, stepping past busy ports, raw and telnet modes, boot text, backlog,
reconnects."""

from __future__ import annotations

import re
import socket

import pytest

from tests.helpers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.sim]

PROMPT = b"root@corstone1000-fvp:~# "
TIMESTAMP = re.compile(rb"\[ {0,4}\d+\.\d{6}\] ")


def test_banner_names_every_terminal_in_order(sim) -> None:
    s = sim()
    ports = s.ports()
    assert list(ports) == ["host_terminal_0", "host_terminal_1", "secenc_terminal"]
    values = list(ports.values())
    assert values == [values[0], values[0] + 1, values[0] + 2]


def test_start_port_taken_steps_to_next(sim, free_ports) -> None:
    base = free_ports()
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", base))
    blocker.listen(1)
    try:
        args = []
        for prefix in ("host.host_terminal_0", "host.host_terminal_1", "se.secenc_terminal"):
            args += ["-C", f"{prefix}.start_port={base}", "-C", f"{prefix}.mode=raw"]
        s = sim(*args, default_ports=False)
        ports = s.ports()
        assert ports == {"host_terminal_0": base + 1, "host_terminal_1": base + 2,
                         "secenc_terminal": base + 3}
        s.login()  # and the stepped port really is the console
    finally:
        blocker.close()


def test_quiet_terminal_has_no_banner_line(sim) -> None:
    s = sim("-C", "host.host_terminal_1.quiet=1")
    s.ports(2)
    text = s.wait_stdout(lambda t: "secenc_terminal" in t)
    assert "host_terminal_1:" not in text


def test_boot_text_lands_on_the_right_terminals(sim) -> None:
    s = sim()
    console = s.term("host_terminal_0")
    uart1 = s.term("host_terminal_1")
    secenc = s.term("secenc_terminal")
    boot = console.expect(b"corstone1000-fvp login: ")
    assert b"NOTICE:  BL2: v2." in boot and b"U-Boot 20" in boot
    assert b"Hit any key to stop autoboot:  3" in boot
    assert b"Booting Linux on physical CPU 0x0000000000 [0x410fd8f0]" in boot
    assert b"Machine model: ARM Corstone1000-A320 FVP (Fixed Virtual Platform)" in boot
    assert b"psci: failed to boot CPU1 (-95)" in boot
    assert b"ARM FF-A: Notification setup failed -95, not enabled" in boot
    assert len(TIMESTAMP.findall(boot)) > 20
    stamps = [float(m) for m in re.findall(rb"\[ *(\d+\.\d+)\] ", boot)]
    assert stamps == sorted(stamps) and stamps[-1] > 0
    assert b"\r\n" in boot and b"I/TC:" not in boot and b"[INF]" not in boot
    tee = uart1.expect(b"Primary CPU switching to normal world boot")
    assert b"I/TC: OP-TEE version" in tee
    tfm = secenc.expect(b"TF-M isolation level")
    assert b"[INF] Starting TF-M BL1_1\r\n" in tfm
    assert b"\x1b[1;34mBooting TF-M v2.2.2\x1b[0m\r\n" in tfm


def test_newer_release_has_newer_hostname(sim) -> None:
    s = sim(knobs={"release": "next"})
    t = s.term()
    t.expect(b"corstone1000-a320-fvp login: ")
    t.send(b"root\n")
    t.expect(b"root@corstone1000-a320-fvp:~# ")
    assert "No such file" in t.run("ls /dev/ethosu0", prompt=b"root@corstone1000-a320-fvp:~# ")


def test_output_before_connect_is_kept_and_bounded(sim, tmp_path) -> None:
    copy = tmp_path / "uart0.log"
    s = sim("-C", f"host.uart0.out_file={copy}", knobs={"backlog_bytes": 1024})
    s.ports()
    # wait, without connecting, until the console has printed its login prompt (uart0.out_file shows
    # it)
    wait_until(lambda: b"login: " in (copy.read_bytes() if copy.exists() else b""), timeout=30,
               message="the login prompt in host.uart0.out_file")
    full = copy.read_bytes()
    assert b"Booting Linux" in full and len(full) > 3000
    t = s.term()
    got = t.expect(b"corstone1000-fvp login: ")
    assert len(got) <= 1024
    assert b"Booting Linux" not in got  # the oldest bytes were dropped
    assert full.endswith(got)


def test_reconnect_and_new_connection_replaces_old(sim) -> None:
    s = sim()
    t = s.login()
    t.close()
    t2 = s.term()
    t2.send(b"echo back\n")
    t2.expect(b"back\r\n" + PROMPT)
    t3 = s.term()  # a second client takes over; the first is closed
    t3.send(b"echo third\n")
    t3.expect(b"third\r\n" + PROMPT)
    assert t2.read_for(0.5) == b"" or t2.closed


def test_telnet_mode_negotiates_and_escapes_iac(sim) -> None:
    s = sim("-C", "host.host_terminal_0.mode=telnet")
    t = s.term(telnet=True)
    t.expect(b"login: ")
    assert t.raw.startswith(bytes([255, 251, 1]))  # IAC WILL ECHO first
    # a client's DO SGA, then CR NUL as telnet sends Enter
    t.send(bytes([255, 253, 3]) + b"root\r\0")
    t.expect(PROMPT)
    t.send(b"printf '\\377\\n'\r\n")
    t.expect(PROMPT)
    assert b"\xff\xff\r\n" in t.raw  # the 0xff data byte was doubled on the wire


def test_raw_mode_passes_bytes_untouched(sim) -> None:
    s = sim()
    t = s.login()
    t.send(b"printf '\\377\\001\\n'\n")
    out = t.expect(PROMPT)
    assert b"\xff\x01\r\n" in out
    assert not t.raw.startswith(b"\xff")


def test_unread_terminals_do_not_stall_the_model(sim) -> None:
    """Nobody connects to anything: the model still boots and answers later."""
    s = sim(knobs={"backlog_bytes": 1024})
    s.ports()
    t = s.login()
    assert t.run("echo alive").strip().endswith("alive")
