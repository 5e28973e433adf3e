"""Unit tests of the target layer's pure parts: text cleaning, kernel noise, telnet, deadlines,
argv, framing."""

from __future__ import annotations

import re
import socket
import threading
import time
from pathlib import Path

import pexpect
import pytest

from fvp_harness.errors import ConfigurationError, KernelPanic, PortError
from fvp_harness.profiles import Profile, load_profile
from fvp_harness.scenario.model import FvpConfig, Timeouts
from fvp_harness.targets.console import END_HEAD, START_HEAD, BootWatch, Console, frame_command
from fvp_harness.targets.deadline import Deadline, TimeoutBudget
from fvp_harness.targets.fvp import (
    OWNER_ENV,
    build_launch,
    find_free_port,
    format_param,
    parse_stat_block,
    resolve_binary,
    sim_environment,
)
from fvp_harness.targets.terminal import DO, DONT, IAC, WILL, WONT, TelnetCodec, Terminal
from fvp_harness.targets.text import KernelNoiseFilter, TextCleaner, clean_text, strip_ansi
from tests.helpers import wait_until


@pytest.fixture(scope="module")
def profile() -> Profile:
    return load_profile("corstone1000-a320")


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# -- text ------------------------------------------------------------------------------------------


def test_ansi_and_crlf_are_removed() -> None:
    assert strip_ansi("\x1b[1;34mBooting TF-M v2.2.2\x1b[0m") == "Booting TF-M v2.2.2"
    assert clean_text("a\r\nb\rc\x07\n") == "a\nbc\n"


def test_cleaner_keeps_split_sequences_until_complete() -> None:
    cleaner = TextCleaner()
    pieces = [b"\x1b[1;3", b"4mBoot \xe2\x82", b"\xac\r", b"\nnext\x1b", b"[0m\r", b"\r\n"]
    assert "".join(cleaner.feed(p) for p in pieces) + cleaner.flush() == "Boot €\nnext\n"


def test_cleaner_replaces_bad_utf8() -> None:
    assert TextCleaner().feed(b"ok \xff\xfe done\n") == "ok \ufffd\ufffd done\n"


def test_kernel_noise_mid_line_is_spliced_out() -> None:
    noise = KernelNoiseFilter()
    lines = noise.feed("__FH_E_ab[   12.345678] random: crng init done\ncd:1\n")
    assert lines == ["__FH_E_abcd:1\n"]
    assert noise.removed == ["[   12.345678] random: crng init done"]


def test_kernel_noise_whole_lines_and_pending_prompt() -> None:
    noise = KernelNoiseFilter()
    assert (noise.feed("[    1.000000] psci: failed\nout\ncorstone1000-fvp login: [ 5.1] late")
            == ["out\n"])
    assert noise.visible_tail() == "corstone1000-fvp login: "
    assert noise.feed(" msg\n") == []
    assert noise.pending == "corstone1000-fvp login: "


def test_kernel_noise_can_be_disabled() -> None:
    assert KernelNoiseFilter(None).feed("[ 1.0] dmesg line\n") == ["[ 1.0] dmesg line\n"]


# -- telnet ----------------------------------------------------------------------------------------


def test_telnet_accepts_echo_and_sga_refuses_others() -> None:
    codec = TelnetCodec()
    payload, reply = codec.feed(bytes([IAC, WILL, 1, IAC, WILL, 3, IAC, DO, 24, IAC, DO, 31])
                                + b"hi")
    assert payload == b"hi"
    assert reply == bytes([IAC, DO, 1, IAC, DO, 3, IAC, WONT, 24, IAC, WONT, 31])
    # the same request again is not answered again (no negotiation loops)
    assert codec.feed(bytes([IAC, WILL, 1]))[1] == b""
    assert codec.feed(bytes([IAC, DONT, 1]))[1] == bytes([IAC, WONT, 1])


def test_telnet_split_commands_subnegotiation_and_escaped_iac() -> None:
    codec = TelnetCodec()
    out = b""
    for piece in (b"a", bytes([IAC]), bytes([IAC, 0x62, IAC, 250, 24, 1, IAC]), bytes([240]), b"c"):
        out += codec.feed(piece)[0]
    assert out == b"a\xffbc"


def test_telnet_encode_escapes_iac_and_bare_cr() -> None:
    codec = TelnetCodec()
    assert codec.encode(b"a\xffb\rc\r\n") == b"a\xff\xffb\r\x00c\r\n"


# -- deadlines -------------------------------------------------------------------------------------


