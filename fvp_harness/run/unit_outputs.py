"""A unit's outputs: the sha256 of every file its runner left in the unit folder
(``Record.outputs``), and the ``run.fetch`` files copied back into ``fetched/<unit>/``."""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path

from fvp_harness.errors import CommandFailed, storing
from fvp_harness.run.framed import FramedResult
from fvp_harness.targets.base import CommandResult, Target
from fvp_harness.targets.transfer import sha256sum_digests

__all__ = ["fetch", "framed_outputs", "hash_outputs"]


def _skipped(unit_dir: str, exclude: Sequence[str]) -> set[str]:
    """The names in ``unit_dir`` of the excluded guest paths (``run.fetch`` files, staged
    inputs)."""
    folder = posixpath.normpath(unit_dir)
    return {
        posixpath.basename(path)
        for path in exclude
        if posixpath.dirname(posixpath.normpath(path)) == folder
    }


def hash_outputs(
    guest: Callable[[str], CommandResult], unit_dir: str, *, exclude: Sequence[str] = ()
) -> dict[str, str]:
    """sha256 of every file the runner left in the unit folder, computed in the guest (nothing
    copied), except the guest paths in ``exclude`` (the ``run.fetch`` files: reports, not model
    outputs)."""
    quoted = shlex.quote(unit_dir)
    listing = guest(f"ls {quoted}")
    if not listing.ok:
        raise CommandFailed(
            f"cannot list {unit_dir}: {listing.output.strip()}", exit_status=listing.exit_status
        )
    skipped = _skipped(unit_dir, exclude)
    names = sorted(name for name in listing.output.split() if name and name not in skipped)
    if not names:
        return {}
    hashed = guest(f"cd {quoted} && sha256sum {' '.join(shlex.quote(n) for n in names)}")
    if not hashed.ok:
        raise CommandFailed(
            f"sha256sum of the outputs in {unit_dir} failed: {hashed.output.strip()[-300:]}",
            exit_status=hashed.exit_status,
        )
    return sha256sum_digests(hashed.output)


def framed_outputs(
    framed: FramedResult, unit_dir: str, *, exclude: Sequence[str]
) -> dict[str, str]:
    """The digests of a framed line without the excluded guest paths (``run.fetch`` files, staged
    inputs); a problem line about any other name (a folder among the outputs, an unreadable file)
    fails the unit, as a failed ``sha256sum`` did."""
    skipped = _skipped(unit_dir, exclude)
    problems = [line for line in framed.problems if not any(name in line for name in skipped)]
    if problems:
        raise CommandFailed(
            f"sha256sum of the outputs in {unit_dir} failed: {'; '.join(problems)[-300:]}",
            exit_status=1,
        )
    return {name: digest for name, digest in framed.digests.items() if name not in skipped}


def fetch(target: Target, folder: Path, remotes: Sequence[str]) -> None:
    """Copy the ``run.fetch`` files (guest paths) back into ``folder``
    (``<results>/fetched/<unit>/``)."""
    for remote in remotes:
        try:
            data = target.get(remote)
        except FileNotFoundError as exc:
            raise CommandFailed(
                f"run.fetch: {remote} is not in the guest ({exc})", exit_status=1
            ) from exc
        kept = folder / posixpath.basename(remote)
        with storing(kept):
            folder.mkdir(parents=True, exist_ok=True)
            kept.write_bytes(data)
