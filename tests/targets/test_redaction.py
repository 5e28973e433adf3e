"""The targets' logs show the secret values ``run.instances`` hands them as ``***`` (the command
still gets them)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

from fvp_harness.targets.deadline import Deadline
from fvp_harness.targets.host import HostTarget
from fvp_harness.targets.terminal import PARTIAL_FLUSH_S, Terminal
from fvp_harness.targets.text import held_back, mask
from tests.helpers import wait_until

SECRET = "s3cr3t-v4lue"


def test_terminal_masking_never_splits_a_secret():
    assert mask(f"a {SECRET} b", (SECRET,)) == "a *** b"
    assert held_back("TOKEN=s3cr", (SECRET,)) == 4  # the log keeps "s3cr" until the rest arrives
    assert held_back("TOKEN=nothing", (SECRET,)) == 0
    assert held_back(f"TOKEN={SECRET}", (SECRET,)) == 0  # whole: masked when written


def test_host_target_log_shows_secrets_masked(tmp_path):
    with HostTarget(log_dir=tmp_path, redact=(SECRET,)) as target:
        result = target.run(f"echo {SECRET}")
    assert result.output.strip() == SECRET  # the command got the value
    log = (tmp_path / "host.log").read_text(encoding="utf-8")
    assert SECRET not in log and "$ echo ***" in log


def test_terminal_log_masks_what_was_sent_and_the_echo_even_when_it_arrives_in_pieces(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    got: list[bytes] = []

    def serve() -> None:
        conn, _ = server.accept()
        conn.sendall(b"# export TOKEN=s3cr")  # the echo stops in the middle of the secret ...
        time.sleep(PARTIAL_FLUSH_S + 0.4)  # ... long enough for the log to flush an unfinished line
        conn.sendall(b"3t-v4lue\r\n# ")
        conn.settimeout(5.0)
        with contextlib.suppress(OSError):
            got.append(conn.recv(1024))
        conn.close()
        server.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    terminal = Terminal("console", server.getsockname()[1], log_path=tmp_path / "t.log",
                        redact=(SECRET,))
    terminal.connect(Deadline.after(5, "boot"))
    try:
        terminal.send(f"run --token={SECRET}\n")
        thread.join(timeout=5)
        wait_until(lambda: "3t-v4lue" in "".join(terminal.tail()) and
                   "< # " in (tmp_path / "t.log").read_text(),
                   message="the echo and the next prompt in the log")
    finally:
        terminal.close()
    assert got and SECRET.encode() in got[0]  # the guest got the real value
    log = (tmp_path / "t.log").read_text(encoding="utf-8")
    assert SECRET not in log and "s3cr" not in log, log
    assert "> run --token=***" in log
    # held back, then masked whole
    assert "< # export TOKEN=  [unfinished line]" in log and " + ***\n" in log
