"""Put artifacts into a target, each once per session, at a content-addressed guest path, verified
by sha256.

Why it is shaped so: docs/architecture.md, "Inside `run/`"."""

from __future__ import annotations

import logging
import posixpath
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from fvp_harness.errors import ConfigurationError, DeployError, InfrastructureError
from fvp_harness.files import file_sha256
from fvp_harness.run.unit import kind_of
from fvp_harness.scenario.model import DEFAULT_GUEST_DIR
from fvp_harness.targets.base import CopiesOverSsh, Target
from fvp_harness.targets.transfer import (
    AUTO_SSH_TIMEOUT_S,
    CHUNK_CHARS,
    SAFE_CHUNK_CHARS,
    SAFE_WINDOW_BYTES,
    WINDOW_BYTES,
    deploy_step,
    guest_sha256,
    guest_sha256_many,
    must_succeed,
    upload_console,
    upload_ssh,
)

__all__ = ["DeployedArtifact", "Deployer", "content_path", "deploy_artifact"]

log = logging.getLogger(__name__)

Method = Literal["console", "ssh", "preloaded", "auto"]



@dataclass(frozen=True)
class DeployedArtifact:
    """Where an artifact is in the guest and how it got there."""

    local: Path
    guest_path: str
    sha256: str
    size: int
    method: str  # console | ssh | preloaded | host | in place
    skipped: bool  # already present with the right hash
    seconds: float


def content_path(guest_dir: str, sha256: str, name: str) -> str:
    """``<guest_dir>/<sha256[:16]>/<name>``: the content-addressed guest path of an artifact."""
    if "/" in name or name in ("", ".", ".."):
        raise ConfigurationError(f"artifact name {name!r} cannot be used as a guest file name")
    return posixpath.join(guest_dir, sha256[:16], name)


def deploy_artifact(target: Target, local: Path | str, *, method: Method = "console",
                    guest_dir: str = DEFAULT_GUEST_DIR, name: str | None = None,
                    timeout: float | None = None, executable: bool = False) -> DeployedArtifact:
    """Deploy one file (no session cache; see ``Deployer`` for once-per-session)."""
    return Deployer(target, method=method, guest_dir=guest_dir, timeout=timeout).deploy(
        local, name=name, executable=executable)


