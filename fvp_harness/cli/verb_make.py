"""``make [SCENARIO|DIR ...]``: bring every scenario's results and report up to date, make-style.

Wiring only: ``batch.engine.make`` does the work (``docs/batch.md``). Imports of the engine happen
inside the handler so ``fvp-harness --help`` and other verbs do not pay for them. Ctrl-C has two
stages: the first lets the units in flight finish and be recorded (and says so on stderr), the
second stops at once.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fvp_harness.cli.ci_outputs import add_ci_options, write_ci_outputs
from fvp_harness.cli.out_paths import folder_arg
from fvp_harness.cli.progress import OutputConsole, ProgressView, fit_line
from fvp_harness.cli.scenario_args import (
    add_max_instances_option,
    add_timeout_scale_option,
    max_instances,
    stop_on_first_interrupt,
)
from fvp_harness.errors import ConfigurationError, HarnessError, Interrupted, OutputClosed
from fvp_harness.events import Event
from fvp_harness.store.folder import DEFAULT_RESULTS_BASE, MANIFEST_FILE

if TYPE_CHECKING:
    from fvp_harness.batch.engine import Executor, Node

__all__ = ["ORDER", "register"]

ORDER = 25


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "make",
        parents=[common],
        help="bring many scenarios' results and reports up to date, re-running only what changed",
        description="Build stale artifacts, run every unit without a stored ok record under its "
                    "content key, and "
        "re-render every report whose inputs changed, for each scenario (folders: their *.yaml "
        "files; default scenarios/). Scenarios with the same platform and FVP settings share "
        "booted instances. Exit 0 all up to date and clean, 1 units failed or an expectation is "
        "violated, 2 bad input, 3 infrastructure, 130 interrupted (finished units are kept; run "
        "make again to continue).",
    )
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO|DIR", default=[],
                        help="scenario files or folders (default: scenarios/)")
    parser.add_argument("-j", "--jobs", type=_positive_int, default=None, metavar="N",
                        help="at most N FVP instances live at once, pre-boots included, across "
                             "every lane and "
                        "pool (a hard cap; default: CPU count locally, the cluster's threads on "
                        "Dask)")
    parser.add_argument("-k", "--keep-going", action="store_true",
                        help="keep going after a failure (other scenarios and units still run)")
    parser.add_argument("-n", "--dry-run", action="store_true",
                        help="print what would be built, run and rendered, and why; change nothing")
    parser.add_argument("-B", "--always-make", action="store_true",
                        help="rebuild every artifact that has a build command, re-run every unit "
                             "and re-render "
                        "every report")
    parser.add_argument("--only", action="append", default=[], metavar="PATTERN",
                        help="glob on SCENARIO/UNIT (e.g. 'smoke/*', '*/r0-*-ds_cnn') or SCENARIO "
                             "(repeatable)")
    parser.add_argument("--results", type=folder_arg, default=DEFAULT_RESULTS_BASE, metavar="DIR",
                        help="base folder; each scenario writes DIR/<scenario file stem>/ "
                             "(default: results)")
    parser.add_argument("--executor", choices=["local", "dask", "dask-local"], default="local",
                        help="local threads (default), a Dask cluster (--scheduler), or a Dask "
                             "LocalCluster")
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT", default=None,
                        help="address of the Dask scheduler (with --executor dask)")
    parser.add_argument("--artifacts", choices=["ship", "shared"], default=None,
                        help="Dask: send artifact bytes with the work (ship, default) or read the "
                             "same paths on "
                        "the workers (shared filesystem)")
    add_timeout_scale_option(parser)
    add_max_instances_option(parser)
    add_ci_options(parser)
    parser.add_argument("--html", type=folder_arg, default=None, metavar="DIR",
                        help="afterwards, write the history of every scenario with stored runs as "
                             "one static site "
                        "into DIR (as history --html; not with -n)")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="PATH=VALUE",
                        help="override a field in every scenario, e.g. --set run.iterations=5 "
                             "(repeatable)")
    parser.add_argument("--fvp", dest="fvp_binary", metavar="PATH", default=None,
                        help="FVP binary for every scenario instead of fvp.binary (`sim`: the "
                             "simulator)")
    parser.set_defaults(handler=_make_verb)


def _executor(args: argparse.Namespace, jobs: int | None) -> Executor | None:
    """The executor asked for; None for local threads, which ``make`` starts only when there is work
    (the lanes load the whole run side: a make with nothing to do skips it)."""
    if args.executor == "local":
        if args.scheduler:
            raise ConfigurationError("--scheduler needs --executor dask")
        return None
    # late: only this executor needs dask.distributed
    from fvp_harness.batch.dask import DaskExecutor

    if args.executor == "dask" and not args.scheduler:
        raise ConfigurationError("--executor dask needs --scheduler tcp://HOST:PORT (or use "
                                 "--executor dask-local)")
    # dask.distributed logs every connection at INFO: only with -v
    return DaskExecutor(scheduler=args.scheduler if args.executor == "dask" else None, workers=jobs,
                        ship_artifacts=args.artifacts != "shared",
                        log_level=logging.INFO if args.verbose > args.quiet else logging.ERROR)


def _make_verb(args: argparse.Namespace) -> int:
    import threading

    # late: the batch engine pulls in the whole run pipeline (pandas, matplotlib); --help and other
    # verbs skip it
    from fvp_harness.batch.engine import MakeOptions, make
    from fvp_harness.store.locate import scenario_file

    # a scenario file stem as report and history take it (results/<stem>), or a did-you-mean
    args.scenarios = [scenario_file(item, args.results) for item in args.scenarios]
    options = MakeOptions(
        jobs=args.jobs, keep_going=args.keep_going, max_instances=max_instances(args),
        dry_run=args.dry_run, always=args.always_make,
        only=tuple(args.only), results_base=args.results, overrides=tuple(args.overrides),
        fvp_binary=args.fvp_binary, timeout_scale=args.timeout_scale,
    )
    quiet = args.quiet > 0
    if args.dry_run:
        result = make(args.scenarios, options)
        errors = {node.stem: node.error for node in result.nodes if node.error is not None}
        for action in result.actions:
            print(action)
            error = errors.get(action.scenario) if action.kind == "error" else None
            if error is not None:  # "2 problems in scenario:" is no use without the problems
                for line in (getattr(error, "problems", None) or error.details().splitlines()[1:]):
                    print(f"  {line}")
        return result.exit_code
    executor = _executor(args, args.jobs)
    requested = threading.Event()
    console = OutputConsole(file=sys.stderr, highlight=False, on_closed=requested.set)
    try:
        with ProgressView(console, plain=True if quiet else None, quiet=quiet) as view, \
                stop_on_first_interrupt(requested, lambda: view(Event("stopping"))) as stop:
            result = make(args.scenarios, options, executor=executor, listener=view, stop=stop)
    except Interrupted as exc:
        if not console.closed:
            raise
        raise OutputClosed("output closed (its reader went away); make stopped after the units in "
                           "flight, every finished unit is stored: run make again to "
                           "continue") from exc
    # one suite (and one summary) per scenario with a report
    if args.junit is not None or args.github_summary:
        _ci_outputs(args, result.nodes)
    if args.html is not None:
        _dashboard(args.html, result.nodes, quiet)
    if result.nothing_to_do:
        if not quiet:
            print("make: nothing to do (every unit and report is up to date)")
        return result.exit_code
    for node in result.nodes:
        if node.error is not None:
            _print_error(node.stem, node.error)
        for failure_class, text in node.job_errors:
            print(fit_line(f"{node.stem}: {failure_class} failure: ", text, view.width),
                  file=sys.stderr)
        _print_not_run(node.stem, node.not_run)
        if node.report_files and not quiet:
            report = node.report_files.get("markdown") or next(iter(node.report_files.values()))
            state = "ok" if node.exit_code == 0 else f"exit {node.exit_code}"
            not_run = f", {len(node.not_run)} NOT RUN" if node.not_run else ""
            print(f"{node.stem}: {node.records} units run ({node.failed} failed{not_run}), report "
                  f"{report} [{state}]")
        if node.report_files and node.exit_code != 0:  # a failing scenario says why, in one line
            print(_why(node.stem, node.report_files.get("json"), view.width), file=sys.stderr)
        elif node.not_run and not node.report_files:
            print(f"{node.stem}: {node.records} units run ({node.failed} failed), "
                  f"{len(node.not_run)} not run; no report written (run make again)",
                  file=sys.stderr)
    if not quiet:
        not_run = f", {result.units_not_run} NOT RUN" if result.units_not_run else ""
        print(f"make: {result.units_run} units run ({result.units_failed} failed{not_run}) on "
              f"{result.lanes} lane(s), {result.boots} boot(s), {len(result.reports)} report(s) in "
              f"{result.seconds:.1f} s")
    return result.exit_code


def _ci_outputs(args: argparse.Namespace, nodes: Sequence[Node]) -> None:
    """``--junit``/``--github-summary`` for every scenario whose folder holds a run: its analysis
    rebuilt from the stored records (``report DIR``'s work, byte-identical files), so an up-to-date
    scenario is reported too."""
    # late: the pipeline is loaded already by make; the junit module only when asked
    from fvp_harness.report.rendering.junit import suite_from_result
    from fvp_harness.run.reporting import ReportOutcome, rebuild_report

    outcomes: list[tuple[str, ReportOutcome]] = []
    for node in nodes:
        if node.error is None and (node.results_dir / MANIFEST_FILE).is_file():
            try:
                outcomes.append((node.stem, rebuild_report(node.results_dir)))
            except HarnessError as exc:
                print(f"{node.stem}: no CI output: {exc}", file=sys.stderr)

    def markdown() -> str:
        parts = [outcome.files["markdown"].read_text(encoding="utf-8") for _, outcome in outcomes
                 if "markdown" in outcome.files]
        return "\n".join(parts)

    write_ci_outputs(args,
                     lambda: [suite_from_result(stem, outcome.analysis)
                              for stem, outcome in outcomes],
                     markdown)


def _dashboard(out: Path, nodes: Sequence[Node], quiet: bool) -> None:
    """``--html DIR``: one site of every scenario whose folder holds a stored run, up to date or
    not. A scenario whose history cannot be read is left out, saying why; it never changes make's
    exit code."""
    # late: the dashboard and the history's analysis only when asked
    from fvp_harness.report.stored.dashboard import site_scenario, write_dashboard

    sites = []
    for node in nodes:
        if node.error is not None or not (node.results_dir / MANIFEST_FILE).is_file():
            continue
        try:
            sites.append(site_scenario(node.results_dir))
        except HarnessError as exc:
            print(f"{node.stem}: left out of the dashboard: {str(exc).splitlines()[0]}",
                  file=sys.stderr)
    if not sites:
        print(f"dashboard: no scenario has a stored run; nothing written to {out}", file=sys.stderr)
        return
    index = write_dashboard(sites, out)
    if not quiet:
        print(f"dashboard: {index} ({len(sites)} scenario(s))")


def _print_error(stem: str, error: HarnessError) -> None:
    """A scenario that could not run: why in one line (a scenario file's first problem), then the
    rest indented."""
    lines = error.details().splitlines() or ["(no message)"]
    problems = getattr(error, "problems", None)
    head = problems[0] + (f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1
                          else "") \
        if problems else lines[0]
    print(f"{stem}: {error.failure_class} error: {head}", file=sys.stderr)
    for line in (problems[1:] if problems else lines[1:]):
        print(f"  {line}", file=sys.stderr)


def _why(stem: str, report_json: Path | None, width: int) -> str:
    """``<stem>: FAIL: <first reason> (and N more)`` from the report's verdict (``report.json``);
    the violated expectations by name when there are several."""
    verdict: dict[str, object] = {}
    if report_json is not None:
        try:
            data = json.loads(Path(report_json).read_text(encoding="utf-8"))
            verdict = data.get("verdict") or {} if isinstance(data, dict) else {}
        except (OSError, ValueError):
            verdict = {}
    status = str(verdict.get("status") or "FAIL")
    raw = verdict.get("reasons")
    reasons = [str(reason) for reason in raw] if isinstance(raw, list) else []
    if not reasons:
        return f"{stem}: {status}: see the report"
    more = f" (and {len(reasons) - 1} more: see the report)" if len(reasons) > 1 else ""
    return fit_line(f"{stem}: {status}: ", reasons[0], width - len(more)) + more


NOT_RUN_SHOWN = 12
"""Unit ids listed per cause; the rest are counted."""


def _print_not_run(stem: str, not_run: dict[str, tuple[str, str]]) -> None:
    """The stale units ``make`` left without a record, grouped by why (stderr, also with -q)."""
    by_why: dict[str, list[str]] = {}
    for unit, (_cause, why) in not_run.items():
        by_why.setdefault(why, []).append(unit)
    for why, units in by_why.items():
        shown = ", ".join(units[:NOT_RUN_SHOWN]) + (
            f" and {len(units) - NOT_RUN_SHOWN} more" if len(units) > NOT_RUN_SHOWN else ""
        )
        print(f"{stem}: {len(units)} unit(s) not run ({why}): {shown}", file=sys.stderr)
