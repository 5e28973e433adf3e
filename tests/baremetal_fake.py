"""A stand-in bare-metal FVP for the tests of the bare-metal target: a small Python script that
prints what ``arm_executor_runner`` prints (its own log format and upstream's perf block, from the
format strings of examples/arm/executor_runner/arm_perf_monitor.cpp) and behaves like the model
around it (UART on stdout, stop on EOT with ``shutdown_on_eot=1``, semihosting files,
``--timelimit``).

What the program does is in the "ELF" itself: the ``-a`` file holds JSON (``fake_runner``), so a
scenario's builds can be a well-behaved runner, one that hard-faults, one that hangs, ... No
simulator is involved: a launch costs one Python start-up.
"""

# ruff: noqa: UP031  -- the perf block is made with upstream's printf format strings, kept verbatim
from __future__ import annotations

import json
import sys
from pathlib import Path

__all__ = ["FAKE_FVP", "fake_runner", "perf_block", "write_fake_fvp"]

FAKE_FVP = r'''
import json, os, signal, sys, time

args = sys.argv[1:]
if "--version" in args:
    print("Fast Models [11.27.42 (Jan  1 2026)]\nCopyright 2000-2026 ARM Limited.\n"
          "All Rights Reserved.")
    sys.exit(0)
if "--list-params" in args or "-l" in args:
    for name in ("mps4_board.subsystem.ethosu.num_macs",
                 "mps4_board.visualisation.disable-visualisation",
                 "vis_hdlcd.disable_visualisation", "mps4_board.telnetterminal0.start_telnet",
                 "mps4_board.uart0.out_file", "mps4_board.uart0.unbuffered_output",
                 "mps4_board.uart0.shutdown_on_eot",
                 "mps4_board.subsystem.cpu0.semihosting-enable",
                 "mps4_board.subsystem.cpu0.semihosting-stack_base",
                 "mps4_board.subsystem.cpu0.semihosting-heap_limit",
                 "mps4_board.subsystem.cpu0.semihosting-cwd",
                 "mps4_board.subsystem.cpu0.semihosting-cmd_line"):
        print(f"{name}=0  # (int) fake")
    sys.exit(0)
params, app, data, limit = {}, None, [], None
i = 0
while i < len(args):
    word = args[i]
    if word == "-C":
        name, _, value = args[i + 1].partition("="); params[name] = value; i += 2
    elif word == "-a":
        app = args[i + 1]; i += 2
    elif word == "--data":
        data.append(args[i + 1]); i += 2
    elif word == "--timelimit":
        limit = float(args[i + 1]); i += 2
    elif word == "--stat":
        i += 1
    else:
        print(f"Error: unrecognised option '{word}'."); sys.exit(1)
out = sys.stdout
def say(text):
    out.write(text + "\r\n"); out.flush()
def log(message, level="I", where="arm_executor_runner.cpp:1406", fn="main"):
    say(f"{level} [executorch:{where} {fn}()] {message}")
def stop(reason):
    say(f"Info: Simulation is stopping. Reason: {reason}")
    say("--- fake statistics: ---------------------------------------------------------")
    say("Simulated time                                : 0.01s")
    say("-------------------------------------------------------------------------------")
    sys.exit(0)
def spin():
    end = time.monotonic() + (limit if limit is not None else 3600)
    while time.monotonic() < end:
        time.sleep(0.05)
    stop("CPU time has been exceeded.")
say("telnetterminal0: Listening for serial connection on port 5000")
if app is None or not os.path.exists(app):
    say(f"ERROR: cannot open application file '{app}'"); sys.exit(1)
spec = json.loads(open(app).read())
if spec.get("licence"):
    say("ERROR: License checkout for feature FM_Cortex_M85 has been denied by Flex backend.")
    sys.exit(1)
prefix = "mps4_board.subsystem.cpu0."
cwd, cmd = params.get(prefix + "semihosting-cwd"), params.get(prefix + "semihosting-cmd_line")
if cmd is not None:
    log("Running executor with parameter:")
    words = cmd.split()
    log(f"   {words[0]}")
    for k in range(1, len(words) - 1, 2):
        log(f"   {words[k]} {words[k + 1]}")
mode = spec.get("mode", "ok")
if mode == "noise":
    out.write("\x1b[32mI [executorch:arm_executor_runner.cpp:1430 main()] colour\x1b[0m\r\n")
    sys.stdout.buffer.write(b"bad byte \xff here\r\n"); sys.stdout.flush()
n = spec.get("inferences", 1)
log(f"Starting running {n} inferences...", where="arm_executor_runner.cpp:1328", fn="run_model")
time.sleep(spec.get("pause", 0))  # a long inference: the harness reads the earlier lines meanwhile
if mode == "hardfault":
    say("Hard fault. irq=-13, r0=0x00000000"); say("r1=0x00000001 r2=0x20000000"); spin()
if mode == "fatal":
    log("Execution of method forward failed with status 0x12", level="F",
        where="arm_executor_runner.cpp:1346", fn="run_model")
    say("Hard fault. irq=-13, r0=0x00000000"); spin()
if mode == "hang":
    spin()
if mode == "crash":
    os.kill(os.getpid(), signal.SIGSEGV)
for line in spec.get("block_lines", []):
    say(line)
if mode == "error":
    log("Could not open output file out-0.bin (errno: 2)", level="E",
        where="arm_executor_runner.cpp:1107", fn="print_outputs")
if cwd is not None and cmd is not None:
    words = cmd.split()
    base = words[words.index("-o") + 1]
    model = words[words.index("-m") + 1] if "-m" in words else None
    payload = open(os.path.join(cwd, model), "rb").read() if model else b"addr"
    with open(os.path.join(cwd, f"{base}-0.bin"), "wb") as f:
        f.write(b"out:" + payload[:8])
log(f"Model run: 1", where="arm_executor_runner.cpp:1543")
log("Program complete, exiting.", where="arm_executor_runner.cpp:1550")
if cmd is not None:
    stop("semihosting exit")  # upstream: _exit(0) after "Program complete" in a SEMIHOSTING build
log("\x04", where="arm_executor_runner.cpp:1554")
if params.get("mps4_board.uart0.shutdown_on_eot", "0") in ("1", "true"):
    say("Info: /OSCI/SystemC: Simulation stopped by user.")
    sys.exit(0)
spin()
'''


