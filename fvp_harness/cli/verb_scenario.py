"""``validate``, ``plan`` and ``schema``: look at scenarios without running anything."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from fvp_harness.cli.scenario_args import (
    add_scenario_options,
    expand_scenario_paths,
    load_from_args,
)
from fvp_harness.errors import EXIT_BAD_INPUT, EXIT_OK, ScenarioError
from fvp_harness.located import display_path

if TYPE_CHECKING:
    from fvp_harness.run.plan import Plan

ORDER = 40

__all__ = ["ORDER", "format_plan", "plan_as_json", "register", "stale_artifacts"]


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    validate = subparsers.add_parser(
        "validate",
        parents=[common],
        help="check scenario files (exit 0 when all are valid, 2 otherwise)",
        description="Load and check scenario files: YAML, fields, variables, extends, "
                    "placeholders, "
        "referenced files. Prints `ok FILE` per valid file and `file:line:col: field: problem` per "
        "problem.",
    )
    validate.add_argument(
        "scenarios", nargs="+", metavar="SCENARIO", help="scenario files or folders of them"
    )
    validate.add_argument(
        "--print", dest="show", action="store_true", help="print each resolved scenario as YAML"
    )
    add_scenario_options(validate)
    validate.set_defaults(handler=_run_validate)

    plan = subparsers.add_parser(
        "plan",
        parents=[common],
        help="show the matrix, run order, sessions and content keys of a scenario",
        description="Expand a scenario into units (build x model x repetition) in run order, with "
                    "their "
        "sessions and content keys, without running anything.",
    )
    plan.add_argument("scenario", metavar="SCENARIO")
    plan.add_argument("--json", action="store_true", help="machine-readable output")
    add_scenario_options(plan)
    plan.set_defaults(handler=_run_plan)

    schema = subparsers.add_parser(
        "schema",
        parents=[common],
        help="print the JSON Schema of scenario files (for editors)",
        description="Print the JSON Schema of scenario files. Point yaml-language-server at it "
                    "with a first "
        "line like `# yaml-language-server: $schema=../docs/scenario.schema.json`.",
    )
    schema.set_defaults(handler=_run_schema)


def _run_validate(args: argparse.Namespace) -> int:
    import yaml

    paths = expand_scenario_paths(args.scenarios)
    failed = 0
    for path in paths:
        try:
            loaded = load_from_args(args, path)
        except ScenarioError as exc:
            failed += 1
            print("\n".join(exc.problems), file=sys.stderr)
            continue
        # late: the run layer only for `validate`'s warnings
        from fvp_harness.run.artifacts import outside_tree

        for warning in outside_tree(loaded):
            print(warning, file=sys.stderr)
        if args.show:
            print(f"# {path} (resolved)")
            print(
                # secrets: ***
                yaml.safe_dump(loaded.scenario.redacted(), sort_keys=False, width=1000), end=""
            )
        elif getattr(args, "quiet", 0) <= 0:
            print(f"ok {path}")
    if failed:
        print(f"fvp-harness: {failed} of {len(paths)} scenario files have problems",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK


def _run_plan(args: argparse.Namespace) -> int:
    from fvp_harness.run.plan import build_plan  # late: hashing and the run layer only for `plan`

    plan = build_plan(load_from_args(args, args.scenario))
    if args.json:
        print(json.dumps(plan_as_json(plan), indent=2))
    else:
        print(format_plan(plan), end="")
    return EXIT_OK


def _run_schema(args: argparse.Namespace) -> int:
    from fvp_harness.scenario.model import scenario_json_schema  # late: pydantic only for `schema`

    print(json.dumps(scenario_json_schema(), indent=2))
    return EXIT_OK


def plan_as_json(plan: Plan) -> dict[str, object]:
    """The plan as plain data (for scripts and ``plan --json``)."""
    from fvp_harness.run.plan import unit_artifacts  # late: the run layer only for `plan`

    stale = stale_artifacts(plan)
    return {
        "scenario": plan.scenario.name,
        "path": str(plan.path),
        "platform": plan.profile.name,
        "fvp": dict(plan.fvp),
        "sessions": [{"name": session.name, "units": list(session.units)}
                     for session in plan.sessions],
        "units": [
            {
                "index": unit.index,
                "id": unit.id,
                "build": unit.build,
                "model": unit.model,
                "repetition": unit.repetition,
                "session": unit.session,
                "key": unit.key,
                "unbuilt": list(unit.unbuilt),
                "rebuilt": [name for name in unit_artifacts(plan.scenario, unit.build, unit.model)
                            if name in stale],
            }
            for unit in plan.units
        ],
        "unbuilt": [state.name for state in plan.unbuilt],
        "rebuilt": stale,
    }


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def stale_artifacts(plan: Plan) -> dict[str, str]:
    """Declared name -> why it is rebuilt before a run, for each artifact that exists but whose
    build is stale (older than a source, build command changed): the same rule ``run`` and ``make``
    apply (``run.artifacts.pending_builds``). Why: ``plan`` keys such a unit on the file as it is
    now, which the rebuild may replace; without the mark a user compares keys that are about to
    change."""
    from fvp_harness.run.artifacts import pending_builds  # late: the run layer only for `plan`

    reasons = {step.path: step.reason for step in pending_builds(plan.scenario)}
    return {state.name: reasons[Path(state.path)] for state in plan.artifacts.values()
            if state.built and Path(state.path) in reasons}


def format_plan(plan: Plan) -> str:
    """The plan as a readable text block: matrix, artifacts, then one line per unit in run order."""
    scenario = plan.scenario
    run = scenario.run
    fvp = "sim (embedded simulator)" if scenario.fvp.is_sim else str(plan.fvp.get("binary"))
    lines = [
        f"scenario  {scenario.name}  ({display_path(plan.path)})",
        f"platform  {plan.profile.name}",
        f"fvp       {fvp}",
        f"matrix    {len(scenario.builds)} builds x {len(scenario.models)} models x "
        f"{run.planned_repetitions} repetitions = {len(plan.units)} units"
        f"{' at most (run.until: adaptive)' if run.until is not None else ''}; order {run.order}; "
        f"{len(plan.sessions)} session{'s' if len(plan.sessions) != 1 else ''}",
        f"run       warmup {run.warmup} + {run.iterations} iterations per unit",
        "",
    ]
    from fvp_harness.run.plan import unit_artifacts  # late: the run layer only for `plan`

    stale = stale_artifacts(plan)
    artifact_rows = [["artifact", "file", "state"]]
    for state in plan.artifacts.values():
        status = (f"sha256 {state.sha256[:12]}" if state.sha256
                  else "not built yet (has a build command)")
        if state.name in stale:
            status += f"; rebuilt before a run ({stale[state.name]})"
        artifact_rows.append([state.name, display_path(Path(state.path)), status])
    lines += [*_table(artifact_rows), ""]
    rows = [["#", "unit", "session", "build", "model", "rep", "key"]]
    rebuilt = False
    for unit in plan.units:
        mark = "*" if unit.unbuilt else ""
        if (not mark and
            any(name in stale for name in unit_artifacts(scenario, unit.build, unit.model))):
            mark, rebuilt = "~", True
        rows.append(
            [
                str(unit.index + 1),
                unit.id,
                f"s{unit.session}",
                unit.build,
                unit.model,
                str(unit.repetition),
                unit.short_key + mark,
            ]
        )
    lines += _table(rows)
    if any(unit.unbuilt for unit in plan.units):
        lines += ["",
                  "* provisional key: an artifact is not built yet; the key is final once it is."]
    if rebuilt:
        lines += ["",
                  "~ key of the files as they are now: an artifact it uses is rebuilt before a run "
                  "(see its", "  state); the key changes if the rebuilt bytes differ."]
    return "\n".join(lines) + "\n"
