"""The simulator's VGF runner: cost model behaviour, flags and environment, the report it writes
(read back by ``vgf.py`` without a warning: the two sides of the documented layout agree), and the
artifact on this host."""

from __future__ import annotations

import ast
import json
import os
import statistics
import subprocess

import pytest

from fvp_harness.sim.networks.architectures import get_architecture
from fvp_harness.sim.networks.modelfile import compile_model, encode_model, make_input
from fvp_harness.sim.workloads.vgf_runner import (
    VgfArtifact,
    decode_artifact,
    executor_runner_vgf,
    is_vgf_runner,
    make_artifact,
)
from fvp_harness.vgf.reader import parse_report
from tests.helpers import REPO

from .fake_context import FakeContext


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    arch = get_architecture("resnet8")
    return {
        "/root/runner": make_artifact(VgfArtifact("vgf-test")),
        "/root/nostats": make_artifact(VgfArtifact("old", io_stats=False)),
        "/root/m.model": encode_model(compile_model(arch, 1)),
        "/root/in.bin": make_input(arch, 1).tobytes(),
    }


def run(files: dict[str, bytes], *args: str, zero: str | None = None, runner: str = "runner",
        **knobs: str):
    env = {} if zero is None else {"ET_VGF_ZERO_COPY": zero}
    argv = [f"/root/{runner}", "--model_path=m.model", "--inputs=in.bin", *args]
    ctx = FakeContext(argv, dict(files), knobs=knobs, env=env, clock=0.0)
    status = executor_runner_vgf(ctx)
    return status, ctx


def report_of(ctx: FakeContext, name: str = "/root/perf.json") -> dict:
    return json.loads(ctx.files[name])


def median(doc: dict, key: str) -> float:
    return statistics.median(r[key] for r in doc["records"])


def test_copy_and_zero_copy_reports_show_the_trade(files):
    status, copy_ctx = run(files, "--vgf_perf_json=perf.json", "--output_file=out")
    assert status == 0, "".join(copy_ctx.err)
    status, zero_ctx = run(files, "--vgf_perf_json=perf.json", "--output_file=out", zero="1")
    assert status == 0
    copy, zero = report_of(copy_ctx), report_of(zero_ctx)
    assert (copy["config"], zero["config"]) == (
        {"zero_copy": False, "warmup": 20, "iterations": 200},
        {"zero_copy": True, "warmup": 20, "iterations": 200},
    )
    assert len(copy["records"]) == len(zero["records"]) == 200
    assert median(copy, "in_copy_bytes") == 3072 and median(copy, "out_copy_bytes") == 10
    assert median(copy, "in_memcpy_ns") > 0 and median(copy, "imports") == 0
    assert median(zero, "in_copy_bytes") == 0 and median(zero, "in_memcpy_ns") == 0
    assert median(zero, "in_zero_copy_bytes") == 3072 and median(zero, "imports") == 2
    assert median(zero, "import_ns") > 0 and median(zero, "binding_refresh_ns") > 0
    # the execution is the model's work in both modes: equal up to jitter
    assert median(zero, "execute_ns") == pytest.approx(median(copy, "execute_ns"), rel=0.01)
    # zero-copy leaves the model's outputs alone
    assert copy_ctx.files["/root/out-0.bin"] == zero_ctx.files["/root/out-0.bin"]
    # 220 executions on the console, the JSON keeps the 200 measured ones
    assert sum("Iteration " in line for line in copy_ctx.err) == 220


def test_the_reader_reads_what_the_simulator_writes_without_a_warning(files):
    _, ctx = run(files, "--vgf_perf_json=perf.json", zero="1")
    parsed = parse_report(ctx.files["/root/perf.json"], "perf.json")
    assert parsed.warnings == ()
    assert (parsed.inferences == 200 and parsed.model == "resnet8" and
            parsed.config.zero_copy is True)
    assert parsed.device.vendor_id == 0x13B5 and parsed.device.api_version == "1.3.275"


def test_num_executions_sets_the_total_and_warmup_comes_first(files):
    _, ctx = run(files, "--vgf_perf_json=perf.json", "--num_executions=30")
    assert report_of(ctx)["config"] == {"zero_copy": False, "warmup": 20, "iterations": 10}
    _, ctx = run(files, "--vgf_perf_json", "perf.json", "--num_executions=5")
    assert report_of(ctx)["config"] == {"zero_copy": False, "warmup": 0, "iterations": 5}
    _, ctx = run(files, "--num_executions=3")
    assert "/root/perf.json" not in ctx.files and sum("Iteration " in line for line in ctx.err) == 3


