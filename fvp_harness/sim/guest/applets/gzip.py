"""The guest's busybox ``gzip``, ``gunzip`` and ``zcat`` applets (busybox 1.36, the subset a deploy
script uses).

Why the simulator has them: the Corstone-1000 image's busybox has them, and the harness compresses
console deploys when the guest can decompress (``targets.transfer``), so the simulated guest must
answer as the real one does.

Imitated: the options ``-c`` (to stdout), ``-d`` (gzip: decompress), ``-f`` (overwrite), ``-k``
(keep the input), ``-t`` (test), ``-1``..``-9`` (gzip: level); FILE -> FILE.gz and back, the input
removed unless ``-k`` or ``-c``; no FILE or ``-``: stdin to stdout; the messages ``can't open 'X':
<reason>`` (a missing input, or an existing output without ``-f``), ``X: unknown suffix - ignored``,
``invalid magic``, ``corrupted data``, and exit status 1 after any of them (the other files are
still processed). Not imitated: busybox's refusal to write compressed data to a terminal, and
``-v``/``-n`` (a deploy never uses them; an unknown option gets the usage text as everywhere).
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Callable

from fvp_harness.sim.guest.io import IO
from fvp_harness.sim.guest.session import Session

__all__ = ["GZIP_APPLETS"]

BUSYBOX = "BusyBox v1.36.1 () multi-call binary."
_USAGE = {
    "gzip": "[-cfkdt123456789] [FILE]...\n\nCompress FILEs (or stdin)\n",
    "gunzip": "[-cfkt] [FILE]...\n\nDecompress FILEs (or stdin)\n",
    "zcat": "[FILE]...\n\nDecompress to stdout\n",
}
_OPTIONS = {"gzip": "cfkdt123456789", "gunzip": "cfkt", "zcat": ""}


class _Bad(Exception):
    """Data that is no gzip stream: busybox's message."""


def _decompress(data: bytes) -> bytes:
    if len(data) < 2 or data[:2] != b"\x1f\x8b":
        raise _Bad("invalid magic")
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise _Bad("corrupted data") from exc


def _unpacked_name(name: str) -> str:
    return name[: -len(".tgz")] + ".tar" if name.endswith(".tgz") else name[: -len(".gz")]


def _reason(exc: OSError) -> str:
    return exc.strerror or os.strerror(exc.errno or 0)


def _one(sh: Session, io: IO, applet: str, name: str, flags: set[str], level: int) -> int:
    unpack = applet != "gzip" or "d" in flags or "t" in flags
    to_stdout = "c" in flags or applet == "zcat"
    if (unpack and name != "-" and not to_stdout and "t" not in flags and
        not name.endswith((".gz", ".tgz"))):
        io.complain(f"{applet}: {name}: unknown suffix - ignored\n")
        return 1
    try:
        data = io.stdin.read() if name == "-" else sh.fs.read(name, sh.cwd)
    except OSError as exc:
        io.complain(f"{applet}: can't open '{name}': {_reason(exc)}\n")
        return 1
    try:
        result = _decompress(data) if unpack else gzip.compress(data, compresslevel=level, mtime=0)
    except _Bad as exc:
        io.complain(f"{applet}: {exc}\n")
        return 1
    if "t" in flags:
        return 0
    if name == "-" or to_stdout:
        io.out(result)
        return 0
    output = _unpacked_name(name) if unpack else name + ".gz"
    host = sh.fs.host_path(output, sh.cwd)
    if host.exists() and "f" not in flags:
        io.complain(f"{applet}: can't open '{output}': File exists\n")
        return 1
    try:
        sh.fs.write(output, result, sh.cwd)
        if "k" not in flags:
            sh.fs.host_path(name, sh.cwd).unlink()
    except OSError as exc:
        io.complain(f"{applet}: {output}: {_reason(exc)}\n")
        return 1
    return 0


def _applet(sh: Session, argv: list[str], io: IO) -> int:
    applet = os.path.basename(argv[0])
    known = _OPTIONS[applet]
    flags: set[str] = set()
    names: list[str] = []
    level = 6
    only_names = False
    for arg in argv[1:]:
        if only_names or not arg.startswith("-") or arg == "-":
            names.append(arg)
            continue
        if arg == "--":
            only_names = True
            continue
        for char in arg[1:]:
            if char not in known:
                io.complain(f"{applet}: invalid option -- '{char}'\n{BUSYBOX}\n\nUsage: {applet} "
                            f"{_USAGE[applet]}")
                return 1
            if char.isdigit():
                level = int(char)
            else:
                flags.add(char)
    status = 0
    for name in names or ["-"]:
        status |= _one(sh, io, applet, name, flags, level)
    return status


GZIP_APPLETS: dict[str, Callable[[Session, list[str], IO], int]] = {
    "gzip": _applet,
    "gunzip": _applet,
    "zcat": _applet,
}
"""The compression applets, by name (merged into ``builtins.BUILTINS``)."""
