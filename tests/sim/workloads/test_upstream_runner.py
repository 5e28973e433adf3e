"""The emulated executor_runner against upstream's own format strings, line by line.

Every expected line below is a printf format string as it stands in pytorch/executorch, with the
file and the line of its ``ET_LOG(`` (for an ``ET_CHECK_MSG``, of the ``ET_CHECK_MSG(``) at the
commit named in the fixture. The comparison ignores timestamps and numbers (a ``%...`` conversion
matches any value of its kind) but not the level, the file, the line or any other character.
Fixtures are written from reading those sources; no code is copied.

Commits: CURRENT = cff6f4dd32 (2026-08-22), OLD = 5e8a0df301 (the last before 2026-04-10, when
"Iteration" and "Model loaded in" arrived).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pytest

from fvp_harness.sim.networks.architectures import get_architecture
from fvp_harness.sim.networks.modelfile import compile_model, encode_model
from fvp_harness.sim.networks.partition import choose_cpu_layers
from fvp_harness.sim.workloads import executor_runner

from .conftest import RunRunner

Expected = tuple[str, str, int, str]  # level, source file, line, printf format of the message

RUNNER = "executor_runner.cpp"  # examples/portable/executor_runner/executor_runner.cpp
ETHOSU = "EthosUBackend.cpp"  # backends/arm/runtime/EthosUBackend.cpp
CORTEX_A = "EthosUBackend_Cortex_A.cpp"  # backends/arm/runtime/EthosUBackend_Cortex_A.cpp
LOADER = "file_data_loader.cpp"  # extension/data_loader/file_data_loader.cpp
PROGRAM = "program.cpp"  # runtime/executor/program.cpp
METHOD = "method.cpp"  # runtime/executor/method.cpp
# runtime/platform/assert.h:21-39, ET_CHECK_MSG's prefix
ASSERT = "In function %s(), assert failed (%s): "

# --- fixtures at CURRENT (cff6f4dd32) -------------------------------------------------------------
LOADING_INPUTS = ("I", RUNNER, 393, "Loading inputs from input file(s).")  # executor_runner.cpp:393
MODEL_FILE_LOADED = ("I", RUNNER, 476, "Model file %s is loaded.")  # executor_runner.cpp:476
USING_METHOD = ("I", RUNNER, 486, "Using method %s")  # executor_runner.cpp:486
# executor_runner.cpp:556-560
CPU_PLANNED = ("I", RUNNER, 556, "Setting up CPU planned buffer %zu, size %zu.")
DELEGATE_DATA = ("I", ETHOSU, 101, "data:%p")  # EthosUBackend.cpp:101, in init()
MODEL_LOADED_IN = ("I", RUNNER, 624, "Model loaded in %f ms.")  # executor_runner.cpp:624-629
# EthosUBackend_Cortex_A.cpp:296
CYCLE_COUNTER = ("I", CORTEX_A, 296, "Ethos-U Linux delegate cycle counter: %llu")
ITERATION = ("I", RUNNER, 779, "Iteration %u of %u: %f ms")  # executor_runner.cpp:779-785 (PRIu32)
# executor_runner.cpp:789-794
EXECUTED = ("I", RUNNER, 789, "Model executed successfully %u time(s) in %f ms.")
OUTPUTS = ("I", RUNNER, 798, "%zu outputs: ")  # executor_runner.cpp:798
WRITING_OUTPUT = ("I", RUNNER, 809, "Writing output to file: %s")  # executor_runner.cpp:809
OPEN_FAILED = ("E", LOADER, 110, "Failed to open %s: %s (%d)")  # file_data_loader.cpp:110-111
# executor_runner.cpp:461-464
LOADER_CHECK = ("F", RUNNER, 461, ASSERT + "FileDataLoader::from() failed: 0x%x")
# executor_runner.cpp:308-312: "Extra commandline args:" + " arg"...
EXTRA_ARGS = ("E", RUNNER, 312, "%s")
# program.cpp:168-172
PROGRAM_IDENTIFIER = ("E", PROGRAM, 168, "Program identifier '%.4s' != expected '%.4s'")
PARSE_FAILED = ("E", RUNNER, 473, "Failed to parse model file %s")  # executor_runner.cpp:473
# EthosUBackend_Cortex_A.cpp:278
NPU_TIMED_OUT = ("E", CORTEX_A, 278, "Ethos-U inference timed out after %lld ns")
# method.cpp
CALL_DELEGATE_FAILED = ("E", METHOD, 1528, "CALL_DELEGATE execute failed at instruction %zu: 0x%x")
EXECUTE_CHECK = (  # executor_runner.cpp:773-777
    "F", RUNNER, 773, ASSERT + "Execution of method %s failed with status 0x%x",
)  # fmt: skip

# --- fixtures at OLD (5e8a0df301) -----------------------------------------------------------------
OLD_MODEL_FILE_LOADED = ("I", RUNNER, 352, "Model file %s is loaded.")  # executor_runner.cpp:352
OLD_USING_METHOD = ("I", RUNNER, 361, "Using method %s")  # executor_runner.cpp:361
# executor_runner.cpp:412
OLD_PLANNED = ("I", RUNNER, 412, "Setting up planned buffer %zu, size %zu.")
OLD_DELEGATE_DATA = ("I", ETHOSU, 81, "data:%p")  # EthosUBackend.cpp:81
OLD_METHOD_LOADED = ("I", RUNNER, 440, "Method loaded.")  # executor_runner.cpp:440
# executor_runner.cpp:493-498
OLD_EXECUTED = ("I", RUNNER, 493, "Model executed successfully %u time(s) in %f ms.")
OLD_OUTPUTS = ("I", RUNNER, 502, "%zu outputs: ")  # executor_runner.cpp:502
OLD_EXTRA_ARGS = ("E", RUNNER, 193, "%s")  # executor_runner.cpp:189-193

# --- lines that are ours (not upstream), where the build asks for them ----------------------------
# after gflags::ParseCommandLineFlags (line 306)
BUILD_ID = ("I", RUNNER, 306, "executor_runner build id: %s")
# #22596 (closed unmerged) put its Linux CPU-time report in
# examples/arm/executor_runner/arm_perf_monitor.cpp; its text and lines are not public: shown at
# EthosUBackend_execute_end()'s body (arm_perf_monitor.cpp:124 at cff6f4dd32)
CPU_TIME = ("I", "arm_perf_monitor.cpp", 124, "EthosUBackend::execute() CPU time: %.3f ms")

_CONVERSIONS = {
    "%s": r".*?",
    "%.4s": r".{0,4}?",
    "%p": r"(?:0x[0-9a-f]+|\(nil\))",
    "%f": r"-?\d+\.\d{6}",
    "%.3f": r"-?\d+\.\d{3}",
    "%x": r"[0-9a-f]+",
    "%d": r"-?\d+",
    "%u": r"\d+",
    "%zu": r"\d+",
    "%llu": r"\d+",
    "%lld": r"-?\d+",
}
_CONVERSION = re.compile("|".join(re.escape(c)
                                  for c in sorted(_CONVERSIONS, key=len, reverse=True)))
# runtime/platform/default/posix.cpp: "%c %02u:%02u:%02u.%06lu executorch:%s:%zu] %s\n"
LINE = re.compile(
    r"^(?P<level>[DIWEF]) \d{2}:\d{2}:\d{2}\.\d{6} executorch:(?P<src>[^:]+):(?P<line>\d+)\] "
    r"(?P<msg>.*)$"
)


def printf_regex(fmt: str) -> re.Pattern[str]:
    """A printf format as a regex: each conversion matches any value of its kind, everything else
    itself."""
    parts, last = [], 0
    for m in _CONVERSION.finditer(fmt):
        parts += [re.escape(fmt[last : m.start()]), _CONVERSIONS[m.group()]]
        last = m.end()
    return re.compile("".join([*parts, re.escape(fmt[last:])]) + "$")


def assert_lines(stderr: str, expected: Sequence[Expected | str]) -> None:
    """Every stderr line, in order: an ET_LOG line matching (level, file, line, format), or a
    literal line."""
    got = stderr.split("\n")
    assert got[-1] == "", "stderr must end with a complete line"
    got = got[:-1]
    assert len(got) == len(expected), "\n".join(got)
    for number, (line, want) in enumerate(zip(got, expected, strict=True), 1):
        if isinstance(want, str):
            assert line == want, f"line {number}: {line!r} != {want!r}"
            continue
        m = LINE.match(line)
        assert m, f"line {number}: no ET_LOG prefix: {line!r}"
        level, src, at, fmt = want
        assert (m["level"], m["src"], int(m["line"])) == (level, src, at), (
            f"line {number}: {line!r} != {want}")
        assert printf_regex(fmt).match(m["msg"]), (
            f"line {number}: {m['msg']!r} does not match {fmt!r}")


def messages(stderr: str) -> list[str]:
    return [m["msg"] for line in stderr.splitlines() if (m := LINE.match(line))]


# --- a successful run -----------------------------------------------------------------------------


@pytest.mark.parametrize("driver", ["per-inference", "reuse"])
def test_stock_success_is_upstreams_sequence(run_runner: RunRunner, driver: str) -> None:
    status, ctx = run_runner(driver, "--model_path=resnet8.bin", "--num_executions=3",
                             "--inputs=resnet8.in", "--output_file=out")  # fmt: skip
    assert status == 0
    assert_lines(ctx.stderr_text, [
        LOADING_INPUTS, MODEL_FILE_LOADED, USING_METHOD, CPU_PLANNED, DELEGATE_DATA,
        MODEL_LOADED_IN, *[CYCLE_COUNTER, ITERATION] * 3,
        EXECUTED, OUTPUTS, WRITING_OUTPUT,
    ])  # fmt: skip
    msgs = messages(ctx.stderr_text)
    assert msgs[1] == "Model file resnet8.bin is loaded." and msgs[2] == "Using method forward"
    # 3072 B input + 16 (10 B output, aligned)
    assert msgs[3] == "Setting up CPU planned buffer 0, size 3088."
    assert ([m.split(":")[0] for m in msgs if m.startswith("Iteration")]
            == [f"Iteration {i} of 3" for i in (1, 2, 3)])
    assert msgs[-3].startswith("Model executed successfully 3 time(s) in ")
    assert msgs[-2:] == ["1 outputs: ", "Writing output to file: out-0.bin"]
    assert "/root/out-0.bin" in ctx.files
    # stdout: "OutputX 0: " and the tensor as print_evalue.cpp prints it
    # (executor_runner.cpp:860-863)
    assert re.fullmatch(r"OutputX 0: tensor\(sizes=\[1, 10\], \[(-?\d+, ){9}-?\d+\]\)\n",
                        ctx.stdout_text)


def test_without_inputs_or_output_file_those_lines_are_absent(run_runner: RunRunner) -> None:
    status, ctx = run_runner("reuse", "--model_path=resnet8.bin")
    assert status == 0
    assert_lines(ctx.stderr_text, [
        MODEL_FILE_LOADED, USING_METHOD, CPU_PLANNED, DELEGATE_DATA, MODEL_LOADED_IN, CYCLE_COUNTER,
        ITERATION, EXECUTED, OUTPUTS,
    ])  # fmt: skip


def test_cycle_counter_switched_off(run_runner: RunRunner) -> None:
    """``ethosu.enable_cycle_counter`` off: EthosUBackend_Cortex_A.cpp:294 skips the line."""
    model = encode_model(compile_model(get_architecture("resnet8"), 0, 256, cycle_counter=False))
    status, ctx = run_runner("per-inference", "--model_path=quiet.bin", "--num_executions=2",
                             extra_files={"/root/quiet.bin": model})  # fmt: skip
    assert status == 0
    assert_lines(ctx.stderr_text, [
        MODEL_FILE_LOADED, USING_METHOD, CPU_PLANNED, DELEGATE_DATA, MODEL_LOADED_IN, ITERATION,
        ITERATION, EXECUTED, OUTPUTS,
    ])  # fmt: skip


def test_old_generation(run_runner: RunRunner) -> None:
    status, ctx = run_runner("reuse", "--model_path=resnet8.bin", "--num_executions=2",
                             log_generation="old")
    assert status == 0
    assert_lines(ctx.stderr_text, [
        OLD_MODEL_FILE_LOADED, OLD_USING_METHOD, OLD_PLANNED, OLD_DELEGATE_DATA, OLD_METHOD_LOADED,
        CYCLE_COUNTER, CYCLE_COUNTER, OLD_EXECUTED, OLD_OUTPUTS,
    ])  # fmt: skip
    # the flags of the time: --print_output and --method_name did not exist yet
    # (executor_runner.cpp:61-83)
    status, ctx = run_runner("reuse", "--model_path=resnet8.bin", "--print_output=none",
                             log_generation="old")
    assert (status, ctx.stderr_text) == (1, "ERROR: unknown command line flag 'print_output'\n")
    status, ctx = run_runner("reuse", "--model_path=resnet8.bin", "stray", log_generation="old")
    assert status == 1
    assert_lines(ctx.stderr_text, [OLD_EXTRA_ARGS])
    # an input file that cannot be opened: "%s\n" and return 1 (executor_runner.cpp:269-271)
    status, ctx = run_runner("reuse", "--model_path=resnet8.bin", "--inputs=nope.in",
                             log_generation="old")
    assert status == 1
    assert_lines(ctx.stderr_text, [("I", RUNNER, 254, "Loading inputs from input file(s)."),
                                   ("E", RUNNER, 270, "Failed to open input file: %s"),
                                   ""])  # fmt: skip


def test_build_id_and_cpu_time_report_lines(run_runner: RunRunner) -> None:
    status, ctx = run_runner("per-inference", "--model_path=resnet8.bin", "--num_executions=2",
                             build_id="b-1", cpu_time_report=True)  # fmt: skip
    assert status == 0
    assert_lines(ctx.stderr_text, [
        BUILD_ID, MODEL_FILE_LOADED, USING_METHOD, CPU_PLANNED, DELEGATE_DATA, MODEL_LOADED_IN,
        *[CYCLE_COUNTER, CPU_TIME, ITERATION] * 2,
        EXECUTED, OUTPUTS,
    ])  # fmt: skip
    assert messages(ctx.stderr_text)[0] == "executor_runner build id: b-1"
    # the build id also shows when the run fails at once
    status, ctx = run_runner("reuse", "--model_path=resnet8.bin", "stray", build_id="b-2")
    assert status == 1
    assert_lines(ctx.stderr_text, [BUILD_ID, EXTRA_ARGS])


# --- failures -------------------------------------------------------------------------------------


def test_missing_model(run_runner: RunRunner) -> None:
    status, ctx = run_runner("reuse", "--model_path=/data/missing.pte")
    assert status == 134
    assert_lines(ctx.stderr_text, [OPEN_FAILED, LOADER_CHECK, "Aborted"])
    assert messages(ctx.stderr_text) == [
        "Failed to open /data/missing.pte: No such file or directory (2)",
        "In function main(), assert failed (file_loader.ok()): FileDataLoader::from() failed: 0x22",
    ]


def test_stray_argument(run_runner: RunRunner) -> None:
    status, ctx = run_runner("reuse", "--model_path=resnet8.bin", "extra", "--num_executions=2",
                             "more")
    assert status == 1 and ctx.stdout_text == ""
    assert_lines(ctx.stderr_text, [EXTRA_ARGS])
    assert messages(ctx.stderr_text) == ["Extra commandline args: extra more"]


def test_file_that_is_not_a_program(run_runner: RunRunner) -> None:
    status, ctx = run_runner("reuse", "--model_path=x.bin",
                             extra_files={"/root/x.bin": b"\x7fELF" + bytes(100)})
    assert status == 1
    assert_lines(ctx.stderr_text, [PROGRAM_IDENTIFIER, PARSE_FAILED])
    # %.4s stops at the NUL
    assert messages(ctx.stderr_text)[0] == "Program identifier '' != expected 'ET12'"


def test_real_pte_keeps_upstreams_lines_around_our_note(run_runner: RunRunner) -> None:
    pte = b"\x1c\x00\x00\x00ET12" + bytes(200)
    status, ctx = run_runner("reuse", "--model_path=m.pte", extra_files={"/root/m.pte": pte})
    assert status == 1
    note = ctx.stderr_text.splitlines()[0]
    assert note.startswith("fvp-sim: m.pte is a real ExecuTorch program")
    assert_lines(ctx.stderr_text, [note, PARSE_FAILED])


def test_unknown_flag_is_gflags_error(run_runner: RunRunner) -> None:
    """gflags (src/gflags.cc, SplitArgumentLocked): ``ERROR: unknown command line flag '%s'``, then
    exit(1)."""
    status, ctx = run_runner("reuse", "--model_path=resnet8.bin", "--print_all_output")
    assert (status, ctx.stdout_text) == (1, "")
    assert ctx.stderr_text == "ERROR: unknown command line flag 'print_all_output'\n"


def test_npu_timeout(run_runner: RunRunner) -> None:
    status, ctx = run_runner("per-inference", "--model_path=resnet8.bin", "--num_executions=3",
                             fault="timeout=1")
    assert status == 134
    assert_lines(ctx.stderr_text, [
        MODEL_FILE_LOADED, USING_METHOD, CPU_PLANNED, DELEGATE_DATA, MODEL_LOADED_IN, CYCLE_COUNTER,
        ITERATION, NPU_TIMED_OUT, CALL_DELEGATE_FAILED, EXECUTE_CHECK, "Aborted",
    ])  # fmt: skip
    assert messages(ctx.stderr_text)[-3:] == [
        # kDefaultEthosUTimeoutNs, Cortex_A.cpp:41
        "Ethos-U inference timed out after 60000000000 ns",
        "CALL_DELEGATE execute failed at instruction 0: 0x2",  # Error::InvalidState
        "In function main(), assert failed (status == Error::Ok): Execution of method forward "
        "failed with status 0x2",
    ]
    stamps = [line.split()[1] for line in ctx.stderr_text.splitlines()[-4:-2]]
    assert stamps[1] >= "00:01:00"  # the driver waited 60 s of simulated time


# --- the log machinery ----------------------------------------------------------------------------


def test_long_messages_are_cut_to_255_bytes_then_to_whole_utf8_characters(
        run_runner: RunRunner) -> None:
    """log.cpp:118-129: a 256-byte buffer, then the last character dropped when the cut split it."""
    # "Failed to open x" is 16 bytes; each "é" is 2: byte 255 is the first half of the 120th "é"
    path = "x" + "é" * 150
    status, ctx = run_runner("reuse", f"--model_path={path}")
    assert status == 134
    first = ctx.stderr_text.encode("utf-8", "surrogateescape").split(b"\n")[0]
    message = first.split(b"] ", 1)[1]
    assert message == ("Failed to open x" + "é" * 119).encode() and len(message) == 254
    # an ASCII path is cut at exactly 255 bytes
    status, ctx = run_runner("reuse", "--model_path=" + "p" * 400)
    assert len(messages(ctx.stderr_text)[0].encode()) == 255


def test_timestamps_are_truncated_microseconds() -> None:
    class Clock:
        def __init__(self) -> None:
            self.t = 5.0

        def now(self) -> float:
            return self.t

    clock = Clock()
    log = executor_runner.EtLog(clock)  # type: ignore[arg-type]
    clock.t = 5.0 + 3723.0000019  # 1 h 2 min 3 s and 1.9 us
    assert log.prefix("I", RUNNER, 1) == "I 01:02:03.000001 executorch:executor_runner.cpp:1] "


# --- printing (print_evalue.cpp), checked against upstream's own unit test ------------------------


@pytest.mark.parametrize(
    ("values", "edge", "expected"),
    [
        # extension/evalue_util/test/print_evalue_test.cpp:409, 415, 422 (default 3 edge items, not
        # wrapping)
        (range(-4, 3), 3, "[-4, -3, -2, ..., 0, 1, 2]"),
        (range(-4, 4), 3, "[-4, -3, -2, ..., 1, 2, 3]"),
        (range(-4, 6), 3, "[-4, -3, -2, ..., 3, 4, 5]"),
        # print_evalue_test.cpp:211, a [5, 2] tensor's data
        (range(1, 11), 3, "[1, 2, 3, ..., 8, 9, 10]"),
        # EdgeItemsAffectsTensorData: one edge item
        (range(1, 11), 1, "[1, ..., 10]"),
        # no elision: everything fits
        (range(3), 100, "[0, 1, 2]"),
    ],
)
def test_scalar_list_matches_upstream_unit_test(values: range, edge: int, expected: str) -> None:
    assert executor_runner.log._scalar_list([str(v) for v in values], edge) == expected


def test_summary_wraps_ten_per_line_with_a_trailing_comma() -> None:
    """print_evalue.cpp:87-137: more than 10 items shown -> a new line every 10, ", " after every
    item."""
    text = executor_runner.format_outputs([(np.arange(12, dtype=np.int8), [1, 12])], "summary")
    assert text == ("OutputX 0: tensor(sizes=[1, 12], [\n  0, 1, 2, 3, 4, 5, 6, 7, 8, 9, \n  10, "
                    "11, \n])\n")
    all_text = executor_runner.format_outputs([(np.array([-3, 4], dtype=np.int8), [1, 2])], "all")
    # executor_runner.cpp:839-844
    assert all_text == "Output[0][0]: (char) -3\nOutput[0][1]: (char) 4\n"
    assert executor_runner.format_outputs([(np.zeros(2, dtype=np.int8), [1, 2])], "none") == ""


# --- the VGF build: the same executor_runner.cpp, VGFBackend.cpp's own lines ----------------------

VGF = "VGFBackend.cpp"  # backends/arm/runtime/VGFBackend.cpp at CURRENT
VGF_AVAILABLE = ("I", VGF, 448, "Checking VGFBackend is available")  # is_available(), before init
# vkml_load_extensions(): ensure_initialized + is_available
VKML_LOADED = ("I", VGF, 84, "VKML Extensions loaded")
VGF_INIT = ("I", VGF, 460, "Entered VGF init")  # init()
VGF_EXECUTE = ("I", VGF, 556, "VGF execute: args=%zu IOs=%zu inputs=%zu outputs=%zu")  # execute()
VGF_COPY_IN = ("I", VGF, 629, "Copy input IO[%d] -> args[%zu]")
VGF_COPY_OUT = ("I", VGF, 742, "Copy output IO[%d] -> args[%zu]")


def test_vgf_runner_prints_the_same_executor_runner_lines() -> None:
    from fvp_harness.sim.networks.modelfile import make_input
    from fvp_harness.sim.workloads.vgf_runner import VgfArtifact, executor_runner_vgf, make_artifact

    from .fake_context import FakeContext

    arch = get_architecture("resnet8")
    files = {
        "/root/runner": make_artifact(VgfArtifact("")),
        "/root/m.model": encode_model(compile_model(arch, 1)),
        "/root/in.bin": make_input(arch, 1).tobytes(),
    }
    ctx = FakeContext(["/root/runner", "--model_path=m.model", "--inputs=in.bin",
                       "--num_executions=2"], files)
    assert executor_runner_vgf(ctx) == 0
    assert_lines(ctx.stderr_text, [
        LOADING_INPUTS, MODEL_FILE_LOADED, USING_METHOD, CPU_PLANNED,
        VGF_AVAILABLE, VKML_LOADED, VKML_LOADED, VGF_INIT, MODEL_LOADED_IN,
        *[VGF_EXECUTE, VGF_COPY_IN, VGF_COPY_OUT, ITERATION] * 2,
        EXECUTED, OUTPUTS,
    ])  # fmt: skip
    ctx = FakeContext(["/root/runner", "--model_path=gone.model"], files)
    assert executor_runner_vgf(ctx) == 134
    assert_lines(ctx.stderr_text, [OPEN_FAILED, LOADER_CHECK, "Aborted"])
    ctx = FakeContext(["/root/runner", "--model_path=m.model", "stray"], files)
    assert executor_runner_vgf(ctx) == 1
    assert_lines(ctx.stderr_text, [EXTRA_ARGS])


def test_a_partitioned_model_prints_one_data_line_per_delegate_and_one_counter_per_call(
        run_runner: RunRunner) -> None:
    """K Ethos-U partitions are K delegates: EthosUBackend::init() prints ``data:%p`` once each
    (EthosUBackend.cpp:101), and every execute() call prints its cycle counter
    (EthosUBackend_Cortex_A.cpp:294-299, inside ``if (options.enable_cycle_counter)``), so one
    ``method->execute()`` prints K counters before its ``Iteration`` line
    (executor_runner.cpp:779)."""
    arch = get_architecture("ds_cnn")
    model = compile_model(arch, 0, 256, cpu_layers=choose_cpu_layers(arch, 3))
    status, ctx = run_runner("reuse", "--model_path=part.bin", "--num_executions=2",
                             cpu_time_report=True,
                             extra_files={"/root/part.bin": encode_model(model)})  # fmt: skip
    assert status == 0
    assert_lines(ctx.stderr_text, [
        MODEL_FILE_LOADED, USING_METHOD, CPU_PLANNED, *[DELEGATE_DATA] * 3, MODEL_LOADED_IN,
        *([CYCLE_COUNTER, CPU_TIME] * 3 + [ITERATION]) * 2,
        EXECUTED, OUTPUTS,
    ])  # fmt: skip
    counters = [int(line.rsplit(" ", 1)[1])
                for line in ctx.stderr_text.splitlines() if "cycle counter" in line]
    # each partition its own work, every time
    assert counters[:3] == counters[3:] and len(set(counters[:3])) == 3


# --- an image without the node the delegate opens (meta-arm 2026.05's in-kernel accel driver) -----

# EthosUBackend_Cortex_A.cpp:318
DRIVER_FAILED = ("E", CORTEX_A, 318, "Ethos-U Linux driver invocation failed: %s")


def test_stock_build_on_an_image_without_dev_ethosu0_aborts_at_the_first_execute(
        run_runner: RunRunner) -> None:
    """meta-arm 2026.05 (recipes-kernel/linux/files/corstone1000/ethosu.cfg:
    CONFIG_DRM_ACCEL_ARM_ETHOSU=y) has /dev/accel/accel0 and no /dev/ethosu0; the delegate opens
    LinuxDriverOptions::device_path, "/dev/ethosu0" (Cortex_A.cpp:44), inside execute()'s try (line
    191), the driver library's eopen throws "Failed to open device", line 318 logs it and returns
    InvalidState: method.cpp:1528, then the Fatal at executor_runner.cpp:773."""
    status, ctx = run_runner("per-inference", "--model_path=resnet8.bin", "--num_executions=3",
                             devices=("/dev/accel/accel0",))
    assert status == 134
    assert_lines(ctx.stderr_text, [
        MODEL_FILE_LOADED, USING_METHOD, CPU_PLANNED, DELEGATE_DATA, MODEL_LOADED_IN,
        DRIVER_FAILED, CALL_DELEGATE_FAILED, EXECUTE_CHECK, "Aborted",
    ])  # fmt: skip
    assert messages(ctx.stderr_text)[-3:] == [
        "Ethos-U Linux driver invocation failed: Failed to open device",
        "CALL_DELEGATE execute failed at instruction 0: 0x2",
        "In function main(), assert failed (status == Error::Ok): Execution of method forward "
        "failed with status 0x2",
    ]
    assert "cycle counter" not in ctx.stderr_text and ctx.stdout_text == ""


def test_a_build_for_another_node_opens_that_node(run_runner: RunRunner) -> None:
    """The ``ethosu.device`` compile spec (Cortex_A.cpp:80-94) moves the node; the build then needs
    that one."""
    status, ctx = run_runner("per-inference", "--model_path=resnet8.bin", devices=("/dev/ethosu1",),
                             npu_device="/dev/ethosu1")
    assert status == 0 and CYCLE_COUNTER[3].split(":")[0] in ctx.stderr_text
    status, ctx = run_runner("per-inference", "--model_path=resnet8.bin", npu_device="/dev/ethosu1")
    assert status == 134 and "Failed to open device" in ctx.stderr_text


def test_a_reuse_build_without_the_node_fails_at_method_load(run_runner: RunRunner) -> None:
    """After #22599 the driver objects are made in platform_init (method load); its line numbers are
    not known (upstream-conformance.md), so the failure keeps the delegate's line 318 and method
    load's Init failed path."""
    status, ctx = run_runner("reuse", "--model_path=resnet8.bin", devices=())
    assert status == 134
    msgs = messages(ctx.stderr_text)
    assert msgs[-3:] == [
        "Ethos-U Linux driver invocation failed: Failed to open device",
        "Init failed for backend EthosUBackend: 0x2",
        "In function main(), assert failed (method.ok()): Loading of method forward failed with "
        "status 0x2",
    ]
    assert ctx.stderr_text.endswith("Aborted\n")
