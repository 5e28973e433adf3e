"""Moving files into a booted guest and proving they arrived intact: the console and ssh transports.

``upload_console`` is the universal path (no network, no ssh in the image): the file is base64-encoded and typed
into the shell as ``printf %s <chunk> >> <tmp>.b64`` lines, sized well under the tty's 4 KiB canonical line limit
and pipelined with a bounded window of unacknowledged input when the target ``StreamsCommands``; then
``base64 -d`` and ``sha256sum`` in the guest, compared with the host's hash. ``upload_ssh`` copies through the
forwarded port (``CopiesOverSsh``) and checks the same way. Every guest command is built with ``shlex.quote`` and
uses only the guest contract (``mkdir -p``, ``rm -rf``, ``printf``, ``base64 -d``, ``sha256sum``, ``;``, ``&&``,
``>``, ``>>``), so a busybox guest is enough.

Which artifact goes where, and when to skip one already there, is the run layer's business (``run.deploy``); this
module only moves bytes and checks them.
"""

from __future__ import annotations

import base64
import hashlib
import posixpath
import shlex
from collections.abc import Iterator
from pathlib import Path

from fvp_harness.errors import CommandFailed, DeployError
from fvp_harness.files import file_sha256
from fvp_harness.targets.base import CommandResult, CopiesOverSsh, NamesPhases, StreamsCommands, Target

__all__ = [
    "CHUNK_CHARS",
    "SAFE_CHUNK_CHARS",
    "SAFE_WINDOW_BYTES",
    "WINDOW_BYTES",
    "check_guest_sha256",
    "deploy_step",
    "guest_sha256",
    "must_succeed",
    "upload_console",
    "upload_ssh",
]

CHUNK_CHARS = 2048
"""Base64 characters per typed line: the line stays near 2.1 KiB, half the tty's 4095-character line limit."""
WINDOW_BYTES = 16384
"""Typed-but-unanswered input allowed at once. Complete lines beyond the 4 KiB line discipline buffer wait in the
kernel's tty flip buffers (64 KiB and more), so 16 KiB in flight is safe and hides the round-trip latency; if a
transfer still arrives damaged it is retried once with ``SAFE_CHUNK_CHARS``/``SAFE_WINDOW_BYTES``."""
SAFE_CHUNK_CHARS = 1024
SAFE_WINDOW_BYTES = 3584
"""The retry settings: one short line in flight at a time, inside even the line discipline's own 4 KiB buffer."""


def deploy_step(target: Target, command: str, timeout: float | None) -> CommandResult:
    """One guest command of a transfer, in the ``deploy`` phase when the target names phases: its timeout is the
    deploy timeout, and a timeout message must name ``fvp.timeouts.deploy``, not the command timeout."""
    if isinstance(target, NamesPhases):
        return target.run_in_phase(command, timeout, "deploy")
    return target.run(command, timeout)


def guest_sha256(target: Target, remote: str, timeout: float | None = None) -> str | None:
    """The sha256 of a guest file per ``sha256sum``, or None if it is missing / unreadable."""
    result = deploy_step(target, f"sha256sum {shlex.quote(remote)}", timeout)
    if not result.ok:
        return None
    for line in result.output.splitlines():
        word = line.strip().split(" ", 1)[0]
        if len(word) == 64 and all(c in "0123456789abcdef" for c in word.lower()):
            return word.lower()
    return None


def check_guest_sha256(target: Target, remote: str, expected: str, how: str, timeout: float | None) -> None:
    """Raise DeployError unless the guest's sha256 of ``remote`` is ``expected`` (``how`` names the transport)."""
    actual = guest_sha256(target, remote, timeout)
    if actual != expected:
        got = "missing" if actual is None else actual
        raise DeployError(f"{remote} arrived damaged by {how}: guest sha256 {got}, host sha256 {expected}",
                          log_path=getattr(target, "console_log", None), stage="deploy")


def _chunks(data: bytes, chunk_chars: int) -> Iterator[str]:
    encoded = base64.b64encode(data).decode("ascii")
    for start in range(0, len(encoded), chunk_chars):
        yield encoded[start : start + chunk_chars]


def upload_console(target: Target, local: Path, remote: str, *, sha256: str | None = None,
                   timeout: float | None = None, chunk_chars: int = CHUNK_CHARS,
                   window_bytes: int = WINDOW_BYTES) -> None:
    """Type ``local`` into the guest as base64 lines, decode it there, check its sha256.

    ``chunk_chars`` is kept a multiple of 4 so every line is whole base64 quanta. Uses the target's pipelined
    ``stream`` when it has one (an FVP console), otherwise one ``run`` per line.
    """
    chunk_chars = max(4, chunk_chars - chunk_chars % 4)
    data = Path(local).read_bytes()
    digest = sha256 or hashlib.sha256(data).hexdigest()
    folder = posixpath.dirname(remote) or "."
    staging = f"{remote}.b64"
    q_staging, q_remote = shlex.quote(staging), shlex.quote(remote)
    must_succeed(deploy_step(target, f"mkdir -p {shlex.quote(folder)} && rm -rf {q_staging} {q_remote}", timeout),
                 "prepare")
    lines = (f"printf %s {shlex.quote(chunk)} >> {q_staging}" for chunk in _chunks(data, chunk_chars))
    if isinstance(target, StreamsCommands):
        target.stream(lines, timeout=timeout, window_bytes=window_bytes)
    else:
        for line in lines:
            must_succeed(deploy_step(target, line, timeout), "append")
    if not data:
        must_succeed(deploy_step(target, f"printf '' > {q_staging}", timeout), "create")
    must_succeed(deploy_step(target, f"base64 -d {q_staging} > {q_remote} && rm -rf {q_staging}", timeout), "decode")
    check_guest_sha256(target, remote, digest, "console", timeout)


def upload_ssh(target: CopiesOverSsh, local: Path, remote: str, *, sha256: str | None = None,
               timeout: float | None = None) -> str:
    """Copy by SSH (SFTP, else ``cat``), then check the sha256 in the guest. Returns ``sftp`` or ``cat``."""
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
    """``result`` when it exited 0, else CommandFailed naming the transfer step ``what`` (stage ``deploy``)."""
    if not result.ok:
        raise CommandFailed(f"deploy step {what} failed: {result.command[:80]!r} exited {result.exit_status}: "
                            f"{result.output.strip()[-300:]}", exit_status=result.exit_status,
                            output=result.output, log_path=result.log_path, stage="deploy")
    return result
