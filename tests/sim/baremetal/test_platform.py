"""The bare-metal platforms from outside: ``python -m fvp_harness.sim --platform
corstone300|corstone320`` started as a process with the command lines upstream's scripts build
(backends/arm/scripts/run_fvp.sh, backends/arm/test/runner_utils.py at pytorch/executorch
cff6f4dd32), and a stand-in executable named like the model.

The command-line tests at the top run in-process (fast); the others start the simulator (slow, sim).
"""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fvp_harness.sim import tools
from fvp_harness.sim.fvp.cmdline import CmdlineError, parse_args, platform_for_program
from fvp_harness.sim.fvp.params import BOARDS, format_listing, parameters_of
from fvp_harness.sim.networks.modelfile import decode_model

TIMEOUT = 120.0
RUN_FVP_PROBLEMS = re.compile(  # run_fvp.sh:238
    r"^(F|E|\[critical\]|Hard fault.|Info: Simulation is stopping. Reason: CPU time has been "
    r"exceeded.).*$", re.M)
# runner_utils.py
RUNNER_UTILS_ERRORS = re.compile(r"(^[EF][: ].*$)|(^.*Hard fault.*$)|(^.*Assertion.*$)", re.M)
SYSTEMC = "\nInfo: /OSCI/SystemC: Simulation stopped by user.\n"
TIME_EXCEEDED = "\nInfo: Simulation is stopping. Reason: CPU time has been exceeded.\n" + SYSTEMC


def problems(out: str) -> list[str]:
    """The lines run_fvp.sh's problem check (``grep -E`` after ``sed 's/\\r$//'``) reports."""
    return [m.group(0) for m in RUN_FVP_PROBLEMS.finditer(out.replace("\r", ""))]


STAT = re.compile(r"--- (FVP_\S+) statistics: -+\n(?:.{40}: .*\n){6}-{79}\n$")


def u85(macs: int = 256, eot: bool = True) -> list[str]:
    """run_fvp.sh's Corstone-320 parameters."""
    args = ["--platform", "corstone320", "-C", f"mps4_board.subsystem.ethosu.num_macs={macs}",
            "-C", "mps4_board.visualisation.disable-visualisation=1", "-C",
            "vis_hdlcd.disable_visualisation=1",
            "-C", "mps4_board.telnetterminal0.start_telnet=0", "-C", "mps4_board.uart0.out_file=-",
            "-C", "mps4_board.uart0.unbuffered_output=1"]  # fmt: skip
    return [*args, "-C", "mps4_board.uart0.shutdown_on_eot=1"] if eot else args


# --- the command line (in-process) ----------------------------------------------------------------


def test_platform_from_option_or_program_name() -> None:
    assert parse_args([]).platform == "corstone1000"
    assert parse_args(["--platform", "corstone320"]).platform == "corstone320"
    assert parse_args(["-C", "ethosu.num_macs=64",
                       "--platform=FVP_Corstone_SSE-300_Ethos-U55"]).platform == \
        "corstone300"  # the option may come after the parameters it decides about
    assert parse_args([], platform="corstone320").platform == "corstone320"
    assert (parse_args(["--platform", "corstone1000"], platform="corstone320").platform
            == "corstone1000")
    assert platform_for_program("/somewhere/FVP_Corstone_SSE-320") == "corstone320"
    assert platform_for_program("FVP_Corstone_SSE-300_Ethos-U55") == "corstone300"
    assert (platform_for_program("/x/__main__.py") is None and
            platform_for_program("fvp-sim") is None)
    with pytest.raises(CmdlineError, match="not a simulated platform"):
        parse_args(["--platform", "corstone999"])


def test_bare_metal_values_lose_one_pair_of_quotes_the_corstone1000_keeps_them() -> None:
    cmd_line = "cpu0.semihosting-cmd_line='executor_runner -m program.pte -o out -i i0.bin'"
    opts = parse_args(["--platform", "corstone300", "-C", "mps3_board.uart0.out_file='-'", "-C",
                       cmd_line])
    assert opts.params["mps3_board.uart0.out_file"] == "-"
    assert (opts.params["cpu0.semihosting-cmd_line"]
            == "executor_runner -m program.pte -o out -i i0.bin")
    # unchanged
    assert parse_args(["-C", "host.uart0.out_file='-'"]).params["host.uart0.out_file"] == "'-'"


