"""``run SCENARIO``: the A/B matrix end to end, then the report; ``report DIR``: rebuild a report
from records.

Wiring only: ``run.pipeline.run_scenario`` / ``rebuild_report`` do the work; this module turns flags
into ``RunOptions``, shows progress (``cli.progress.ProgressView`` on stderr), prints a short
summary table and the report path on stdout, and returns the exit code (0 ok, 1 units failed or an
expectation violated, 2 bad input, 3 infrastructure, 130 interrupted). Ctrl-C has two stages: the
first lets the units in flight finish and be recorded (and says so on stderr), the second stops at
once.

The pipeline (pandas, scipy, matplotlib) is imported inside the handlers, so ``fvp-harness --help``
and the other verbs do not pay for it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from fvp_harness.cli.ci_outputs import add_ci_options, write_ci_outputs
from fvp_harness.cli.out_paths import folder_arg
from fvp_harness.cli.progress import LOG_WIDTH, OutputConsole, ProgressView, fit_line
from fvp_harness.cli.scenario_args import (
    add_max_instances_option,
    add_scenario_options,
    add_timeout_scale_option,
    load_from_args,
    max_instances,
    stop_on_first_interrupt,
)
from fvp_harness.errors import (
    EXIT_BAD_INPUT,
    EXIT_INFRASTRUCTURE,
    EXIT_OK,
    ConfigurationError,
    HarnessError,
    Interrupted,
    OutputClosed,
)
from fvp_harness.events import Event
from fvp_harness.report import format as fmt

if TYPE_CHECKING:
    from fvp_harness.report.stats.result import AnalysisResult
    from fvp_harness.run.reporting import ReportOutcome

__all__ = ["ORDER", "format_summary", "register"]

ORDER = 20


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    run = subparsers.add_parser(
        "run",
        parents=[common],
        help="run a scenario's A/B matrix on the FVP (or simulator) and write the report",
        description="Build missing artifacts, boot the model once per instance, run every unit "
                    "(build x model x "
        "repetition) in plan order, store every sample, and write report.md/.csv/.json/.png into "
        "results/<scenario file stem>/ (or -o DIR). The folder's previous run is kept in runs/<run "
        "id>/ (--replace deletes it instead). Exit 0 ok, 1 units failed or an expectation was "
        "violated, 2 bad input, 3 infrastructure failure, 130 interrupted.",
    )
    run.add_argument("scenario", metavar="SCENARIO")
    add_scenario_options(run)
    run.add_argument("-o", "--output", type=folder_arg, default=None, metavar="DIR",
                     help="results folder (default: results/<scenario file stem>)")
    run.add_argument("--resume", action="store_true",
                     help="continue the folder's current run: run only units whose content key is "
                          "not stored ok "
                     "(changed settings re-run their units, and say why)")
    run.add_argument("--replace", action="store_true",
                     help="delete the folder's current run instead of keeping it in runs/<run id>/")
    run.add_argument("--fresh-boot-per-unit", action="store_true",
                     help="boot a new instance for every unit (how one-launch-per-run scripts "
                          "work; for comparison)")
    run.add_argument("--no-early-boot", dest="early_boot", action="store_false",
                     help="boot only after the artifacts are built (by default the model boots "
                          "while they build)")
    run.add_argument("--no-steal", dest="steal", action="store_false",
                     help="with fvp.instances > 1, keep the plan's deal of units to instances (an "
                          "idle instance "
                     "otherwise takes not-started units of a busier one; for measuring what that "
                     "saves)")
    run.add_argument("-k", "--keep-going", action="store_true",
                     help="run every unit even when a build's first units all fail the same "
                     "way (by default the run then stops: exit 1, the units left listed as not "
                     "run)")
    add_timeout_scale_option(run)
    add_max_instances_option(run)
    run.add_argument("--rebuild", action="store_true",
                     help="run every artifact's build command first, even when its file is up to "
                          "date")
    run.add_argument("--only-build", action="append", default=[], metavar="BUILD",
                     help="run only this build's units (repeatable)")
    run.add_argument("--only-model", action="append", default=[], metavar="MODEL",
                     help="run only this model's units (repeatable)")
    run.add_argument("--baseline-from", default=None, metavar="RUN",
                     help="take the baseline build's numbers from a stored run (a results or run "
                          "folder, or "
                     "SCENARIO@REF / @REF, REF#-N for N stored runs back; REF~N is git's: "
                     "docs/ci.md) and measure only the other builds plus a drift check "
                     "(compare.drift_check)")
    add_ci_options(run)
    run.set_defaults(handler=_run_verb)

    report = subparsers.add_parser(
        "report",
        parents=[common],
        help="rebuild report.md/.csv/.json/.png of a results folder from its stored records",
        description="Re-analyse records.jsonl with the scenario stored in manifest.json and "
                    "rewrite the report "
        "files; no model runs. DIR is a scenario's results folder (its newest run) or one of its "
        "runs/<id>; a scenario file means its results folder (results/<file stem>). Exit 0; 1 when "
        "units failed or an expectation is violated; 2 bad input; 3 when units were lost to the "
        "platform or the run ended (aborted, killed) before its planned units ran (a line on "
        "stderr says which).",
    )
    report.add_argument("results", metavar="DIR_OR_SCENARIO", type=Path)
    add_ci_options(report)
    report.set_defaults(handler=_report_verb)

    runs = subparsers.add_parser(
        "runs",
        parents=[common],
        help="list the stored runs of a results folder",
        description="One line per stored run of a scenario's results folder, oldest first, under a "
        "header row: id, start, status, git commit, units, folder. The status is what the run "
        "amounts to: complete, failed (no unit measured ok), interrupted (also a run still marked "
        "running that no live process writes: killed), aborted or running. The newest run is the "
        "folder itself; earlier ones are in runs/<id>/. A scenario file "
        "or its file stem means its results folder (results/<file stem>), as for report.",
    )
    runs.add_argument("results", metavar="DIR_OR_SCENARIO", type=Path)
    runs.set_defaults(handler=_runs_verb)

    prune = subparsers.add_parser(
        "prune",
        parents=[common],
        help="delete earlier stored runs of a results folder (never the newest)",
        description="Delete runs/<id>/ folders of a scenario's results folder, keeping the newest "
                    "N earlier runs "
        "(--keep N), or deleting those started more than DAYS ago (--older-than DAYS); both "
        "together delete what either names; the current run is never deleted here "
        "(run --replace does that). -n says what would go. A scenario file or its file stem means "
        "its results folder (results/<file stem>), as for report.",
    )
    prune.add_argument("results", metavar="DIR_OR_SCENARIO", type=Path)
    prune.add_argument("--keep", type=int, default=None, metavar="N",
                       help="keep the newest N earlier runs")
    prune.add_argument("--older-than", type=float, default=None, metavar="DAYS",
                       help="delete earlier runs started more than DAYS ago")
    prune.add_argument("-n", "--dry-run", action="store_true",
                       help="only say what would be deleted")
    prune.set_defaults(handler=_prune_verb)


def format_summary(result: AnalysisResult, shown_failures: Collection[str] = ()) -> str:
    """A compact table for the terminal (the report has the full one): each pair's comparison, one
    row per gate, the expectations (violated ones by name), the run's verdict (PASS / FAIL / NOT
    VERIFIED) with its reasons, and the units that failed or did not run. A failed unit in
    ``shown_failures`` (the progress lines printed it already) is listed by id only: each failure is
    printed once."""
    # late: analysis and render (pandas, matplotlib) are loaded already when there is a result to
    # show
    from fvp_harness.report.rendering.cells import (
        expectation_label,
        gate_allowed,
        gate_change,
        gate_interval,
    )
    from fvp_harness.report.stats.result import run_verdict

    lines: list[str] = []
    # one block per pair of builds (compare.candidates / compare.pairs)
    for comparison in result.comparisons:
        unit = f" ({comparison.unit})" if comparison.unit else ""
        lines.append(f"{comparison.primary}{unit}: {comparison.candidate} vs {comparison.baseline}")
        choice = comparison.primary_choice
        if choice is not None and len(choice.candidates) > 1:
            lines.append(f"  (primary: {choice.reason})")
        header = (f"  {'model':<22} {comparison.baseline:>10} {comparison.candidate:>10} "
                  f"{'saved':>13} {'95% CI of saved':>21}  {'verdict':<13} {'outputs':<8} "
                  f"{'NPU cycles'}")
        lines.append(header)
        # a loss in the report's words: "20.4% slower", never "saved -20.4%"
        for m in comparison.models:
            saved = fmt.saved_percent(m.saved_pct, missing="-")
            ci = "exact" if m.exact else fmt.saved_interval(m.ci_low, m.ci_high, missing="-")
            checks = {check.name: check.status for check in m.identity}
            outputs = {"pass": "same", "fail": "DIFFER",
                       "unverified": "?"}.get(checks.get("outputs", ""), "-")
            npu = next((c for c in m.others if c.metric in ("npu_cycles", "bm_npu_cycles")), None)
            if npu is None:
                npu_text = "-"
            else:
                same = "same" if npu.identical else "DIFFER" if npu.identical is False else "?"
                cycles = "-" if npu.baseline_median is None else f"{npu.baseline_median:,.0f}"
                npu_text = f"{cycles} ({same})"
            base, cand = (
                fmt.number(m.baseline_median, missing="-"),
                fmt.number(m.candidate_median, missing="-"),
            )
            lines.append(f"  {m.model:<22} {base:>10} {cand:>10} {saved:>13} {ci:>21}  "
                         f"{m.verdict:<13} {outputs:<8} {npu_text}")
        gm = comparison.geomean
        if gm is not None:
            ci = "exact" if gm.exact else fmt.saved_interval(gm.ci_low, gm.ci_high, missing="-")
            lines.append(f"  {'geometric mean':<22} {'':>10} "
                         f"{'ratio ' + format(gm.ratio, '.3f'):>10} "
                         f"{fmt.saved_percent(gm.saved_pct, missing='-'):>13} {ci:>21}  "
                         f"{gm.verdict:<13}")
        if comparison.gates:
            lines.append("gates:")
            for g in comparison.gates:
                base, cand = fmt.number(g.baseline_median,
                                        missing="-"), fmt.number(g.candidate_median, missing="-")
                medians = f"{base} -> {cand}" + (f" {g.unit}" if g.unit else "")
                ci = "-" if g.ci_low is None else f"[{gate_interval(g)}]"
                lines.append(f"  {g.model:<22} {g.metric:<16} {medians:>24} {gate_change(g):>9} "
                             f"{ci:>24}  allowed {gate_allowed(g):<11} {g.verdict.upper()}")
        failed = [e for e in comparison.expectations if e.status == "fail"]
        checked = [e for e in comparison.expectations if e.status != "unverified"]
        unverified = len(comparison.expectations) - len(checked)
        if failed:
            verdict = f"FAIL ({len(failed)} violated)"
        elif not checked:
            verdict = "NOT VERIFIED (nothing could be checked)"
        else:
            verdict = "PASS" + (f" ({len(checked)} verified, {unverified} could not be)"
                                if unverified else "")
        lines.append("expectations: " + verdict)
        if failed:  # by name, so a CI log says which without opening the report
            lines.append("  violated: "
                         + ", ".join(f"{expectation_label(e)} ({e.model})" for e in failed))
    run = run_verdict(result)
    lines.append(f"verdict: {run.status}")
    lines += [f"  - {reason}" for reason in run.reasons]
    units = result.units
    ok = int((units["status"] == "ok").sum()) if len(units) else 0
    counts = f"units: {ok} ok, {len(result.failed_units)} failed"
    if result.planned is not None:
        counts += f", {len(result.not_run)} not run (of {result.planned} planned)"
    if result.excluded_records:
        counts += f"; {result.excluded_records} stored record(s) of other settings left out"
    lines.append(counts)
    shown = set(shown_failures)
    for failed_unit in result.failed_units:
        if failed_unit.unit_id in shown:  # its failure line is in the progress above: the id only
            lines.append(f"  FAILED {failed_unit.unit_id} ({failed_unit.failure_class}, see above)")
        else:
            lines.append(fit_line(f"  FAILED {failed_unit.unit_id} ({failed_unit.failure_class}): ",
                                  failed_unit.failure, LOG_WIDTH, failed_unit.log or None))
    for missing in result.not_run:
        lines.append(f"  NOT RUN {missing.unit_id}: no record with its planned content key"
                     + (f" ({missing.other_keys} of other settings)" if missing.other_keys else ""))
    dropped = sum(item.count for item in result.dropped)
    if dropped:
        metrics = ", ".join(dict.fromkeys(item.metric for item in result.dropped))
        lines.append(f"warning: {dropped} stored value(s) of {metrics} left out (NaN, infinite or "
                     "implausible)")
    return "\n".join(lines)


def _finish(outcome: ReportOutcome, quiet: bool, args: argparse.Namespace | None = None,
            shown_failures: Collection[str] = ()) -> int:
    if not quiet:
        print(format_summary(outcome.analysis, shown_failures))
    report = (outcome.files.get("markdown") or
              next(iter(outcome.files.values()), outcome.results_dir))
    print(f"report: {report}")
    if args is not None:  # --junit, --github-summary: from the analysis of the stored records
        _ci_outputs(args, outcome)
    # the run fetched VGF benchmark reports: their comparison was written too
    if outcome.vgf is not None:
        verdict = "FAIL" if outcome.vgf.violated else "PASS"
        where = outcome.files.get("vgf_markdown") or next(
            (path for name, path in outcome.files.items() if name.startswith("vgf_")),
            outcome.results_dir)
        print(f"vgf report: {where} (expectations {verdict})")
    return outcome.exit_code


def _ci_outputs(args: argparse.Namespace, outcome: ReportOutcome) -> None:
    # late: the report modules are loaded already when there is an outcome
    from fvp_harness.report.rendering.junit import suite_from_result
    from fvp_harness.report.rendering.markdown import render_markdown
    from fvp_harness.store.folder import ResultStore

    stored = ResultStore(outcome.results_dir, create=False).read_manifest() or {}
    scenario = stored.get("scenario")
    named = scenario.get("name") if isinstance(scenario, dict) else None
    name = str(named or outcome.results_dir.name)  # the suite is named after the scenario

    def markdown() -> str:
        written = outcome.files.get("markdown")
        return (written.read_text(encoding="utf-8") if written is not None
                else render_markdown(outcome.analysis))

    write_ci_outputs(args, lambda: [suite_from_result(name, outcome.analysis)], markdown)


def _run_verb(args: argparse.Namespace) -> int:
    import threading

    # late: pandas, scipy and matplotlib load only when this verb runs, not for --help or other
    # verbs
    from fvp_harness.run.pipeline import RunOptions, RunOutcome, run_scenario
    from fvp_harness.store.folder import results_dir_for

    # the same as --set compare.baseline_from=RUN (JSON-quoted: '@main' is no plain YAML)
    if args.baseline_from:
        args.overrides = [*args.overrides,
                          f"compare.baseline_from={json.dumps(args.baseline_from)}"]
    loaded = load_from_args(args, args.scenario)
    if args.baseline_from and loaded.scenario.compare is None:
        raise ConfigurationError(f"--baseline-from: {loaded.path} has no compare section, so there "
                                 "is no baseline build to take from a stored run")
    options = RunOptions(
        output_dir=args.output,
        resume=args.resume,
        fresh_boot_per_unit=args.fresh_boot_per_unit,
        timeout_scale=args.timeout_scale,
        only_builds=tuple(args.only_build),
        only_models=tuple(args.only_model),
        rebuild=args.rebuild,
        replace=args.replace,
        keep_going=args.keep_going,
        max_instances=max_instances(args),
        steal=args.steal,
        early_boot=args.early_boot,
    )
    if args.resume and args.replace:
        raise ConfigurationError("--resume continues the current run and --replace deletes it: "
                                 "give one of them")
    quiet = args.quiet > 0
    requested = threading.Event()
    console = OutputConsole(file=sys.stderr, highlight=False, on_closed=requested.set)
    try:
        with ProgressView(console, plain=True if quiet else None, quiet=quiet) as view, \
                stop_on_first_interrupt(requested, lambda: view(Event("stopping"))) as stop:
            outcome: RunOutcome = run_scenario(loaded, options, listener=view, stop=stop)
    except Interrupted as exc:
        if not console.closed:
            raise
        raise _output_closed(results_dir_for(loaded.path, options.results_base,
                                             options.output_dir)) from exc
    code = _finish(outcome, quiet, args, view.failed_shown)
    if not quiet:
        spared = f", {outcome.units_spared} spared by the stopping rule (run.until)" \
            if loaded.scenario.run.until is not None else ""
        print(f"{outcome.units_run} units run{spared}, {outcome.units_skipped} skipped (stored) in "
              f"{outcome.wall_seconds:.1f} s")
    for reason in outcome.aborted:
        print(f"session aborted: {reason}", file=sys.stderr)
    return code


def _output_closed(folder: Path) -> OutputClosed:
    """The run stopped because its output's reader went away (``| head -2``): the manifest says
    ``interrupted``; the report of what was measured is written (``report DIR``'s work), so the
    folder is never left without one."""
    from fvp_harness.run.reporting import rebuild_report  # late: loaded already by the run

    try:
        written = rebuild_report(folder).files.get("markdown")
        where = f"; the report of what was measured: {written}" if written is not None else ""
    # nothing was recorded yet (stopped during the builds): no report to write
    except HarnessError as exc:
        where = f"; no report ({str(exc).splitlines()[0]})"
    return OutputClosed("output closed (its reader went away); the run stopped after the units in "
                        f"flight{where} (continue with --resume)")


def _report_verb(args: argparse.Namespace) -> int:
    # first: "not run yet" is told in 0.3 s, not after 3 s of imports
    folder = _report_folder(args.results)
    # late: pandas, scipy and matplotlib load only when this verb runs, not for --help or other
    # verbs
    from fvp_harness.run.reporting import rebuild_report

    outcome = rebuild_report(folder)
    code = _finish(outcome, args.quiet > 0, args)
    if code == EXIT_INFRASTRUCTURE:  # even with -q: a CI log must say why the step failed
        print(f"exit 3 (infrastructure): {_infrastructure_why(outcome)}", file=sys.stderr)
    return code


def _infrastructure_why(outcome: ReportOutcome) -> str:
    """Why ``report`` exits 3: units lost to the platform, or a run that ended (aborted, killed)
    before its planned units ran; the run's state as ``runs`` shows it."""
    from fvp_harness.store.folder import RUNS_DIR, StoredRun  # late: loaded already by the report
    from fvp_harness.store.state import run_state

    result = outcome.analysis
    folder = outcome.results_dir
    stored = StoredRun.of(folder, current=folder.parent.name != RUNS_DIR)
    state = run_state(stored)
    lost = [unit for unit in result.failed_units if unit.failure_class == "infrastructure"]
    reasons = []
    if lost:
        first = lost[0].failure.splitlines()[0] if lost[0].failure else "?"
        reasons.append(f"{len(lost)} unit(s) failed on the platform, not the code under test "
                       f"(first: {lost[0].unit_id}: {first})")
    if result.not_run:
        stale = stored.status == "running" and state == "interrupted"
        killed = " (its manifest still says running and no process writes it: killed)" \
            if stale else ""
        recorded = len(result.units)
        measured = f"{recorded} unit(s) recorded" if recorded else "nothing measured"
        reasons.append(f"the run ended {state}{killed} with {len(result.not_run)} planned unit(s) "
                       f"not run, {measured}; continue it with run --resume, or run it again")
    return "; ".join(reasons) or "a unit was lost to the platform"


def _report_folder(given: Path) -> Path:
    """``report``'s, ``runs``' and ``prune``'s argument: a results folder (or a run folder) as
    given, a scenario file's results folder (``results/<stem>``, where ``run`` writes by default) or
    a scenario file stem under ``results/``: users type the scenario they ran, and "does not exist"
    helped no one; a typo is told with the closest results folder."""
    from fvp_harness.store.locate import results_folder  # late: pydantic only for these verbs

    return results_folder(given)


def _runs_verb(args: argparse.Namespace) -> int:
    from fvp_harness.store.folder import ResultStore  # late: pydantic only for this verb
    from fvp_harness.store.state import run_state

    store = ResultStore(_report_folder(args.results), create=False)
    stored = store.stored_runs()
    if not stored:
        print(f"{store.root}: no stored run")
        return EXIT_OK
    print(f"  {'run':<22} {'started':<29} {'status':<11} {'commit':<12} {'units':>5}  folder")
    for run in stored:
        mark = "*" if run.current else " "
        commit = run.commit[:12] if run.commit else "-"
        units = "?" if run.units is None else str(run.units)
        spared = f"  ({run.spared} spared by run.until)" if run.spared else ""
        print(f"{mark} {run.run_id:<22} {run.started or '?':<29} {run_state(run):<11} {commit:<12} "
              f"{units:>5}  {run.path}{spared}")
    damaged = [run.problem for run in stored if run.problem]
    for problem in damaged:
        print(f"error: {problem}", file=sys.stderr)
    return EXIT_BAD_INPUT if damaged else EXIT_OK


def _prune_verb(args: argparse.Namespace) -> int:
    import datetime
    import os
    import shutil

    from fvp_harness.store.folder import ResultStore  # late: pydantic only for this verb

    if args.keep is None and args.older_than is None:
        raise ConfigurationError("prune needs --keep N or --older-than DAYS (nothing is deleted "
                                 "without being asked)")
    if args.keep is not None and args.keep < 0:
        raise ConfigurationError(f"--keep {args.keep}: must be 0 or more")
    if args.older_than is not None and not args.older_than >= 0:  # also refuses nan
        raise ConfigurationError(f"--older-than {args.older_than:g}: must be 0 or more days")
    store = ResultStore(_report_folder(args.results), create=False)
    earlier = [run for run in store.stored_runs() if not run.current]
    # a link is the user's, never a run prune wrote: rmtree must not follow it (or fail on it)
    for run in earlier:
        if run.path.is_symlink():
            print(f"skipped {run.path}: a symbolic link (to {os.readlink(run.path)}), not a stored "
                  "run folder; remove it yourself if it should go")
    earlier = [run for run in earlier if not run.path.is_symlink()]
    doomed: set[Path] = set()
    if args.keep is not None:
        doomed.update(run.path for run in earlier[: max(0, len(earlier) - args.keep)])
    if args.older_than is not None:
        limit = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(
            days=args.older_than)
        for run in earlier:
            try:
                started = datetime.datetime.fromisoformat(
                    (run.started or "").replace("Z", "+00:00")
                )
            except ValueError:
                continue  # a run whose start is unknown is never deleted by age
            if started.tzinfo is not None and started < limit:
                doomed.add(run.path)
    with store.lock():
        for run in earlier:
            if run.path in doomed:
                print(f"{'would delete' if args.dry_run else 'deleted'} {run.run_id} ({run.path})")
                if not args.dry_run:
                    shutil.rmtree(run.path)
    if not doomed:
        print("nothing to delete")
    return EXIT_OK
