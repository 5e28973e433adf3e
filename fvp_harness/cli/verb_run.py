"""``run SCENARIO``: the A/B matrix end to end, then the report; ``report DIR``: rebuild a report from records.

Wiring only: ``run.pipeline.run_scenario`` / ``rebuild_report`` do the work; this module turns flags into
``RunOptions``, shows progress (``cli.progress.ProgressView`` on stderr), prints a short summary table and the report
path on stdout, and returns the exit code (0 ok, 1 units failed or an expectation violated, 2 bad input,
3 infrastructure, 130 interrupted). Ctrl-C has two stages: the first lets the units in flight finish and be
recorded (and says so on stderr), the second stops at once.

The pipeline (pandas, scipy, matplotlib) is imported inside the handlers, so ``fvp-harness --help`` and the other
verbs do not pay for it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from fvp_harness.cli.progress import ProgressView
from fvp_harness.cli.scenario_args import (
    add_scenario_options,
    add_timeout_scale_option,
    load_from_args,
    stop_on_first_interrupt,
)
from fvp_harness.events import Event
from fvp_harness.report import format as fmt

if TYPE_CHECKING:
    from fvp_harness.report.analysis import AnalysisResult
    from fvp_harness.run.pipeline import ReportOutcome

__all__ = ["ORDER", "format_summary", "register"]

ORDER = 20


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    run = subparsers.add_parser(
        "run",
        parents=[common],
        help="run a scenario's A/B matrix on the FVP (or simulator) and write the report",
        description="Build missing artifacts, boot the model once per instance, run every unit (build x model x "
        "repetition) in plan order, store every sample, and write report.md/.csv/.json/.png into "
        "results/<scenario file stem>/ (or -o DIR). Exit 0 ok, 1 units failed or an expectation was violated, "
        "2 bad input, 3 infrastructure failure, 130 interrupted.",
    )
    run.add_argument("scenario", metavar="SCENARIO")
    add_scenario_options(run)
    run.add_argument("-o", "--output", type=Path, default=None, metavar="DIR",
                     help="results folder (default: results/<scenario file stem>)")
    run.add_argument("--resume", action="store_true",
                     help="keep stored results and run only units whose content key is not stored ok")
    run.add_argument("--fresh-boot-per-unit", action="store_true",
                     help="boot a new instance for every unit (how one-launch-per-run scripts work; for comparison)")
    add_timeout_scale_option(run)
    run.add_argument("--rebuild", action="store_true",
                     help="run every artifact's build command first, even when its file is up to date")
    run.add_argument("--only-build", action="append", default=[], metavar="BUILD",
                     help="run only this build's units (repeatable)")
    run.add_argument("--only-model", action="append", default=[], metavar="MODEL",
                     help="run only this model's units (repeatable)")
    run.set_defaults(handler=_run_verb)

    report = subparsers.add_parser(
        "report",
        parents=[common],
        help="rebuild report.md/.csv/.json/.png of a results folder from its stored records",
        description="Re-analyse records.jsonl with the scenario stored in manifest.json and rewrite the report "
        "files; no model runs. Exit 0, or 1 when units failed or an expectation is violated.",
    )
    report.add_argument("results", metavar="DIR", type=Path)
    report.set_defaults(handler=_report_verb)


def format_summary(result: AnalysisResult) -> str:
    """A compact table for the terminal (the report has the full one)."""
    comparison = result.comparison
    lines: list[str] = []
    if comparison is not None:
        unit = f" ({comparison.unit})" if comparison.unit else ""
        lines.append(f"{comparison.primary}{unit}: {comparison.candidate} vs {comparison.baseline}")
        choice = comparison.primary_choice
        if choice is not None and len(choice.candidates) > 1:
            lines.append(f"  (primary: {choice.reason})")
        header = (f"  {'model':<22} {comparison.baseline:>10} {comparison.candidate:>10} {'saved':>8} "
                  f"{'95% CI':>17}  {'verdict':<13} {'outputs':<8} {'NPU cycles'}")
        lines.append(header)
        for m in comparison.models:
            saved = fmt.percent(m.saved_pct, missing="-")
            ci = "-" if m.ci_low is None or m.ci_high is None else f"[{m.ci_low:.1f}, {m.ci_high:.1f}]"
            checks = {check.name: check.status for check in m.identity}
            outputs = {"pass": "same", "fail": "DIFFER", "unverified": "?"}.get(checks.get("outputs", ""), "-")
            npu = next((c for c in m.others if c.metric in ("npu_cycles", "bm_npu_cycles")), None)
            if npu is None:
                npu_text = "-"
            else:
                same = "same" if npu.identical else "DIFFER" if npu.identical is False else "?"
                cycles = "-" if npu.baseline_median is None else f"{npu.baseline_median:,.0f}"
                npu_text = f"{cycles} ({same})"
            base, cand = fmt.number(m.baseline_median, missing="-"), fmt.number(m.candidate_median, missing="-")
            lines.append(f"  {m.model:<22} {base:>10} {cand:>10} {saved:>8} {ci:>17}  {m.verdict:<13} {outputs:<8} "
                         f"{npu_text}")
        gm = comparison.geomean
        if gm is not None:
            ci = "-" if gm.ci_low is None or gm.ci_high is None else f"[{gm.ci_low:.1f}, {gm.ci_high:.1f}]"
            lines.append(f"  {'geometric mean':<22} {'':>10} {'ratio ' + format(gm.ratio, '.3f'):>10} "
                         f"{gm.saved_pct:>7.1f}% {ci:>17}  {gm.verdict:<13}")
        failed = [e for e in comparison.expectations if e.status == "fail"]
        checked = [e for e in comparison.expectations if e.status != "unverified"]
        if failed:
            verdict = f"FAIL ({len(failed)} violated)"
        elif not checked:
            verdict = "NOT VERIFIED (nothing could be checked)"
        else:
            verdict = "PASS"
        lines.append("expectations: " + verdict)
    units = result.units
    ok = int((units["status"] == "ok").sum()) if len(units) else 0
    lines.append(f"units: {ok} ok, {len(result.failed_units)} failed")
    for failed_unit in result.failed_units:
        lines.append(f"  FAILED {failed_unit.unit_id} ({failed_unit.failure_class}): {failed_unit.failure[:160]} "
                     f"[{failed_unit.log}]")
    return "\n".join(lines)


def _finish(outcome: ReportOutcome, quiet: bool) -> int:
    if not quiet:
        print(format_summary(outcome.analysis))
    report = outcome.files.get("markdown") or next(iter(outcome.files.values()), outcome.results_dir)
    print(f"report: {report}")
    if outcome.vgf is not None:  # the run fetched VGF benchmark reports: their comparison was written too
        verdict = "FAIL" if outcome.vgf.violated else "PASS"
        where = outcome.files.get("vgf_markdown") or next(
            (path for name, path in outcome.files.items() if name.startswith("vgf_")), outcome.results_dir)
        print(f"vgf report: {where} (expectations {verdict})")
    return outcome.exit_code


def _run_verb(args: argparse.Namespace) -> int:
    import threading

    from rich.console import Console

    # late: pandas, scipy and matplotlib load only when this verb runs, not for --help or other verbs
    from fvp_harness.run.pipeline import RunOptions, RunOutcome, run_scenario

    loaded = load_from_args(args, args.scenario)
    options = RunOptions(
        output_dir=args.output,
        resume=args.resume,
        fresh_boot_per_unit=args.fresh_boot_per_unit,
        timeout_scale=args.timeout_scale,
        only_builds=tuple(args.only_build),
        only_models=tuple(args.only_model),
        rebuild=args.rebuild,
    )
    quiet = args.quiet > 0
    console = Console(file=sys.stderr, highlight=False)
    with ProgressView(console, plain=True if quiet else None, quiet=quiet) as view, \
            stop_on_first_interrupt(threading.Event(), lambda: view(Event("stopping"))) as stop:
        outcome: RunOutcome = run_scenario(loaded, options, listener=view, stop=stop)
    code = _finish(outcome, quiet)
    if not quiet:
        print(f"{outcome.units_run} units run, {outcome.units_skipped} skipped (stored) in "
              f"{outcome.wall_seconds:.1f} s")
    for reason in outcome.aborted:
        print(f"session aborted: {reason}", file=sys.stderr)
    return code


def _report_verb(args: argparse.Namespace) -> int:
    # late: pandas, scipy and matplotlib load only when this verb runs, not for --help or other verbs
    from fvp_harness.run.pipeline import rebuild_report

    return _finish(rebuild_report(args.results), args.quiet > 0)
