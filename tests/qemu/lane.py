"""What the QEMU lane needs and how a test asks for it (shared by ``tests/qemu/`` and the two-target
session suite in ``tests/targets/test_session.py``): a skip off CI naming the commands that enable
the lane, a failure under ``CI=true`` where ``.ci/run`` should have installed it."""

from __future__ import annotations

import os
import shutil

from fvp_harness.guest import GuestImage, guest_image
from tests.helpers import skip_or_fail_in_ci

__all__ = ["ENABLE", "require_qemu"]

ENABLE = ("apt-get install -y --no-install-recommends qemu-system-arm gcc-aarch64-linux-gnu "
          "libc6-dev-arm64-cross && fvp-harness guest build")
"""The commands (as root, on Debian) that enable the QEMU lane."""


def _missing(need_compiler: bool) -> list[str]:
    missing = [tool for tool in ("qemu-system-aarch64",) if shutil.which(tool) is None]
    if (need_compiler and
        shutil.which(os.environ.get("CC_AARCH64", "aarch64-linux-gnu-gcc")) is None):
        missing.append("aarch64-linux-gnu-gcc")
    image = guest_image()
    missing += [f"the guest ({path})"
                for path in (image.kernel, image.initrd) if not path.is_file()]
    return missing


def require_qemu(*, need_compiler: bool = False) -> GuestImage:
    """The guest, or a skip (a failure under ``CI=true``) naming what is missing and how to get
    it."""
    missing = _missing(need_compiler)
    if missing:
        message = f"QEMU lane: missing {', '.join(missing)}; enable with: {ENABLE}"
        skip_or_fail_in_ci(message, message + " (CI=true: .ci/run should have installed it)")
    return guest_image()
