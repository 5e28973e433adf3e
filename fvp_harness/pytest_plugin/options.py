"""The part of the pytest plugin that pytest always loads: the ``--fvp-*`` options, the ``fvp_*``
ini keys, and the decision whether the plugin was asked for.

Installing fvp-harness must change no one's test run, yet pytest loads every installed ``pytest11``
entry point into every run. So this module (the entry point) only adds names under the ``fvp``
prefix, where no other project has reason to be, registers no fixture, marker or hook that acts, and
imports nothing but pytest. The plugin itself (``fvp_harness.pytest_plugin``: fixtures, the marker,
the report) is registered only when asked:

- ``-p fvp_harness.pytest_plugin``, ``pytest_plugins = ["fvp_harness.pytest_plugin"]`` in a root
  conftest, or ``PYTEST_PLUGINS=fvp_harness.pytest_plugin``: registered by pytest itself;
- any ``--fvp-*`` option on the command line (``--fvp-scenario PATH`` above all), or any ``fvp_*``
  ini key set in the configuration file: registered here, before the conftests load, so the short
  ``--fvp`` option exists too.

``--fvp PATH`` is the plugin's (not this module's): a short name like that could be a project's own
option, and a project that never asked for the plugin must not meet a clash. ``--fvp-binary PATH``
always works.

``-p no:fvp_harness.pytest_plugin.options`` removes even the options. PYTEST_DONT_REWRITE (no
asserts here; the package is imported before pytest could rewrite it).
"""

from __future__ import annotations

import argparse
import copy
from typing import Any

import pytest

__all__ = [
    "GROUP",
    "GROUP_HELP",
    "INI_DEFAULTS",
    "OPTIONS_PLUGIN",
    "PLUGIN",
    "asked",
    "positive_float",
    "pytest_addoption",
    "pytest_load_initial_conftests",
]

PLUGIN = "fvp_harness.pytest_plugin"
"""The plugin's module: registering it is what 'asking for the plugin' means."""
OPTIONS_PLUGIN = "fvp_harness.pytest_plugin.options"
"""This module; also the ``pytest11`` entry point's name, so ``-p`` and ``pytest_plugins`` find the
same plugin."""

GROUP = "fvp-harness"
GROUP_HELP = ("fvp-harness: FVP sessions and A/B checks as tests (active only with --fvp-scenario, "
              "an fvp_* ini key or -p fvp_harness.pytest_plugin; see docs/pytest-plugin.md)")

_OPTION_DESTS = ("fvp_scenario", "fvp_binary", "fvp_set", "fvp_results", "fvp_timeout_scale",
                 "fvp_allow_sim")

INI_DEFAULTS: dict[str, Any] = {
    "fvp_scenario": "",
    "fvp_binary": "",
    "fvp_set": [],
    "fvp_results": "",
    "fvp_timeout_scale": "",
    "fvp_allow_sim": False,
    "fvp_target_scope": "",
}
"""Every ini key of the plugin and its unset value (a key holding anything else counts as asking for
the plugin)."""


def positive_float(text: str) -> float:
    """argparse ``type`` of ``--fvp-timeout-scale``: a number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} must be positive")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup(GROUP, GROUP_HELP)
    group.addoption("--fvp-scenario", dest="fvp_scenario", metavar="PATH", default=None,
                    help="scenario file the FVP fixtures use (activates the plugin)")
    group.addoption("--fvp-binary", dest="fvp_binary", metavar="PATH", default=None,
                    help="FVP binary instead of the scenario's fvp.binary; 'sim' for the embedded "
                         "simulator (--fvp PATH once the plugin is active)")
    group.addoption("--fvp-set", dest="fvp_set", action="append", default=None,
                    metavar="PATH=VALUE",
                    help="override a scenario field, e.g. --fvp-set run.iterations=5 (repeatable; "
                         "VALUE is YAML)")
    group.addoption("--fvp-results", dest="fvp_results", metavar="DIR", default=None,
                    help="folder for instance logs and A/B results (default: "
                         "<rootdir>/results/pytest)")
    group.addoption("--fvp-timeout-scale", dest="fvp_timeout_scale", metavar="X",
                    type=positive_float, default=None,
                    help="multiply every FVP timeout (slow hosts, parallel load)")
    group.addoption("--fvp-allow-sim", dest="fvp_allow_sim", action="store_true", default=None,
                    help="run on the embedded simulator when the scenario says fvp.binary: sim "
                         "(otherwise those tests are skipped unless --fvp sim is given)")
    parser.addini("fvp_scenario",
                  "fvp-harness: scenario file of the FVP fixtures (relative to this file)",
                  default=INI_DEFAULTS["fvp_scenario"])
    parser.addini("fvp_binary",
                  "fvp-harness: FVP binary instead of the scenario's fvp.binary ('sim': the "
                  "simulator)", default=INI_DEFAULTS["fvp_binary"])
    parser.addini("fvp_set", "fvp-harness: scenario overrides, one PATH=VALUE per line",
                  type="linelist", default=INI_DEFAULTS["fvp_set"])
    parser.addini("fvp_results",
                  "fvp-harness: folder for instance logs and A/B results (relative to this file)",
                  default=INI_DEFAULTS["fvp_results"])
    parser.addini("fvp_timeout_scale", "fvp-harness: multiply every FVP timeout",
                  default=INI_DEFAULTS["fvp_timeout_scale"])
    parser.addini("fvp_allow_sim",
                  "fvp-harness: allow the embedded simulator when a scenario names it",
                  type="bool", default=INI_DEFAULTS["fvp_allow_sim"])
    parser.addini("fvp_target_scope",
                  "fvp-harness: scope of fvp_target, fvp_deployed and fvp_ab: session "
                  "(default), package, module, class or function",
                  default=INI_DEFAULTS["fvp_target_scope"])


def asked(config: pytest.Config) -> bool:
    """True when the command line gives an ``--fvp-*`` option or the configuration file sets an
    ``fvp_*`` key."""
    namespace = config.known_args_namespace
    if any(getattr(namespace, dest, None) not in (None, []) for dest in _OPTION_DESTS):
        return True
    return any(config.getini(name) != unset for name, unset in INI_DEFAULTS.items())


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser,
                                  args: list[str]) -> None:
    """Register the plugin when its options ask for it, before the conftests load. Its ``--fvp``
    option appears only now, so the arguments are parsed again: ``--fvp PATH`` must not be read as a
    test path."""
    manager = early_config.pluginmanager
    if manager.hasplugin(PLUGIN) or manager.is_blocked(PLUGIN) or not asked(early_config):
        return
    manager.import_plugin(PLUGIN)
    early_config.known_args_namespace = parser.parse_known_args(
        args, namespace=copy.copy(early_config.option)
    )
