"""The bare-metal target: the command lines it builds (upstream's, side by side), what a launch's
end means, and launches of a stand-in model (``tests/baremetal_fake.py``: a Python script printing
upstream's text).

The fast tests build argv and judge endings from text; the ones that start the stand-in are
``slow``.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from fvp_harness.errors import (
    ConfigurationError,
    FvpDied,
    FvpStartError,
    HardFault,
    InfrastructureError,
    TimeLimitExceeded,
)
from fvp_harness.profiles import Profile, load_profile
from fvp_harness.scenario.model import FvpConfig
from fvp_harness.targets.baremetal import (
    EOT,
    BaremetalLaunch,
    BaremetalTarget,
    LaunchEnding,
    LaunchesModel,
    baremetal_argv,
    judge_launch,
    model_program,
)
from fvp_harness.targets.base import SharesHostFiles
from fvp_harness.targets.text import clean_text
from tests.baremetal_fake import fake_runner, perf_block, write_fake_fvp
from tests.helpers import wait_until

U85 = load_profile("corstone320-u85")
U55 = load_profile("corstone300-u55")


def pairs(argv: list[str]) -> list[str]:
    """The ``-C`` values of an argv, in order."""
    return [value for flag, value in itertools.pairwise(argv) if flag == "-C"]


def semihosting_launch(tmp_path: Path,
                       cmd_line: str = "executor_runner -m program.pte -o out -i i0.bin",
                       **params: object) -> BaremetalLaunch:
    return BaremetalLaunch(tmp_path / "runner.elf", "r0-u85-256-resnet8", cwd=tmp_path / "unit",
                           cmd_line=cmd_line, params=params)  # type: ignore[arg-type]


# --- the command line -----------------------------------------------------------------------------


def test_a_corstone320_launch_is_the_command_line_of_runner_utils(tmp_path: Path) -> None:
    """backends/arm/test/runner_utils.py (corstone-320), minus its `--fast` Ethos-U option, plus
    --stat."""
    launch = semihosting_launch(tmp_path, **{"mps4_board.subsystem.ethosu.num_macs": 128})
    argv = baremetal_argv(["FVP_Corstone_SSE-320"], U85, FvpConfig(), launch, timelimit=120)
    cwd = tmp_path / "unit"
    assert argv == [
        "FVP_Corstone_SSE-320",
        "-C", "mps4_board.subsystem.ethosu.num_macs=128",
        "-C", "mps4_board.visualisation.disable-visualisation=1",
        "-C", "vis_hdlcd.disable_visualisation=1",
        "-C", "mps4_board.telnetterminal0.start_telnet=0",
        "-C", "mps4_board.uart0.out_file=-",
        "-C", "mps4_board.uart0.unbuffered_output=1",
        "-C", "mps4_board.uart0.shutdown_on_eot=1",
        "-C", "mps4_board.subsystem.cpu0.semihosting-enable=1",
        "-C", "mps4_board.subsystem.cpu0.semihosting-stack_base=0",
        "-C", "mps4_board.subsystem.cpu0.semihosting-heap_limit=0",
        "-C", f"mps4_board.subsystem.cpu0.semihosting-cwd={cwd}",
        "-C",
        "mps4_board.subsystem.cpu0.semihosting-cmd_line=executor_runner -m program.pte -o out -i "
        "i0.bin", "-a", str(tmp_path / "runner.elf"),
        "--timelimit", "120",
        "--stat",
    ]  # fmt: skip


def test_a_corstone300_launch_uses_the_mps3_names_and_cpu0_semihosting(tmp_path: Path) -> None:
    """run_fvp.sh's ethos-u55 branch: ethosu.num_macs, mps3_board.*, and cpu0.semihosting-* (no
    subsystem)."""
    argv = baremetal_argv(["FVP_Corstone_SSE-300_Ethos-U55"], U55, FvpConfig(),
                          semihosting_launch(tmp_path), timelimit=600)
    assert pairs(argv)[:5] == [
        "ethosu.num_macs=128", "mps3_board.visualisation.disable-visualisation=1",
        "mps3_board.telnetterminal0.start_telnet=0", "mps3_board.uart0.out_file=-",
        "mps3_board.uart0.shutdown_on_eot=1",
    ]  # fmt: skip
    assert "cpu0.semihosting-enable=1" in pairs(argv)
    assert any(value.startswith("cpu0.semihosting-cmd_line=executor_runner")
               for value in pairs(argv))


def test_a_data_address_launch_is_run_fvp_sh_with_data(tmp_path: Path) -> None:
    """run_fvp.sh --data=model.pte@0x70000000: no semihosting parameters, the model placed by --data
    after -a."""
    launch = BaremetalLaunch(tmp_path / "runner.elf", "u",
                             data=[(tmp_path / "model.pte", "0x70000000")])
    argv = baremetal_argv(["FVP_Corstone_SSE-320"], U85, FvpConfig(), launch, timelimit=600)
    assert not any("semihosting" in value for value in pairs(argv))
    tail = argv[argv.index("-a"):]
    assert tail == ["-a", str(tmp_path / "runner.elf"), "--data",
                    f"{tmp_path / 'model.pte'}@0x70000000", "--timelimit", "600", "--stat"]


def test_the_build_params_win_over_the_scenario_params_over_the_profile(tmp_path: Path) -> None:
    fvp = FvpConfig(params={"mps4_board.subsystem.ethosu.num_macs": 512,
                            "mps4_board.uart0.unbuffered_output": 0},
                    args=["--quiet"])
    launch = semihosting_launch(tmp_path, **{"mps4_board.subsystem.ethosu.num_macs": 1024})
    argv = baremetal_argv(["FVP"], U85, fvp, launch, timelimit=None)
    assert "mps4_board.subsystem.ethosu.num_macs=1024" in pairs(argv)
    assert "mps4_board.uart0.unbuffered_output=0" in pairs(argv)
    assert (sum(value.startswith("mps4_board.subsystem.ethosu.num_macs=") for value in pairs(argv))
            == 1)
    assert argv.index("--quiet") < argv.index("-a") and "--timelimit" not in argv


def test_the_simulator_is_told_which_platform_it_plays() -> None:
    assert (model_program("sim", U85)
            == [sys.executable, "-m", "fvp_harness.sim", "--platform", "corstone320"])
    assert model_program("sim", U55)[-2:] == ["--platform", "corstone300"]
    assert (model_program("sim", load_profile("corstone1000-a320"))
            == [sys.executable, "-m", "fvp_harness.sim"])


def test_a_real_binary_is_found_by_path_or_by_the_profiles_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = write_fake_fvp(tmp_path / "bin")
    assert model_program(str(fake), U85) == [str(fake)]
    link = tmp_path / "link" / "FVP_Corstone_SSE-320"
    link.parent.mkdir()
    link.symlink_to(fake)
    assert model_program(str(link), U85) == [str(link)], (
        "a link keeps the name it was given (a model reads it)")
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    assert model_program("auto", U85) == [str(fake)]
    with pytest.raises(ConfigurationError, match="FVP binary not found"):
        model_program(str(tmp_path / "nothing"), U85)


def test_a_semihosting_command_line_over_256_characters_is_refused(tmp_path: Path) -> None:
    """runner_utils.py: `if len(cmd_line) > 256: raise` (the model truncates longer command
    lines)."""
    exactly = "r " + "x" * 254
    assert len(exactly) == 256
    baremetal_argv(["FVP"], U85, FvpConfig(), semihosting_launch(tmp_path, exactly), timelimit=None)
    with pytest.raises(ConfigurationError, match=r"run\.cmd_line: .* 257 characters, over the 256"):
        baremetal_argv(["FVP"], U85, FvpConfig(), semihosting_launch(tmp_path, exactly + "y"),
                       timelimit=None)


# --- the profiles ---------------------------------------------------------------------------------


def test_the_bare_metal_profiles_carry_upstreams_facts() -> None:
    assert U85.kind == U55.kind == "baremetal" and U85.baremetal
    assert (U85.executables == ["FVP_Corstone_SSE-320"] and
            U55.executables == ["FVP_Corstone_SSE-300_Ethos-U55"])
    assert U85.npu_macs == [128, 256, 512, 1024, 2048] and U55.npu_macs == [32, 64, 128, 256]
    assert (U85.npu_macs_param == "mps4_board.subsystem.ethosu.num_macs" and
            U55.npu_macs_param == "ethosu.num_macs")
    assert U85.semihosting == "mps4_board.subsystem.cpu0" and U55.semihosting == "cpu0"
    assert U85.cmd_line_limit == U55.cmd_line_limit == 256 and U85.timelimit == 600
    assert (U85.params["mps4_board.uart0.shutdown_on_eot"] == 1 and
            U55.params["mps3_board.uart0.out_file"] == "-")
    assert load_profile("corstone1000-a320").kind == "linux"


def test_a_bare_metal_profile_must_print_its_uart_on_stdout() -> None:
    data = U85.model_dump()
    data["params"] = {**data["params"], "mps4_board.uart0.out_file": "uart.log"}
    with pytest.raises(ValueError, match="out_file: '-'"):
        Profile.model_validate(data)
    with pytest.raises(ValueError, match="needs `uart`"):
        Profile.model_validate({**U85.model_dump(), "uart": None})
    linux = load_profile("corstone1000").model_dump()
    with pytest.raises(ValueError, match="needs `terminals`"):
        Profile.model_validate({**linux, "terminals": {}})


# --- what the end of a launch means ---------------------------------------------------------------

RUNNER = "I [executorch:arm_executor_runner.cpp:{line} {fn}()] {msg}"


def program(*extra: str, eot: bool = True) -> str:
    """A run's text: the runner's start, the perf block, its end (and the EOT line), then
    ``extra``."""
    lines = [RUNNER.format(line=1406, fn="main", msg="Running executor with parameter:"),
             RUNNER.format(line=1328, fn="run_model", msg="Starting running 1 inferences..."),
             *perf_block(40_000, 52_000, 61_000),
             RUNNER.format(line=1550, fn="main", msg="Program complete, exiting.")]
    if eot:
        lines.append(RUNNER.format(line=1554, fn="main", msg=EOT))
    return clean_text("\r\n".join([*lines, *extra]) + "\r\n")


def judge(text: str, ending: LaunchEnding, exit_status: int | None = 0,
          signal_status: int | None = None) -> int:
    return judge_launch(U85, "r0-u85-256-resnet8", ending, text, exit_status, signal_status,
                        timelimit=600, limit=900)


def test_eot_or_a_clean_exit_is_a_good_end() -> None:
    assert judge(program(), LaunchEnding(eot=True)) == 0
    # semihosting: _exit(0), no EOT
    assert judge(program(eot=False), LaunchEnding(), exit_status=0) == 0
    # stopped after EOT
    assert judge(program(), LaunchEnding(eot=True), exit_status=None, signal_status=2) == 0


def test_the_programs_own_error_lines_fail_the_unit_as_a_test_failure() -> None:
    error = ("E [executorch:arm_executor_runner.cpp:1107 print_outputs()] Could not open output "
             "file out-0.bin")
    assert judge(program(error), LaunchEnding(eot=True)) == 1
    fatal = ("F [executorch:arm_executor_runner.cpp:1346 run_model()] Execution of method forward "
             "failed")
    # an ET_CHECK abort traps into the fault handler, which spins until the time limit: still the
    # runner's failure
    text = program(fatal, "Hard fault. irq=-13", eot=False)
    assert judge(text, LaunchEnding(fault="Hard fault"), exit_status=None, signal_status=2) == 1
    assert judge(program("[critical] stack overflow"), LaunchEnding(eot=True)) == 1
    assert judge(program("Assertion failed: (x), function f"), LaunchEnding(eot=True)) == 1


def test_a_hard_fault_is_infrastructure_with_the_whole_fault_line() -> None:
    text = program("Hard fault. irq=-13, r0=0x00000000", "r1=0x00000001", eot=False)
    with pytest.raises(HardFault,
                       match=r"hard fault \(Hard fault\. irq=-13, r0=0x00000000\)") as caught:
        judge(text, LaunchEnding(fault="Hard fault"), exit_status=None, signal_status=2)
    assert caught.value.failure_class == "infrastructure" and "r1=0x00000001" in caught.value.output
    assert (caught.value.stage == "r0-u85-256-resnet8" and
            caught.value.last_lines[-1] == "r1=0x00000001")


def test_the_models_time_limit_and_the_units_deadline_are_time_limits() -> None:
    stopped = "Info: Simulation is stopping. Reason: CPU time has been exceeded."
    with pytest.raises(TimeLimitExceeded,
                       match=r"--timelimit 600 s\) before the program ended: Info: Simulation"):
        judge(program(stopped, eot=False), LaunchEnding(limit="Info: Simulation is stopping"))
    with pytest.raises(TimeLimitExceeded, match=r"did not end within 900 s \(phase unit\)"):
        judge(program(eot=False), LaunchEnding(deadline=True), exit_status=None, signal_status=9)


def test_a_model_that_will_not_run_fails_to_start_and_one_that_dies_died() -> None:
    licence = "ERROR: License checkout for feature FM_Cortex_M85 has been denied by Flex backend."
    with pytest.raises(FvpStartError, match=r"refused to run .*denied by Flex backend"):
        judge(licence,
              LaunchEnding(refused="License checkout for feature FM_Cortex_M85 has been denied"), 1)
    with pytest.raises(FvpStartError,
                       match="exited with status 1 before the program printed anything; it said: "
                                            "Error: unknown parameter"):
        judge("Error: unknown parameter 'x'\n", LaunchEnding(), exit_status=1)
    with pytest.raises(FvpDied, match="killed by signal 11 while the program ran"):
        judge(program(eot=False), LaunchEnding(), exit_status=None, signal_status=11)
    with pytest.raises(FvpDied, match="the instance was closed"):
        judge(program(eot=False), LaunchEnding(closed=True), exit_status=None, signal_status=2)


# --- launches of the stand-in model (slow: each starts a process) ---------------------------------


def open_target(tmp_path: Path, *, unit_timeout: float = 60.0, **fvp: object) -> BaremetalTarget:
    binary = write_fake_fvp(tmp_path / "bin")
    config = FvpConfig.model_validate({"binary": str(binary), "timeouts": {"unit": unit_timeout},
                                       **fvp})
    target = BaremetalTarget(config, U85, log_dir=tmp_path / "logs", timelimit=config.timelimit)
    target.open()
    return target


def launch(target: BaremetalTarget, tmp_path: Path, *, semihosting: bool = True,
           **spec: object) -> BaremetalLaunch:
    runner = fake_runner(tmp_path / f"runner-{spec.get('mode', 'ok')}.elf", **spec)
    model = tmp_path / "resnet8.pte"
    model.write_bytes(b"ET12 model bytes")
    inputs = tmp_path / "resnet8.input.bin"
    inputs.write_bytes(b"\x01\x02")
    assert target.workdir is not None
    if not semihosting:
        return BaremetalLaunch(runner, "r0-a-resnet8", data=[(model, "0x70000000")])
    return BaremetalLaunch(runner, "r0-a-resnet8", cwd=target.workdir / "units" / "r0-a-resnet8",
                           cmd_line="runner.elf -m resnet8.pte -o out -i resnet8.input.bin",
                           files={"resnet8.pte": model, "resnet8.input.bin": inputs})


def gone(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.slow
def test_a_semihosting_launch_ends_at_the_models_exit_with_outputs_and_provenance(
        tmp_path: Path) -> None:
    target = open_target(tmp_path)
    try:
        assert isinstance(target, LaunchesModel) and isinstance(target, SharesHostFiles)
        request = launch(target, tmp_path)
        result = target.launch(request)
        assert (result.ok and
                "ethosu_pmu_cycle_cntr :  40000 (40000.00 per inference)" in result.output)
        assert "\r" not in result.output and EOT not in result.output
        assert request.cwd is not None
        # the runner read -m, wrote -o
        assert (request.cwd / "out-0.bin").read_bytes() == b"out:ET12 mod"
        assert set(result.handed) == {str(request.runner), str(tmp_path / "resnet8.pte"),
                                      str(tmp_path / "resnet8.input.bin")}
        assert result.stat == {"Simulated time": "0.01s"}
        assert result.command.startswith(str(tmp_path / "bin" / "FVP_Corstone_SSE-320") + " -C ")
        log = (tmp_path / "logs" / "fvp.log").read_text()
        assert ("# launch r0-a-resnet8: " in log and
                "< I [executorch:arm_perf_monitor.cpp:210" in log)
        assert target.metadata["launches"] == 1 and target.metadata["exit"] == "exit status 0"
    finally:
        target.close()


@pytest.mark.slow
@pytest.mark.parametrize("semihosting", [True, False])
def test_output_read_while_the_program_runs_is_kept_once_and_logged_as_it_comes(
        tmp_path: Path, semihosting: bool) -> None:
    """Lines are logged while the program still runs (the pause is longer than a read slice), and
    the text taken then is not taken again when EOT or the end arrives."""
    target = open_target(tmp_path)
    try:
        result = target.launch(launch(target, tmp_path, semihosting=semihosting, pause=1.0))
        for line in ("Starting running 1 inferences...", "ethosu_pmu_cycle_cntr :  40000",
                     "Program complete"):
            assert result.output.count(line) == 1, line
        log = (tmp_path / "logs" / "fvp.log").read_text()
        assert (log.count("Starting running 1 inferences...") == 1 and
                log.count("Program complete") == 1)
        start = next(line for line in log.splitlines() if "Starting running" in line)
        block = next(line for line in log.splitlines() if "NPU Inferences" in line)
        assert start[:23] < block[:23], "the first lines were logged before the program ended"
    finally:
        target.close()


@pytest.mark.slow
def test_eot_ends_a_launch_even_when_the_model_would_run_on(tmp_path: Path) -> None:
    """With shutdown_on_eot=0 the model keeps running after EOT: the launch still ends there, the
    model is stopped (its whole process group) and the program's result stands."""
    target = open_target(tmp_path, params={"mps4_board.uart0.shutdown_on_eot": 0})
    try:
        began = time.monotonic()
        result = target.launch(launch(target, tmp_path, semihosting=False))
        assert result.ok and "Program complete, exiting." in result.output
        assert time.monotonic() - began < 20 and target.metadata["exit"] == "killed by signal 2"
        assert "--data" in result.command and "semihosting" not in result.command
    finally:
        target.close()


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "error", "within"), [
    ("hardfault", HardFault, 10.0),      # stopped at the fault, not at the 30 s time limit
    ("hang", TimeLimitExceeded, 20.0),   # the model stops itself at --timelimit 2 and says so
    ("crash", FvpDied, 10.0),
])  # fmt: skip
def test_infrastructure_endings_stop_the_model_and_leave_no_process(
    tmp_path: Path, mode: str, error: type[InfrastructureError], within: float
) -> None:
    target = open_target(tmp_path, timelimit=2 if mode == "hang" else 30)
    try:
        began = time.monotonic()
        with pytest.raises(error) as caught:
            target.launch(launch(target, tmp_path, mode=mode))
        assert time.monotonic() - began < within
        assert caught.value.log_path == tmp_path / "logs" / "fvp.log" and caught.value.last_lines
    finally:
        target.close()


