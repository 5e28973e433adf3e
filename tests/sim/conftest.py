"""Drive the simulator from outside, as a user (or the harness) would: a process, its stdout, TCP
sockets.

Fixtures:

* ``sim``: a factory ``sim(*args, knobs={...}, env={...})`` that starts ``python -m
  fvp_harness.sim`` with a free high port range, a private TMPDIR and short boot times, and returns
  a ``Sim`` (banner ports, stdout, stop).
* ``booted``: one shared, logged-in console session for the many shell tests (module scope, so the
  suite stays fast).
* ``model_files`` / ``input_files``: the four networks compiled for ethos-u85-256 (seed 0) and their
  inputs.
* an autouse guard that fails a test when it leaves a simulator process running or a guest temp dir
  behind.

Everything waits on conditions with generous deadlines (others run tests on this 2-core machine at
the same time); nothing asserts on a fixed sleep.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fvp_harness.sim.networks.architectures import ARCHITECTURES, get_architecture
from fvp_harness.sim.networks.modelfile import compile_model, encode_model, make_input
from tests.helpers import eventually

BANNER = re.compile(r"(\S+): Listening for serial connection on port (\d+)")
PROMPT = b"root@corstone1000-fvp:~# "
ANY_PROMPT = re.compile(rb"root@corstone1000(?:-a320)?-fvp:[^\r\n#]*# ")
TIMEOUT = 30.0  # deadline for anything that should take a second or two

_ALIVE: list[Sim] = []


def free_port_block(count: int = 6) -> int:
    """A random high port with ``count`` free ports from it upwards (other people's models use
    5000+)."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(20000, 60000)
        socks = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                socks.append(s)  # before bind: a failed bind must still close it
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free port block")


