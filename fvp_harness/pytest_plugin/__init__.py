"""The fvp-harness pytest plugin: FVP sessions and A/B checks as ordinary tests.

Fixtures (docs/pytest-plugin.md has a complete example)::

    # one booted, logged-in instance shared by the session
    def test_guest(fvp_target):
        assert fvp_target.run("uname -a").ok

    # the scenario's builds and models, deployed once
    def test_runner(fvp_target, fvp_deployed):
        assert fvp_target.run(f"{fvp_deployed.runner('after')} --help").ok

    # run the scenario (or a subset), assert on the analysis
    def test_saving(fvp_ab):
        result = fvp_ab(models=["resnet8"])
        assert result.saved("resnet8") > 50 and result.identical("outputs")

Registering this module is what asking for the plugin means: ``-p fvp_harness.pytest_plugin``, a
root conftest's ``pytest_plugins``, or (through ``options``, the entry point pytest always loads)
any ``--fvp-*`` option or ``fvp_*`` ini key. Nothing of the harness is imported before
``pytest_configure`` of a run that asked, so merely installing fvp-harness changes no one's test
run. The parts: ``options`` (always loaded), ``settings`` (what was asked), ``target`` (the shared
instance), ``deployed``, ``ab`` (A/B runs and their result), ``plugin`` (state and hooks),
``fixtures``.

PYTEST_DONT_REWRITE: the package is imported (as the entry point's parent) before pytest could
rewrite it.
"""

from __future__ import annotations

import pytest

from fvp_harness.pytest_plugin.options import GROUP, GROUP_HELP

__all__ = ["pytest_addoption", "pytest_configure"]

pytest_plugins = ["fvp_harness.pytest_plugin.options"]
"""The options module, also when entry points are not autoloaded
(``PYTEST_DISABLE_PLUGIN_AUTOLOAD``)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    # ``--fvp`` only once the plugin is asked for: a project that did not ask may have an option of
    # that name
    parser.getgroup(GROUP, GROUP_HELP).addoption(
        "--fvp", dest="fvp_binary", metavar="PATH", default=None,
        help="FVP binary instead of the scenario's fvp.binary; 'sim' for the embedded simulator")


def pytest_configure(config: pytest.Config) -> None:
    # late: the harness loads only in a run that asked
    from fvp_harness.pytest_plugin.plugin import activate

    activate(config)
