"""``compare RUN_A RUN_B``: two stored runs side by side, with the in-run A/B's statistics, verdicts
and report.

Wiring only: ``store.locate.find_run`` names the runs (folders, ``SCENARIO@REF``),
``report.stored_compare`` checks that they measured the same thing and analyses them (and their
ETDump traces, when both kept some), ``report.render`` writes the report; with ``--html DIR``
``report.report_page`` writes it as one HTML page. Exit 0 (PASS, or NOT VERIFIED without
``--strict``), 1 (FAIL: an expectation or gate violated, or a unit failed), 2 (the runs cannot be
compared, or bad input: the reason is printed).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from fvp_harness.cli.ci_outputs import add_ci_options, write_ci_outputs
from fvp_harness.cli.out_paths import folder_arg
from fvp_harness.errors import EXIT_FAILED, EXIT_OK
from fvp_harness.store.folder import COMPARE_DIR, DEFAULT_RESULTS_BASE, RUNS_DIR

__all__ = ["ORDER", "register"]

ORDER = 27


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "compare",
        parents=[common],
        help="compare two stored runs (B against A) with the A/B statistics, verdicts, gates and "
             "report",
        description="Compare run B against run A (the baseline) for every build and model both "
                    "measured: the same "
        "statistics, verdicts, gates and report.md/.csv/.json/.png as an A/B inside one run, "
        "builds labelled by commit (after@3f2a1bc). A run is a run folder (results/x/runs/<id>), a "
        "results folder (its newest run), or SCENARIO@REF: the run of results/SCENARIO (or a "
        "scenario file's results folder) stored for REF (a run id, latest, a git commit, a branch, "
        "or anything git rev-parse reads in this checkout: a tag, HEAD~2, main~1 (git's: the "
        "commit before main); REF#-N steps N stored runs back: latest#-1 is the run before the "
        "newest). Refused (exit 2, saying why) when the runs measured different platforms, FVP "
        "builds, model bytes or run settings. Exit 0 PASS (or NOT VERIFIED), 1 FAIL, 2 refused or "
        "bad input.",
    )
    parser.add_argument("run_a", metavar="RUN_A", help="the baseline run")
    parser.add_argument("run_b", metavar="RUN_B", help="the run judged against it")
    parser.add_argument("--metric", action="append", default=[], metavar="M",
                        help="compare on this metric (repeatable: one comparison per metric and "
                             "build; default: "
                        "the scenario's compare.primary)")
    parser.add_argument("--build", action="append", default=[], metavar="BUILD",
                        help="compare only this build (repeatable; default: every build both runs "
                             "measured)")
    parser.add_argument("-o", "--output", type=folder_arg, default=None, metavar="DIR",
                        help=f"report folder (default: <B's results folder>/{COMPARE_DIR}/<run id "
                             "A>-vs-<run id B>)")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS_BASE, metavar="DIR",
                        help="where SCENARIO@REF looks for results/<SCENARIO> (default: results)")
    parser.add_argument("--html", type=folder_arg, default=None, metavar="DIR",
                        help="also write the report as one self-contained page, DIR/index.html "
                             "(its tables, the "
                        "ETDump events and the charts inlined; opens from a file:// URL, no "
                        "server)")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 also when the verdict is NOT VERIFIED (something could not be "
                             "checked)")
    add_ci_options(parser)
    parser.set_defaults(handler=_compare_verb)


def _folder_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", text)


def _compare_verb(args: argparse.Namespace) -> int:
    # late: pandas, scipy and matplotlib load only when this verb runs, not for --help or other
    # verbs
    from fvp_harness.cli.verb_run import format_summary
    from fvp_harness.report.rendering.junit import suite_from_result
    from fvp_harness.report.rendering.markdown import render_markdown
    from fvp_harness.report.rendering.render import render_report
    from fvp_harness.report.rendering.report_page import write_report_page
    from fvp_harness.report.stats.result import run_verdict
    from fvp_harness.report.stored.stored_compare import compare_run_events, compare_runs, load_run
    from fvp_harness.store.locate import describe_run, find_run

    skipped: list[str] = []  # a ref passes over runs that measured nothing ok
    run_a = find_run(args.run_a, results_base=args.results, builds=(), skipped=skipped)
    run_b = find_run(args.run_b, results_base=args.results, builds=(), skipped=skipped)
    for line in skipped:
        print(f"skipped {line}", file=sys.stderr)
    a, b = load_run(run_a), load_run(run_b)
    done = compare_runs(a, b, metrics=args.metric, builds=args.build)
    quiet = args.quiet > 0
    for warning in done.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    folder_b = run_b.path.parent.parent if run_b.path.parent.name == RUNS_DIR else run_b.path
    out = args.output or folder_b / COMPARE_DIR / _folder_name(f"{run_a.run_id}-vs-{run_b.run_id}")
    events = compare_run_events(a, b, done)
    outputs = b.scenario.report.outputs
    if args.html is not None and "markdown" not in outputs:  # the page is report.md rendered
        outputs = [*outputs, "markdown"]
    files = render_report(done.result, out, outputs, done.title, done.context, events=events)
    if not quiet:
        print(f"A: {describe_run(run_a)}  [{run_a.path}]")
        print(f"B: {describe_run(run_b)}  [{run_b.path}]")
        print(format_summary(done.result))
        if events is not None and events.note:
            print(f"note: {events.note}")
    print(f"report: {files.get('markdown') or next(iter(files.values()), out)}")
    if args.html is not None:
        intro = [f"A: {describe_run(run_a)}", f"B: {describe_run(run_b)}"]
        page = write_report_page(out, args.html, done.title,
                                 f"fvp-harness compare {run_a.run_id} {run_b.run_id}", intro)
        print(f"page: {page}")
    properties = (("run_a", run_a.run_id), ("run_b", run_b.run_id))
    write_ci_outputs(args, lambda: [suite_from_result(done.title, done.result, properties)],
                     lambda: render_markdown(done.result, done.title, done.context, events))
    status = run_verdict(done.result).status
    if status == "FAIL" or (args.strict and status != "PASS"):
        return EXIT_FAILED
    return EXIT_OK
