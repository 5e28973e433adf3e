"""``fvp-harness`` entry point: parse arguments, dispatch to a verb, turn exceptions into exit codes.

Exit codes (documented in the README):
    0   ok
    1   some units failed, or an expectation (identity, minimum effect) was violated
    2   bad input (scenario, profile, command line)
    3   infrastructure failure (model would not start or boot, console lost, ...)
    130 interrupted (Ctrl-C); everything measured so far is kept
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from collections.abc import Sequence
from types import ModuleType

from fvp_harness import __version__
from fvp_harness.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, HarnessError

__all__ = ["build_parser", "main"]

log = logging.getLogger("fvp_harness")


def _common_options(suppress_defaults: bool) -> argparse.ArgumentParser:
    """-v/-q, accepted before or after the verb (users type them anywhere)."""
    parent = argparse.ArgumentParser(add_help=False)
    default: object = argparse.SUPPRESS if suppress_defaults else 0
    parent.add_argument("-v", "--verbose", action="count", default=default, help="more output (repeatable)")
    parent.add_argument("-q", "--quiet", action="count", default=default, help="less output (repeatable)")
    return parent


def _verb_modules() -> list[ModuleType]:
    import fvp_harness.cli as package  # late: this module is part of that package (a top-level import would cycle)

    modules = []
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("verb_"):
            modules.append(importlib.import_module(f"fvp_harness.cli.{info.name}"))
    modules.sort(key=lambda module: (getattr(module, "ORDER", 100), module.__name__))
    return modules


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fvp-harness",
        description="Benchmark ExecuTorch runners on Arm Fixed Virtual Platforms (or the embedded simulator).",
        parents=[_common_options(suppress_defaults=False)],
    )
    parser.add_argument("--version", action="version", version=f"fvp-harness {__version__}")
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB")
    common = _common_options(suppress_defaults=True)
    for module in _verb_modules():
        module.register(subparsers, common)
    return parser


LIBRARY_LOGGERS = ("py.warnings", "distributed", "matplotlib", "PIL", "asyncio", "tornado", "bokeh")
"""Loggers of the libraries underneath (and Python's warnings, routed into logging): shown only with ``-v``, so a
CI log carries the harness's own words and not a library's deprecation notes."""


def _configure_logging(verbosity: int) -> None:
    level = logging.WARNING - 10 * verbosity
    level = max(logging.DEBUG, min(logging.CRITICAL, level))
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    logging.captureWarnings(True)
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if verbosity > 0 else logging.ERROR)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.verbose - args.quiet)
    if not getattr(args, "handler", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        return int(args.handler(args))
    except HarnessError as exc:
        print(f"fvp-harness: {exc.failure_class} error: {exc.details()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("fvp-harness: interrupted; everything measured so far is kept", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