@pytest.mark.parametrize(("platform", "args", "needle"), [
    ("corstone300", ["-C", "mps4_board.uart0.out_file=-"],
     'Parameter "mps4_board.uart0.out_file" not found'),
    ("corstone320", ["-C", "ethosu.num_macs=256"], 'Parameter "ethosu.num_macs" not found'),
    ("corstone320", ["-C", "host.ethosu.num_macs=256"], "not found in the model"),
    ("corstone300", ["-C", "ethosu.num_macs=512"], "valid values: 32, 64, 128, 256"),
    ("corstone320", ["-C", "mps4_board.subsystem.ethosu.num_macs=64"],
     "valid values: 128, 256, 512, 1024, 2048"),
    ("corstone320", ["-C", "mps4_board.uart0.shutdown_on_eot=maybe"], "not a valid bool"),
])  # fmt: skip
def test_parameters_the_model_does_not_have_are_refused(
    platform: str, args: list[str], needle: str
) -> None:
    with pytest.raises(CmdlineError, match=re.escape(needle)):
        parse_args(args, platform=platform)


def test_the_parameters_upstreams_scripts_pass_are_known() -> None:
    run_fvp_u55 = ["ethosu.num_macs", "mps3_board.visualisation.disable-visualisation",
                   "mps3_board.telnetterminal0.start_telnet", "mps3_board.uart0.out_file",
                   "mps3_board.uart0.shutdown_on_eot", "ethosu.extra_args",
                   "cpu0.semihosting-enable",
                   "cpu0.semihosting-stack_base", "cpu0.semihosting-heap_limit",
                   "cpu0.semihosting-cwd", "cpu0.semihosting-cmd_line"]  # fmt: skip
    run_fvp_u85 = ["mps4_board.subsystem.ethosu.num_macs",
                   "mps4_board.visualisation.disable-visualisation",
                   "vis_hdlcd.disable_visualisation", "mps4_board.telnetterminal0.start_telnet",
                   "mps4_board.uart0.out_file", "mps4_board.uart0.unbuffered_output",
                   "mps4_board.uart0.shutdown_on_eot",
                   "mps4_board.subsystem.ethosu.extra_args",
                   "mps4_board.subsystem.cpu0.semihosting-enable",
                   "mps4_board.subsystem.cpu0.semihosting-stack_base",
                   "mps4_board.subsystem.cpu0.semihosting-heap_limit",
                   "mps4_board.subsystem.cpu0.semihosting-cwd",
                   "mps4_board.subsystem.cpu0.semihosting-cmd_line"]  # fmt: skip
    assert set(run_fvp_u55) <= set(parameters_of("corstone300"))
    assert set(run_fvp_u85) <= set(parameters_of("corstone320"))
    listing = format_listing(BOARDS["corstone320"].parameters)
    assert "mps4_board.subsystem.ethosu.num_macs=256 " in listing and "host.ethosu" not in listing


# --- the model as a process -----------------------------------------------------------------------


def sim(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
        timeout: float = TIMEOUT,
        program: list[str] | None = None) -> subprocess.CompletedProcess[bytes]:  # fmt: skip
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("FVP_SIM_")}
    full_env.update(env or {})
    return subprocess.run([*(program or [sys.executable, "-m", "fvp_harness.sim"]), *args],
                          capture_output=True,
                          timeout=timeout, cwd=cwd, env=full_env,
                          stdin=subprocess.DEVNULL)  # fmt: skip


