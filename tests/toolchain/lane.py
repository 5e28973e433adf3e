"""What the real-ExecuTorch runner tests need, and how they ask for it: the executorch wheel's SDK
(x86_64, and the aarch64 one for cross builds), CMake, a Python with torch and executorch to export
a program, and for aarch64 Debian's cross compiler and ``qemu-aarch64-static``. Off CI a missing
piece skips with the reason; under ``CI=true`` it fails (``.ci/run`` installs the toolchain)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from fvp_harness.errors import ConfigurationError
from fvp_harness.toolchain import find_toolchain
from tests.helpers import skip_or_fail_in_ci

__all__ = ["EXPORT_SCRIPT", "Lane", "export_program", "require_lane", "require_qemu_user"]

ENABLE = "fvp-harness toolchain build (the executorch 1.5.1 toolchain venv and the aarch64 SDK)"


@dataclass(frozen=True)
class Lane:
    """The pieces a runner build and an export need."""

    sdk_x86_64: Path
    sdk_aarch64: Path | None
    cmake: Path
    python: Path


def _missing(what: str) -> None:
    skip_or_fail_in_ci(
        f"real ExecuTorch lane: {what}; enable with: {ENABLE}",
        f"real ExecuTorch lane: {what} (CI=true: .ci/run should have installed it)",
    )


def require_lane() -> Lane:
    """The installed toolchain (``find_toolchain``), or a skip (a failure under ``CI=true``)."""
    try:
        found = find_toolchain()
        sdk_x86_64 = found.sdk("x86_64")
    except ConfigurationError as exc:
        _missing(str(exc))
    try:
        sdk_aarch64: Path | None = found.sdk("aarch64")
    except ConfigurationError:
        sdk_aarch64 = None
    return Lane(Path(sdk_x86_64), sdk_aarch64, Path(found.cmake), Path(found.python))


def require_qemu_user(lane: Lane) -> Path:
    """The aarch64 SDK, after checking the cross compiler, its sysroot and qemu-aarch64-static are
    there."""
    if lane.sdk_aarch64 is None or not (lane.sdk_aarch64 / "lib" / "libexecutorch.so").is_file():
        _missing("no aarch64 SDK (the aarch64 executorch wheel, unpacked)")
    for tool in ("aarch64-linux-gnu-g++", "qemu-aarch64-static"):
        if shutil.which(tool) is None:
            _missing(f"no {tool} (apt-get install g++-aarch64-linux-gnu qemu-user-static)")
    if not Path("/usr/aarch64-linux-gnu/lib").is_dir():
        _missing("no /usr/aarch64-linux-gnu (apt-get install libc6-dev-arm64-cross)")
    assert lane.sdk_aarch64 is not None
    return lane.sdk_aarch64


EXPORT_SCRIPT = """
import numpy, torch
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.exir import to_edge, to_edge_transform_and_lower

class Net(torch.nn.Module):
    # many small operators: loading the method costs about as much as running it, as in the seed's
    # change
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layers = torch.nn.ModuleList(torch.nn.Linear(16, 16) for _ in range(12))

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return x

net = Net().eval()
x = torch.randn(1, 16)
program = to_edge(torch.export.export(net, (x,))).to_executorch()
open("model.pte", "wb").write(program.buffer)
lowered = to_edge_transform_and_lower(
    torch.export.export(net, (x,)), partitioner=[XnnpackPartitioner()]
)
open("model_xnnpack.pte", "wb").write(lowered.to_executorch().buffer)
x.numpy().tofile("input.bin")
net(x).detach().numpy().astype(numpy.float32).tofile("expected.bin")
"""
"""A tiny portable program. MERGE NOTE (w/runner): stands in for ``fvp-harness toolchain export``
until it exists."""


def export_program(lane: Lane, folder: Path) -> Path:
    """Export ``EXPORT_SCRIPT``'s network into ``folder`` (model.pte, model_xnnpack.pte, input.bin,
    expected.bin) with
    the lane's Python; the folder is the working directory, never one holding an ``executorch/``
    source tree."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "export.py").write_text(EXPORT_SCRIPT)
    proc = subprocess.run(
        [str(lane.python), "export.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return folder / "model.pte"
