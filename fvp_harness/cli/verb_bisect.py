"""``bisect SCENARIO --good REF --bad REF``: build and measure commits of a range to find the first
that moved the metric.

Wiring only: ``run.bisect`` does the work (``run.source_build`` builds a commit, ``run.pipeline``
measures it). Every name is checked before anything builds: the build, metric and models, the
repository and both refs (exit 2 with "did you mean"). Exit 0 (found), 1 (cannot decide: the message
says which range is left), 2 (bad input), 3 (infrastructure), 130/143 (interrupted: run it again to
resume).
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Sequence
from pathlib import Path

from fvp_harness.cli.out_paths import folder_arg
from fvp_harness.cli.scenario_args import (
    add_scenario_options,
    load_from_args,
    stop_on_first_interrupt,
)
from fvp_harness.store.folder import DEFAULT_RESULTS_BASE, results_dir_for

__all__ = ["ORDER", "register"]

ORDER = 29
BISECT_DIR = "bisect"


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "bisect",
        parents=[common],
        help="build and measure commits between a good and a bad one to find the first that "
        "moved the metric",
        description="Find the commit that moved a metric: build the build's runner at commits of "
        "REPOSITORY (builds.X.source, or --repository) between --good and --bad (bad's "
        "first-parent line), measure each commit just enough to tell whether it is at the good or "
        "the bad level (rounds of one unit per model, up to run.until.max_repetitions), skip "
        "commits that do not build, and print the first bad commit, the table of commits measured "
        "and a compare report of the last good against the first bad. Every commit's units are "
        "stored in <out>/<commit>/ and every build is cached by the commit's tree: run it again to "
        "resume. Exit 0 found, 1 cannot decide, 2 bad input, 3 infrastructure.",
    )
    parser.add_argument("scenario", metavar="SCENARIO", help="the scenario file")
    parser.add_argument(
        "--good", required=True, metavar="REF", help="a commit at the good level (older)"
    )
    parser.add_argument(
        "--bad", required=True, metavar="REF", help="a commit at the bad level (newer)"
    )
    parser.add_argument(
        "--build",
        default=None,
        metavar="BUILD",
        help="the build to bisect (default: compare.candidate, else the first build)",
    )
    parser.add_argument(
        "--metric",
        default=None,
        metavar="M",
        help="the metric (default: the scenario's primary metric, else its first)",
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="MODEL",
        help="a model to measure (repeatable; default: every model)",
    )
    parser.add_argument(
        "--repository",
        default=None,
        metavar="PATH",
        help="the local git repository whose commits are built (default: the build's "
        "source.repository)",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=folder_arg,
        default=None,
        metavar="DIR",
        help=f"where to store (default: results/<scenario stem>/{BISECT_DIR})",
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=DEFAULT_RESULTS_BASE,
        metavar="DIR",
        help="results base (default: results)",
    )
    add_scenario_options(parser)
    parser.set_defaults(handler=_bisect_verb)


def _bisect_verb(args: argparse.Namespace) -> int:
    # late: the run machinery (pandas, numpy, pydantic) loads only when this verb runs
    from fvp_harness.run.bisect import BisectRequest, bisect, check_request
    from fvp_harness.run.source_build import resolve_commit
    from fvp_harness.scenario import LoadedScenario, load_scenario

    loaded = load_from_args(args, args.scenario, check_files=False)
    build, metric, models, repository = check_request(
        loaded, args.build, args.metric, args.model, args.repository
    )
    resolve_commit(repository, args.good, what="--good")  # refused before any build
    resolve_commit(repository, args.bad, what="--bad")
    until = loaded.scenario.run.until
    out = args.output or results_dir_for(loaded.path, args.results) / BISECT_DIR
    given = list(args.overrides or [])

    def load(extra: Sequence[str]) -> LoadedScenario:
        return load_scenario(args.scenario, [*given, *extra], fvp_binary=args.fvp_binary)

    request = BisectRequest(
        load,
        build,
        metric,
        models,
        repository,
        args.good,
        args.bad,
        Path(out),
        min_rounds=until.min_repetitions if until is not None else 2,
        max_rounds=until.max_repetitions if until is not None else 10,
    )
    quiet = args.quiet > 0
    with stop_on_first_interrupt(
        threading.Event(), lambda: print("stopping after the units in flight")
    ) as stop:
        result = bisect(request, stop=stop, say=(lambda text: None) if quiet else print)
    if result.first_bad is not None:
        print(result.message)
        print(f"  {result.subject}")
        print(f"  {result.author}")
    else:
        print(result.message)
    print(f"{result.builds} build(s), {result.units} unit(s) run in {result.seconds:.1f} s")
    print(f"bisect: {result.files['markdown']}")
    if result.compare_report is not None:
        print(f"compare: {result.compare_report}")
    return result.exit_code