class Deployer:
    """Deploys artifacts into one open target, each at most once per session.

    ``guest_dir`` defaults to the target's own ``guest_dir`` when it has one (the host target keeps
    artifacts in its working folder), else the scenario's. ``timeout`` is per guest step (scaled by
    the target).
    """

    def __init__(self, target: Target, *, method: Method = "console", guest_dir: str | None = None,
                 timeout: float | None = None, chunk_chars: int = CHUNK_CHARS,
                 window_bytes: int = WINDOW_BYTES) -> None:
        if method not in ("console", "ssh", "preloaded", "auto"):
            raise ConfigurationError(f"unknown deploy method {method!r} (console, ssh, preloaded "
                                     "or auto)")
        self.target = target
        self.method = method
        self.kind = kind_of(target)
        self.guest_dir = self.kind.guest_dir() or guest_dir or DEFAULT_GUEST_DIR
        self.timeout = timeout
        self.chunk_chars = chunk_chars
        self.window_bytes = window_bytes
        self.deployed: dict[str, DeployedArtifact] = {}
        self.transport: str | None = None
        """``auto``: ``ssh`` or ``console (<why not ssh>)`` once the first file went; None
        before."""

    def deploy(self, local: Path | str, *, name: str | None = None, executable: bool = False,
               present: bool | None = None) -> DeployedArtifact:
        """Make ``local`` present in the guest; returns where it is. Raises DeployError on a hash
        mismatch. ``present``: whether the guest already holds it, when the caller asked already
        (``deploy_all``)."""
        local = Path(local)
        if not local.is_file():
            raise ConfigurationError(f"artifact {local} does not exist (build it first, or fix the "
                                     "path)")
        began = time.monotonic()
        digest = file_sha256(local)
        if self.kind.in_place:  # bare metal: the model reads the file where it is
            return DeployedArtifact(local, str(local), digest, local.stat().st_size, "in place",
                                    True, 0.0)
        remote = content_path(self.guest_dir, digest, name or local.name)
        key = f"{digest}:{remote}"
        cached = self.deployed.get(key)
        if cached is not None:
            return DeployedArtifact(local, remote, digest, cached.size, cached.method, True, 0.0)
        size = local.stat().st_size
        if present is None:
            present = guest_sha256(self.target, remote, self.timeout) == digest
        method: str = self.method
        if present:
            log.info("%s already in the guest at %s; skipped", local.name, remote)
        elif self.method == "preloaded":
            raise DeployError(f"{local.name} is not preloaded in the guest at {remote} with sha256 "
                              f"{digest} (deploy.method is preloaded: put it into the image, or "
                              "use console or ssh)", stage="deploy")
        else:
            method = self.kind.copy(self, local, remote, digest)
        if executable:
            must_succeed(deploy_step(self.target, f"chmod 755 {shlex.quote(remote)}", self.timeout),
                         "chmod")
        result = DeployedArtifact(local, remote, digest, size, method, present,
                                  time.monotonic() - began)
        self.deployed[key] = result
        return result

    def deploy_all(self, files: Sequence[tuple[Path, bool]]) -> dict[Path, DeployedArtifact]:
        """Deploy several files (``(local, executable)``) with the fewest guest round trips: one
        ``sha256sum`` of every candidate path says which are already there, each missing file is
        uploaded (and checked) as ``deploy`` does, and one ``chmod`` covers every runner. Why: on a
        real FVP each console round trip runs the guest shell on the simulated CPU, so two per file
        (presence, chmod) cost model time per boot."""
        if self.kind.in_place or self.method == "preloaded" or len(files) < 2:
            return {Path(local): self.deploy(local, executable=executable)
                    for local, executable in files}
        wanted: dict[Path, tuple[str, str, bool]] = {}
        for local, executable in files:
            local = Path(local)
            if not local.is_file():
                raise ConfigurationError(f"artifact {local} does not exist (build it first, or fix "
                                         "the path)")
            digest = file_sha256(local)
            wanted[local] = (digest, content_path(self.guest_dir, digest, local.name), executable)
        unknown = sorted({remote for digest, remote, _ in wanted.values()
                          if f"{digest}:{remote}" not in self.deployed})
        present = guest_sha256_many(self.target, unknown, self.timeout) if unknown else {}
        # no round trip of its own
        placed = {local: self.deploy(local, present=present.get(remote) == digest)
                  for local, (digest, remote, _) in wanted.items()}
        runners = sorted({remote for _, remote, executable in wanted.values() if executable})
        if runners:
            command = "chmod 755 " + " ".join(shlex.quote(remote) for remote in runners)
            must_succeed(deploy_step(self.target, command, self.timeout), "chmod")
        return placed

    def upload(self, local: Path, remote: str, digest: str, ssh: CopiesOverSsh | None) -> str:
        """Copy into a guest by ``method`` (``ssh``: the target, when it copies over ssh);
        returns how it went."""
        if self.method == "auto" and self.transport in (None, "ssh") and ssh is not None:
            return self._auto(ssh, local, remote, digest)
        if self.method == "ssh":
            if ssh is None:
                name = type(self.target).__name__
                raise ConfigurationError(f"deploy.method ssh: target {name} has no SSH")
            return f"ssh/{upload_ssh(ssh, local, remote, sha256=digest, timeout=self.timeout)}"
        if self.method == "auto":  # a target without ssh, or one whose sshd did not answer
            self.transport = self.transport or "console (the target has no ssh)"
        try:
            how = upload_console(self.target, local, remote, sha256=digest, timeout=self.timeout,
                                 chunk_chars=self.chunk_chars, window_bytes=self.window_bytes)
            return "console/gzip" if how == "gzip" else "console"
        except DeployError as exc:
            log.warning("%s; retrying with %s-character lines, one at a time", exc,
                        SAFE_CHUNK_CHARS)
            upload_console(self.target, local, remote, sha256=digest, timeout=self.timeout,
                           chunk_chars=SAFE_CHUNK_CHARS, window_bytes=SAFE_WINDOW_BYTES)
            return "console (safe retry)"

    def _auto(self, ssh: CopiesOverSsh, local: Path, remote: str, digest: str) -> str:
        """``auto``: ssh while it works; the first copy decides (a later failure is a real one and
        is raised)."""
        first = self.transport is None
        timeout = (min(self.timeout or AUTO_SSH_TIMEOUT_S, AUTO_SSH_TIMEOUT_S) if first
                   else self.timeout)
        try:
            how = f"ssh/{upload_ssh(ssh, local, remote, sha256=digest, timeout=timeout)}"
        except InfrastructureError as exc:
            if not first or isinstance(exc, DeployError):
                raise
            log.warning("ssh did not answer (%s); deploying over the console",
                        str(exc).strip()[:200])
            self.transport = f"console (ssh did not answer: {str(exc).strip()[:120]})"
            how = upload_console(self.target, local, remote, sha256=digest, timeout=self.timeout,
                                 chunk_chars=self.chunk_chars, window_bytes=self.window_bytes)
            return "console/gzip" if how == "gzip" else "console"
        self.transport = "ssh"
        return how
