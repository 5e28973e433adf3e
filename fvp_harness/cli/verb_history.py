"""``history SCENARIO_OR_RESULTS_DIR``: every stored run of a scenario, one row each, and the steps
in each model's series.

Wiring only: ``report.history`` reads the runs, finds the steps and writes ``history.md/.csv/.json``
and a chart per model; with ``--html DIR`` ``report.dashboard`` writes the same history as a static
site. Exit 0 (no regression in effect), 1 (a regression still in effect at the newest run, or a
newest run that measured nothing: no news is no "no regression"), 2 (bad input).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fvp_harness.cli.ci_outputs import add_ci_options, write_ci_outputs
from fvp_harness.cli.out_paths import folder_arg
from fvp_harness.errors import EXIT_FAILED, EXIT_OK, ConfigurationError
from fvp_harness.store.folder import DEFAULT_RESULTS_BASE, HISTORY_DIR

__all__ = ["ORDER", "register"]

ORDER = 28


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "history",
        parents=[common],
        help="one row per stored run of a scenario, and the regressions in each model's series",
        description="Read every stored run of a scenario's results folder (runs/<id>/ and the "
                    "newest), oldest first: "
        "commit, date, host, and per model the primary metric's median with its CI and the NPU "
        "cycles. A step detector (a piecewise constant fit over the whole series, penalised least "
        "squares, in the spirit of asv) flags the run where a model's level went up (regression) "
        "or down. Writes history.md/.csv/.json and history-<model>.png into <results "
        f"folder>/{HISTORY_DIR}/ (or -o DIR). Exit 0, or 1 when a regression is still in effect at "
        "the newest run or the newest run measured nothing (a line says which), 2 bad input.",
    )
    parser.add_argument("target", metavar="SCENARIO_OR_RESULTS_DIR",
                        help="a scenario file, its results folder, or its file stem under "
                             "--results")
    parser.add_argument("--build", default=None, metavar="BUILD",
                        help="the build to follow (default: the scenario's compare.candidate)")
    parser.add_argument("--metric", default=None, metavar="M",
                        help="the metric to follow (default: the scenario's primary metric)")
    parser.add_argument("--threshold", type=float, default=None, metavar="PCT",
                        help="smallest step reported, in percent (default: the scenario's "
                             "compare.min_effect)")
    parser.add_argument("-o", "--output", type=folder_arg, default=None, metavar="DIR",
                        help=f"where to write (default: <results folder>/{HISTORY_DIR})")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS_BASE, metavar="DIR",
                        help="results base for a scenario file or stem (default: results)")
    parser.add_argument("--no-charts", action="store_true",
                        help="write the table, CSV and JSON only")
    parser.add_argument("--html", type=folder_arg, default=None, metavar="DIR",
                        help="also write the history as a static site into DIR (index.html: a "
                             "chart per model "
                        "with each point linking to its run's report; opens from a file:// URL, no "
                        "server)")
    add_ci_options(parser)
    parser.set_defaults(handler=_history_verb)


def _history_verb(args: argparse.Namespace) -> int:
    # late: pandas, scipy and matplotlib load only when this verb runs, not for --help or other
    # verbs
    from fvp_harness.report import format as fmt
    from fvp_harness.report.stored.dashboard import site_scenario, write_dashboard
    from fvp_harness.report.stored.history import (
        history_from_runs,
        history_suite,
        load_history,
        render_history,
        render_markdown,
        step_bisect,
    )
    from fvp_harness.store.locate import results_folder

    if args.threshold is not None and args.threshold <= 0:
        raise ConfigurationError("--threshold must be a positive percentage")
    folder = results_folder(args.target, args.results)
    runs = load_history(folder)
    history = history_from_runs(runs, build=args.build, metric=args.metric,
                                threshold=args.threshold)
    out = args.output or folder / HISTORY_DIR
    written = render_history(history, out, charts=not args.no_charts)
    site = None
    if args.html is not None:
        site = write_dashboard([site_scenario(folder, runs=runs, history=history)], args.html)
    if args.quiet <= 0:
        unit = f" {history.unit}" if history.unit else ""
        print(f"{history.scenario}: {len(history.runs)} run(s); {history.metric} of "
              f"{history.build}, newest run:")
        for model in history.models:
            point = history.points[model][-1]
            print(f"  {model:<22} {fmt.number(point.median)}{unit}")
        for step in history.steps:
            if step.kind == "shift":
                continue
            run = history.runs[step.index]
            commit = f" (commit {run.commit[:7]})" if run.commit else ""
            state = ", in effect" if step.in_effect else ""
            print(f"{step.kind.upper()}: {step.model} {fmt.signed_percent(step.change_pct, 1)} at "
                  f"run {run.run_id}{commit}{state}")
            command = step_bisect(history, step)
            if command is not None:
                print(f"  bisect it: {command}")
        if not history.regressions:
            print(f"no regression of {history.threshold:g}% or more")
        for note in history.notes:
            print(f"note: {note}")
    print(f"history: {written['markdown']}")
    if site is not None:
        print(f"dashboard: {site}")
    write_ci_outputs(args, lambda: [history_suite(history)], lambda: render_markdown(history))
    if not any(series[-1].median is not None for series in history.points.values()):
        # a nightly job must not go green on a run that measured nothing: no news of the code
        from fvp_harness.store.state import run_state  # late: with the rest of this verb's imports

        newest = runs[-1].run
        print(f"error: the newest run {newest.run_id} ({run_state(newest)}) measured no "
              f"{history.metric} of build {history.build}: there is nothing to judge "
              f"(fvp-harness runs {folder}; its report says why)", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_FAILED if history.in_effect else EXIT_OK
