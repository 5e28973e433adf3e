"""The emulated executor_runner fails to load a program as ExecuTorch's runtime does when the runner
lacks what the program needs. A runner built without the Ethos-U delegate (``sim runner
--no-ethos-u``, a CPU-only runtime) given an Ethos-U program: method.cpp's ``Backend
EthosUBackend is not registered.``, then executor_runner's Fatal check with status 0x20
(``Error::NotFound``) and SIGABRT. The fast test pins the simulator's lines; the slow one runs
the real runtime 1.5.1 (a program of ours compiled against the wheel's SDK, loading a real
Ethos-U ``.pte``) and compares."""

from __future__ import annotations

import functools
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from fvp_harness.sim.networks.architectures import get_architecture
from fvp_harness.sim.networks.modelfile import (
    RunnerArtifact,
    compile_model,
    encode_model,
    encode_runner,
)
from fvp_harness.sim.workloads.executor_runner import executor_runner
from tests.formats.toolchain import export_programs, toolchain_python
from tests.sim.workloads.fake_context import FakeContext

_PREFIX = re.compile(r"^([IEFWD]) \d\d:\d\d:\d\d\.\d{6} (executorch:\S+\]) (.*)$")


@functools.cache
def _model() -> bytes:
    return encode_model(compile_model(get_architecture("ds_cnn"), 0, 256))


def _run(artifact: RunnerArtifact) -> tuple[int, str]:
    files = {"/g/runner": encode_runner(artifact), "/g/m.pte": _model(), "/dev/ethosu0": b""}
    ctx = FakeContext(["/g/runner", "--model_path=/g/m.pte"], files, {}, 256)
    return executor_runner(ctx), ctx.stderr_text


def _shape(text: str) -> list[tuple[str, str, str]]:
    """ET_LOG lines as (level, executorch:file:line], message), the time left out."""
    matches = (_PREFIX.match(line) for line in text.splitlines())
    return [match.groups() for match in matches if match]  # type: ignore[misc]


def test_a_runner_without_the_ethos_u_delegate_fails_at_method_load_as_upstream() -> None:
    status, text = _run(RunnerArtifact("reuse", ethos_u=False))
    lines = _shape(text)
    assert status == 134 and text.rstrip().endswith("Aborted")
    assert lines[-2:] == [
        ("E", "executorch:method.cpp:85]", "Backend EthosUBackend is not registered."),
        (
            "F",
            "executorch:executor_runner.cpp:617]",
            "In function main(), assert failed (method.ok()): Loading of method forward failed "
            "with status 0x20",
        ),
    ]
    assert not any("data:0x" in message or "Init failed" in message for _, _, message in lines)
    assert _run(RunnerArtifact("reuse"))[0] == 0  # the same program on a runner with the delegate


def test_the_runner_option_round_trips() -> None:
    from fvp_harness.sim.networks.modelfile import decode_runner

    assert (
        decode_runner(encode_runner(RunnerArtifact("per-inference", ethos_u=False))).ethos_u
        is False
    )
    assert b"ethos_u" not in encode_runner(
        RunnerArtifact("reuse")
    )  # older runner files keep their bytes


LOADER = textwrap.dedent("""\
    // Loads a program's forward method with ExecuTorch's runtime only (no delegate, no kernels
    // linked), checking the result as upstream's executor_runner does.
    #include <executorch/extension/data_loader/file_data_loader.h>
    #include <executorch/runtime/core/hierarchical_allocator.h>
    #include <executorch/runtime/core/memory_allocator.h>
    #include <executorch/runtime/executor/memory_manager.h>
    #include <executorch/runtime/executor/program.h>
    #include <executorch/runtime/platform/log.h>
    #include <executorch/runtime/platform/runtime.h>
    #include <cinttypes>
    #include <memory>
    #include <vector>
    using namespace executorch::runtime;
    static uint8_t method_pool[4 << 20], temp_pool[1 << 20];
    int main(int argc, char** argv) {
      runtime_init();
      auto loader = executorch::extension::FileDataLoader::from(argv[1]);
      ET_CHECK_MSG(loader.ok(), "FileDataLoader::from() failed: 0x%" PRIx32,
                   (uint32_t)loader.error());
      auto program = Program::load(&loader.get());
      ET_CHECK_MSG(program.ok(), "Program::load failed");
      auto meta = program->method_meta("forward");
      std::vector<std::unique_ptr<uint8_t[]>> buffers;
      std::vector<Span<uint8_t>> spans;
      for (size_t i = 0; i < meta->num_memory_planned_buffers(); ++i) {
        size_t size = meta->memory_planned_buffer_size(i).get();
        buffers.push_back(std::make_unique<uint8_t[]>(size));
        spans.push_back({buffers.back().get(), size});
      }
      HierarchicalAllocator planned({spans.data(), spans.size()});
      MemoryAllocator method_allocator(sizeof(method_pool), method_pool);
      MemoryAllocator temp(sizeof(temp_pool), temp_pool);
      MemoryManager memory(&method_allocator, &planned, &temp);
      auto method = program->load_method("forward", &memory);
      ET_CHECK_MSG(method.ok(), "Loading of method %s failed with status 0x%" PRIx32, "forward",
                   (uint32_t)method.error());
      return 0;
    }
    """)


@pytest.mark.slow
def test_the_lines_match_the_real_runtime(tmp_path: Path) -> None:
    python = toolchain_python()
    package = subprocess.run(
        [python, "-c", "import executorch; print(list(executorch.__path__)[0])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=tmp_path,
    ).stdout.strip()
    source = (
        tmp_path / "executor_runner.cpp"
    )  # named as the runner whose check it copies, for the log's file name
    source.write_text(LOADER)
    binary = tmp_path / "load"
    subprocess.run(
        [
            "g++",
            "-std=c++17",
            "-O1",
            f"-I{package}/include",
            f"-I{package}/include/executorch/runtime/core/portable_type/c10",
            "-DC10_USING_CUSTOM_GENERATED_MACROS",
            str(source),
            "-o",
            str(binary),
            f"-L{package}/lib",
            "-lexecutorch",
            f"-Wl,-rpath,{package}/lib",
        ],
        check=True,
        timeout=300,
        capture_output=True,
    )
    program = export_programs(tmp_path / "pte", "ethos-u85-256")["ethos-u85-256"]
    real = subprocess.run([str(binary), str(program)], capture_output=True, text=True, timeout=60)
    assert real.returncode == -6, real.stderr  # SIGABRT: the shell says Aborted, exit 134
    ours = _shape(_run(RunnerArtifact("reuse", ethos_u=False))[1])
    theirs = _shape(real.stderr)
    assert theirs[0] == ours[-2]  # method.cpp's line: level, file:line and text alike
    level, site, message = theirs[-1]
    assert (level, message) == ours[-1][::2] and site.startswith("executorch:executor_runner.cpp:")
