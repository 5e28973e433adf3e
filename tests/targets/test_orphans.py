"""No model outlives the harness: a SIGKILLed harness runs no cleanup, yet the model and its
``--version`` query die.

The stand-in model is what a real FVP is to this: it does not watch its parent (the simulator does),
it ignores SIGHUP and SIGTERM, and it answers ``--version`` never. A small harness process (the
library, as a user's script would use it) launches the model from a thread that then ends, asks for
its version in another thread, and is SIGKILLed; the kernel must take both with it
(``targets.supervise.dies_with_harness``: a supervisor with ``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fvp_harness.targets.fvp import OWNER_ENV
from tests.helpers import REPO, eventually, wait_until
from tests.proc_scan import processes_with_env

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="PR_SET_PDEATHSIG is Linux's")

STAND_IN = f"""\
#!{sys.executable}
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
if "--version" not in sys.argv:
    for number, name in enumerate(("host_terminal_0", "host_terminal_1", "secenc_terminal")):
        print(f"{{name}}: Listening for serial connection on port {{5000 + number}}", flush=True)
while True:
    time.sleep(1)
"""

HARNESS = """\
import sys, threading
from pathlib import Path
from fvp_harness.profiles import load_profile
from fvp_harness.targets.deadline import Deadline
from fvp_harness.targets.fvp import FvpProcess, build_launch, query_model

profile = load_profile("corstone1000-a320")
stand_in, log_dir = sys.argv[1], Path(sys.argv[2])
spec = build_launch(profile, object(), binary=stand_in)
started = {}

# a short-lived thread starts the model: the model must outlive the thread, not the process
def launch():
    process = FvpProcess(spec, profile, log_path=log_dir / "fvp.log")
    process.start()
    process.wait_for_ports(Deadline.after(30, "boot"), list(profile.terminals))
    started["model"] = process

thread = threading.Thread(target=launch)
thread.start()
thread.join()
threading.Thread(target=query_model, args=([stand_in], "--version", spec.env, 600.0),
                 daemon=True).start()
print("model", started["model"].pid, flush=True)
threading.Event().wait()
"""


def test_a_sigkilled_harness_takes_the_model_and_its_version_query_with_it(tmp_path: Path) -> None:
    stand_in = tmp_path / "FVP_Stand_In"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    script = tmp_path / "harness.py"
    script.write_text(textwrap.dedent(HARNESS))
    harness = subprocess.Popen([sys.executable, str(script), str(stand_in), str(tmp_path)],
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = harness.stdout.readline() if harness.stdout else ""
        assert line.startswith("model "), (
            f"the harness did not start the model: {line!r} {harness.stderr.read()}")
        model = int(line.split()[1])
        # the model and its query, each under its supervisor (targets/supervisor.py): four processes
        owned = wait_until(lambda: len(processes_with_env(OWNER_ENV, str(harness.pid))) == 4 and
                           processes_with_env(OWNER_ENV, str(harness.pid)), timeout=20,
                           message="the model and its --version query running")
        assert model in owned
        assert Path(f"/proc/{model}").exists(), "the model must outlive the thread that started it"
        harness.kill()  # SIGKILL: no atexit, no signal handler, no finally
        harness.wait()
        gone = eventually(lambda: not processes_with_env(OWNER_ENV, str(harness.pid)), timeout=5.0)
        left = processes_with_env(OWNER_ENV, str(harness.pid))
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        assert gone, f"processes outlived the SIGKILLed harness: {left}"
    finally:
        if harness.poll() is None:
            harness.kill()
        harness.communicate()
