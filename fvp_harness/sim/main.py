"""``fvp-sim`` / ``python -m fvp_harness.sim``: start a simulated FVP from a model command line.

The FVP_Corstone-1000-A320 (Linux; ``corstone1000/platform.py``) unless the program runs under a
bare-metal model's executable name (a symlink or copy of the ``fvp-sim`` script named
``FVP_Corstone_SSE-300_Ethos-U55`` or ``FVP_Corstone_SSE-320``) or is given ``--platform
corstone300|corstone320`` (``baremetal/platform.py``).

Prints exactly what a model prints (port banners, stop text, --stat) on stdout; errors go to stderr
with exit status 1, before anything is started. See docs/simulator.md for the knobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys

from fvp_harness.sim.corstone1000.releases import UnknownRelease, image_of
from fvp_harness.sim.fvp.cmdline import (
    CmdlineError,
    Options,
    parse_args,
    platform_for_program,
    usage,
    version_banner,
)
from fvp_harness.sim.fvp.params import format_listing, parameters_of
from fvp_harness.sim.knobs import KnobError, Knobs, parse_knobs

__all__ = ["main"]


def main(argv: list[str] | None = None, program: str | None = None) -> int:
    """Run the model; returns the exit status for a console script (never returns after SIGTERM or a
    crash). ``program`` is the name it runs under (default: ``sys.argv[0]`` when ``argv`` is not
    given)."""
    args = sys.argv[1:] if argv is None else argv
    name = (sys.argv[0] if argv is None else "") if program is None else program
    parent = os.getppid()  # first thing: the parent may die while the heavy modules load
    try:
        opts = parse_args(args, platform_for_program(name) or "corstone1000")
        opts.parent_pid = parent
        if opts.action == "help":
            sys.stdout.write(usage(opts.platform))
            return 0
        if opts.action == "version":
            sys.stdout.write(version_banner(opts.model_name, _fast_models_version(opts)))
            return 0
        if opts.action == "list-params":
            sys.stdout.write(format_listing(parameters_of(opts.platform)))
            return 0
        knobs = parse_knobs(os.environ, opts.sim)
        if opts.platform == "corstone1000":
            # an image the table does not have is a bad knob, before anything starts
            image_of(knobs)
    except (CmdlineError, KnobError, UnknownRelease) as exc:
        sys.stderr.write(f"{exc}\n" if str(exc).startswith("Error") else f"Error: {exc}\n")
        return 1

    if opts.platform != "corstone1000":
        # late: numpy loads only when a model runs
        from fvp_harness.sim.baremetal.platform import run_baremetal

        status = run_baremetal(opts, knobs)
    else:
        status = _run_corstone1000(opts, knobs)
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    # worker threads (console, ssh exec, a bare-metal application) may still sit in a guest program;
    # they must not keep the process alive
    os._exit(status)


def _fast_models_version(opts: Options) -> str | None:
    """The Fast Models version ``--version`` shows: the release's (``corstone1000/releases.py``), as
    the model meta-arm fetches for that image; None (the default) for the bare-metal platforms or a
    knob that does not parse (``--version`` answers anyway, as a real model ignores the
    environment)."""
    if opts.platform != "corstone1000":
        return None
    try:
        return image_of(parse_knobs(os.environ, opts.sim)).fast_models
    except (KnobError, UnknownRelease):
        return None


def _run_corstone1000(opts: Options, knobs: Knobs) -> int:
    """The Linux platform: returns the exit status (negative: the signal that ends the process)."""
    # late: asyncssh is slow to import, --help should not wait
    from fvp_harness.sim.corstone1000.platform import SimulatedModel

    model = SimulatedModel(opts, knobs)
    try:
        status = asyncio.run(model.run())
    except KeyboardInterrupt:  # SIGINT before the loop's handler was installed
        status = 0
    finally:
        model.fs.cleanup()
    return status


if __name__ == "__main__":
    sys.exit(main())
