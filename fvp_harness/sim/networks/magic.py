"""The leading bytes of the simulator's runner files, and the tests on a file's first bytes.

Why apart from ``modelfile.py`` and ``workloads/vgf_runner.py``, which write these files: telling a
runner file from any other file needs no numpy, so the guest programs are registered by these tests
(``workloads/programs.py``) and the runners themselves load only when a guest executes one.
"""

from __future__ import annotations

__all__ = ["RUNNER_LIBCS", "RUNNER_LOADERS", "RUNNER_MAGIC", "VGF_MAGIC", "is_runner",
           "is_vgf_runner", "runner_libc", "runner_loader"]

RUNNER_MAGIC = b"FVPSIMRN"
"""A runner build (``modelfile.encode_runner``): the emulated Linux ``executor_runner``."""
VGF_MAGIC = b"#!/bin/sh\n# FVPSIMVG "
"""A VGF runner artifact (``workloads/vgf_runner.py``): a shell script whose second line names
it."""


def is_runner(head: bytes) -> bool:
    """True for a runner build (its first bytes)."""
    return head[:8] == RUNNER_MAGIC


def is_vgf_runner(head: bytes) -> bool:
    """True for a VGF runner artifact (its first bytes)."""
    return head.startswith(VGF_MAGIC)


RUNNER_LIBCS = ("glibc", "musl", "static")
"""What a runner build was linked against, by its code in the header's flags word (bytes 10-11,
little-endian; 0, every build made before the field existed, is glibc)."""
RUNNER_LOADERS: dict[str, str | None] = {
    "glibc": "/lib/ld-linux-aarch64.so.1",
    "musl": "/lib/ld-musl-aarch64.so.1",
    "static": None,
}
"""The dynamic loader (ELF ``PT_INTERP``) an aarch64 build names, per C library; a static link names
none."""


def runner_libc(head: bytes) -> str:
    """The C library of a runner build (its first 16 bytes suffice); raises ValueError for an
    unknown code."""
    code = int.from_bytes(head[10:12], "little") & 0x3
    if code >= len(RUNNER_LIBCS):
        raise ValueError(f"runner artifact: unknown C library code {code}")
    return RUNNER_LIBCS[code]


def runner_loader(head: bytes) -> str | None:
    """The guest path of the dynamic loader a runner build needs (None: static, or not a readable
    header)."""
    try:
        return RUNNER_LOADERS[runner_libc(head)]
    except ValueError:
        return None
