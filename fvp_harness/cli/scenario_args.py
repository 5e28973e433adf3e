"""Options every scenario-taking verb shares (``--set``, ``--fvp``), and loading a scenario from them.

Not a verb module (no ``verb_`` prefix): other verbs (run, make, ...) import ``add_scenario_options`` and
``load_from_args`` so every verb accepts the same overrides the same way.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fvp_harness.scenario import load_scenario
from fvp_harness.scenario_load import LoadedScenario

__all__ = ["add_scenario_options", "expand_scenario_paths", "load_from_args"]


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
