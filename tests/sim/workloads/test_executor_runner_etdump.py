"""The emulated executor_runner built with the event tracer (``--event-tracer``): upstream's
``--etdump_path`` flag (executor_runner.cpp:89-91, only in a traced build, default
``model.etdump``), the file and its lines (:253, :261, :871), and the rule that tracing changes none
of the numbers the runner prints."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from fvp_harness.report.stats.etdump import read_etdump
from fvp_harness.sim.networks.architectures import get_architecture
from fvp_harness.sim.networks.modelfile import (
    RunnerArtifact,
    compile_model,
    encode_model,
    encode_runner,
)
from fvp_harness.sim.networks.partition import choose_cpu_layers
from fvp_harness.sim.workloads.executor_runner import executor_runner
from fvp_harness.sim.workloads.executor_runner import run as runner_run

from .conftest import RunRunner
from .fake_context import FakeContext


def _traced(driver: str) -> dict[str, bytes]:
    # the fixture's
    return {f"{FakeContext.cwd}/runner": encode_runner(RunnerArtifact(driver, event_tracer=True))}


def _numbers(text: str) -> list[str]:
    """The per-inference and load lines without their timestamps."""
    return [line.split("] ", 1)[1]
            for line in text.splitlines() if "Iteration" in line or "loaded in" in line]


def test_a_traced_build_writes_the_etdump_and_prints_the_same_numbers(
        run_runner: RunRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    flags = ("--model_path=resnet8.bin", "--num_executions=3")
    # the noise of invocation 0 in both runs
    monkeypatch.setattr(runner_run, "_invocations", itertools.count())
    status, plain = run_runner("per-inference", *flags)
    assert status == 0
    monkeypatch.setattr(runner_run, "_invocations", itertools.count())
    status, traced = run_runner("per-inference", *flags, "--etdump_path=out/trace.etdp",
                                extra_files=_traced("per-inference"))
    assert status == 0, traced.stderr_text
    assert _numbers(traced.stderr_text) == _numbers(plain.stderr_text)  # tracing moves no number
    last = traced.stderr_text.splitlines()[-1]
    assert re.fullmatch(r"I \d\d:\d\d:\d\d\.\d{6} executorch:executor_runner\.cpp:261\] "
                        r"ETDump written to file 'out/trace\.etdp'\.", last)
    decoded = read_etdump(traced.read_file("out/trace.etdp"))
    assert decoded.blocks == ("Default", "Execute", "Execute", "Execute")
    iterations = [float(m)
                  for m in re.findall(r"Iteration \d of 3: ([0-9.]+) ms", traced.stderr_text)]
    executes = [e.duration / 1e6 for e in decoded.events if e.event == "Method::execute"]
    assert [round(v, 6) for v in executes] == iterations  # the event times what Iteration times


def test_the_default_path_is_model_etdump(run_runner: RunRunner) -> None:
    status, ctx = run_runner("reuse", extra_files=_traced("reuse"))
    assert status == 0 and ctx.read_file("model.etdump")
    assert "ETDump written to file 'model.etdump'." in ctx.stderr_text


def test_an_untraced_build_has_no_such_flag(run_runner: RunRunner) -> None:
    status, ctx = run_runner("reuse", "--model_path=resnet8.bin", "--etdump_path=x.etdp")
    assert status == 1
    assert ctx.stderr_text == "ERROR: unknown command line flag 'etdump_path'\n"


@dataclass
class _ReadOnly(FakeContext):
    def write_file(self, path: str, data: bytes) -> None:
        if path.endswith(".etdp"):
            raise PermissionError(13, "Permission denied", path)
        super().write_file(path, data)


def test_an_unwritable_etdump_path_is_upstreams_fatal(model_files: dict[str, bytes]) -> None:
    files = {**_traced("reuse"), f"{FakeContext.cwd}/m.bin": model_files["resnet8"],
             "/dev/ethosu0": b""}
    ctx = _ReadOnly([f"{FakeContext.cwd}/runner", "--model_path=m.bin", "--etdump_path=ro/t.etdp"],
                    files)
    assert executor_runner(ctx) == 134
    tail = [line.split(" ", 2)[2] for line in ctx.stderr_text.splitlines()[-3:-1]]
    assert tail == ["executorch:executor_runner.cpp:253] Failed to open ETDump file at ro/t.etdp.",
                    "executorch:executor_runner.cpp:871] In function main(), assert failed (status "
                    "== Error::Ok): Failed to save ETDump file."]
    assert ctx.stderr_text.endswith("Aborted\n")


def test_sim_runner_event_tracer_makes_a_traced_build(tmp_path: Path) -> None:
    import io
    import json

    from fvp_harness.sim import tools
    from fvp_harness.sim.networks.modelfile import decode_runner

    def run(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        return tools.main(list(argv), out, err), out.getvalue(), err.getvalue()

    status, out, _ = run("runner", "--driver", "reuse", "--event-tracer", "-o", str(tmp_path / "r"))
    assert status == 0 and "event tracer (--etdump_path)" in out
    assert (decode_runner((tmp_path / "r").read_bytes())
            == RunnerArtifact("reuse", event_tracer=True))
    assert json.loads(run("info", str(tmp_path / "r"))[1])["event_tracer"] is True
    stock = tmp_path / "s"
    assert run("runner", "--driver", "reuse", "-o", str(stock))[0] == 0
    # untraced builds keep their bytes (and their hashes)
    assert b"event_tracer" not in stock.read_bytes()
    status, _, err = run("runner", "--driver", "reuse", "--event-tracer", "--log-generation", "old",
                         "-o", str(tmp_path / "o"))
    assert status == 2 and "--log-generation current only" in err


def test_a_partly_delegated_program_traces_one_instruction_per_step(
        run_runner: RunRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """K partitions with CPU operators between them: each step is an instruction of chain 0
    (EventTracerProfileInstructionScope, method.cpp:1756), a CPU kernel an ``OPERATOR_CALL``
    (method.cpp:1469), a delegate a ``DELEGATE_CALL`` (:1505) around the backend's scopes; and
    tracing still moves no number."""
    arch = get_architecture("ds_cnn")
    part = {
        "/root/part.bin": encode_model(
            compile_model(arch, 0, 256, cpu_layers=choose_cpu_layers(arch, 3))
        )
    }
    flags = ("--model_path=part.bin", "--num_executions=2")
    monkeypatch.setattr(runner_run, "_invocations", itertools.count())
    status, plain = run_runner("reuse", *flags, extra_files=part)
    assert status == 0, plain.stderr_text
    monkeypatch.setattr(runner_run, "_invocations", itertools.count())
    status, traced = run_runner("reuse", *flags, "--etdump_path=p.etdp",
                                extra_files={**part, **_traced("reuse")})
    assert status == 0, traced.stderr_text
    assert _numbers(traced.stderr_text) == _numbers(plain.stderr_text)
    counters = [line.split("] ", 1)[1]
                for line in traced.stderr_text.splitlines() if "cycle counter" in line]
    assert counters == [line.split("] ", 1)[1]
                        for line in plain.stderr_text.splitlines() if "cycle counter" in line]
    decoded = read_etdump(traced.read_file("p.etdp"))
    first = [e for e in decoded.events if e.block == 1]
    calls = [(e.event, e.instruction_id)
             for e in first if e.event in ("DELEGATE_CALL", "OPERATOR_CALL")]
    assert calls == [("DELEGATE_CALL", 0), ("OPERATOR_CALL", 1), ("DELEGATE_CALL", 2),
                     ("OPERATOR_CALL", 3), ("DELEGATE_CALL", 4)]
    assert [e.event for e in first].count("+EthosUBackend::execute()NPU") == 3
    method = next(e for e in first if e.event == "Method::execute")
    assert (method.chain_index == -1 and
            all(method.start <= e.start and e.end <= method.end for e in first))