class Term:
    """A socket client of one terminal with expect-style reading (telnet commands stripped in telnet
    mode)."""

    def __init__(self, port: int, telnet: bool = False) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.telnet = telnet
        self.buf = b""
        self.raw = b""  # every byte received, before telnet stripping
        self.closed = False
        self.ignore: re.Pattern[bytes] | None = None
        """Text ``expect`` looks through (e.g. kernel lines the noise knob inserts anywhere):
        matched as if absent, still returned."""

    def _recv(self, deadline: float) -> bool:
        self.sock.settimeout(max(0.05, min(1.0, deadline - time.monotonic())))
        try:
            data = self.sock.recv(65536)
        except TimeoutError:
            return True
        except OSError:
            data = b""
        if not data:
            self.closed = True
            return False
        self.raw += data
        if self.telnet:
            data = _strip_telnet(data)
        self.buf += data
        return True

    def expect(self, pattern: bytes | re.Pattern[bytes], timeout: float = TIMEOUT) -> bytes:
        """Read until ``pattern`` (bytes or regex) appears; return everything up to and including
        it.

        With ``ignore`` set, the pattern is looked for in the text with every ``ignore`` match
        removed (repeatedly, so nested insertions unwind), and what is returned and consumed is the
        raw text up to the match's end.
        """
        deadline = time.monotonic() + timeout
        while True:
            text, where = self._view()
            if isinstance(pattern, bytes):
                idx = text.find(pattern)
                end = idx + len(pattern) if idx >= 0 else -1
            else:
                m = pattern.search(text)
                end = m.end() if m else -1
            if end >= 0:
                cut = where[end - 1] + 1 if end else 0
                out, self.buf = self.buf[:cut], self.buf[cut:]
                return out
            if time.monotonic() > deadline or not self._recv(deadline):
                raise AssertionError(f"{pattern!r} not seen; got {self.buf[-600:]!r} "
                                     f"(closed={self.closed})")

    def _view(self) -> tuple[bytes, list[int]]:
        """``buf`` without ``ignore`` matches, and for each byte kept its index in ``buf``."""
        text, where = self.buf, list(range(len(self.buf)))
        while self.ignore is not None:
            kept, kept_where, pos = bytearray(), [], 0
            for m in self.ignore.finditer(text):
                kept += text[pos : m.start()]
                kept_where += where[pos : m.start()]
                pos = m.end()
            if pos == 0:
                break
            text, where = bytes(kept + text[pos:]), kept_where + where[pos:]
        return text, where

    def read_for(self, seconds: float) -> bytes:
        """Everything that arrives within ``seconds`` (for 'nothing more comes' checks)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and self._recv(deadline):
            pass
        out, self.buf = self.buf, b""
        return out

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def run(self, command: str, prompt: bytes | re.Pattern[bytes] = ANY_PROMPT,
            timeout: float = TIMEOUT) -> str:
        """Type a command line and return its output (echo line removed, CRLF -> LF)."""
        self.send(command.encode() + b"\n")
        out = self.expect(prompt, timeout)
        m = re.search(rb"root@[^\r\n]*# $", out)
        out = out[: m.start()] if m else out
        text = out.decode("utf-8", "replace").replace("\r\n", "\n")
        first, _, rest = text.partition("\n")
        return rest if first.strip() == command.strip().split("\n")[0].strip() else text

    def status(self, command: str) -> tuple[str, int]:
        """Output and exit status of a command (status read with ``echo $?``)."""
        out = self.run(command)
        code = int(self.run("echo $?").strip())
        return out, code

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def _strip_telnet(data: bytes) -> bytes:
    out = bytearray()
    i = 0
    while i < len(data):
        b = data[i]
        if b == 255 and i + 1 < len(data):
            cmd = data[i + 1]
            if cmd == 255:
                out.append(255)
                i += 2
            elif cmd in (251, 252, 253, 254):
                i += 3
            else:
                i += 2
        else:
            out.append(b)
            i += 1
    return bytes(out)


class Sim:
    """A running simulator process."""

    def __init__(self, args: list[str], env: dict[str, str], tmpdir: Path) -> None:
        self.tmpdir = tmpdir
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "fvp_harness.sim", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self.err = b""
        self._cv = threading.Condition()
        self._eof = False
        self._threads = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for thread in self._threads:
            thread.start()
        self.terms: list[Term] = []
        self.shared = False
        self.needed_kill = False
        _ALIVE.append(self)

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            with self._cv:
                self.lines.append(raw.decode("utf-8", "replace"))
                self._cv.notify_all()
        with self._cv:
            self._eof = True
            self._cv.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        self.err = self.proc.stderr.read()

    @property
    def stdout(self) -> str:
        with self._cv:
            return "".join(self.lines)

    def wait_stdout(self, predicate: Callable[[str], bool], timeout: float = TIMEOUT) -> str:
        """Wait until the collected stdout satisfies ``predicate`` (or stdout ends)."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while not predicate("".join(self.lines)):
                left = deadline - time.monotonic()
                if left <= 0 or self._eof:
                    break
                self._cv.wait(left)
            return "".join(self.lines)

    def ports(self, count: int = 3) -> dict[str, int]:
        """The announced terminal ports (searching lines, not anchoring, as the reference says)."""
        text = self.wait_stdout(lambda t: len(BANNER.findall(t)) >= count)
        found = {name: int(port) for name, port in BANNER.findall(text)}
        assert len(found) >= count, f"banner incomplete: {text!r} stderr={self.err!r}"
        return found

    def term(self, name: str = "host_terminal_0", telnet: bool = False) -> Term:
        t = Term(self.ports()[name], telnet=telnet)
        self.terms.append(t)
        return t

    def login(self, telnet: bool = False, ignore: re.Pattern[bytes] | None = None) -> Term:
        """A logged-in console; ``ignore`` (e.g. kernel lines, with kernel noise on) is set on the
        ``Term`` before the login prompt is awaited."""
        t = self.term(telnet=telnet)
        t.ignore = ignore
        t.expect(b"corstone1000-fvp login: ")
        t.send(b"root\r\n" if telnet else b"root\n")
        t.expect(PROMPT)
        return t

    def wait(self, timeout: float = TIMEOUT) -> int:
        return self.proc.wait(timeout)

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL of the whole group if it lingers; close our ends."""
        self._terminate()
        for t in self.terms:
            t.close()
        for thread in self._threads:
            thread.join(10)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()

    def _terminate(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.needed_kill = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)

    def group_alive(self) -> bool:
        """True if any process of the simulator's process group still exists."""
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def guest_dirs(self) -> list[Path]:
        return list(self.tmpdir.glob("fvp-sim-*"))


