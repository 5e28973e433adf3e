"""``vgf``: compare VGF benchmark reports, copy vs zero-copy ("boundary cost removed / remaining /
execution changed?").

    fvp-harness vgf COPY.json ZERO_COPY.json [-o DIR]
    fvp-harness vgf --copy A.json --copy B.json --zero-copy C.json --zero-copy D.json
                                                                        (repetitions)
    fvp-harness vgf --results results/vgf_zero_copy                     (what `run` kept)

Writes ``vgf_report.md``, ``.csv``, ``.json`` and ``.png`` (default folder: ``results/vgf``, or the
results folder itself with ``--results``), prints the headline and the expectations, and exits 1
when an expectation failed (copies not removed, execution changed, an execute failed, swapped modes,
different devices), 2 for unreadable reports.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from fvp_harness.cli.out_paths import folder_arg
from fvp_harness.errors import EXIT_FAILED, EXIT_OK, ConfigurationError
from fvp_harness.store.folder import DEFAULT_RESULTS_BASE, ResultStore

if TYPE_CHECKING:
    from fvp_harness.vgf.report import VgfComparison

__all__ = ["DEFAULT_MIN_EFFECT", "ORDER", "register", "run_vgf"]

ORDER = 70
DEFAULT_MIN_EFFECT = 2.0


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "vgf",
        parents=[common],
        help="compare VGF benchmark JSON reports: copy vs zero-copy I/O",
        description="Compare the VGF backend's benchmark reports (--vgf_perf_json) of a copy run "
                    "and a zero-copy "
        "run (ET_VGF_ZERO_COPY=0/1): per-inference latency, boundary cost removed (copies, memcpy "
        "time), boundary cost remaining (imports, binding refresh, fallbacks and rejections) and "
        "whether VGF execution changed. Exit status 1 when an expectation fails.",
    )
    parser.add_argument("copy_report", nargs="?", metavar="COPY.json",
                        help="report of the copy run (baseline)")
    parser.add_argument("zero_report", nargs="?", metavar="ZERO_COPY.json",
                        help="report of the zero-copy run")
    parser.add_argument("--copy", action="append", default=[], metavar="FILE",
                        help="another copy-run report " "(repeatable: repetitions)")  # fmt: skip
    parser.add_argument("--zero-copy", action="append", default=[], metavar="FILE",
                        dest="zero_copy",
                        help="another zero-copy-run report (repeatable)")  # fmt: skip
    parser.add_argument("--results", type=Path, metavar="DIR",
                        help="a results folder written by 'fvp-harness run' "
                        "(its kept VGF reports are matched to units)")  # fmt: skip
    parser.add_argument("--baseline",
                        help="with --results: the copy build's name (default: the build whose "
                             "reports "
                        "say zero_copy false)")  # fmt: skip
    parser.add_argument("--candidate", help="with --results: the zero-copy build's name")
    parser.add_argument("--model", help="model name when the reports do not carry one")
    parser.add_argument("-o", "--output", type=folder_arg, metavar="DIR",
                        help="folder for the report files (default "
                        "results/vgf, or the --results folder)")  # fmt: skip
    parser.add_argument("--min-effect", type=float, default=None, metavar="PCT",
                        help="change of a time metric, in "
                        "percent, that counts as a change (default: the scenario's "
                        "compare.min_effect with --results, else 2)")  # fmt: skip
    parser.add_argument("--title", help="report heading")
    parser.add_argument("--outputs", default="markdown,csv,json,png",
                        help="comma-separated subset of markdown, "
                        "csv, json, png (default all)")  # fmt: skip
    parser.set_defaults(handler=run_vgf)


def run_vgf(args: argparse.Namespace) -> int:
    # late: pandas, scipy and matplotlib load only when this verb runs, not for --help or other
    # verbs
    from fvp_harness.report.stats.frames import to_frame
    from fvp_harness.run.manifest import Manifest
    from fvp_harness.vgf.reader import load_pair, load_results
    from fvp_harness.vgf.report import compare_vgf, render_vgf_report

    outputs = [o.strip() for o in args.outputs.split(",") if o.strip()]
    copies = [*([args.copy_report] if args.copy_report else []), *args.copy]
    zeros = [*([args.zero_report] if args.zero_report else []), *args.zero_copy]
    if args.results is not None:
        if copies or zeros:
            raise ConfigurationError("give either --results DIR or report files, not both")
        store = ResultStore(args.results, create=False)
        if not args.results.is_dir():
            raise ConfigurationError(f"{args.results}: no such results folder")
        # the scenario's own compare block names the builds and the minimum effect, unless the
        # options do
        manifest = Manifest.read(store)
        compare = manifest.resolved_scenario.compare if manifest is not None else None
        spec = compare.model_dump() if compare is not None else {}
        data = load_results(
            args.results,
            baseline=args.baseline or spec.get("baseline"),
            candidate=args.candidate or spec.get("candidate"),
            records=store.records(),
        )
        if args.min_effect is None and isinstance(spec.get("min_effect"), int | float):
            args.min_effect = float(spec["min_effect"])
        out_dir = args.output or args.results
    else:
        if not copies or not zeros:
            raise ConfigurationError(
                "give a copy report and a zero-copy report (fvp-harness vgf COPY.json "
                "ZERO_COPY.json), or --results DIR"
            )
        data = load_pair(copies, zeros, model=args.model)
        out_dir = args.output or DEFAULT_RESULTS_BASE / "vgf"
    min_effect = DEFAULT_MIN_EFFECT if args.min_effect is None else args.min_effect
    comparison = compare_vgf(
        to_frame(data.records), data.baseline, data.candidate, runs=data.runs, min_effect=min_effect
    )
    try:
        written = render_vgf_report(comparison, out_dir, outputs, args.title)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from exc
    _print_summary(comparison, written, quiet=getattr(args, "quiet", 0) > 0)
    return EXIT_FAILED if comparison.violated else EXIT_OK


def _print_summary(comparison: VgfComparison, written: dict[str, Path], *,
                   quiet: bool = False) -> None:
    """Headline per model, the verdict and the files on stdout (nothing with -q); failed
    expectations on stderr."""
    from fvp_harness.vgf.report import render_vgf_markdown  # late: as in run_vgf

    text = render_vgf_markdown(comparison)
    # the headline bullets and the expectation verdict line are what a terminal user needs; the
    # files hold the rest
    for line in text.splitlines():
        if (not quiet and
            (line.startswith("- **") or line.startswith("**PASS**") or
             line.startswith("**FAIL**"))):
            print(line.replace("**", ""))
    for expectation in comparison.expectations:
        if expectation.status == "fail":
            print(f"  FAIL {expectation.model}: {expectation.name}: {expectation.detail}",
                  file=sys.stderr)
    if not quiet:
        for path in written.values():
            print(f"wrote {path}")
