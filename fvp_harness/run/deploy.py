"""Put artifacts into a target, each once per session, at a content-addressed guest path, verified by sha256.

Strategies (``scenario.deploy.method``):

``console``
    the universal path (no network, no SSH in the image): the file is base64-encoded and typed into the shell as
    ``printf %s <chunk> >> <tmp>.b64`` lines, sized well under the tty's 4 KiB canonical line limit and pipelined
    with a bounded window of unacknowledged input (``Console.stream_commands``); then ``base64 -d`` and
    ``sha256sum`` in the guest, compared with the host's hash; a damaged transfer is retried once with short lines
    sent one at a time.
``ssh``
    SFTP (or ``cat > file`` over exec) through the instance's forwarded port, then the same ``sha256sum`` check.
``preloaded``
    nothing is copied: the artifact must already be in the guest (an MMC image, a rootfs build); only presence and
    hash are checked.

The guest path is ``<guest_dir>/<sha256[:16]>/<file name>``: two builds with the same name never collide, and an
artifact already there with the right hash is skipped (also across strategies). Every guest command is built with
``shlex.quote`` and uses only the guest contract (``mkdir -p``, ``rm -rf``, ``printf``, ``base64 -d``,
``sha256sum``, ``chmod``, ``;``, ``&&``, ``>``, ``>>``), so a busybox guest is enough.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import posixpath
import shlex
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from fvp_harness.errors import CommandFailed, ConfigurationError, DeployError
from fvp_harness.targets.base import CommandResult

__all__ = [
    "CHUNK_CHARS",
    "SAFE_CHUNK_CHARS",
    "SAFE_WINDOW_BYTES",
    "WINDOW_BYTES",
    "DeployedArtifact",
    "Deployer",
    "content_path",
    "deploy_artifact",
    "file_sha256",
    "guest_sha256",
    "upload_console",
    "upload_ssh",
]

log = logging.getLogger(__name__)

Method = Literal["console", "ssh", "preloaded"]

CHUNK_CHARS = 2048
"""Base64 characters per typed line: the line stays near 2.1 KiB, half the tty's 4095-character line limit."""
WINDOW_BYTES = 16384
"""Typed-but-unanswered input allowed at once. Complete lines beyond the 4 KiB line discipline buffer wait in the
kernel's tty flip buffers (64 KiB and more), so 16 KiB in flight is safe and hides the round-trip latency; if a
transfer still arrives damaged it is retried once with ``SAFE_CHUNK_CHARS``/``SAFE_WINDOW_BYTES``."""
SAFE_CHUNK_CHARS = 1024
SAFE_WINDOW_BYTES = 3584
"""The retry settings: one short line in flight at a time, inside even the line discipline's own 4 KiB buffer."""


@runtime_checkable
class _Runs(Protocol):
    def run(self, command: str, timeout: float | None = None) -> CommandResult: ...


@runtime_checkable
class _Streams(Protocol):
    def stream(self, commands: Iterator[str], *, timeout: float | None = None, window_bytes: int = ...) -> int: ...


@runtime_checkable
class _SshCopies(Protocol):
    def ssh_put(self, local: Path, remote: str, timeout: float | None = None) -> str: ...


@dataclass(frozen=True)
class DeployedArtifact:
    """Where an artifact is in the guest and how it got there."""

    local: Path
    guest_path: str
    sha256: str
    size: int
    method: str  # console | ssh | preloaded | host
    skipped: bool  # already present with the right hash
    seconds: float

    @property
    def mb_per_s(self) -> float:
        return self.size / 1e6 / self.seconds if self.seconds > 0 and not self.skipped else 0.0