@pytest.mark.slow
def test_the_unit_deadline_stops_a_model_that_never_stops_itself(tmp_path: Path) -> None:
    target = open_target(tmp_path, unit_timeout=1.5, timelimit=300)
    try:
        with pytest.raises(TimeLimitExceeded, match=r"did not end within 1\.5 s"):
            target.launch(launch(target, tmp_path, mode="hang"))
    finally:
        target.close()


@pytest.mark.slow
def test_a_licence_refusal_and_a_missing_binary(tmp_path: Path) -> None:
    target = open_target(tmp_path)
    try:
        with pytest.raises(FvpStartError, match="denied by Flex backend"):
            target.launch(launch(target, tmp_path, licence=True))
    finally:
        target.close()
    missing = BaremetalTarget(FvpConfig(binary=str(tmp_path / "no-such-model")), U85,
                              log_dir=tmp_path / "l2")
    with pytest.raises(ConfigurationError, match="FVP binary not found"):
        missing.open()
    missing.close()


@pytest.mark.slow
def test_noise_is_cleaned_and_errors_in_the_programs_output_are_test_failures(
        tmp_path: Path) -> None:
    target = open_target(tmp_path)
    try:
        noisy = target.launch(launch(target, tmp_path, mode="noise"))
        assert (noisy.ok and
                "I [executorch:arm_executor_runner.cpp:1430 main()] colour" in noisy.output)
        assert "bad byte \ufffd here" in noisy.output and "\x1b" not in noisy.output
        failed = target.launch(launch(target, tmp_path, mode="error"))
        assert failed.exit_status == 1 and "Could not open output file" in failed.output
        # F line, then the trap's hard fault
        fatal = target.launch(launch(target, tmp_path, mode="fatal"))
        assert fatal.exit_status != 0
    finally:
        target.close()


