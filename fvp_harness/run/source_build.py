"""Build a runner at a commit: ``builds.X.source: {repository: LOCAL_PATH, commit: REV}``.

Why it is shaped so: docs/architecture.md, "Inside `run/`"."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fvp_harness.errors import ConfigurationError, InfrastructureError, UnitFailure, storage_error
from fvp_harness.files import atomic_write

__all__ = [
    "CACHE_ENV",
    "GIT_TIMEOUT_S",
    "CachedBuild",
    "commit_line",
    "commits_between",
    "default_cache_dir",
    "git",
    "resolve_commit",
    "source_checkout",
    "tree_of",
]

CACHE_ENV = "FVP_HARNESS_BUILD_CACHE"
GIT_TIMEOUT_S = 60.0
"""Longest one git command may take (``git archive`` of a large tree included)."""


def default_cache_dir() -> Path:
    """``$FVP_HARNESS_BUILD_CACHE``, else ``~/.cache/fvp-harness/commits`` (outside any
    checkout)."""
    named = os.environ.get(CACHE_ENV)
    return Path(named).expanduser() if named else Path.home() / ".cache" / "fvp-harness" / "commits"


def git(repository: Path, *args: str, timeout: float = GIT_TIMEOUT_S) -> str:
    """Run ``git -C repository ARGS`` (list argv, no shell, a timeout); its stdout. Raises
    ``ConfigurationError`` when git says no (the message is git's), ``InfrastructureError`` when it
    hangs."""
    argv = ["git", "-C", str(repository), *args]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise InfrastructureError(
            f"git {' '.join(args)} in {repository} did not finish in {timeout:.0f} s"
        ) from exc
    except OSError as exc:
        raise InfrastructureError(
            f"cannot run git ({exc}); install git to build from a commit"
        ) from exc
    if done.returncode != 0:
        message = (
            done.stderr.strip().splitlines()[-1]
            if done.stderr.strip()
            else f"exit {done.returncode}"
        )
        raise ConfigurationError(f"{repository}: git {' '.join(args)}: {message}")
    return done.stdout


def _ref_names(repository: Path) -> list[str]:
    with contextlib.suppress(ConfigurationError, InfrastructureError):
        text = git(
            repository, "for-each-ref", "--format=%(refname:short)", "refs/heads", "refs/tags"
        )
        return [line for line in text.splitlines() if line]
    return []


def resolve_commit(repository: Path, ref: str, *, what: str = "commit") -> str:
    """The full commit ``ref`` names in ``repository`` (``git rev-parse --verify REF^{commit}``); an
    unknown ref is a ``ConfigurationError`` with the closest branch or tag ("did you mean")."""
    import difflib

    if not (repository / ".git").exists() and not (repository / "HEAD").is_file():
        raise ConfigurationError(f"{what}: {repository} is not a git repository")
    if ref.startswith("-"):
        raise ConfigurationError(f"{what}: {ref!r} is not a git revision")
    try:
        return git(repository, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    except ConfigurationError:
        close = difflib.get_close_matches(ref, _ref_names(repository), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigurationError(f"{what}: no commit named {ref!r} in {repository}{hint}") from None


def tree_of(repository: Path, commit: str) -> str:
    """The tree hash of ``commit``: what its files are, whatever its message, author or parents."""
    return git(repository, "rev-parse", "--verify", f"{commit}^{{tree}}").strip()


def commit_line(repository: Path, commit: str) -> tuple[str, str]:
    """``(subject, "Author Name <email>, date")`` of a commit."""
    text = git(repository, "log", "-1", "--format=%s%n%an <%ae>, %ad", "--date=iso-strict", commit)
    subject, _, author = text.strip().partition("\n")
    return subject, author


def commits_between(repository: Path, good: str, bad: str) -> list[str]:
    """The commits after ``good`` up to ``bad`` on ``bad``'s first-parent line, oldest first
    (``bad`` last).

    Why first parent: a range between two nightly runs is the line of merges that landed on the
    branch; each is a state the branch was in, and each builds. A side branch's commits were never
    the branch's state (and often do not build alone); ``git bisect --first-parent`` makes the same
    choice."""
    try:
        git(repository, "merge-base", "--is-ancestor", good, bad)
    except ConfigurationError:
        raise ConfigurationError(
            f"--good {good[:12]} is not an ancestor of --bad {bad[:12]} in {repository}: "
            "give the older, good commit as --good"
        ) from None
    text = git(repository, "rev-list", "--first-parent", "--reverse", f"{good}..{bad}")
    return [line for line in text.split() if line]


def source_checkout(repository: Path, commit: str, cache: Path) -> Path:
    """The files of ``commit`` in ``cache/checkouts/<tree>/`` (``git archive``, extracted once; a
    folder that is there is complete: it is renamed into place only when the extraction
    finished)."""
    tree = tree_of(repository, commit)
    folder = cache / "checkouts" / tree
    if folder.is_dir():
        return folder
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{tree[:12]}-", dir=folder.parent))
    except OSError as exc:
        raise storage_error(folder.parent, exc) from exc
    try:
        archive = staging / "tree.tar"
        with archive.open("wb") as sink:
            try:
                done = subprocess.run(
                    ["git", "-C", str(repository), "archive", "--format=tar", commit],
                    stdout=sink,
                    stderr=subprocess.PIPE,
                    timeout=GIT_TIMEOUT_S,
                    check=False,
                )
            except subprocess.TimeoutExpired as exc:
                raise InfrastructureError(
                    f"git archive {commit[:12]} in {repository} did not finish in "
                    f"{GIT_TIMEOUT_S:.0f} s"
                ) from exc
        if done.returncode != 0:
            raise ConfigurationError(
                f"{repository}: git archive {commit[:12]}: "
                f"{done.stderr.decode(errors='replace').strip()}"
            )
        files = staging / "files"
        with tarfile.open(archive) as tar:
            tar.extractall(files, filter="data")
        archive.unlink()
        try:
            files.rename(folder)
        except OSError:
            if not folder.is_dir():  # another harness put it there first: theirs is as good
                raise
    except OSError as exc:
        raise storage_error(folder, exc) from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


@dataclass(frozen=True)
class CachedBuild:
    """Where the build of one (tree, command) lives in the cache, and what it recorded."""

    folder: Path
    name: str

    @staticmethod
    def of(cache: Path, tree: str, command: str, name: str) -> CachedBuild:
        key = hashlib.sha256(f"{tree}\0{command}".encode()).hexdigest()[:24]
        return CachedBuild(cache / "builds" / key, name)

    @property
    def artifact(self) -> Path:
        return self.folder / self.name

    @property
    def failed_record(self) -> Path:
        return self.folder / "failed.json"

    def failure(self) -> str | None:
        """The message of a cached failed build, or None."""
        try:
            data = json.loads(self.failed_record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return str(data.get("message", "the build failed")) if isinstance(data, dict) else None

    def remember_failure(self, error: UnitFailure) -> None:
        with contextlib.suppress(OSError):
            self.folder.mkdir(parents=True, exist_ok=True)
            log = str(error.log_path) if error.log_path is not None else None
            atomic_write(
                self.failed_record,
                json.dumps({"message": error.message, "log": log, "last_lines": error.last_lines})
                + "\n",
            )

    def forget(self) -> None:
        with contextlib.suppress(OSError):
            self.failed_record.unlink(missing_ok=True)
