"""The plugin's fixtures; registered only when the plugin is active (``plugin.activate``).

Their scope is the ini key ``fvp_target_scope`` (default ``session``: one boot for the whole run;
``module`` or ``function`` trade boots for isolation). A test's scenario comes from ``_fvp_spec``:
the options' scenario, or the one its ``fvp`` marker names
(``plugin.FvpHooks.pytest_generate_tests`` parametrizes it), so tests of one scenario share an
instance and a test of another scenario gets its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import pytest

from fvp_harness.pytest_plugin.ab import AbRunner
from fvp_harness.pytest_plugin.deployed import DeployedArtifacts
from fvp_harness.pytest_plugin.settings import PluginSettings, ScenarioSpec, Scope
from fvp_harness.pytest_plugin.target import SharedTarget
from fvp_harness.scenario.load import LoadedScenario

__all__ = ["STATE", "FixtureState", "fvp_ab", "fvp_deployed", "fvp_scenario", "fvp_target",
           "scope_of"]


class FixtureState(Protocol):
    """What the fixtures ask of the plugin's state (``plugin.FvpState`` satisfies it; the plugin
    imports this module, so the fixtures are typed against this protocol rather than import the
    plugin back)."""

    @property
    def settings(self) -> PluginSettings: ...

    @property
    def default_spec(self) -> ScenarioSpec: ...

    def fixture_scenario(self, spec: ScenarioSpec) -> LoadedScenario: ...

    def boot(self, scenario: LoadedScenario) -> SharedTarget: ...

    def deployed(self, target: SharedTarget) -> DeployedArtifacts: ...

    def ab_runner(self, spec: ScenarioSpec, target: SharedTarget) -> AbRunner: ...


STATE: pytest.StashKey[FixtureState] = pytest.StashKey()
"""Where ``plugin.activate`` keeps the plugin's state for the fixtures in ``config.stash``."""


def scope_of(fixture_name: str, config: pytest.Config) -> Scope:
    """The fixtures' scope: ini ``fvp_target_scope`` (pytest's dynamic scope)."""
    return config.stash[STATE].settings.scope


@pytest.fixture(scope=scope_of)
def _fvp_spec(request: pytest.FixtureRequest) -> ScenarioSpec:
    """The scenario of the tests in this scope: the marker's (as a parameter) or the options'."""
    state = request.config.stash[STATE]
    spec: ScenarioSpec = getattr(request, "param", state.default_spec)
    return spec


@pytest.fixture(scope=scope_of)
def fvp_scenario(request: pytest.FixtureRequest, _fvp_spec: ScenarioSpec) -> LoadedScenario:
    """The ``LoadedScenario`` the test's FVP fixtures use (the options' scenario, or its ``fvp``
    marker's, with every override applied)."""
    return request.config.stash[STATE].fixture_scenario(_fvp_spec)


@pytest.fixture(scope=scope_of)
def fvp_target(request: pytest.FixtureRequest,
               fvp_scenario: LoadedScenario) -> Iterator[SharedTarget]:
    """A booted, logged-in instance of the scenario, shared by the tests of the scope:
    ``run(command)``, ``put(local, remote)``, ``get(remote)``. A boot that fails is an error of the
    tests that use it; an instance lost under a test is booted again for the next one."""
    handle = request.config.stash[STATE].boot(fvp_scenario)
    try:
        yield handle
    finally:
        handle.close()


@pytest.fixture(scope=scope_of)
def fvp_deployed(request: pytest.FixtureRequest, fvp_target: SharedTarget) -> DeployedArtifacts:
    """The scenario's builds and models, built if missing or stale and deployed into ``fvp_target``
    once: ``runner(build)``, ``model(name)``, ``inputs(model)`` and ``paths`` give their guest
    paths."""
    return request.config.stash[STATE].deployed(fvp_target)


@pytest.fixture(scope=scope_of)
def fvp_ab(request: pytest.FixtureRequest, _fvp_spec: ScenarioSpec,
           fvp_target: SharedTarget) -> AbRunner:
    """``fvp_ab(builds=..., models=..., repetitions=..., set=...)`` runs the scenario (or that
    subset) on the shared instance and returns an ``AbResult``: ``frame``, ``verdicts``,
    ``saved(model)``, ``identical(name)``, ``markdown``."""
    return request.config.stash[STATE].ab_runner(_fvp_spec, fvp_target)
