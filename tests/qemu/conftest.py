"""The QEMU lane: tests against a real aarch64 Linux guest (``qemu-aarch64-virt``), marked ``qemu``
and ``slow``.

Why they skip or fail as they do: the README's ``python -m pytest -q`` runs everything, and most
machines have no QEMU; there the tests skip and say the commands that enable them. In CI
(``CI=true``) ``.ci/run`` installs QEMU and the cross compiler and builds the guest, so a missing
piece there is a broken lane, and the tests fail instead of skipping silently.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fvp_harness.guest import GuestImage
from tests.qemu.lane import require_qemu


@pytest.fixture(scope="module")
def guest() -> Iterator[GuestImage]:
    yield require_qemu()
