"""Opening the NPU's device node, as the Ethos-U Linux delegate does through the
ethos-u-linux-driver-stack.

Why a module of its own: which node a build opens is a fact of the build
(``RunnerArtifact.npu_device``, upstream's ``ethosu.device`` compile spec, default ``/dev/ethosu0``:
EthosUBackend_Cortex_A.cpp:44), which nodes exist is a fact of the image (the release's row), and
the failure when they disagree is upstream's: ``EthosU::Device``'s constructor calls the driver
library's ``eopen``, which throws ``Exception("Failed to open device")`` (ethos-u-linux-driver-stack
driver_library/src/ethosu.cpp; the text read in a 2022 copy of the library, the 26.05 tag upstream
pins in backends/arm/CMakeLists.txt:26-33 was not available to check). The delegate's ``catch`` logs
it at EthosUBackend_Cortex_A.cpp:318 and returns ``Error::InvalidState``.

On meta-arm 2026.05 the NPU is driven by the in-kernel DRM accel driver (``/dev/accel/accel0``) and
no ``/dev/ethosu0`` exists, so a stock build fails at its first execute: line 318, method.cpp:1528
``CALL_DELEGATE execute failed at instruction 0: 0x2``, the Fatal at executor_runner.cpp:773,
``Aborted``, exit 134.
"""

from __future__ import annotations

from fvp_harness.sim.guest import programs

__all__ = ["OPEN_FAILED", "open_problem"]

OPEN_FAILED = "Failed to open device"
"""``EthosU::eopen``'s exception text (driver_library/src/ethosu.cpp)."""


def open_problem(ctx: programs.GuestContext, path: str) -> str | None:
    """What ``EthosU::Device(path)`` throws in this guest, or None when the node opens."""
    try:
        ctx.read_file(path)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return OPEN_FAILED
    return None