def tool(*argv: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert tools.main(list(argv), out, err) == 0, err.getvalue()


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Models (Vela's cycle estimate when it is installed, as ``fvp-harness sim model`` makes them)
    and runners."""
    root = tmp_path_factory.mktemp("bm")
    for name in ("resnet8", "ds_cnn", "mobilenet_v1_025", "deep_autoencoder"):
        for acc in ("ethos-u85-128", "ethos-u85-256", "ethos-u85-512", "ethos-u55-128"):
            tool("model", name, "--accelerator", acc, "--no-tflite", "-o",
                 str(root / f"{name}-{acc}.bin"))
            tool("baremetal-runner", "--pte", str(root / f"{name}-{acc}.bin"), "-o",
                 str(root / f"{name}-{acc}.elf"))
    tool("baremetal-runner", "--pte", str(root / "resnet8-ethos-u85-256.bin"), "--iterations", "3",
         "-o", str(root / "r8x3.elf"))  # fmt: skip
    tool("baremetal-runner", "--pte-addr", "0x70000000", "--target", "ethos-u85-256", "-o",
         str(root / "addr.elf"))
    tool("baremetal-runner", "--semihosting", "--target", "ethos-u55-128", "-o",
         str(root / "semihosting.elf"))
    tool("input", "ds_cnn", "-o", str(root / "i0.bin"))
    return root


def text(result: subprocess.CompletedProcess[bytes]) -> str:
    return result.stdout.decode("utf-8", "surrogateescape")


@pytest.mark.slow
@pytest.mark.sim
def test_run_fvp_sh_command_line_prints_upstreams_lines_and_stops_at_eot(build: Path) -> None:
    result = sim(*u85(256), "-a", str(build / "r8x3.elf"), "--timelimit", "600", "--stat")
    assert result.returncode == 0 and result.stderr == b""
    out = text(result)
    head, banner, uart = out.split("\n\n", 2)
    assert banner.startswith("    Ethos-U rev")  # the NPU model's banner, then the UART
    assert re.findall(r"(\S+): Listening for serial connection on port (\d+)", head) == [
        ("telnetterminal0", "5000"), ("telnetterminal1", "5001"), ("telnetterminal2", "5002"),
        ("telnetterminal5", "5003")]  # fmt: skip
    lines = uart.split("\r\n")  # the UART's lines end in CRLF (run_fvp.sh strips the CR with sed)
    assert lines[0] == ("I [executorch:arm_executor_runner.cpp:1523 main()] PTE @ 0x70000000 "
                        "[----IMMD]")
    assert ("I [executorch:arm_executor_runner.cpp:1328 run_model()] Starting running 3 "
            "inferences...") in lines
    # once per run
    assert sum("StopMeasurements()] NPU Inferences : 3" in line for line in lines) == 1
    assert any(re.fullmatch(r"I \[executorch:arm_perf_monitor\.cpp:210 StopMeasurements\(\)\] "
                            r"ethosu_pmu_cycle_cntr : \d+ \(\d+\.00 per inference\)", line)
               for line in lines)  # fmt: skip
    assert "I [executorch:arm_executor_runner.cpp:1550 main()] Program complete, exiting." in lines
    # the EOT ends the simulation
    assert "I [executorch:arm_executor_runner.cpp:1554 main()] \x04" in lines
    assert "Application exit code" not in out  # ... before the C library's _exit would print
    assert out.split("\x04\r\n", 1)[1].startswith(SYSTEMC)
    assert (m := STAT.search(out)) and m[1] == "FVP_Corstone_SSE-320"
    assert "mps4_board.subsystem.cpu0" in out.splitlines()[-2]
    assert not problems(out) and not RUNNER_UTILS_ERRORS.findall(out)


@pytest.mark.slow
@pytest.mark.sim
def test_without_shutdown_on_eot_the_model_runs_until_the_time_limit(build: Path) -> None:
    start = time.monotonic()
    result = sim(*u85(256, eot=False), "-a", str(build / "resnet8-ethos-u85-256.elf"),
                 "--timelimit", "1")
    assert result.returncode == 0 and time.monotonic() - start >= 1.0
    out = text(result)
    assert out.endswith("Application exit code: 0.\r\n\x04\r\nEXITTHESIM\r\n" + TIME_EXCEEDED)
    # what run_fvp.sh would report (it always passes shutdown_on_eot=1, so neither line shows there)
    assert problems(out) == ["EXITTHESIM",
                             "Info: Simulation is stopping. Reason: CPU time has been exceeded."]


@pytest.mark.slow
@pytest.mark.sim
def test_hang_ends_at_the_time_limit_and_a_hard_fault_is_reported(build: Path) -> None:
    result = sim(*u85(256), "-a", str(build / "resnet8-ethos-u85-256.elf"), "--timelimit", "1",
                 env={"FVP_SIM_RUNNER_FAULT": "hang"})  # fmt: skip
    out = text(result)
    assert (result.returncode == 0 and
            out.endswith("Starting running 1 inferences...\r\n" + TIME_EXCEEDED))
    assert "NPU Inferences" not in out
    result = sim(*u85(256), "-a", str(build / "resnet8-ethos-u85-256.elf"), "--timelimit", "60",
                 "--sim", "runner_fault=hardfault=0")  # fmt: skip
    out = text(result)
    assert result.returncode == 0  # the model itself ends normally: only the text tells
    assert re.search(r"\r\nHard fault\. irq=-13, pc=0x[0-9a-f]{8}, lr=0x[0-9a-f]{8}, "
                     r"xpsr=0x[0-9a-f]{8}, sp=0x[0-9a-f]{8}\r\n {11} cfsr=0x00008200 "
                     r"bfar=0x[0-9a-f]{8} mmfar=0x00000000\r\nApplication exit code: "
                     r"1\.\r\n\x04\r\n" + re.escape(SYSTEMC) + "$", out)  # fmt: skip
    assert RUNNER_UTILS_ERRORS.findall(out)


@pytest.mark.slow
@pytest.mark.sim
def test_a_model_for_another_npu_fails_as_the_driver_does(build: Path) -> None:
    result = sim(*u85(128), "-a", str(build / "resnet8-ethos-u85-256.elf"), "--timelimit", "60")
    out = text(result).replace("\r", "")
    assert result.returncode == 0
    assert "\nE: No driver for product: 2, log2_macs: 8 found!\n" in out
    assert ("E [executorch:EthosUBackend_Cortex_M.cpp:91 platform_execute()] "
            "ethosu_reserve_driver_ex failed") in out
    assert [line.split(" ")[0] for line in problems(out)] == ["E:", "E", "E", "F", "Hard"]


@pytest.mark.slow
@pytest.mark.sim
def test_missing_or_foreign_application_and_unknown_parameters(build: Path, tmp_path: Path) -> None:
    result = sim(*u85(), "-a", str(tmp_path / "missing.elf"))
    assert result.returncode == 1 and result.stdout == b""
    assert result.stderr.decode() == f"Error: -a: cannot open file '{tmp_path / 'missing.elf'}'.\n"
    (tmp_path / "real.elf").write_bytes(b"\x7fELF\x01\x01\x01" + b"\0" * 57)
    result = sim(*u85(), "-a", str(tmp_path / "real.elf"))
    assert (result.returncode == 1 and result.stdout == b"" and
            b"not an emulated arm_executor_runner" in result.stderr)
    result = sim("--platform", "corstone300", "-C", "mps4_board.uart0.out_file=-", "-a",
                 str(build / "addr.elf"))
    assert result.returncode == 1 and result.stdout == b""
    assert result.stderr.decode() == (
        'Error: Parameter "mps4_board.uart0.out_file" not found in the model (see '
        '--list-params).\n')
    result = sim(*u85(), "-a", str(build / "addr.elf"), "--sim", "runner_fault=crash=1")
    assert result.returncode == 1 and b"unknown bare-metal runner fault" in result.stderr


@pytest.mark.slow
@pytest.mark.sim
def test_stand_in_executable_named_like_the_model(build: Path, tmp_path: Path) -> None:
    stand_in = tmp_path / "FVP_Corstone_SSE-320"
    stand_in.write_text(f"#!{sys.executable}\nimport sys\nfrom fvp_harness.sim.main import "
                        "main\nsys.exit(main())\n")
    stand_in.chmod(0o755)
    version = sim("--version", program=[str(stand_in)])
    assert version.returncode == 0 and "FVP_Corstone_SSE-320 simulator" in version.stdout.decode()
    args = u85(256)[2:]  # no --platform: the name says it
    result = sim(*args, "-a", str(build / "ds_cnn-ethos-u85-256.elf"), "--timelimit", "600",
                 "--stat", program=[str(stand_in)])  # fmt: skip
    assert result.returncode == 0 and "ethosu_pmu_cycle_cntr" in text(result)
    assert "--- FVP_Corstone_SSE-320 statistics:" in text(result)


@pytest.mark.slow
@pytest.mark.sim
def test_semihosting_as_runner_utils_runs_corstone300(build: Path, tmp_path: Path) -> None:
    work = tmp_path / "intermediate"
    work.mkdir()
    (work / "program.pte").write_bytes((build / "ds_cnn-ethos-u55-128.bin").read_bytes())
    (work / "i0.bin").write_bytes((build / "i0.bin").read_bytes())
    cmd_line = "executor_runner -m program.pte -o out -i i0.bin"
    # runner_utils.py's argv list for corstone-300: quotes included, no shutdown_on_eot
    result = sim(
        "--platform", "corstone300", "-C", "ethosu.num_macs=128",
        "-C", "mps3_board.visualisation.disable-visualisation=1", "-C",
        "mps3_board.telnetterminal0.start_telnet=0",
        "-C", "mps3_board.uart0.out_file='-'", "-C", "cpu0.semihosting-enable=1", "-C",
        "cpu0.semihosting-stack_base=0",
        "-C", "cpu0.semihosting-heap_limit=0", "-C", f"cpu0.semihosting-cwd={work}",
        # (without its ethosu.extra_args=--fast: refused)
        "-C", f"cpu0.semihosting-cmd_line='{cmd_line}'",
        "-a", str(build / "semihosting.elf"), "--timelimit", "120",
    )  # fmt: skip
    out = text(result)
    # semihosting output is the model's own stdout
    assert result.returncode == 0 and "\r" not in out
    assert ("I [executorch:arm_executor_runner.cpp:1104 print_outputs()] Writing output to file: "
            "out-0.bin\n") in out
    assert out.endswith("I [executorch:arm_executor_runner.cpp:1550 main()] Program complete, "
                        "exiting.\n" + SYSTEMC)
    assert (work / "out-0.bin").stat().st_size == 12
    assert not RUNNER_UTILS_ERRORS.findall(out)


@pytest.mark.slow
@pytest.mark.sim
def test_model_placed_with_data(build: Path) -> None:
    result = sim(*u85(256), "-a", str(build / "addr.elf"), "--data",
                 f"{build / 'deep_autoencoder-ethos-u85-256.bin'}@0x70000000", "--timelimit",
                 "600")  # fmt: skip
    out = text(result)
    assert result.returncode == 0 and "PTE Model data loaded. Size: 268435456 bytes." in out
    assert len(re.findall(r"Output\[0\]\[\d+\]: \(char\) -?\d+\r\n", out)) == 640
    result = sim(*u85(256), "-a", str(build / "addr.elf"), "--timelimit", "600")  # forgot --data
    assert ("Program loading failed @ 0x70000000: 0x23" in text(result) and
            "Hard fault." in text(result))


@pytest.mark.slow
@pytest.mark.sim
def test_signals_and_the_simulated_time_limit(build: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FVP_SIM_")}
    env["FVP_SIM_RUNNER_FAULT"] = "hang"
    argv = [sys.executable, "-m", "fvp_harness.sim", *u85(), "-a",
            str(build / "ds_cnn-ethos-u85-256.elf"), "--stat"]
    for sig, code, tail in ((signal.SIGINT, 0, "Stopping simulation...\n" + SYSTEMC),
                            (signal.SIGTERM, -15, "")):
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                start_new_session=True)
        try:
            time.sleep(1.5)  # the application hangs; any moment is as good as another
            proc.send_signal(sig)
            out, _ = proc.communicate(timeout=TIMEOUT)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        assert proc.returncode == code
        if tail:
            assert tail in out.decode() and STAT.search(out.decode())
        else:
            assert b"statistics" not in out
    result = sim(*u85(), "-a", str(build / "ds_cnn-ethos-u85-256.elf"), "--simlimit", "0.5",
                 env={"FVP_SIM_RUNNER_FAULT": "hang", "FVP_SIM_IDLE_RATIO": "5"})  # fmt: skip
    assert result.returncode == 0
    assert text(result).endswith(
        "\nInfo: Simulation is stopping. Reason: Simulated time has been exceeded.\n" + SYSTEMC)


@pytest.mark.slow
@pytest.mark.sim
def test_npu_cycles_fall_as_macs_grow_and_outputs_are_identical(build: Path) -> None:
    """The four models on Corstone-320 U85 with 128, 256 and 512 MACs (and the U55-128 on
    Corstone-300)."""
    measured: dict[str, list[int]] = {}
    for name in ("resnet8", "ds_cnn", "mobilenet_v1_025", "deep_autoencoder"):
        outputs = []
        for macs in (128, 256, 512):
            out = text(sim(*u85(macs), "-a", str(build / f"{name}-ethos-u85-{macs}.elf"),
                           "--timelimit", "600"))
            m = re.search(r"ethosu_pmu_cycle_cntr : (\d+) \((\d+)\.00 per inference\)", out)
            assert m, out
            measured.setdefault(name, []).append(int(m[2]))
            outputs.append(re.findall(r"Output\[0\]\[\d+\]: \(char\) (-?\d+)", out))
        assert outputs[0] == outputs[1] == outputs[2] and outputs[0], name
        u55 = text(sim("--platform", "corstone300", "-C", "ethosu.num_macs=128", "-C",
                       "mps3_board.uart0.out_file=-",
                       "-C", "mps3_board.uart0.shutdown_on_eot=1", "-a",
                       str(build / f"{name}-ethos-u55-128.elf"), "--timelimit", "600"))  # fmt: skip
        m55 = re.search(r"ethosu_pmu_cycle_cntr : (\d+) ", u55)
        assert m55 and re.findall(r"Output\[0\]\[\d+\]: \(char\) (-?\d+)", u55)
        measured[name].append(int(m55[1]))
    print("NPU cycles per inference (u85-128, u85-256, u85-512, u55-128):", measured)
    for name, (c128, c256, c512, _) in measured.items():
        vela = getattr(decode_model((build / f"{name}-ethos-u85-256.bin").read_bytes()), "vela",
                       None) is not None
        if vela or name != "deep_autoencoder":
            assert c128 > c256 > c512, (name, measured[name])
        else:  # the analytic model: a weight-decode bound FC network does not speed up with MACs
            assert c128 >= c256 >= c512, (name, measured[name])