def write_fake_fvp(folder: Path, name: str = "FVP_Corstone_SSE-320") -> Path:
    """Write the stand-in model as an executable named ``name`` (a real FVP's name) into
    ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!{sys.executable}\n{FAKE_FVP}", encoding="utf-8")
    path.chmod(0o755)
    return path


def perf_block(npu: int, execute: int, runtime: int, inferences: int = 1) -> list[str]:
    """The perf block ``StopMeasurements(inferences)`` prints for these totals (upstream format
    strings, Ethos-U85: seven PMU counters), as lines of a current build (``%llu`` totals, ``%.2f``
    per inference)."""

    def line(where: int, message: str) -> str:
        return f"I [executorch:arm_perf_monitor.cpp:{where} StopMeasurements()] {message}"

    n = inferences
    lines = [
        line(150, "NPU Inferences : %d" % n),
        line(151, "NPU delegations: %u (%.2f per inference)" % (n, n / n)),
        line(156, "Profiler report, CPU cycles per operator:"),
        line(160, "ethos-u : cycle_cnt : %u cycles (%.2f per inference)" % (execute, execute / n)),
        line(168, "Operator(s) total: %u CPU cycles (%.2f per inference)" % (execute, execute / n)),
        line(175,
             "Inference runtime: %u CPU cycles total (%.2f per inference)"
             % (runtime, runtime / n)),
        line(181,
             "NOTE: CPU cycle values and ratio calculations require FPGA and identical CPU/NPU "
             "frequency"),
        line(190, "Inference CPU ratio: %.2f %%" % (100.0 * (runtime - npu) / runtime)),
        line(194, "Inference NPU ratio: %.2f %%" % (100.0 * npu / runtime)),
        line(203,
             "cpu_wait_for_npu_cntr : %u CPU cycles (%.2f per inference)"
             % (npu + 88, (npu + 88) / n)),
        line(209, "Ethos-U PMU report:"),
        line(210, "ethosu_pmu_cycle_cntr : % u (%.2f per inference)" % (npu, npu / n)),
    ]
    lines += [line(217,
                   "ethosu_pmu_cntr%d : %u (%.2f per inference)"
                   % (i, 100 * (i + 1), 100 * (i + 1) / n))
              for i in range(7)]
    return lines


def fake_runner(path: Path, **spec: object) -> Path:
    """Write a fake runner "ELF": what the stand-in model's program does (``mode``: ok, error,
    fatal, hardfault, hang, crash, noise; ``licence``: the model refuses to start; ``pause``:
    seconds between the start of the inferences and the perf block; ``block_lines`` printed as the
    perf block, by default ``perf_block`` with ``npu`` NPU cycles)."""
    spec.setdefault("block_lines", perf_block(int(spec.pop("npu", 40_000)), 52_000, 61_000))  # type: ignore[arg-type]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path