def _start(tmpdir: Path, args: tuple[str, ...], knobs: dict[str, object] | None,
           env: dict[str, str] | None, default_ports: bool) -> Sim:
    tmpdir.mkdir(parents=True, exist_ok=True)
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("FVP_SIM_")}
    full_env["TMPDIR"] = str(tmpdir)
    full_env["FVP_SIM_BOOT_SECONDS"] = "0.4"
    full_env.update(env or {})
    argv = list(args)
    if default_ports:
        base = free_port_block()
        for prefix in ("host.host_terminal_0", "host.host_terminal_1", "se.secenc_terminal"):
            argv[:0] = ["-C", f"{prefix}.start_port={base}", "-C", f"{prefix}.start_telnet=0"]
            if f"{prefix}.mode=telnet" not in " ".join(args):
                argv[:0] = ["-C", f"{prefix}.mode=raw"]
    for name, value in (knobs or {}).items():
        argv += ["--sim", f"{name}={value}"]
    return Sim(argv, full_env, tmpdir)


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Callable[..., Sim]]:
    """Factory for simulator processes; each is stopped at the end of the test if still running."""
    started: list[Sim] = []

    def factory(*args: str, knobs: dict[str, object] | None = None,
                env: dict[str, str] | None = None, default_ports: bool = True) -> Sim:
        s = _start(tmp_path / f"simtmp{len(started)}", args, knobs, env, default_ports)
        started.append(s)
        return s

    yield factory
    for s in started:
        s.stop()


@pytest.fixture
def free_ports() -> Callable[[int], int]:
    """``free_ports(count=6)``: the first of ``count`` free high ports."""
    return free_port_block


@pytest.fixture(scope="module")
def booted() -> Iterator[tuple[Sim, Term]]:
    """A shared booted model with a logged-in console (module scope)."""
    tmp = Path(tempfile.mkdtemp(prefix="simtest-"))
    s = _start(tmp, (), None, None, True)
    s.shared = True
    t = s.login()
    yield s, t
    t.close()
    s.stop()
    leftovers = s.guest_dirs()
    shutil.rmtree(tmp, ignore_errors=True)
    assert not leftovers, f"guest temp dirs left behind: {leftovers}"


@pytest.fixture(autouse=True)
def no_leftovers(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test if a simulator it started survived SIGTERM, left a process in its group, or
    left its guest temp dir behind. (The ``sim`` fixture has already sent SIGTERM to those still
    running at the test's end.)"""
    before = {id(s) for s in _ALIVE}
    yield
    mine = [s for s in _ALIVE if id(s) not in before and not s.shared]
    problems = []
    for s in mine:
        if s.proc.poll() is None:
            s.stop()
        if s.needed_kill:
            problems.append(f"simulator pid {s.proc.pid} ignored SIGTERM and had to be killed")
        if not eventually(lambda s=s: not s.group_alive(), timeout=5):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(s.proc.pid, signal.SIGKILL)
            problems.append(f"processes of simulator group {s.proc.pid} were left running")
        if not eventually(lambda s=s: not s.guest_dirs(), timeout=5):
            problems.append(f"guest temp dirs left behind: {s.guest_dirs()}")
        _ALIVE.remove(s)
    if problems:
        pytest.fail("; ".join(problems))


# --- compiled models, for the tests of the networks, the NPU models and the workloads -------------


@pytest.fixture(scope="session")
def model_files() -> dict[str, bytes]:
    """Each of the four models compiled for ethos-u85-256 with seed 0."""
    return {name: encode_model(compile_model(get_architecture(name), 0, 256))
            for name in ARCHITECTURES}


@pytest.fixture(scope="session")
def input_files() -> dict[str, bytes]:
    return {name: make_input(get_architecture(name), 0).tobytes() for name in ARCHITECTURES}
