"""``fvp-harness`` entry point: parse arguments, dispatch to a verb, turn exceptions into exit
codes.

Exit codes (documented in the README):
    0   ok
    1   some units failed, or an expectation (identity, minimum effect) was violated
    2   bad input (scenario, profile, command line)
    3   infrastructure failure (model would not start or boot, console lost, ...)
    130 interrupted (Ctrl-C); everything measured so far is kept
    141 the output's reader went away (``| head``): stopped as after a first Ctrl-C
    143 stopped by SIGTERM or SIGHUP (as a Ctrl-C, then at once after scenario_args.TERM_GRACE_S)
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import signal
import sys
from collections.abc import Sequence
from types import ModuleType

from fvp_harness.cli.closed_pipe import silence_stream
from fvp_harness.errors import (
    EXIT_BAD_INPUT,
    EXIT_INFRASTRUCTURE,
    EXIT_INTERRUPTED,
    EXIT_OUTPUT_CLOSED,
    EXIT_TERMINATED,
    HarnessError,
    Interrupted,
    OutputClosed,
    is_storage_failure,
    storage_error,
)
from fvp_harness.version import __version__

__all__ = ["build_parser", "main"]

log = logging.getLogger("fvp_harness")


def _common_options(suppress_defaults: bool) -> argparse.ArgumentParser:
    """-v/-q, accepted before or after the verb (users type them anywhere)."""
    parent = argparse.ArgumentParser(add_help=False)
    default: object = argparse.SUPPRESS if suppress_defaults else 0
    parent.add_argument("-v", "--verbose", action="count", default=default,
                        help="more output (repeatable)")
    parent.add_argument("-q", "--quiet", action="count", default=default,
                        help="less output (repeatable)")
    return parent


def _verb_modules() -> list[ModuleType]:
    # late: this module is part of that package (a top-level import would cycle)
    import fvp_harness.cli as package

    modules = []
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("verb_"):
            modules.append(importlib.import_module(f"fvp_harness.cli.{info.name}"))
    modules.sort(key=lambda module: (getattr(module, "ORDER", 100), module.__name__))
    return modules


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fvp-harness",
        description="Benchmark ExecuTorch runners on Arm Fixed Virtual Platforms (or the embedded "
                    "simulator).",
        parents=[_common_options(suppress_defaults=False)],
    )
    parser.add_argument("--version", action="version", version=f"fvp-harness {__version__}")
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB")
    common = _common_options(suppress_defaults=True)
    for module in _verb_modules():
        module.register(subparsers, common)
    return parser


LIBRARY_LOGGERS = ("py.warnings", "distributed", "matplotlib", "PIL", "asyncio", "tornado", "bokeh")
"""Loggers of the libraries underneath (and Python's warnings, routed into logging): shown only with
``-v``, so a CI log carries the harness's own words and not a library's deprecation notes."""


def _configure_logging(verbosity: int) -> None:
    level = logging.WARNING - 10 * verbosity
    level = max(logging.DEBUG, min(logging.CRITICAL, level))
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    logging.captureWarnings(True)
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if verbosity > 0 else logging.ERROR)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, dispatch, map failures to exit codes. SIGTERM/SIGHUP handlers are set first, before
    any verb starts a process or a thread (``scenario_args.install_termination_handlers``); Ctrl-C
    or SIGTERM at any point, start-up included, ends in one line and exit 130 (143 for a signal),
    never a traceback."""
    # late: every verb imports scenario_args; here only for the handlers, before the verbs are
    # imported
    from fvp_harness.cli.scenario_args import install_termination_handlers, termination_signal

    install_termination_handlers()
    try:
        return _dispatch(argv)
    # the reader of the output went away: the run stopped as after a first Ctrl-C
    except OutputClosed as exc:
        _say(f"fvp-harness: {exc}")
        return exc.exit_code
    except (KeyboardInterrupt, Interrupted) as exc:
        log.debug("stopped here", exc_info=True)
        signum = termination_signal()
        if signum is not None:
            name = signal.Signals(signum).name
            print(f"fvp-harness: stopped by {name}; everything measured so far is kept",
                  file=sys.stderr)
            return EXIT_TERMINATED
        if isinstance(exc, Interrupted):
            print(f"fvp-harness: {exc.failure_class} error: {exc.details()}", file=sys.stderr)
        else:
            print("fvp-harness: interrupted; everything measured so far is kept", file=sys.stderr)
        return EXIT_INTERRUPTED
    except HarnessError as exc:
        print(f"fvp-harness: {exc.failure_class} error: {exc.details()}", file=sys.stderr)
        return exc.exit_code
    # stdout's reader went away (``| head``) after the work was done: as a shell reports it
    except BrokenPipeError:
        for stream in (sys.stdout, sys.stderr):
            silence_stream(stream)
        return EXIT_OUTPUT_CLOSED
    except OSError as exc:
        if not is_storage_failure(exc):
            raise
        # a file of this host refused the harness (disk full, read-only, ...) where no layer named
        # it
        print(f"fvp-harness: infrastructure error: {storage_error(None, exc)}", file=sys.stderr)
        return EXIT_INFRASTRUCTURE


def _say(text: str) -> None:
    """A last line on stderr, which may be the closed pipe itself."""
    try:
        print(text, file=sys.stderr)
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        silence_stream(sys.stderr)


def _dispatch(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.verbose - args.quiet)
    if not getattr(args, "handler", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    return int(args.handler(args))


if __name__ == "__main__":
    raise SystemExit(main())
