"""Our executor runner on ExecuTorch's real runtime (the executorch wheel's C++ SDK), built with
CMake for the host and cross-built for aarch64 (run under qemu-aarch64-static): the harness's own
scrapers read its lines unchanged, the ``before`` and ``after`` builds compute the same bytes,
``before`` spends more per inference, and the traced build writes an ETDump the project's reader
decodes."""

from __future__ import annotations

import array
import os
import statistics
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from fvp_harness.report.stats.etdump import read_etdump
from fvp_harness.run.scrape import find_errors, parse_log_line, scrape
from fvp_harness.scenario.model import MetricSpec
from fvp_harness.toolchain import runner_build
from tests.e2e.cli import run_cli
from tests.helpers import REPO
from tests.toolchain.lane import Lane, export_program, require_lane, require_qemu_user

pytestmark = pytest.mark.slow

RUNS = 40
METRICS = [MetricSpec(name=name) for name in ("iteration_time", "run_time", "load_time")]


@pytest.fixture(scope="module")
def lane() -> Lane:
    return require_lane()


@pytest.fixture(scope="module")
def program(lane: Lane, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_program(lane, tmp_path_factory.mktemp("program"))


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runner-build")


def _build(lane: Lane, work: Path, arch: str, variant: str, traced: bool = False) -> Path:
    sdk = lane.sdk_x86_64 if arch == "x86_64" else lane.sdk_aarch64
    assert sdk is not None
    name = f"runner-{arch}-{variant}{'-traced' if traced else ''}"
    return runner_build.build_runner(
        sdk=sdk,
        cmake=lane.cmake,
        arch=arch,
        variant=variant,
        traced=traced,
        output=work / "out" / name,
        work=work,
    )


def _run(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=300,
        check=False,
        env={**os.environ, **(env or {})},
    )


def _floats(path: Path) -> list[float]:
    return list(array.array("f", path.read_bytes()))


def test_host_before_and_after_on_the_real_runtime(lane: Lane, program: Path, work: Path) -> None:
    folder = program.parent
    texts, medians = {}, {}
    for variant in ("before", "after"):
        runner = _build(lane, work, "x86_64", variant)
        proc = _run(
            [
                str(runner),
                "--model_path",
                str(program),
                "--inputs",
                "input.bin",
                "--num_executions",
                str(RUNS),
                "--output_file",
                f"out-{variant}",
                "--print_output",
                "none",
            ],
            folder,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        text = proc.stdout + proc.stderr
        texts[variant] = text
        result = scrape(text, METRICS)
        assert len(result.samples["iteration_time"]) == RUNS and not result.flagged, result
        assert len(result.samples["run_time"]) == 1 and len(result.samples["load_time"]) == 1
        assert result.executions == RUNS
        assert find_errors(text) == []
        lines = [parse_log_line(line) for line in text.splitlines() if line.startswith("I ")]
        assert lines and all(line is not None for line in lines)
        ours = {line.message for line in lines if line and line.file == "executor_runner.cpp"}
        assert f"Model file {program} is loaded." in ours and "Using method forward" in ours
        assert "Writing output to file: out-" + variant + "-0.bin" in ours
        assert any(line and line.file != "executor_runner.cpp" for line in lines), (
            "the runtime's own lines"
        )
        planned = [
            int(m.rsplit(" ", 1)[1].rstrip("."))
            for m in ours
            if m.startswith("Setting up CPU planned")
        ]
        assert f"method_allocator_planned:  {sum(planned)} bytes" in ours
        medians[variant] = statistics.median(result.samples["iteration_time"][1:])
    assert (folder / "out-before-0.bin").read_bytes() == (folder / "out-after-0.bin").read_bytes()
    expected = _floats(folder / "expected.bin")
    got = _floats(folder / "out-after-0.bin")
    assert (
        len(got) == len(expected)
        and max(abs(a - b) for a, b in zip(got, expected, strict=True)) < 1e-6
    )
    # behaviour, not a wall-clock threshold: re-creating the Method costs every inference something
    assert medians["before"] / medians["after"] > 1, medians


def test_an_xnnpack_program_on_both_builds(lane: Lane, program: Path, work: Path) -> None:
    folder = program.parent
    for variant in ("before", "after"):
        runner = _build(lane, work, "x86_64", variant)
        proc = _run(
            [
                str(runner),
                "--model_path",
                "model_xnnpack.pte",
                "--inputs",
                "input.bin",
                "--num_executions",
                "5",
                "--output_file",
                f"xnn-{variant}",
                "--print_output",
                "none",
            ],
            folder,
        )
        assert proc.returncode == 0, proc.stderr  # the delegate is registered (--no-as-needed)
        assert len(scrape(proc.stderr, METRICS).samples["iteration_time"]) == 5
    assert (folder / "xnn-before-0.bin").read_bytes() == (folder / "xnn-after-0.bin").read_bytes()
    got, expected = _floats(folder / "xnn-after-0.bin"), _floats(folder / "expected.bin")
    assert max(abs(a - b) for a, b in zip(got, expected, strict=True)) < 1e-5


def test_the_cli_builds_a_runner(lane: Lane, tmp_path: Path) -> None:
    output = tmp_path / "executor_runner"
    proc = run_cli(
        REPO,
        "toolchain",
        "runner",
        "--arch",
        "x86_64",
        "--variant",
        "before",
        "-o",
        str(output),
        "--sdk",
        str(lane.sdk_x86_64),
        "--cmake",
        str(lane.cmake),
        "--work",
        str(tmp_path / "work"),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"runner: {output}" in proc.stdout and "compiled in" in proc.stdout
    assert runner_build.elf_machine(output) == "x86_64"


def test_failures_print_upstreams_texts(lane: Lane, program: Path, work: Path) -> None:
    runner = str(_build(lane, work, "x86_64", "after"))
    folder = program.parent
    missing = _run([runner, "--model_path", "missing.pte"], folder)
    assert missing.returncode == -6  # ET_CHECK_MSG aborts, as upstream's runner does
    assert "Failed to open missing.pte: No such file or directory" in missing.stderr
    assert "FileDataLoader::from() failed: 0x22" in missing.stderr
    not_pte = _run([runner, "--model_path", "input.bin"], folder)
    assert not_pte.returncode == 1 and "Failed to parse model file input.bin" in not_pte.stderr
    extra = _run([runner, "--model_path", str(program), "stray"], folder)
    assert extra.returncode == 1 and "Extra commandline args: stray" in extra.stderr
    unknown = _run(
        [runner, "--etdump_path", "x"], folder
    )  # an untraced build has no such flag (as upstream's)
    assert unknown.returncode == 1 and "unknown command line flag 'etdump_path'" in unknown.stderr


def test_traced_builds_write_a_real_etdump(lane: Lane, program: Path, work: Path) -> None:
    folder = program.parent
    events = {}
    for variant in ("before", "after"):
        runner = _build(lane, work, "x86_64", variant, traced=True)
        proc = _run(
            [
                str(runner),
                "--model_path",
                str(program),
                "--num_executions",
                "3",
                "--print_output",
                "none",
                "--etdump_path",
                f"{variant}.etdump",
            ],
            folder,
        )
        assert proc.returncode == 0, proc.stderr
        assert f"ETDump written to file '{variant}.etdump'." in proc.stderr
        dump = read_etdump((folder / f"{variant}.etdump").read_bytes())
        events[variant] = Counter(event.event for event in dump.events)
        assert events[variant]["Method::execute"] == 3
        # the wheel's runtime is built with the event tracer: every instruction is an event of every
        # execution
        assert (
            events[variant]["OPERATOR_CALL"] == 3 * 36
            and events[variant]["native_call_addmm.out"] == 3 * 12
        )
    # before loads the method once more for each inference; the operator events are the same
    assert (
        events["after"]["Program::load_method"] == 1
        and events["before"]["Program::load_method"] == 4
    )
    assert events["before"]["OPERATOR_CALL"] == events["after"]["OPERATOR_CALL"]


def test_aarch64_runner_under_qemu_user(lane: Lane, program: Path, work: Path) -> None:
    sdk = require_qemu_user(lane)
    folder = program.parent
    libraries = runner_build.copy_runtime_libraries(sdk, "aarch64", work / "lib-aarch64")
    assert {path.name for path in libraries} >= {"libexecutorch.so", "libexecutorch_threadpool.so"}
    host = _build(lane, work, "x86_64", "after")
    assert (
        _run(
            [
                str(host),
                "--model_path",
                str(program),
                "--inputs",
                "input.bin",
                "--output_file",
                "x86",
                "--print_output",
                "none",
            ],
            folder,
        ).returncode
        == 0
    )
    for variant in ("before", "after"):
        runner = _build(lane, work, "aarch64", variant)
        assert runner_build.elf_machine(runner) == "aarch64"
        assert b"/lib" not in _dynamic_paths(runner), "the aarch64 runner names no library folder"
        proc = _run(
            [
                "qemu-aarch64-static",
                "-L",
                "/usr/aarch64-linux-gnu",
                str(runner),
                "--model_path",
                str(program),
                "--inputs",
                "input.bin",
                "--num_executions",
                "3",
                "--output_file",
                f"arm-{variant}",
                "--print_output",
                "none",
            ],
            folder,
            {"LD_LIBRARY_PATH": str(work / "lib-aarch64")},
        )
        assert proc.returncode == 0, proc.stderr
        assert len(scrape(proc.stderr, METRICS).samples["iteration_time"]) == 3
    arm = (folder / "arm-before-0.bin").read_bytes()
    assert arm == (folder / "arm-after-0.bin").read_bytes()
    x86 = _floats(folder / "x86-0.bin")
    assert (
        max(abs(a - b) for a, b in zip(_floats(folder / "arm-after-0.bin"), x86, strict=True))
        < 1e-6
    )


def _dynamic_paths(binary: Path) -> bytes:
    """RPATH/RUNPATH entries of ``binary`` as readelf prints them (empty when it has none)."""
    proc = subprocess.run(
        ["readelf", "-d", str(binary)], capture_output=True, timeout=60, check=True
    )
    return b"\n".join(
        line for line in proc.stdout.splitlines() if b"RPATH" in line or b"RUNPATH" in line
    )
