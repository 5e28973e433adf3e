"""Moving files into a booted guest and proving they arrived intact: the console and ssh transports.

Why it is shaped so: docs/architecture.md, "Inside `targets/`"."""

from __future__ import annotations

import base64
import gzip
import hashlib
import itertools
import logging
import posixpath
import shlex
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from fvp_harness.errors import CommandFailed, DeployError
from fvp_harness.files import file_sha256
from fvp_harness.targets.base import (
    CommandResult,
    CopiesOverSsh,
    NamesPhases,
    StreamsCommands,
    Target,
)

log = logging.getLogger(__name__)

PROBE_BYTES = 16384
"""How much of a console upload is timed first to say how long the rest will take (a real UART is
slow)."""

SLOW_DEPLOY_S = 60.0
"""A console upload estimated to take longer than this is announced as a warning, with the faster
way."""

__all__ = [
    "AUTO_SSH_TIMEOUT_S",
    "CHUNK_CHARS",
    "SAFE_CHUNK_CHARS",
    "SAFE_WINDOW_BYTES",
    "WINDOW_BYTES",
    "check_guest_sha256",
    "deploy_step",
    "guest_can_gunzip",
    "guest_sha256",
    "guest_sha256_many",
    "must_succeed",
    "sha256sum_digests",
    "upload_console",
    "upload_ssh",
]

AUTO_SSH_TIMEOUT_S = 30.0
"""``auto`` (``deploy.method``, ``FvpTarget(transfer="auto")``): how long the first ssh copy may
take to connect and finish before the console is used instead."""

CHUNK_CHARS = 3584
"""Base64 characters per typed line at most; ``LINE_BUDGET`` shortens it for long guest paths."""
LINE_BUDGET = 3840
"""Characters a whole typed line may take (command, quoted path, the stream's acknowledgement suffix
of about 60 characters): safely under the tty's 4095-character canonical line limit."""
ACK_RESERVE = 96
"""Room kept for the acknowledgement ``targets.console`` appends to each streamed line."""
WINDOW_BYTES = 32768
"""Typed-but-unanswered input allowed at once. Complete lines beyond the 4 KiB line discipline
buffer wait in the kernel's tty flip buffers (64 KiB by default), so 32 KiB in flight, half of that,
is safe and hides the round-trip latency (on the simulator 32 KiB moves random bytes about 30 %
faster than 16 KiB); if a transfer still arrives damaged it is retried once with
``SAFE_CHUNK_CHARS``/``SAFE_WINDOW_BYTES``."""
SAFE_CHUNK_CHARS = 1024
SAFE_WINDOW_BYTES = 3584
"""The retry settings: one short line in flight at a time, inside even the line discipline's own 4
KiB buffer."""


def deploy_step(target: Target, command: str, timeout: float | None) -> CommandResult:
    """One guest command of a transfer, in the ``deploy`` phase when the target names phases: its
    timeout is the deploy timeout, and a timeout message must name ``fvp.timeouts.deploy``, not the
    command timeout."""
    if isinstance(target, NamesPhases):
        return target.run_in_phase(command, timeout, "deploy")
    return target.run(command, timeout)