def test_deadline_child_is_capped_by_parent_and_message_names_the_limit() -> None:
    clock = FakeClock()
    outer = Deadline.after(10, "boot", clock=clock)
    inner = outer.child("ports", 60)
    clock.now += 4
    assert inner.remaining() == pytest.approx(6)
    assert inner.slice(0.1) == pytest.approx(0.1)
    clock.now += 7
    assert inner.expired
    text = inner.message("no port banner", log_path="logs/s0/fvp.log")
    assert "after 10 s (phase boot)" in text
    assert "see logs/s0/fvp.log" in text
    assert "raise fvp.timeouts.boot or pass --timeout-scale" in text


def test_budget_multiplies_scenario_and_cli_scale() -> None:
    budget = TimeoutBudget.from_config(Timeouts(boot=300, command=10), scenario_scale=2.0,
                                       cli_scale=1.5)
    assert budget["boot"] == 900
    assert budget.start("command").seconds == 30
    assert budget.start("command", seconds=4).seconds == 12
    with pytest.raises(ValueError):
        TimeoutBudget.from_config(Timeouts(), cli_scale=0)


# -- argv ------------------------------------------------------------------------------------------


def test_build_launch_for_sim(profile: Profile) -> None:
    fvp = FvpConfig(params={"host.ethosu.num_macs": 512},
                    args=["--simlimit", "100", "--data", "x@0"],
                    sim={"boot_seconds": 0.5, "fault_panic": "boot"})
    spec = build_launch(profile, fvp, ssh_port=40222,
                        environ={"FVP_SIM_STALE": "1", "PATH": "/bin"})
    argv = spec.argv
    assert argv[1:3] == ["-m", "fvp_harness.sim"]
    pairs = [argv[i + 1] for i, word in enumerate(argv) if word == "-C"]
    assert "host.ethosu.num_macs=512" in pairs
    assert "host.host_terminal_0.mode=raw" in pairs
    assert "board.hostbridge.userNetworking=true" in pairs
    assert "board.hostbridge.userNetPorts=40222=22" in pairs  # never the profile's fixed 2222
    assert not any(p.startswith("board.hostbridge.userNetPorts=2222") for p in pairs)
    virtio = spec.ssh_forwards["board.virtio_net.hostbridge.userNetPorts"]
    # a port of its own
    assert virtio != 40222 and f"board.virtio_net.hostbridge.userNetPorts={virtio}=22" in pairs
    assert spec.ssh_ports == [40222, virtio]  # both devices are on: tried in this order
    assert argv[-5:] == ["--simlimit", "100", "--data", "x@0", "--stat"]
    assert spec.env["FVP_SIM_BOOT_SECONDS"] == "0.5"
    assert spec.env["FVP_SIM_FAULT_PANIC"] == "boot"
    assert "FVP_SIM_STALE" not in spec.env
    assert spec.env[OWNER_ENV]
    assert spec.ssh_port == 40222


def test_build_launch_keeps_other_forwards_and_picks_free_ports(profile: Profile) -> None:
    fvp = FvpConfig(params={"board.hostbridge.userNetPorts": "5555=5555,2222=22"})
    first = build_launch(profile, fvp)
    second = build_launch(profile, fvp)
    assert first.ssh_port != second.ssh_port
    assert first.params["board.hostbridge.userNetPorts"] == f"5555=5555,{first.ssh_port}=22"


@pytest.mark.parametrize(
    ("switched_off", "live"),
    [
        ({"board.smsc_91c111.enabled": False}, ["board.virtio_net.hostbridge.userNetPorts"]),
        ({"board.virtio_net.hostbridge.userNetworking": "0"}, ["board.hostbridge.userNetPorts"]),
        ({"board.hostbridge.userNetworking": False, "board.virtio_net.enabled": 0}, []),
    ],
)
def test_ssh_is_tried_only_on_devices_that_are_switched_on(
    profile: Profile, switched_off: dict, live: list[str]
) -> None:
    spec = build_launch(profile, FvpConfig(params=switched_off), ssh_port=40222)
    assert list(spec.ssh_forwards) == profile.ssh_forward_params
    # every forward is rewritten, live or not: no fixed 2222 ever
    for name, port in spec.ssh_forwards.items():
        assert spec.params[name] == f"{port}=22"
    assert spec.ssh_ports == [spec.ssh_forwards[name] for name in live]
    assert spec.ssh_port == (spec.ssh_ports[0] if live else None)


