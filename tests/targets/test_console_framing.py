"""A console that garbles text or loses framing is the platform's failure, found at once; a hung
command is not.

A scripted guest shell on a socket answers the harness's framed commands and damages exactly the
part a test names (line noise as it arrives from a real UART: bytes that are not UTF-8, mixed into a
line). No simulator is booted.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fvp_harness.cli.progress import LOG_WIDTH, fit_line
from fvp_harness.errors import ConsoleLost, InfrastructureError
from fvp_harness.profiles import load_profile
from fvp_harness.targets.console import BootWatch, CommandTimeout, Console, ConsoleGarbled, garbled
from fvp_harness.targets.deadline import Deadline
from fvp_harness.targets.terminal import Terminal

FRAMED = re.compile(r"printf '%s%s\\n' __FH_S_ (\w+); (.*); printf '\\n%s%s:%s\\n' __FH_E_ \w+ "
                    r"\$\?$")
STREAMED = re.compile(r"(.*); printf '%s%s:%s:%s\\n' __FH_A_ (\w+) (\d+) \$\?$")
NOISE = b"\xfe\x9f\xc3"  # not UTF-8: what line noise leaves
ASCII_NOISE = b"\xc3\x28\x9f"  # the same with an ASCII byte in it ("(" after a bad lead byte)


def _noisy(text: str, at: int, noise: bytes = NOISE) -> bytes:
    raw = text.encode()
    return raw[:at] + noise + raw[at:]


def _answer(line: str) -> bytes:
    """The scripted shell: the command's body names what to damage."""
    stream = STREAMED.match(line)
    if stream:
        body, token, index = stream.groups()
        ack = f"__FH_A_{token}:{index}:0\n"
        return _noisy(ack, 9) if body == "noisy-ack" else ack.encode()
    framed = FRAMED.match(line)
    if not framed:
        return b"sh: syntax error\n" if line.strip() not in ("", "\x03") else b""
    token, body = framed.groups()
    start, end = f"__FH_S_{token}\n", f"\n__FH_E_{token}:0\n"
    if body == "swallow":  # the typed line never reached the shell intact: nothing runs
        return b""
    if body.split(" ", 1)[0] == "hang":  # also with arguments: a runner's long command line
        return start.encode()
    if body == "noisy-start":
        return _noisy(start, 10) + b"ok" + end.encode()
    if body == "noisy-end":
        return start.encode() + b"ok" + _noisy(end, 12)
    if body == "noisier-end":
        return start.encode() + b"ok" + _noisy(end, 12, ASCII_NOISE)
    if body == "noisy-output":
        return start.encode() + _noisy("cpu_time 1.25 ms", 4) + end.encode()
    return start.encode() + body.encode() + end.encode()


@pytest.fixture
def console(tmp_path: Path) -> Iterator[Console]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def serve() -> None:
        conn, _ = server.accept()
        pending = b""
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                pending += data
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    conn.sendall(_answer(line.decode("utf-8", "replace")))
        except OSError:
            pass
        finally:
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    profile = load_profile("corstone1000-a320")
    terminal = Terminal("host_terminal_0", server.getsockname()[1],
                        log_path=tmp_path / "host_terminal_0.log")
    terminal.connect(Deadline.after(5, "boot"))
    try:
        yield Console(terminal, profile, BootWatch(profile))
    finally:
        terminal.close()
        server.close()
        thread.join(timeout=5)


def test_a_clean_command_is_exact(console: Console) -> None:
    result = console.run("hello", deadline=Deadline.after(5, "command"))
    assert (result.exit_status, result.output) == (0, "hello")


@pytest.mark.parametrize(("body", "what"),
                         [("noisy-start", "the start of"), ("noisy-end", "the end marker of"),
                                            ("noisy-output", "the output of")])
def test_line_noise_in_a_framed_command_is_infrastructure_at_once(
    console: Console, body: str, what: str
) -> None:
    began = time.monotonic()
    with pytest.raises(ConsoleGarbled) as caught:
        console.run(body, deadline=Deadline.after(30, "unit"), stage="unit")
    assert time.monotonic() - began < 5, "no waiting for the deadline"
    error = caught.value
    assert (isinstance(error, ConsoleLost | InfrastructureError) and
            error.failure_class == "infrastructure")
    assert f"garbled {what} {body!r} during unit" in str(error)
    assert error.log_path == console.log_path and str(console.log_path) in str(error)
    assert console.state == "lost"


def test_output_with_invalid_bytes_is_kept_when_not_strict(console: Console) -> None:
    """``get`` over the console reads files this way: their sha256 decides, not the console."""
    result = console.run("noisy-output", deadline=Deadline.after(5, "deploy"), strict=False)
    assert garbled(result.output) and result.output.endswith("1.25 ms")


