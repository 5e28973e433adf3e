"""Scenario and profile load times: the pure-Python YAML path without the caches (how loads were)
beside libyaml without them and libyaml with them (how loads are), with the ratios. The caches:
``load_profile``'s profiles and ``compose_bytes``'s trees, both per process.

Run: ``python benchmarks/bench_load.py [--repeat 20] [--scenario scenarios/driver_reuse.yaml]``.
Each figure is the best of ``--repeat`` calls in milliseconds, all measured side by side in one run.
Nothing is asserted: this is a measurement of the harness itself, not a test
(``tests/scenario/test_libyaml_path.py`` checks that the paths agree).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from fvp_harness import located, profiles
from fvp_harness.located import compose_file
from fvp_harness.profiles import builtin_profile_path, load_profile
from fvp_harness.scenario import load_scenario
from fvp_harness.scenario.model import Scenario

REPO = Path(__file__).resolve().parent.parent
DEFAULT_PROFILE = str(Scenario.model_fields["platform"].default)

WAYS: dict[str, tuple[bool, bool]] = {  # name -> (libyaml, caches)
    "pure, no caches": (False, False),
    "pure + caches": (False, True),
    "libyaml, no caches": (True, False),
    "libyaml + caches": (True, True),
}


def clear_caches() -> None:
    profiles._VALIDATED.clear()
    located._COMPOSED.clear()


def best_ms(call: Callable[[], object], repeat: int, *, libyaml: bool, cache: bool) -> float:
    """The fastest of ``repeat`` calls, in milliseconds, on the given path (the caches warm when
    used)."""
    located.USE_LIBYAML = libyaml
    try:
        clear_caches()
        call()  # warm: imports, the regex cache, and the caches when they are used
        best = float("inf")
        for _ in range(repeat):
            if not cache:
                clear_caches()
            start = time.perf_counter()
            call()
            best = min(best, time.perf_counter() - start)
        return best * 1000
    finally:
        located.USE_LIBYAML = located._CSafeLoader is not None
        clear_caches()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20, help="calls per figure (the best counts)")
    parser.add_argument("--scenario", type=Path, default=REPO / "scenarios" / "driver_reuse.yaml")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes (seconds): only proves the script still runs "
                             "(tests/benchmarks)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeat = 1
    if not yaml.__with_libyaml__:
        print("PyYAML is built without libyaml here: only the pure-Python path exists")
    profile_path = builtin_profile_path(DEFAULT_PROFILE)
    assert profile_path is not None
    cases: dict[str, Callable[[], object]] = {
        f"load_scenario {args.scenario.name}": lambda: load_scenario(
            args.scenario, check_files=False
        ),
        f"load_profile {DEFAULT_PROFILE}": lambda: load_profile(DEFAULT_PROFILE),
        f"compose_file {profile_path.name}": lambda: compose_file(profile_path),
        f"compose_file {args.scenario.name}": lambda: compose_file(args.scenario),
    }
    ways = WAYS if yaml.__with_libyaml__ else {name: way
                                               for name, way in WAYS.items() if not way[0]}
    print(f"{'best of ' + str(args.repeat) + ', ms':<36}" + "".join(f"{name:>19}" for name in ways)
          + ("  parser ratio  before/after" if len(ways) == len(WAYS) else ""))
    for label, call in cases.items():
        times = {name: best_ms(call, args.repeat, libyaml=lib, cache=cache)
                 for name, (lib, cache) in ways.items()}
        line = f"{label:<36}" + "".join(f"{value:>19.2f}" for value in times.values())
        if len(times) == len(WAYS):  # pure/libyaml without caches; how loads were / how they are
            line += f"{times['pure, no caches'] / times['libyaml, no caches']:>13.1f}x"
            line += f"{times['pure, no caches'] / times['libyaml + caches']:>13.1f}x"
        print(line)

if __name__ == "__main__":
    main()