def test_rejected_buffers_fall_back_to_copies_with_a_reason(files):
    _, ctx = run(files, "--vgf_perf_json=perf.json", zero="1", vgf_reject="output")
    doc = report_of(ctx)
    assert median(doc, "out_copy_bytes") == 10 and median(doc, "out_zero_copy_bytes") == 0
    assert (median(doc, "fallback_count") == 1 and median(doc, "rejection_count") == 1 and
            median(doc, "imports") == 1)
    assert doc["rejections"][0]["buffer"] == "output0" and doc["rejections"][0]["count"] == 200
    assert "VK_ERROR_INVALID_EXTERNAL_HANDLE" in doc["rejections"][0]["reason"]
    assert any("zero-copy rejected output0" in line for line in ctx.err)
    _, ctx = run(files, "--vgf_perf_json=perf.json", zero="1", vgf_import_alignment="4096")
    reasons = [r["reason"] for r in report_of(ctx)["rejections"]]
    assert len(reasons) == 2 and "minImportedHostPointerAlignment (4096 B)" in reasons[0]


def test_import_cache_leaves_imports_to_the_warmup(files):
    _, ctx = run(files, "--vgf_perf_json=perf.json", zero="1", vgf_import_cache="1")
    doc = report_of(ctx)
    assert (median(doc, "imports") == 0 and median(doc, "import_ns") == 0 and
            median(doc, "binding_refresh_ns") > 0)


def test_copy_cost_follows_the_simulated_cpu_clock(files):
    _, slow = run(files, "--vgf_perf_json=perf.json")
    fast_ctx = FakeContext(["/root/runner", "--model_path=m.model", "--vgf_perf_json=perf.json"],
                           dict(files),
                           params={"host.cpu0.clock_hz": "400000000"}, clock=0.0)  # fmt: skip
    assert executor_runner_vgf(fast_ctx) == 0
    ratio = median(report_of(slow), "in_memcpy_ns") / median(report_of(fast_ctx), "in_memcpy_ns")
    assert ratio == pytest.approx(4, rel=0.05)


@pytest.mark.parametrize(
    ("args", "env_zero", "runner", "status", "message"),
    [
        (["--vgf_perf_json=p.json"], "maybe", "runner", 1,
         "ET_VGF_ZERO_COPY='maybe': expected 0 or 1"),
        (["--vgf_perf_json=p.json"], None, "nostats", 1,
         "unknown command line flag 'vgf_perf_json'"),
        (["--bogus=1"], None, "runner", 1, "unknown command line flag 'bogus'"),
        (["--model_path=missing.model"], None, "runner", 134, "FileDataLoader::from() failed"),
    ],
)
def test_bad_use_fails_as_the_real_runner_would(files, args, env_zero, runner, status, message):
    code, ctx = run(files, *args, zero=env_zero, runner=runner)
    assert code == status
    assert message in "".join(ctx.err)


def test_artifact_round_trip_and_magic(files):
    data = files["/root/runner"]
    assert is_vgf_runner(data[:64]) and data.startswith(b"#!/bin/sh\n")
    assert decode_artifact(data) == VgfArtifact("vgf-test", True)
    assert not is_vgf_runner(b"\x7fELF" + bytes(60))


def test_the_artifact_runs_on_this_host_too(tmp_path, files):
    runner = tmp_path / "runner"
    runner.write_bytes(files["/root/runner"])
    runner.chmod(0o755)
    (tmp_path / "m.model").write_bytes(files["/root/m.model"])
    env = {**os.environ, "ET_VGF_ZERO_COPY": "1"}
    done = subprocess.run(
        [str(runner), "--model_path=m.model", "--num_executions=25", "--vgf_perf_json=p.json",
         "--print_output=none"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "executor_runner build id: vgf-test" in done.stderr
    assert parse_report((tmp_path / "p.json").read_bytes()).config.iterations == 5


def test_the_simulator_module_imports_nothing_of_the_harness():
    tree = ast.parse((REPO / "fvp_harness" / "sim"
                      / "workloads/vgf_runner.py").read_text(encoding="utf-8"))
    modules = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
    modules += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    harness = [m for m in modules if m.startswith("fvp_harness")]
    assert harness and all(m.startswith("fvp_harness.sim") for m in harness)
