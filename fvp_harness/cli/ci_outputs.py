"""What the verbs that judge results (``run``, ``report``, ``make``, ``compare``, ``history``) share
for CI: ``--junit FILE`` and ``--github-summary``.

Not a verb module (no ``verb_`` prefix). Both outputs are derived from the stored records only
(through the analysis or the history), so they are byte-stable: the same records give the same
files. ``--github-summary`` appends the markdown report to the file ``$GITHUB_STEP_SUMMARY`` names
(GitHub Actions shows it on the job's page) and does nothing when the variable is not set, so the
same command line works locally. The summary is cut (with a note) below GitHub's 1 MiB limit per
step.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fvp_harness.cli.out_paths import file_arg

if TYPE_CHECKING:
    from fvp_harness.report.rendering.junit import Suite

__all__ = ["SUMMARY_LIMIT", "add_ci_options", "append_step_summary", "write_ci_outputs"]

SUMMARY_LIMIT = 1_000_000
"""Bytes appended to ``$GITHUB_STEP_SUMMARY`` at most (GitHub refuses a step summary over 1 MiB)."""


def add_ci_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--junit FILE`` and ``--github-summary`` to a verb's parser."""
    parser.add_argument("--junit", type=file_arg, default=None, metavar="FILE",
                        help="also write a JUnit XML file: one test case per model x gate (and "
                             "identity check, "
                        "minimum effect), per failed and per not-run unit")
    parser.add_argument("--github-summary", action="store_true",
                        help="append the markdown report to $GITHUB_STEP_SUMMARY (GitHub Actions; "
                             "nothing when "
                        "the variable is not set)")


def append_step_summary(markdown: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """Append ``markdown`` to the file ``$GITHUB_STEP_SUMMARY`` names; None when it is not set."""
    env = os.environ if environ is None else environ
    target = env.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    data = markdown.encode("utf-8")
    if len(data) > SUMMARY_LIMIT:
        note = ("\n\n*(cut: the report is longer than a GitHub step summary may be; see the "
                "uploaded report)*\n")
        data = (
            data[: SUMMARY_LIMIT - len(note.encode())].decode("utf-8", errors="ignore").encode()
            + note.encode()
        )
    path = Path(target)
    with open(path, "ab") as handle:
        handle.write(data if data.endswith(b"\n") else data + b"\n")
        handle.write(b"\n")
    return path


def write_ci_outputs(args: argparse.Namespace, suites: Callable[[], Sequence[Suite]],
                     markdown: Callable[[], str]) -> None:
    """Write what ``args`` asked for (``--junit``, ``--github-summary``) and say where on stdout
    (``-q``: not). ``suites`` and ``markdown`` are called only when needed."""
    quiet = getattr(args, "quiet", 0) > 0
    junit = getattr(args, "junit", None)
    if junit is not None:
        # late: the analysis stack loads only for these verbs
        from fvp_harness.report.rendering.junit import write_junit

        path = write_junit(junit, suites())
        if not quiet:
            print(f"junit: {path}")
    if getattr(args, "github_summary", False):
        written = append_step_summary(markdown())
        if written is None:
            if getattr(args, "verbose", 0) > 0:
                print("GITHUB_STEP_SUMMARY is not set: no step summary written", file=sys.stderr)
        elif not quiet:
            print(f"step summary: appended to {written}")
