"""The subject line of each commit a history's runs recorded, for the dashboard's commit axis and
tooltips.

Why git itself, once: the manifest records a run's commit but not its message, and a maintainer
reads "abc1234 fix the driver cache" faster than a hash. One ``git log --no-walk --ignore-missing``
answers every commit at once (unknown ones are skipped: a run measured in another clone); no git, no
checkout, or no answer within ``GIT_TIMEOUT_S``: no subjects, and the site shows the hashes alone.
"""

from __future__ import annotations

import logging
import re
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["GIT_TIMEOUT_S", "commit_subjects"]

GIT_TIMEOUT_S = 10.0
"""Seconds ``git log`` may take before the site goes on without subjects."""

_log = logging.getLogger(__name__)
_HASH = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def commit_subjects(commits: Iterable[str | None], places: Sequence[Path], *,
                    timeout: float = GIT_TIMEOUT_S) -> dict[str, str]:
    """Full commit hash -> subject line, for the ``commits`` git knows in the first of ``places``
    that is inside a checkout (an empty mapping when none is, or git is missing or hangs)."""
    wanted = sorted({c.lower() for c in commits if c and _HASH.fullmatch(c.lower())})
    if not wanted:
        return {}
    for place in places:
        directory = place if place.is_dir() else place.parent
        if not directory.is_dir():
            continue
        try:
            done = subprocess.run(
                ["git", "-C", str(directory), "log", "--no-walk=unsorted", "--ignore-missing",
                 "--format=%H%x09%s", *wanted, "--"],
                capture_output=True, text=True, timeout=timeout, check=False,
                stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            return {}
        except subprocess.TimeoutExpired:
            _log.warning("git log took more than %.0f s in %s: the dashboard shows commits without "
                         "subjects",
                         timeout, directory)
            return {}
        if done.returncode != 0:
            continue  # not a checkout (128): the next place may be one
        found = dict(line.split("\t", 1) for line in done.stdout.splitlines() if "\t" in line)
        return {commit: subject for commit, subject in found.items() if commit in wanted}
    return {}
