"""The QEMU lane: tests against a real aarch64 Linux guest (``qemu-aarch64-virt``), marked ``qemu`` and ``slow``.

Why they skip or fail as they do: the README's ``python -m pytest -q`` runs everything, and most machines have no
QEMU; there the tests skip and say the commands that enable them. In CI (``CI=true``) ``.ci/run`` installs QEMU and
the cross compiler and builds the guest, so a missing piece there is a broken lane, and the tests fail instead of
skipping silently.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from fvp_harness.guest import GuestImage, guest_image

ENABLE = ("apt-get install -y --no-install-recommends qemu-system-arm gcc-aarch64-linux-gnu libc6-dev-arm64-cross "
          "&& fvp-harness guest build")
"""The commands (as root, on Debian) that enable the QEMU lane."""


def _missing(need_compiler: bool) -> list[str]:
    missing = [tool for tool in ("qemu-system-aarch64",) if shutil.which(tool) is None]
    if need_compiler and shutil.which(os.environ.get("CC_AARCH64", "aarch64-linux-gnu-gcc")) is None:
        missing.append("aarch64-linux-gnu-gcc")
    image = guest_image()
    missing += [f"the guest ({path})" for path in (image.kernel, image.initrd) if not path.is_file()]
    return missing


def require_qemu(*, need_compiler: bool = False) -> GuestImage:
    """The guest, or a skip (a failure under ``CI=true``) naming what is missing and how to get it."""
    missing = _missing(need_compiler)
    if missing:
        message = f"QEMU lane: missing {', '.join(missing)}; enable with: {ENABLE}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " (CI=true: .ci/run should have installed it)", pytrace=False)
        pytest.skip(message)
    return guest_image()


@pytest.fixture(scope="module")
def guest() -> Iterator[GuestImage]:
    yield require_qemu()