def sha256sum_digests(text: str) -> dict[str, str]:
    """``sha256sum`` output as {file name as printed: lower-case digest}; error lines (a missing
    file) and anything else that is no ``<64 hex digits> <name>`` line are left out. One parser for
    every guest hash the harness asks."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.strip().split(None, 1)
        if (len(parts) == 2 and len(parts[0]) == 64 and
            all(c in "0123456789abcdef" for c in parts[0].lower())):
            found[parts[1].lstrip("*")] = parts[0].lower()
    return found


def guest_sha256(target: Target, remote: str, timeout: float | None = None) -> str | None:
    """The sha256 of a guest file per ``sha256sum``, or None if it is missing / unreadable."""
    result = deploy_step(target, f"sha256sum {shlex.quote(remote)}", timeout)
    if not result.ok:
        return None
    return next(iter(sha256sum_digests(result.output).values()), None)


def guest_sha256_many(target: Target, remotes: Sequence[str],
                      timeout: float | None = None) -> dict[str, str]:
    """The sha256 of each guest file that exists and is readable, in one ``sha256sum`` round trip (a
    missing file only adds an error line, which is no digest line, and the status is then 1: both
    are expected)."""
    return sha256sum_digests(deploy_step(target,
                                         "sha256sum "
                                         + " ".join(shlex.quote(path) for path in remotes),
                                         timeout).output)


def check_guest_sha256(target: Target, remote: str, expected: str, how: str,
                       timeout: float | None) -> None:
    """Raise DeployError unless the guest's sha256 of ``remote`` is ``expected`` (``how`` names the
    transport)."""
    actual = guest_sha256(target, remote, timeout)
    if actual != expected:
        got = "missing" if actual is None else actual
        raise DeployError(f"{remote} arrived damaged by {how}: guest sha256 {got}, host sha256 "
                          f"{expected}",
                          log_path=getattr(target, "console_log", None), stage="deploy")


_PROBE = base64.b64encode(gzip.compress(b"gunzip-ok\n", mtime=0)).decode("ascii")


def guest_can_gunzip(target: Target, timeout: float | None = None) -> bool:
    """Whether the guest decodes ``base64 -d | gunzip -c`` (one round trip): a small gzip stream is
    typed in and its text must come back. A guest without ``gunzip`` answers ``not found`` and is
    sent plain base64."""
    try:
        result = deploy_step(target, f"printf %s {_PROBE} | base64 -d | gunzip -c", timeout)
    except CommandFailed:
        return False
    return result.ok and result.output.strip() == "gunzip-ok"


def _chunks(data: bytes, chunk_chars: int) -> Iterator[str]:
    encoded = base64.b64encode(data).decode("ascii")
    for start in range(0, len(encoded), chunk_chars):
        yield encoded[start : start + chunk_chars]


def upload_console(target: Target, local: Path, remote: str, *, sha256: str | None = None,
                   timeout: float | None = None, chunk_chars: int = CHUNK_CHARS,
                   window_bytes: int = WINDOW_BYTES, compress: bool | None = None) -> str:
    """Type ``local`` into the guest as base64 lines, decode it there, check its sha256. Returns
    ``gzip`` when it went compressed, else ``plain``.

    ``chunk_chars`` is kept a multiple of 4 so every line is whole base64 quanta, and short enough
    that the whole line fits ``LINE_BUDGET``. Uses the target's pipelined ``stream`` when it has one
    (an FVP console), otherwise one ``run`` per line. ``compress``: None asks the guest
    (``guest_can_gunzip``) when the file would shrink.
    """
    data = Path(local).read_bytes()
    digest = sha256 or hashlib.sha256(data).hexdigest()
    folder = posixpath.dirname(remote) or "."
    staging = f"{remote}.b64"
    q_staging, q_remote = shlex.quote(staging), shlex.quote(remote)
    fixed = len(f"printf %s '' >> {q_staging}") + ACK_RESERVE
    chunk_chars = max(4, min(chunk_chars, LINE_BUDGET - fixed))
    chunk_chars -= chunk_chars % 4
    packed = (gzip.compress(data, compresslevel=6, mtime=0) if compress is not False and
              len(data) > 512 else data)
    if (packed is data or len(packed) > 0.9 * len(data) or
        (compress is None and not guest_can_gunzip(target, timeout))):
        packed = data
    how = "gzip" if packed is not data else "plain"
    must_succeed(deploy_step(target,
                             f"mkdir -p {shlex.quote(folder)} && rm -rf {q_staging} {q_remote}",
                             timeout),
                 "prepare")
    lines = (f"printf %s {shlex.quote(chunk)} >> {q_staging}"
             for chunk in _chunks(packed, chunk_chars))
    if isinstance(target, StreamsCommands):
        first = list(itertools.islice(lines, max(1, PROBE_BYTES // chunk_chars)))
        began = time.monotonic()
        target.stream(first, timeout=timeout, window_bytes=window_bytes)
        _announce_rate(remote, sum(len(line) for line in first), len(packed) * 4 // 3,
                       time.monotonic() - began)
        target.stream(lines, timeout=timeout, window_bytes=window_bytes)
    else:
        for line in lines:
            must_succeed(deploy_step(target, line, timeout), "append")
    if not data:
        must_succeed(deploy_step(target, f"printf '' > {q_staging}", timeout), "create")
    decode = f"base64 -d {q_staging} | gunzip -c" if how == "gzip" else f"base64 -d {q_staging}"
    must_succeed(deploy_step(target, f"{decode} > {q_remote} && rm -rf {q_staging}", timeout),
                 "decode")
    check_guest_sha256(target, remote, digest, "console" if how == "plain" else "console (gzip)",
                       timeout)
    return how


def _announce_rate(remote: str, sent: int, total: int, seconds: float) -> None:
    """Say the console's measured rate and how long the rest of the upload will take.

    Why: a real UART (QEMU's PL011 interrupts per character) types about 8-30 KiB/s, so a 4 MiB
    runner takes minutes; the simulator's console takes 1.6 MB/s. Knowing it at the first chunk
    beats a silent wait."""
    rest = max(0, total - sent)
    if seconds <= 0 or sent <= 0 or rest <= 0:
        return
    rate = sent / seconds
    eta = rest / rate
    level = logging.WARNING if eta > SLOW_DEPLOY_S else logging.INFO
    log.log(level,
            "console upload of %s at %.1f KiB/s: the remaining %.0f KiB will take about %.0f s%s",
            remote,
            rate / 1024, rest / 1024, eta,
            " (deploy.method: ssh is much faster)" if level >= logging.WARNING else "")


def upload_ssh(target: CopiesOverSsh, local: Path, remote: str, *, sha256: str | None = None,
               timeout: float | None = None) -> str:
    """Copy by SSH (SFTP, else ``cat``), then check the sha256 in the guest. Returns ``sftp`` or
    ``cat``."""
    digest = sha256 or file_sha256(local)
    folder = posixpath.dirname(remote) or "."
    runner = target if isinstance(target, Target) else None
    if runner is not None:
        must_succeed(deploy_step(runner, f"mkdir -p {shlex.quote(folder)}", timeout), "prepare")
    how = target.ssh_put(Path(local), remote, timeout)
    if runner is not None:
        check_guest_sha256(runner, remote, digest, f"ssh ({how})", timeout)
    return how


def must_succeed(result: CommandResult, what: str) -> CommandResult:
    """``result`` when it exited 0, else CommandFailed naming the transfer step ``what`` (stage
    ``deploy``)."""
    if not result.ok:
        raise CommandFailed(f"deploy step {what} failed: {result.command[:80]!r} exited "
                            f"{result.exit_status}: {result.output.strip()[-300:]}",
                            exit_status=result.exit_status,
                            output=result.output, log_path=result.log_path, stage="deploy")
    return result
