"""``fvp-sim`` / ``python -m fvp_harness.sim``: start a simulated FVP_Corstone-1000-A320 from a model command
line.

Prints exactly what a model prints (port banners, stop text, --stat) on stdout; errors go to stderr with exit
status 1, before anything is started. See docs/simulator.md for the knobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys

from fvp_harness.sim.cmdline import USAGE, CmdlineError, parse_args, version_banner
from fvp_harness.sim.knobs import KnobError, parse_knobs
from fvp_harness.sim.params import format_listing

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the model; returns the exit status for a console script (never returns after SIGTERM or a
    crash)."""
    args = sys.argv[1:] if argv is None else argv
    parent = os.getppid()  # first thing: the parent may die while the heavy modules load
    try:
        opts = parse_args(args)
        opts.parent_pid = parent
        if opts.action == "help":
            sys.stdout.write(USAGE)
            return 0
        if opts.action == "version":
            sys.stdout.write(version_banner())
            return 0
        if opts.action == "list-params":
            sys.stdout.write(format_listing())
            return 0
        knobs = parse_knobs(os.environ, opts.sim)
    except (CmdlineError, KnobError) as exc:
        sys.stderr.write(f"{exc}\n" if str(exc).startswith("Error") else f"Error: {exc}\n")
        return 1

    from fvp_harness.sim.model import SimulatedModel  # late: asyncssh is slow to import, --help should not wait

    model = SimulatedModel(opts, knobs)
    try:
        status = asyncio.run(model.run())
    except KeyboardInterrupt:  # SIGINT before the loop's handler was installed
        status = 0
    finally:
        model.fs.cleanup()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    # worker threads (console, ssh exec) may still sit in a guest program; they must not keep the process
    # alive
    os._exit(status)


if __name__ == "__main__":
    sys.exit(main())
