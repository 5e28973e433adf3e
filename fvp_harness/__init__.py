"""fvp-harness: benchmark ExecuTorch runners on Arm Fixed Virtual Platforms.

The promised Python API is what this module exports (``__all__``); everything else is importable but
may change between versions. A typical session::

    from fvp_harness import load_scenario, run_scenario

    outcome = run_scenario(load_scenario("scenarios/driver_reuse.yaml"))
    print(outcome.results_dir, outcome.exit_code)

The package is split into layers, each a folder, each importing only the ones below it
(docs/architecture.md)::

    cli/                         the only code that prints or exits
    batch/                       make-style engine over many scenarios (local threads, Dask)
    run/                         one scenario end to end: plan, artifacts, deploy, execute, scrape,
                                 manifest
    vgf/  report/                VGF reports; analysis and rendering of records
    targets/  store/  scenario/  where commands run; the results folder; the scenario language
    profiles/                    platform profiles (YAML data)
    errors events files located version   the bottom (imports nothing of the harness)
    sim/                         the embedded FVP simulator: imports nothing of the above

Names are imported on first use, so ``import fvp_harness`` (and the simulator, which lives inside
the package) stays cheap: pandas, matplotlib and pydantic load only when something needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "__version__": "fvp_harness.version",
    "load_scenario": "fvp_harness.scenario",
    "LoadedScenario": "fvp_harness.scenario",
    "Scenario": "fvp_harness.scenario",
    "build_plan": "fvp_harness.run.plan",
    "Plan": "fvp_harness.run.plan",
    "run_scenario": "fvp_harness.run.pipeline",
    "RunOptions": "fvp_harness.run.pipeline",
    "RunOutcome": "fvp_harness.run.pipeline",
    "rebuild_report": "fvp_harness.run.reporting",
    "open_target": "fvp_harness.run.instances",
    "analyse": "fvp_harness.report.stats.analysis",
    "AnalysisResult": "fvp_harness.report.stats.result",
    "Record": "fvp_harness.store.records",
    "ResultStore": "fvp_harness.store.folder",
    "make": "fvp_harness.batch.engine",
    "MakeOptions": "fvp_harness.batch.engine",
    "Target": "fvp_harness.targets.base",
    "CommandResult": "fvp_harness.targets.base",
    "FakeTarget": "fvp_harness.targets.fake",
    "Event": "fvp_harness.events",
    "HarnessError": "fvp_harness.errors",
    "ConfigurationError": "fvp_harness.errors",
    "InfrastructureError": "fvp_harness.errors",
    "UnitFailure": "fvp_harness.errors",
    "Interrupted": "fvp_harness.errors",
}

__all__ = [
    "AnalysisResult",
    "CommandResult",
    "ConfigurationError",
    "Event",
    "FakeTarget",
    "HarnessError",
    "InfrastructureError",
    "Interrupted",
    "LoadedScenario",
    "MakeOptions",
    "Plan",
    "Record",
    "ResultStore",
    "RunOptions",
    "RunOutcome",
    "Scenario",
    "Target",
    "UnitFailure",
    "__version__",
    "analyse",
    "build_plan",
    "load_scenario",
    "make",
    "open_target",
    "rebuild_report",
    "run_scenario",
]

# what type checkers and editors see; at run time __getattr__ imports on first use
if TYPE_CHECKING:
    from fvp_harness.batch.engine import MakeOptions, make
    from fvp_harness.errors import (
        ConfigurationError,
        HarnessError,
        InfrastructureError,
        Interrupted,
        UnitFailure,
    )
    from fvp_harness.events import Event
    from fvp_harness.report.stats.analysis import analyse
    from fvp_harness.report.stats.result import AnalysisResult
    from fvp_harness.run.instances import open_target
    from fvp_harness.run.pipeline import RunOptions, RunOutcome, run_scenario
    from fvp_harness.run.plan import Plan, build_plan
    from fvp_harness.run.reporting import rebuild_report
    from fvp_harness.scenario import LoadedScenario, Scenario, load_scenario
    from fvp_harness.store.folder import ResultStore
    from fvp_harness.store.records import Record
    from fvp_harness.targets.base import CommandResult, Target
    from fvp_harness.targets.fake import FakeTarget
    from fvp_harness.version import __version__


def __getattr__(name: str) -> Any:
    """Import a public name from its home module on first use (PEP 562) and keep it here."""
    home = _EXPORTS.get(name)
    if home is None:
        raise AttributeError(f"module 'fvp_harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
