"""What every scenario-taking verb shares: options (``--set``, ``--fvp``, ``--timeout-scale``), loading a scenario
from them, and the two-stage Ctrl-C of the verbs that run units.

Not a verb module (no ``verb_`` prefix): other verbs (run, make, doctor, ...) import these so every verb accepts
the same overrides the same way. Cheap to import (the scenario loader is imported when a scenario is loaded), so
``fvp-harness --help`` does not pay for it.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fvp_harness.scenario.load import LoadedScenario

__all__ = [
    "add_scenario_options",
    "add_timeout_scale_option",
    "expand_scenario_paths",
    "load_from_args",
    "positive_float",
    "stop_on_first_interrupt",
]


def positive_float(text: str) -> float:
    """argparse ``type`` for a number > 0."""
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def add_timeout_scale_option(parser: argparse.ArgumentParser,
                             help_text: str = "multiply every timeout (slow hosts, parallel load)") -> None:
    """Add ``--timeout-scale X`` (a positive factor on every timeout; default 1) to a verb's parser."""
    parser.add_argument("--timeout-scale", type=positive_float, default=1.0, metavar="X", help=help_text)


def add_scenario_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--set PATH=VALUE`` (repeatable) and ``--fvp PATH`` to a verb's parser."""
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="override a scenario field, e.g. --set run.iterations=50 (repeatable; VALUE is YAML)",
    )
    parser.add_argument(
        "--fvp",
        dest="fvp_binary",
        metavar="PATH",
        default=None,
        help="FVP binary to use instead of fvp.binary (`sim` for the embedded simulator)",
    )


def load_from_args(args: argparse.Namespace, path: str | Path, *, check_files: bool = True) -> LoadedScenario:
    """Load one scenario with the overrides given on the command line."""
    from fvp_harness.scenario import load_scenario  # late: pydantic loads only when a verb reads a scenario

    return load_scenario(
        path,
        getattr(args, "overrides", []) or [],
        fvp_binary=getattr(args, "fvp_binary", None),
        check_files=check_files,
    )


def expand_scenario_paths(items: list[str]) -> list[str]:
    """Scenario arguments with folders replaced by the ``*.yaml`` / ``*.yml`` files in them (sorted)."""
    result: list[str] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            result.extend(str(found) for found in sorted([*path.glob("*.yaml"), *path.glob("*.yml")]))
        else:
            result.append(item)
    return result


@contextlib.contextmanager
def stop_on_first_interrupt(stop: threading.Event, notice: Callable[[], None]) -> Iterator[threading.Event]:
    """Two-stage Ctrl-C while the block runs: the first SIGINT sets ``stop`` (the library lets the units in flight
    finish and be recorded, then starts nothing more) and calls ``notice`` (on a short-lived thread, so it may
    take locks the interrupted code holds); the next one raises KeyboardInterrupt as usual (stop at once). The
    previous handler comes back afterwards. Outside the main thread (where signals cannot be caught) it only
    yields ``stop``."""
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        threading.Thread(target=notice, name="interrupt-notice", daemon=True).start()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)
