"""``profiles`` and ``profiles show NAME``: the platform profiles the harness knows."""

from __future__ import annotations

import argparse

from fvp_harness.errors import EXIT_OK

ORDER = 45

__all__ = ["ORDER", "register"]


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    profiles = subparsers.add_parser(
        "profiles",
        parents=[common],
        help="list the platform profiles, or show one resolved",
        description="List the built-in platform profiles, or print one (by name or path) with "
                    "every default "
        "filled in.",
    )
    actions = profiles.add_subparsers(dest="profiles_action", metavar="ACTION")
    listing = actions.add_parser("list", parents=[common],
                                 help="list the built-in profiles (the default)")
    listing.set_defaults(handler=_run_list)
    show = actions.add_parser("show", parents=[common], help="print one profile resolved, as YAML")
    show.add_argument("name", metavar="NAME",
                      help="a built-in profile name or a path to a profile file")
    show.set_defaults(handler=_run_show)
    profiles.set_defaults(handler=_run_list)


def _run_list(args: argparse.Namespace) -> int:
    # late: pydantic loads only when a verb needs it
    from fvp_harness.profiles import list_profiles, load_profile

    names = list_profiles()
    width = max(len(name) for name in names)
    for name in names:
        profile = load_profile(name)
        print(f"{name.ljust(width)}  {profile.description}")
    return EXIT_OK


def _run_show(args: argparse.Namespace) -> int:
    import yaml

    from fvp_harness.profiles import builtin_profile_path, load_profile  # late: as in _run_list

    profile = load_profile(args.name)
    source = builtin_profile_path(args.name)
    print(f"# profile {profile.name} ({'built-in' if source else args.name}), resolved")
    print(yaml.safe_dump(profile.model_dump(mode="json"), sort_keys=False, width=1000), end="")
    return EXIT_OK
