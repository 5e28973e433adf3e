"""``fvp-harness sim ...``: make simulator artifacts for the embedded simulator: A/B runner builds
(``runner``), VGF benchmark runner builds (``vgf-runner``), model files (``model``), inputs
(``input``), and ``info``.

Wiring only: the arguments after ``sim`` go unchanged to ``fvp_harness.sim.tools.main``, which owns
their parsing and help text (the simulator is a separate world and keeps its own command line; see
docs/simulator-workload.md).
"""

from __future__ import annotations

import argparse

__all__ = ["ORDER", "register"]

ORDER = 80


def _handler(args: argparse.Namespace) -> int:
    from fvp_harness.sim import tools  # late: numpy is only needed when this verb runs

    rest = list(args.sim_args)
    if args.sim_help or not rest:
        rest = [*rest, "--help"]
    try:
        return tools.main(rest)
    # argparse's --help and usage errors inside the simulator's own parser
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 2)


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "sim",
        parents=[common],
        add_help=False,
        help="make simulator artifacts: runner builds, VGF runner builds, model files, inputs",
        description="fvp-harness sim {runner,vgf-runner,model,input,info} ... ('fvp-harness sim "
                    "--help' for "
        "details)",
    )
    parser.add_argument(
        "-h", "--help", action="store_true", dest="sim_help", help="show the sim help and exit"
    )
    parser.add_argument(
        "sim_args",
        nargs=argparse.REMAINDER,
        metavar="WHAT ...",
        help="runner | model | input | info, then their options",
    )
    parser.set_defaults(handler=_handler)