@pytest.mark.slow
def test_close_from_another_thread_stops_the_launch_in_flight(tmp_path: Path) -> None:
    """The second Ctrl-C closes every instance under its unit: the model's group is killed, the
    launch says so."""
    target = open_target(tmp_path, timelimit=300)
    outcome: dict[str, BaseException] = {}

    def run() -> None:
        try:
            target.launch(launch(target, tmp_path, mode="hang"))
        except BaseException as exc:  # handed to the test
            outcome["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    pid = wait_until(lambda: target._child.pid if target._child is not None else None,
                     message="the model")
    wait_until(lambda: "Starting running" in (tmp_path / "logs" / "fvp.log").read_text(),
               message="the program")
    target.close()
    worker.join(timeout=30)
    assert not worker.is_alive() and isinstance(outcome.get("error"), FvpDied)
    assert wait_until(lambda: gone(pid), message="the model's process group to go")


def test_error_lines_as_run_fvp_sh_greps_them() -> None:
    """run_fvp.sh:238 greps ``^(F|E|...)``: any program line starting E or F fails the run (``Error:
    ...`` too, which the older ``^[EF][: ]`` let through); under ``--fast`` run_fvp.sh:241 drops the
    timing-adapter lines first."""
    assert (judge(program("Error: could not allocate the planned buffer"), LaunchEnding(eot=True))
            == 1)
    assert judge(program("Fatal: out of memory"), LaunchEnding(eot=True)) == 1
    adapter = ["Failed to initialize timing-adapter #0",
               "Timing adapter has no effect if option --fast/-F is enabled"]
    assert judge(program(*adapter), LaunchEnding(eot=True)) == 0