def test_legacy_single_forward_profile_launches_as_before(profile: Profile) -> None:
    single = profile.model_copy(update={"ssh_forward_params": ["board.hostbridge.userNetPorts"],
                                        "ssh_forward_enabled_by": {}})
    spec = build_launch(single, FvpConfig(), ssh_port=40222)
    assert spec.ssh_ports == [40222] and spec.ssh_port == 40222
    # not a forward of this profile
    assert spec.params["board.virtio_net.hostbridge.userNetPorts"] == "2222=22"
    none = profile.model_copy(update={"ssh_forward_params": [], "ssh_forward_enabled_by": {}})
    assert build_launch(none, FvpConfig()).ssh_port is None


def test_build_launch_real_binary_with_firmware(profile: Profile, tmp_path: Path) -> None:
    fake = tmp_path / "FVP_Corstone-1000-A320"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    fvp = FvpConfig(binary=str(fake), firmware={"bl1": "bl1.bin", "flash": "/abs/flash.wic"},
                    sim={"fault_panic": "boot"})
    spec = build_launch(profile, fvp, base_dir=tmp_path)
    assert spec.argv[0] == str(fake.resolve())
    assert f"se.trustedBootROMloader.fname={tmp_path / 'bl1.bin'}" in spec.argv
    assert spec.argv[spec.argv.index("--data") + 1] == "board.flash0=/abs/flash.wic@0x68000000"
    assert not any(k.startswith("FVP_SIM_") for k in spec.env)  # knobs are for the simulator only
    with pytest.raises(ConfigurationError, match="does not know"):
        build_launch(profile, FvpConfig(binary=str(fake), firmware={"bogus": "x"}))


def test_missing_binary_is_a_configuration_error(profile: Profile) -> None:
    with pytest.raises(ConfigurationError, match="--fvp"):
        resolve_binary("FVP_Does_Not_Exist_Anywhere", profile)


def test_format_param_and_env() -> None:
    assert format_param(True) == "true"
    assert format_param(0) == "0"
    assert sim_environment({"speed": 0.5}, {"A": "b"}) == {"A": "b", "FVP_SIM_SPEED": "0.5"}


def test_stat_block_parse() -> None:
    lines = [
        "Info: Simulation is stopping.",
        "--- FVP_Corstone-1000-A320 statistics: ------------------------------------------",
        "Simulated time                          : 0.512973s",
        "User time                               : 186.070583s",
        "host.cpu0                               :   0.03 MIPS (     5735052 Inst)",
        "-------------------------------------------------------------------------------",
        "after",
    ]
    stat = parse_stat_block(lines)
    assert stat["Simulated time"] == "0.512973s"
    assert stat["host.cpu0"] == "0.03 MIPS (     5735052 Inst)"
    assert "after" not in stat


def test_free_port_is_bindable() -> None:
    port = find_free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_port_banner_is_searched_not_anchored(profile: Profile) -> None:
    pattern = re.compile(profile.port_banner)
    match = pattern.search("terminal x.host_terminal_0: Listening for serial connection on port "
                           "5003")
    assert match and match.group(1, 2) == ("host_terminal_0", "5003")


# -- framing and watch -----------------------------------------------------------------------------


def test_frame_command_never_contains_its_own_markers() -> None:
    line = frame_command("false ;", "abc123")
    assert START_HEAD + "abc123" not in line
    assert END_HEAD + "abc123" not in line
    assert "; false; " in line
    assert line.endswith("$?")
    several = frame_command("cat <<'EOF'\nx\nEOF\n", "t")  # the end marker on a line of its own
    assert several.split("\n")[1:3] == ["x", "EOF"] and several.split("\n")[3].endswith("$?")
    with pytest.raises(ValueError):
        frame_command("a\rb", "t")


def test_boot_watch_stages_failures_and_benign(profile: Profile) -> None:
    watch = BootWatch(profile)
    watch.on_line("secenc_terminal", "[INF] Starting TF-M BL1_1")
    watch.on_line("host_terminal_0", "U-Boot 2023.07 (Oct 01 2023)")
    watch.on_line("host_terminal_0", "[    0.1] psci: failed to boot CPU1 (-95)")
    watch.on_line("host_terminal_1", "mmap_add_region_check() failed. error -22")
    assert watch.failure is None
    assert watch.last_stage == "U-Boot"
    watch.on_line("host_terminal_0", "[    2.5] Kernel panic - not syncing: VFS")
    assert watch.failure is not None and watch.failure.terminal == "host_terminal_0"
    assert watch.failed.is_set()


