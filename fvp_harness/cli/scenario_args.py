"""What every scenario-taking verb shares: options (``--set``, ``--fvp``, ``--timeout-scale``),
loading a scenario from them, and the two-stage Ctrl-C of the verbs that run units.

Not a verb module (no ``verb_`` prefix): other verbs (run, make, doctor, ...) import these so every
verb accepts the same overrides the same way. Cheap to import (the scenario loader is imported when
a scenario is loaded), so ``fvp-harness --help`` does not pay for it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fvp_harness.scenario.load import LoadedScenario

__all__ = [
    "TERM_GRACE_S",
    "add_max_instances_option",
    "add_scenario_options",
    "add_timeout_scale_option",
    "expand_scenario_paths",
    "install_termination_handlers",
    "load_from_args",
    "max_instances",
    "positive_float",
    "stop_on_first_interrupt",
    "termination_signal",
]


def positive_float(text: str) -> float:
    """argparse ``type`` for a number > 0."""
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def add_timeout_scale_option(parser: argparse.ArgumentParser,
                             help_text: str = "multiply every timeout "
                                              "(slow hosts, parallel load)") -> None:
    """Add ``--timeout-scale X`` (a positive factor on every timeout; default 1) to a verb's
    parser."""
    parser.add_argument("--timeout-scale", type=positive_float, default=1.0, metavar="X",
                        help=help_text)


def add_max_instances_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--max-instances N``: licence seats every ``run``/``make`` of this user on this host
    shares (``run.seats``; default ``FVP_HARNESS_MAX_INSTANCES``, else no such limit)."""
    parser.add_argument(
        "--max-instances", type=_positive_int, default=None, metavar="N",
        help="at most N model instances live at once across every run and make of this user on "
             "this "
        "host (licence seats: lock files in FVP_HARNESS_SEATS_DIR, default a per-user temp folder; "
        "default: $FVP_HARNESS_MAX_INSTANCES, else no such limit)")


def max_instances(args: argparse.Namespace) -> int | None:
    """``--max-instances``, else ``FVP_HARNESS_MAX_INSTANCES`` (ConfigurationError when
    malformed)."""
    from fvp_harness.run.seats import max_instances_from_env  # late: the run layer's module

    return args.max_instances if args.max_instances is not None else max_instances_from_env()


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a positive whole number, got "
                                         f"{text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


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


def load_from_args(args: argparse.Namespace, path: str | Path, *,
                   check_files: bool = True) -> LoadedScenario:
    """Load one scenario with the overrides given on the command line. ``path`` may be a scenario
    file stem as ``report`` and ``history`` take it (``results/<stem>``: the file its runs were run
    from); a name that is neither is refused with the closest scenario file
    (``store.locate.scenario_file``)."""
    # late: pydantic loads only when a verb reads a scenario
    from fvp_harness.scenario import load_scenario
    from fvp_harness.store.locate import scenario_file

    return load_scenario(
        scenario_file(str(path)),
        getattr(args, "overrides", []) or [],
        fvp_binary=getattr(args, "fvp_binary", None),
        check_files=check_files,
    )


def expand_scenario_paths(items: list[str]) -> list[str]:
    """Scenario arguments with folders replaced by the ``*.yaml`` / ``*.yml`` files in them
    (sorted)."""
    result: list[str] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            result.extend(str(found)
                          for found in sorted([*path.glob("*.yaml"), *path.glob("*.yml")]))
        else:
            result.append(item)
    return result


TERM_GRACE_S = 10.0
"""After a SIGTERM (or SIGHUP) the run stops as after a first Ctrl-C; if it is still running this
many seconds later, it stops at once as after a second (README: exit codes;
docs/architecture.md)."""

TERMINATION_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

_received: list[int] = []


def termination_signal() -> int | None:
    """The first SIGTERM/SIGHUP this process received (None: none): ``main`` then exits 143, not
    130."""
    return _received[0] if _received else None


def install_termination_handlers() -> None:
    """SIGTERM and SIGHUP raise KeyboardInterrupt in the main thread, so every ``finally`` runs
    (models stopped, host processes ended, temp folders removed) and ``main`` exits 143. ``main``
    calls this before anything starts, for every verb; ``stop_on_first_interrupt`` makes them
    graceful where units run. Outside the main thread it does nothing (signals cannot be caught
    there)."""
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, frame: object) -> None:
        _received.append(signum)
        raise KeyboardInterrupt

    for signum in TERMINATION_SIGNALS:
        with contextlib.suppress(ValueError, OSError):
            signal.signal(signum, handler)


@contextlib.contextmanager
def stop_on_first_interrupt(stop: threading.Event,
                            notice: Callable[[], None]) -> Iterator[threading.Event]:
    """Two-stage Ctrl-C while the block runs: the first SIGINT sets ``stop`` (the library lets the
    units in flight finish and be recorded, then starts nothing more) and calls ``notice`` (on a
    short-lived thread, so it may take locks the interrupted code holds); the next one raises
    KeyboardInterrupt as usual (stop at once).

    SIGTERM and SIGHUP (a CI cancel, a closed terminal) act as the first Ctrl-C, and as the second
    when the run is still going ``TERM_GRACE_S`` seconds later (or at a second signal). The previous
    handlers come back afterwards. Outside the main thread (where signals cannot be caught) it only
    yields ``stop``."""
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    done = threading.Event()

    def handler(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        threading.Thread(target=notice, name="interrupt-notice", daemon=True).start()

    def second_stage() -> None:
        if not done.wait(TERM_GRACE_S):
            with contextlib.suppress(OSError):
                os.kill(os.getpid(), signal.SIGINT)  # the handler above: stop at once

    def on_termination(signum: int, frame: object) -> None:
        _received.append(signum)
        if stop.is_set():  # a second signal, or a Ctrl-C came first: this is the second stage
            raise KeyboardInterrupt
        handler(signum, frame)
        threading.Thread(target=second_stage, name="termination-grace", daemon=True).start()

    previous = {signal.SIGINT: signal.signal(signal.SIGINT, handler)}
    for signum in TERMINATION_SIGNALS:
        with contextlib.suppress(ValueError, OSError):
            previous[signum] = signal.signal(signum, on_termination)
    try:
        yield stop
    finally:
        done.set()
        for signum, old in previous.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(signum, old)
