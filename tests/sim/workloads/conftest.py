"""An in-memory ``GuestContext`` and ready-made artifacts, so the emulated runner is tested without
the platform."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from fvp_harness.sim.networks.modelfile import RunnerArtifact, encode_runner
from fvp_harness.sim.workloads.executor_runner import executor_runner

from .fake_context import FakeContext

__all__ = ["FakeContext", "RunRunner"]


RunRunner = Callable[..., tuple[int, FakeContext]]


@pytest.fixture
def run_runner(model_files: dict[str, bytes], input_files: dict[str, bytes]) -> RunRunner:
    """Run the emulated runner: ``run_runner(driver, *flags, model=..., knobs=..., npu_macs=...,
    fault=..., build_id=..., cpu_time_report=..., log_generation=...)``.

    The guest holds ``/root/runner`` (the artifact), ``/root/<model>.bin``, ``/root/<model>.in`` and
    the NPU node ``devices`` (default ``/dev/ethosu0``, the default image's). The default build is
    stock (no build-id line, no CPU-time report, the current log generation, ``npu_device``
    /dev/ethosu0).
    """

    def run(
        driver: str,
        *flags: str,
        model: str = "resnet8",
        knobs: Mapping[str, str] | None = None,
        npu_macs: int = 256,
        fault: str = "",
        build_id: str = "",
        cpu_time_report: bool = False,
        log_generation: str = "current",
        extra_files: Mapping[str, bytes] | None = None,
        interrupt_after_checks: int | None = None,
        devices: tuple[str, ...] = ("/dev/ethosu0",),
        npu_device: str = "/dev/ethosu0",
    ) -> tuple[int, FakeContext]:
        files = {
            "/root/runner": encode_runner(
                RunnerArtifact(driver, build_id, fault, cpu_time_report, log_generation,
                               npu_device=npu_device)
            ),
            **{device: b"" for device in devices},
            **{f"/root/{name}.bin": data for name, data in model_files.items()},
            **{f"/root/{name}.in": data for name, data in input_files.items()},
            **(extra_files or {}),
        }
        argv = ["/root/runner", *(flags or (f"--model_path={model}.bin",))]
        ctx = FakeContext(
            argv, files, dict(knobs or {}), npu_macs, interrupt_after_checks=interrupt_after_checks
        )
        status = executor_runner(ctx)
        return status, ctx

    return run
