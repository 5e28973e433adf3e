"""The leading bytes of the simulator's runner files, and the tests on a file's first bytes.

Why apart from ``modelfile.py`` and ``workloads/vgf_runner.py``, which write these files: telling a runner file
from any other file needs no numpy, so the guest programs are registered by these tests
(``workloads/programs.py``) and the runners themselves load only when a guest executes one.
"""

from __future__ import annotations

__all__ = ["RUNNER_MAGIC", "VGF_MAGIC", "is_runner", "is_vgf_runner"]

RUNNER_MAGIC = b"FVPSIMRN"
"""A runner build (``modelfile.encode_runner``): the emulated Linux ``executor_runner``."""
VGF_MAGIC = b"#!/bin/sh\n# FVPSIMVG "
"""A VGF runner artifact (``workloads/vgf_runner.py``): a shell script whose second line names it."""


def is_runner(head: bytes) -> bool:
    """True for a runner build (its first bytes)."""
    return head[:8] == RUNNER_MAGIC


def is_vgf_runner(head: bytes) -> bool:
    """True for a VGF runner artifact (its first bytes)."""
    return head.startswith(VGF_MAGIC)
