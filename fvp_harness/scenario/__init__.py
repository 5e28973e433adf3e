"""The scenario language: what a user writes (YAML), read once into validated, immutable objects.

``model`` holds the pydantic models, template rules and JSON schema; ``load`` reads a file
(``extends``, ``--set``, ``${...}`` variables, paths, ``file:line:col`` errors) and resolves its
platform profile; ``metrics`` names the built-in metrics. Everything below the scenario (profiles,
located YAML) is imported from here, nothing above.
"""

from fvp_harness.scenario.load import LoadedScenario, load_scenario
from fvp_harness.scenario.model import (
    Compare,
    FvpConfig,
    MetricSpec,
    Scenario,
    expand_build_command,
    render_template,
    scenario_json_schema,
)

__all__ = [
    "Compare",
    "FvpConfig",
    "LoadedScenario",
    "MetricSpec",
    "Scenario",
    "expand_build_command",
    "load_scenario",
    "render_template",
    "scenario_json_schema",
]
