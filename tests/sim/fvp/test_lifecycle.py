"""How the model ends: SIGINT, SIGTERM, poweroff, --timelimit, --simlimit, --stat, and a dead
parent."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from tests.helpers import eventually, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.sim]

STAT = re.compile(
    r"--- FVP_Corstone-1000-A320 statistics: -+\n"
    r"Simulated time {26}: (\d+\.\d{6})s\n"
    r"User time {31}: \d+\.\d{6}s\n"
    r"System time {29}: \d+\.\d{6}s\n"
    r"Wall time {31}: (\d+\.\d{6})s\n"
    r"Performance index {23}: \d+\.\d\d\n"
    r"host\.cpu0 {31}: +\d+\.\d\d MIPS \( *(\d+) Inst\)\n"
    r"-{79}\n"
)


def test_sigint_prints_stop_lines_and_stat_block(sim) -> None:
    s = sim("--stat")
    s.login()
    s.signal(signal.SIGINT)
    assert s.wait() == 0
    out = s.wait_stdout(lambda t: "-" * 79 in t)
    assert "Stopping simulation...\n" in out
    assert "Info: /OSCI/SystemC: Simulation stopped by user.\n" in out
    m = STAT.search(out)
    assert m, out
    header = out[m.start():].splitlines()[0]
    assert len(header) == 79
    assert float(m.group(1)) >= 4.0  # the boot's simulated seconds at least
    assert int(m.group(3)) > 0
    assert not s.guest_dirs()


def test_sigterm_ends_quietly(sim) -> None:
    s = sim("--stat")
    s.ports()
    s.signal(signal.SIGTERM)
    assert s.wait() == -signal.SIGTERM
    assert "statistics" not in s.stdout and "Stopping" not in s.stdout
    assert not s.guest_dirs()


def test_guest_poweroff_ends_the_simulation(sim) -> None:
    s = sim("--stat")
    t = s.login()
    t.send(b"poweroff\n")
    t.expect(b"reboot: Power down")
    assert s.wait() == 0
    out = s.wait_stdout(lambda x: "-" * 79 in x)
    assert "Reason: the guest powered off." in out and STAT.search(out)


def test_timelimit(sim) -> None:
    s = sim("--timelimit", "1", "--stat")
    assert s.wait() == 0
    out = s.wait_stdout(lambda x: "-" * 79 in x)
    assert "Info: Simulation is stopping. Reason: CPU time has been exceeded.\n" in out
    m = STAT.search(out)
    assert m and float(m.group(2)) >= 1.0


def test_simlimit_stops_during_boot(sim) -> None:
    s = sim("--simlimit", "1.5", "--stat", knobs={"boot_sim_seconds": 4})
    assert s.wait() == 0
    out = s.wait_stdout(lambda x: "-" * 79 in x)
    assert "Info: Simulation is stopping. Reason: simulated time has been exceeded.\n" in out
    m = STAT.search(out)
    assert m and 1.5 <= float(m.group(1)) < 4.0


def _gone(pid: int) -> bool:
    """The process has ended (a zombie under init counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1].startswith("Z")
    except OSError:
        return True


def test_model_exits_when_its_parent_dies(tmp_path, free_ports) -> None:
    """A parent that starts the model and is then killed outright: the model notices and exits."""
    port = free_ports()
    argv = [sys.executable, "-m", "fvp_harness.sim", "--sim", "boot_seconds=0.2"]
    for prefix in ("host.host_terminal_0", "host.host_terminal_1", "se.secenc_terminal"):
        argv += ["-C", f"{prefix}.start_port={port}"]
    code = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen({argv!r}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(60)\n"  # hold the model until the test kills this parent
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("FVP_SIM_")}
    env["TMPDIR"] = str(tmp_path)
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env=env, start_new_session=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        wait_until(lambda: list(tmp_path.glob("fvp-sim-*")), timeout=30,
                   message="the model's guest dir (it is up)")
        parent.kill()
        parent.wait(10)
        if not eventually(lambda: _gone(child), timeout=20, interval=0.1):
            os.kill(child, signal.SIGKILL)
            raise AssertionError("the model outlived its parent")
        wait_until(lambda: not list(tmp_path.glob("fvp-sim-*")), timeout=5,
                   message="the model's guest dir to go")
        assert not list(tmp_path.glob("fvp-sim-*"))
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