def file_sha256(path: Path) -> str:
    """Hex sha256 of a host file, read in blocks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def content_path(guest_dir: str, sha256: str, name: str) -> str:
    """``<guest_dir>/<sha256[:16]>/<name>``: the content-addressed guest path of an artifact."""
    if "/" in name or name in ("", ".", ".."):
        raise ConfigurationError(f"artifact name {name!r} cannot be used as a guest file name")
    return posixpath.join(guest_dir, sha256[:16], name)


def guest_sha256(target: _Runs, remote: str, timeout: float | None = None) -> str | None:
    """The sha256 of a guest file per ``sha256sum``, or None if it is missing / unreadable."""
    result = target.run(f"sha256sum {shlex.quote(remote)}", timeout)
    if not result.ok:
        return None
    for line in result.output.splitlines():
        word = line.strip().split(" ", 1)[0]
        if len(word) == 64 and all(c in "0123456789abcdef" for c in word.lower()):
            return word.lower()
    return None


def _check_hash(target: _Runs, remote: str, expected: str, how: str, timeout: float | None) -> None:
    actual = guest_sha256(target, remote, timeout)
    if actual != expected:
        got = "missing" if actual is None else actual
        raise DeployError(f"{remote} arrived damaged by {how}: guest sha256 {got}, host sha256 {expected}",
                          log_path=getattr(target, "console_log", None), stage="deploy")


def _chunks(data: bytes, chunk_chars: int) -> Iterator[str]:
    encoded = base64.b64encode(data).decode("ascii")
    for start in range(0, len(encoded), chunk_chars):
        yield encoded[start : start + chunk_chars]


def upload_console(target: _Runs, local: Path, remote: str, *, sha256: str | None = None,
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
    _must(target.run(f"mkdir -p {shlex.quote(folder)} && rm -rf {q_staging} {q_remote}", timeout), "prepare")
    lines = (f"printf %s {shlex.quote(chunk)} >> {q_staging}" for chunk in _chunks(data, chunk_chars))
    if isinstance(target, _Streams):
        target.stream(lines, timeout=timeout, window_bytes=window_bytes)
    else:
        for line in lines:
            _must(target.run(line, timeout), "append")
    if not data:
        _must(target.run(f"printf '' > {q_staging}", timeout), "create")
    _must(target.run(f"base64 -d {q_staging} > {q_remote} && rm -rf {q_staging}", timeout), "decode")
    _check_hash(target, remote, digest, "console", timeout)


def upload_ssh(target: _SshCopies, local: Path, remote: str, *, sha256: str | None = None,
               timeout: float | None = None) -> str:
    """Copy by SSH (SFTP, else ``cat``), then check the sha256 in the guest. Returns ``sftp`` or ``cat``."""
    digest = sha256 or file_sha256(local)
    folder = posixpath.dirname(remote) or "."
    runner = target if isinstance(target, _Runs) else None
    if runner is not None:
        _must(runner.run(f"mkdir -p {shlex.quote(folder)}", timeout), "prepare")
    how = target.ssh_put(Path(local), remote, timeout)
    if runner is not None:
        _check_hash(runner, remote, digest, f"ssh ({how})", timeout)
    return how


def _must(result: CommandResult, what: str) -> CommandResult:
    if not result.ok:
        raise CommandFailed(f"deploy step {what} failed: {result.command[:80]!r} exited {result.exit_status}: "
                            f"{result.output.strip()[-300:]}", exit_status=result.exit_status,
                            output=result.output, log_path=result.log_path, stage="deploy")
    return result


def deploy_artifact(target: _Runs, local: Path | str, *, method: Method = "console",
                    guest_dir: str = "/tmp/fvp-harness", name: str | None = None,
                    timeout: float | None = None, executable: bool = False) -> DeployedArtifact:
    """Deploy one file (no session cache; see ``Deployer`` for once-per-session)."""
    return Deployer(target, method=method, guest_dir=guest_dir, timeout=timeout).deploy(
        local, name=name, executable=executable)


class Deployer:
    """Deploys artifacts into one open target, each at most once per session.

    ``guest_dir`` defaults to the target's own ``guest_dir`` when it has one (the host target keeps artifacts in its
    working folder), else the scenario's. ``timeout`` is per guest step (scaled by the target).
    """

    def __init__(self, target: _Runs, *, method: Method = "console", guest_dir: str | None = None,
                 timeout: float | None = None, chunk_chars: int = CHUNK_CHARS,
                 window_bytes: int = WINDOW_BYTES) -> None:
        if method not in ("console", "ssh", "preloaded"):
            raise ConfigurationError(f"unknown deploy method {method!r} (console, ssh or preloaded)")
        self.target = target
        self.method = method
        self.guest_dir = getattr(target, "guest_dir", None) or guest_dir or "/tmp/fvp-harness"
        self.timeout = timeout
        self.chunk_chars = chunk_chars
        self.window_bytes = window_bytes
        self.deployed: dict[str, DeployedArtifact] = {}

    def deploy(self, local: Path | str, *, name: str | None = None, executable: bool = False) -> DeployedArtifact:
        """Make ``local`` present in the guest; returns where it is. Raises DeployError on a hash mismatch."""
        local = Path(local)
        if not local.is_file():
            raise ConfigurationError(f"artifact {local} does not exist (build it first, or fix the path)")
        began = time.monotonic()
        digest = file_sha256(local)
        remote = content_path(self.guest_dir, digest, name or local.name)
        key = f"{digest}:{remote}"
        cached = self.deployed.get(key)
        if cached is not None:
            return DeployedArtifact(local, remote, digest, cached.size, cached.method, True, 0.0)
        size = local.stat().st_size
        present = guest_sha256(self.target, remote, self.timeout) == digest
        method: str = self.method
        if present:
            log.info("%s already in the guest at %s; skipped", local.name, remote)
        elif self.method == "preloaded":
            raise DeployError(f"{local.name} is not preloaded in the guest at {remote} with sha256 {digest} "
                              f"(deploy.method is preloaded: put it into the image, or use console or ssh)",
                              stage="deploy")
        elif hasattr(self.target, "local_path") and not isinstance(self.target, _Streams):
            self.target.put(local, remote)  # type: ignore[attr-defined]  # host target: a plain copy
            _check_hash(self.target, remote, digest, "copy", self.timeout)
            method = "host"
        elif self.method == "ssh":
            if not isinstance(self.target, _SshCopies):
                raise ConfigurationError(f"deploy.method ssh: target {type(self.target).__name__} has no SSH")
            method = f"ssh/{upload_ssh(self.target, local, remote, sha256=digest, timeout=self.timeout)}"
        else:
            try:
                upload_console(self.target, local, remote, sha256=digest, timeout=self.timeout,
                               chunk_chars=self.chunk_chars, window_bytes=self.window_bytes)
            except DeployError as exc:
                log.warning("%s; retrying with %s-character lines, one at a time", exc, SAFE_CHUNK_CHARS)
                upload_console(self.target, local, remote, sha256=digest, timeout=self.timeout,
                               chunk_chars=SAFE_CHUNK_CHARS, window_bytes=SAFE_WINDOW_BYTES)
                method = "console (safe retry)"
        if executable:
            _must(self.target.run(f"chmod 755 {shlex.quote(remote)}", self.timeout), "chmod")
        result = DeployedArtifact(local, remote, digest, size, method, present, time.monotonic() - began)
        self.deployed[key] = result
        return result