def test_a_noisy_console_that_loses_an_end_marker_is_infrastructure(console: Console) -> None:
    """Not strict, the noise in the end marker (with an ASCII byte in it) hides it: at the deadline
    the console that showed noise is blamed, not the command."""
    with pytest.raises(ConsoleGarbled, match="no end marker for command 'noisier-end'"):
        console.run("noisier-end", deadline=Deadline.after(0.5, "deploy"), strict=False)


def test_a_command_that_never_started_is_a_lost_console_not_a_hung_runner(console: Console) -> None:
    with pytest.raises(ConsoleLost) as caught:
        console.run("swallow",
                    deadline=Deadline.after(0.5, "deploy", config_key="fvp.timeouts.deploy"),
                    stage="deploy")
    error = caught.value
    assert not isinstance(error, CommandTimeout) and error.failure_class == "infrastructure"
    message = str(error)
    assert "command 'swallow' never started" in message and "(phase deploy)" in message
    assert "raise fvp.timeouts.deploy" in message, "the deadline that expired, by its setting"
    assert str(console.log_path) in message


def test_a_started_command_that_hangs_is_still_the_commands_failure(console: Console) -> None:
    with pytest.raises(CommandTimeout) as caught:
        console.run("hang", deadline=Deadline.after(0.5, "unit", config_key="fvp.timeouts.unit"),
                    stage="unit")
    assert caught.value.failure_class == "test" and caught.value.exit_status == 124
    assert "raise fvp.timeouts.unit" in str(caught.value)


def test_a_hung_command_s_timeout_says_what_it_waited_for_before_the_command(
        console: Console) -> None:
    """A runner's command line is long (guest paths of every artifact): quoted first, it filled the
    one failure line ``run`` prints (``CommandTimeout: command
    '/tmp/fvp-harness/…/executor_runner-before --m…``), so the line never said that a timeout
    expired, after how long, or which setting to raise. The command now comes last, as the host
    target's timeout puts it."""
    command = "hang " + " ".join(f"--arg{i}=/tmp/fvp-harness/{'0123456789abcdef'}/file{i}.bin"
                                 for i in range(5))
    with pytest.raises(CommandTimeout) as caught:
        console.run(command, deadline=Deadline.after(0.5, "unit", config_key="fvp.timeouts.unit"),
                    stage="unit")
    message = str(caught.value)
    assert message.startswith("command did not finish after 0.5 s (phase unit)"), message
    assert "raise fvp.timeouts.unit" in message and str(console.log_path) in message
    assert message.endswith(f": {command}"), "the whole command is still said, last"
    line = fit_line("s0: r0-before-ds_cnn FAILED: ", f"CommandTimeout: {message}", LOG_WIDTH,
                    "results/smoke/logs/s0/r0-before-ds_cnn.log")
    assert "did not finish after 0.5 s (phase unit)" in line, line


def test_a_garbled_acknowledgement_fails_a_stream_at_once(console: Console) -> None:
    began = time.monotonic()
    with pytest.raises(ConsoleGarbled, match="garbled the acknowledgement of streamed line"):
        console.stream_commands(iter(["true", "noisy-ack", "true"]),
                                deadline=Deadline.after(30, "deploy"))
    assert time.monotonic() - began < 5


def test_a_garbled_login_prompt_fails_the_boot_at_once_not_at_the_boot_timeout(
        tmp_path: Path) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def serve() -> None:
        conn, _ = server.accept()
        conn.sendall(b"Poky (Yocto Project Reference Distro) 5.2 corstone1000-fvp ttyAMA0\r\n\r\n"
                     b"corstone1000-fvp lo" + NOISE + b"gin: ")
        conn.recv(1)  # until the harness goes
        conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    profile = load_profile("corstone1000-a320")
    terminal = Terminal("host_terminal_0", server.getsockname()[1],
                        log_path=tmp_path / "host_terminal_0.log")
    terminal.connect(Deadline.after(5, "boot"))
    began = time.monotonic()
    try:
        with pytest.raises(ConsoleGarbled, match="garbled the login prompt during boot"):
            Console(terminal, profile,
                    BootWatch(profile)).wait_for_login_prompt(Deadline.after(300, "boot"))
    finally:
        terminal.close()
        server.close()
        thread.join(timeout=5)
    assert time.monotonic() - began < 10


def test_noise_in_a_benign_boot_line_is_not_a_firmware_error() -> None:
    profile = load_profile("corstone1000-a320")
    watch = BootWatch(profile)
    watch.on_line("host_terminal_0",
                  "ERROR:   mmap_add_region_\ufffd\ufffdcheck() failed. error -22")
    assert watch.failure is None
    watch.on_line("host_terminal_0", "ERROR:   BL2: Failed to load image id 3")
    assert watch.failure is not None