# -- a terminal over a real socket -----------------------------------------------------------------


def _serve_once(payloads: list[bytes], received: list[bytes], until: bytes) -> int:
    """A one-connection server: sends ``payloads``, keeps what the client sends (``received[0]`` is
    its first read) until ``until`` has arrived, then closes."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def run() -> None:
        conn, _ = server.accept()
        conn.settimeout(5.0)
        for payload in payloads:
            conn.sendall(payload)
            time.sleep(0.05)  # separate writes, as a console makes them (not a synchronisation)
        try:
            received.append(conn.recv(1024))
            while until not in b"".join(received):  # the client's last words, then hang up
                data = conn.recv(1024)
                if not data:
                    break
                received.append(data)
        except OSError:
            pass
        conn.close()
        server.close()

    threading.Thread(target=run, daemon=True).start()
    return server.getsockname()[1]


def test_terminal_drains_logs_and_matches_with_pexpect(tmp_path: Path) -> None:
    received: list[bytes] = []
    port = _serve_once([bytes([IAC, WILL, 1]) + b"\x1b[1mBoot\x1b[0m\r\n", b"login: "], received,
                       until=b"root")
    seen: list[str] = []
    term = Terminal("host_terminal_0", port, log_path=tmp_path / "t.log", mode="telnet")
    term.add_line_listener(lambda name, line: seen.append(line))
    term.connect(Deadline.after(5, "boot"))
    try:
        assert term.spawn.expect([r"login: $"], timeout=5) == 0
        term.send("root\n")
        wait_until(lambda: "< login: " in (tmp_path / "t.log").read_text(),
                   message="the unfinished prompt line in the terminal log")
        assert term.spawn.expect([pexpect.EOF], timeout=5) == 0
    finally:
        term.close()
    assert seen == ["Boot"]
    assert received and received[0].startswith(bytes([IAC, DO, 1]))
    log = (tmp_path / "t.log").read_text()
    assert re.search(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} < Boot$", log, re.M)
    assert "> root" in log
    assert "< login: " in log
    assert term.tail() == ["Boot", "login: "]


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ("[ERROR] Secure partition 1 failed to start", "host_terminal_1"),
        ("ERROR: x", "host_terminal_0"),
        ("[ERR] Image validation failed", "host_terminal_1"),
        ("ERROR:   BL2: Failed to load image id 3", "host_terminal_0"),
    ],
)
def test_a_firmware_error_line_fails_the_boot_as_a_kernel_panic(
    profile: Profile, tmp_path: Path, line: str, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """meta-arm's boot check, on any console: the boot fails at once (no waiting for the boot
    timeout) with an infrastructure error that names the terminal and the line."""
    # no call trace follows these lines
    monkeypatch.setattr("fvp_harness.targets.console.PANIC_GRACE_S", 0.05)
    boot = {"host_terminal_0": [b"NOTICE:  BL31: v2.12.0(debug):v2.12.0\r\n",
                                # benign
                                b"ERROR:   mmap_add_region_check() failed. error -22\r\n"],
            "host_terminal_1": [b"I/TC: Primary CPU initializing\r\n"]}
    boot[where].append(line.encode() + b"\r\n")
    terminals = {}
    try:
        # no login prompt ever comes: only the failure can end the wait
        for name, payloads in boot.items():
            terminal = Terminal(name, _serve_once(payloads, [], until=b"\0"),
                                log_path=tmp_path / f"{name}.log")
            terminals[name] = terminal
        watch = BootWatch(profile)
        for terminal in terminals.values():
            watch.attach(terminal)
            terminal.connect(Deadline.after(5, "boot"))
        console = Console(terminals["host_terminal_0"], profile, watch, terminals=terminals)
        began = time.monotonic()
        with pytest.raises(KernelPanic) as caught:
            console.wait_for_login_prompt(Deadline.after(20, "boot"))
    finally:
        for terminal in terminals.values():
            terminal.close()
    assert time.monotonic() - began < 10
    error = caught.value
    assert error.failure_class == "infrastructure" and error.stage == "boot"
    assert f"{where} reported a failure during boot: {line!r}" in str(error)
    assert error.log_path == tmp_path / f"{where}.log"
    assert line in error.last_lines


def test_terminal_connect_refused_is_a_port_error(tmp_path: Path) -> None:
    term = Terminal("host_terminal_0", find_free_port(), log_path=tmp_path / "t.log")
    with pytest.raises(PortError, match="could not connect to host_terminal_0"):
        term.connect(Deadline.after(0.3, "boot"))
