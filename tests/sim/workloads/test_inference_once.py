"""The emulated executor_runner infers once per input and still charges every iteration: what it
prints and writes is what recomputing every iteration prints and writes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fvp_harness.sim.networks import once
from fvp_harness.sim.networks.inference import run_model
from fvp_harness.sim.workloads.executor_runner import run as runner_module

from .conftest import RunRunner

FLAGS = ("--model_path=/root/ds_cnn.bin", "--num_executions=6", "--inputs=ds_cnn.in",
         "--output_file=/root/out")


def test_six_iterations_of_one_input_compute_once_and_print_what_six_computations_print(
        run_runner: RunRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    computed: list[bytes] = []

    def counting(arch: object, quant: object, x: np.ndarray) -> np.ndarray:
        computed.append(x.tobytes())
        return run_model(arch, quant, x)  # type: ignore[arg-type]

    def every_time(digest: str, arch: object, quant: object, x: np.ndarray) -> np.ndarray:
        return counting(arch, quant, x)

    once.clear()
    monkeypatch.setattr(once, "run_model", counting)
    seen = {}
    for name, infer in (("once", once.run_model_once), ("every time", every_time)):
        # the same noise for both
        monkeypatch.setattr(runner_module, "_invocations", itertools.count())
        monkeypatch.setattr(runner_module, "run_model_once", infer)
        computed.clear()
        status, ctx = run_runner("reuse", *FLAGS, cpu_time_report=True)
        assert status == 0
        seen[name] = (len(computed), ctx.stderr_text, ctx.stdout_text, ctx.files["/root/out-0.bin"],
                      ctx.now())
    once.clear()
    assert seen["once"][0] == 1 and seen["every time"][0] == 6
    assert seen["once"][1:] == seen["every time"][1:]
    assert seen["once"][1].count("Iteration ") == 6
