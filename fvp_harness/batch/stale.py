"""What ``make`` finds stale, without writing anything (``-n`` prints it): every scenario loaded and
planned, and per artifact, unit and report whether it is up to date and why not (docs/batch.md)."""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from fvp_harness.errors import EXIT_OK, ConfigurationError, HarnessError, UnknownName
from fvp_harness.files import file_sha256
from fvp_harness.report.stored.summary_cache import SummaryCache
from fvp_harness.run.adaptive import SamplingState, replay, round_builds
from fvp_harness.run.artifacts import BuildResult, BuildStep, declared_artifacts, pending_builds
from fvp_harness.run.instances import query_fvp_version
from fvp_harness.run.plan import Plan, Unit, build_plan, changed_parts, unit_artifacts, why_stale
from fvp_harness.scenario import load_scenario
from fvp_harness.scenario.load import LoadedScenario
from fvp_harness.store.folder import (
    DEFAULT_RESULTS_BASE,
    REPORT_FILES,
    REPORT_INPUTS_FILE,
    ResultStore,
    results_dir_for,
)
from fvp_harness.store.records import Record
from fvp_harness.version import __version__

# lanes and manifest load execute, deploy and every target: only a make with work loads them
if TYPE_CHECKING:
    from fvp_harness.run.execute import SessionOutcome

__all__ = [
    "Action",
    "MakeOptions",
    "Node",
    "Versions",
    "digest",
    "not_needed",
    "plan_batch",
    "plan_node",
    "report_inputs",
    "scenario_files",
    "until_state",
]


@dataclass(frozen=True)
class MakeOptions:
    """The ``make`` verb's choices (see ``docs/batch.md``)."""

    jobs: int | None = None
    """Parallel FVP instances; None: ``default_jobs()`` locally, the cluster's thread count on
    Dask."""
    keep_going: bool = False
    max_instances: int | None = None
    """``--max-instances``: host-wide seats shared with other processes (``run.seats``); local
    only."""
    dry_run: bool = False
    always: bool = False
    """``-B``: rebuild every artifact that has a build command, re-run every unit and re-render
    every report."""
    only: tuple[str, ...] = ()
    """Globs on ``<scenario stem>/<unit id>`` (or just ``<scenario stem>``); empty: everything."""
    results_base: Path = DEFAULT_RESULTS_BASE
    overrides: tuple[str, ...] = ()
    fvp_binary: str | None = None
    timeout_scale: float = 1.0


@dataclass(frozen=True)
class Action:
    """One thing ``make`` does (or, with ``-n``, would do) and why."""

    kind: Literal["build", "run", "maybe", "report", "error", "up-to-date"]
    scenario: str
    target: str
    reason: str

    def __str__(self) -> str:
        where = f"{self.scenario}/{self.target}" if self.target else self.scenario
        verb = {"maybe": "run if changed", "up-to-date": "up to date"}.get(self.kind, self.kind)
        return f"{verb:<14} {where}  ({self.reason})"


@dataclass
class Node:
    """One scenario in the batch: what is stale, and (after running) what happened."""

    index: int
    path: Path
    stem: str
    results_dir: Path
    loaded: LoadedScenario | None = None
    error: HarnessError | None = None
    builds: list[BuildStep] = field(default_factory=list)
    plan: Plan | None = None
    fvp_version: str | None = None
    selected: list[Unit] = field(default_factory=list)
    todo: list[tuple[Unit, str]] = field(default_factory=list)
    maybe: list[tuple[Unit, str]] = field(default_factory=list)
    report_reason: str | None = None
    stored_exit: int = EXIT_OK
    # filled while running
    built: list[BuildResult] = field(default_factory=list)
    records: int = 0
    latest: dict[str, Record] = field(default_factory=dict)
    """Unit id -> the last record this make stored for it (its last attempt)."""
    failed: int = 0
    infrastructure: int = 0
    outcomes: list[SessionOutcome] = field(default_factory=list)
    job_errors: list[tuple[str, str]] = field(default_factory=list)
    exit_code: int = EXIT_OK
    report_files: dict[str, Path] = field(default_factory=dict)
    not_run: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Unit id -> (cause class, why) of each stale unit this make left without a record
    (``_settle``)."""

    def actions(self) -> list[Action]:
        if self.error is not None:
            return [Action("error", self.stem, "", str(self.error).splitlines()[0])]
        found = [Action("build", self.stem, step.name, step.reason) for step in self.builds]
        found += [Action("run", self.stem, unit.id, why) for unit, why in self.todo]
        found += [Action("maybe", self.stem, unit.id, why) for unit, why in self.maybe]
        if self.report_reason is not None:
            found.append(Action("report", self.stem, "report", self.report_reason))
        if not found and self.selected:
            found.append(Action("up-to-date", self.stem, "",
                                f"{len(self.selected)} units and the report"))
        return found


def scenario_files(items: Sequence[str | Path]) -> list[Path]:
    """Scenario arguments with folders replaced by their ``*.yaml``/``*.yml`` files (sorted);
    default ``scenarios/``."""
    found: list[Path] = []
    for item in items or ["scenarios"]:
        path = Path(item)
        if path.is_dir():
            found.extend(sorted([*path.glob("*.yaml"), *path.glob("*.yml")]))
        elif path.is_file():
            found.append(path)
        else:
            raise ConfigurationError(f"{path}: no such scenario file or folder")
    return found


def digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _filedigest(path: Path) -> str:
    try:
        return file_sha256(path)
    except FileNotFoundError:
        return "missing"


def _matches(patterns: Sequence[str], stem: str, unit_id: str) -> bool:
    if not patterns:
        return True
    full = f"{stem}/{unit_id}"
    return any(fnmatch.fnmatchcase(full, pattern) or fnmatch.fnmatchcase(stem, pattern)
               for pattern in patterns)


def report_inputs(store: ResultStore, loaded: LoadedScenario) -> dict[str, str]:
    """The parts of a report's input hash: records, manifest, the report-relevant scenario sections,
    harness."""
    scenario = loaded.scenario
    return {
        "records": _filedigest(store.records_path),
        "manifest": _filedigest(store.manifest_path),
        "settings": digest({
            "name": scenario.name,
            "report": scenario.report.model_dump(mode="json"),
            "compare": scenario.compare.model_dump(mode="json") if scenario.compare else None,
            "metrics": [spec.model_dump(mode="json") for spec in scenario.metrics],
        }),
        "harness": __version__,
    }


def _report_reason(store: ResultStore, loaded: LoadedScenario) -> tuple[str | None, int]:
    """Why the report must be rendered again (None: up to date), and the exit code stored with
    it."""
    try:
        stored = json.loads(store.report_path(REPORT_INPUTS_FILE).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return "no report yet", EXIT_OK
    expected = [name
                for kind, name in REPORT_FILES.items() if kind in loaded.scenario.report.outputs]
    # e.g. the VGF report, when there was one
    written = stored.get("files") if isinstance(stored, dict) else None
    expected += [name for name in written or () if isinstance(name, str) and name not in expected]
    missing = [name for name in expected if not (store.root / name).is_file()]
    if missing:
        return f"missing {', '.join(missing)}", EXIT_OK
    old = stored.get("parts") if isinstance(stored, dict) else None
    changed = changed_parts(old or {}, report_inputs(store, loaded))
    if changed:
        return "changed: " + ", ".join(changed), EXIT_OK
    return None, int(stored.get("exit_code", EXIT_OK))


def _why(unit: Unit, latest: Record | None) -> str:
    """Why a unit without an ok record under its key must run (for ``-n`` and the log):
    ``plan.why_stale``."""
    return why_stale(unit, latest)


class Versions:
    """The model's ``--version`` per binary, asked once per batch (it folds into real-FVP keys; not
    for sim)."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[str | None, str]] = {}

    def get(self, loaded: LoadedScenario, *, for_manifest: bool = False) -> tuple[str | None, str]:
        scenario = loaded.scenario
        if scenario.target == "host" or (scenario.fvp.is_sim and not for_manifest):
            return None, ""
        key = f"{scenario.fvp.binary}\0{loaded.profile.name}"
        if key not in self._known:
            self._known[key] = query_fvp_version(loaded)
        return self._known[key]


def plan_batch(paths: Sequence[str | Path], options: MakeOptions, *,
               versions: Versions | None = None) -> list[Node]:
    """Load every scenario and decide what is stale, without writing anything (``-n`` prints this).

    A scenario that does not load becomes a node with ``error`` set (the caller decides whether to
    go on).
    """
    versions = versions or Versions()
    nodes: list[Node] = []
    seen: dict[Path, str] = {}
    for index, path in enumerate(scenario_files(paths)):
        node = Node(index, path, path.stem, Path())
        nodes.append(node)
        try:
            node.results_dir = results_dir_for(path, options.results_base)
            other = seen.get(node.results_dir.resolve())
            if other is not None:
                raise ConfigurationError(f"{path} and {other} would share the results folder "
                                         f"{node.results_dir}; rename one of them")
            seen[node.results_dir.resolve()] = str(path)
            node.loaded = load_scenario(path, list(options.overrides),
                                        fvp_binary=options.fvp_binary)
            plan_node(node, options, versions)
        except HarnessError as exc:
            node.error = exc
    _check_only(options.only, nodes)
    _refuse_conflicting_builds(nodes)
    return nodes


def _check_only(patterns: Sequence[str], nodes: Sequence[Node]) -> None:
    """Each ``--only`` pattern must match a scenario or a unit, else ``UnknownName`` (exit 2) before
    anything is built: a typo said "nothing to do" with every unit stale. A scenario that did not
    load counts as matched when its stem matches the pattern's scenario part (its units are unknown;
    its own error is reported)."""
    for pattern in patterns:
        head = pattern.split("/", 1)[0]

        def hit(node: Node, pattern: str = pattern, head: str = head) -> bool:
            if node.plan is None:
                return fnmatch.fnmatchcase(node.stem, head)
            return fnmatch.fnmatchcase(node.stem, pattern) or any(
                _matches([pattern], node.stem, unit.id) for unit in node.plan.units)

        matched = any(hit(node) for node in nodes)
        if matched:
            continue
        heads = [node for node in nodes if fnmatch.fnmatchcase(node.stem, head)]
        if heads and "/" in pattern:
            valid = [f"{node.stem}/{unit.id}" for node in heads if node.plan is not None
                     for unit in node.plan.units]
            what, plural = "unit", "the units (SCENARIO/UNIT) there are"
        else:
            valid = [name for node in nodes for name in (node.stem, f"{node.stem}/*")]
            what, plural = "scenario or unit", ("the scenarios (SCENARIO, SCENARIO/* or "
                                                "SCENARIO/UNIT) there are")
        raise UnknownName("--only", [pattern], valid, what=what, plural=plural)


def _refuse_conflicting_builds(nodes: Sequence[Node]) -> None:
    """Scenarios of one batch may share an artifact file, built once, but only with the same build
    command: otherwise each would rebuild it with its own and the other's units would measure bytes
    it did not plan."""
    owners: dict[Path, tuple[str, str]] = {}
    for node in nodes:
        if node.loaded is None or node.error is not None:
            continue
        for name, file, command, _sources in declared_artifacts(node.loaded.scenario):
            if command is None:
                continue
            path = Path(file).resolve()
            first = owners.setdefault(path, (node.stem, command))
            if first[1] != command:
                node.error = ConfigurationError(
                    f"{node.path}: {name} writes {file}, which scenario {first[0]} builds with "
                    f"another command ({first[1]!r}, here {command!r}); give each its own file, or "
                    "the same command")
                break


def plan_node(node: Node, options: MakeOptions, versions: Versions, *,
              after_build: bool = False) -> None:
    """Plan one scenario and decide what is stale (``after_build``: the re-plan with the final
    artifact hashes, when ``-B`` no longer forces the builds that just ran)."""
    loaded = node.loaded
    assert loaded is not None
    node.fvp_version, _banner = versions.get(loaded)
    plan = build_plan(loaded, fvp_version=node.fvp_version)
    node.plan = plan
    node.selected = [unit for unit in plan.units if _matches(options.only, node.stem, unit.id)]
    node.todo, node.maybe, node.report_reason = [], [], None
    if not node.selected:
        node.builds = []
        return
    node.builds = pending_builds(loaded, force=options.always and not after_build)
    rebuilt = {step.name: step.reason for step in node.builds}
    store = ResultStore(node.results_dir, create=False)
    records = store.records() if store.records_path.is_file() else []
    done = {record.key for record in records if record.status == "ok"}
    latest: dict[str, Record] = {}
    for record in records:
        latest[record.unit_id] = record
    sampling = until_state(plan, records, SummaryCache(store.root, write=False))
    for unit in node.selected:
        if options.always:
            node.todo.append((unit, "-B: rebuild everything"))
        elif sampling is not None and not_needed(sampling, unit):
            continue  # run.until: its model stopped before this round; not stale, never measured
        elif unit.key not in done:
            node.todo.append((unit, _why(unit, latest.get(unit.id))))
        else:
            deps = _unit_artifacts(plan, unit)
            stale = [f"{name} ({rebuilt[name]})" for name in deps if name in rebuilt]
            if stale:
                node.maybe.append((unit, "will be rebuilt: " + ", ".join(stale)))
    if options.always:
        node.report_reason = "-B: rebuild everything"
    elif node.todo or node.maybe:
        node.report_reason = "records will change"
    else:
        node.report_reason, node.stored_exit = _report_reason(store, loaded)


def until_state(plan: Plan, records: Sequence[Record],
                cache: SummaryCache | None = None) -> SamplingState | None:
    """``run.until``: the stopping rule replayed over the stored records of the planned keys (None
    without it); ``cache``: what the last report of the folder kept of the same replay (read only:
    the check writes nothing)."""
    scenario = plan.scenario
    if (scenario.run.until is None or
        (scenario.compare is not None and scenario.compare.baseline_from)):
        # with a stored baseline make measures every round (its lanes judge no stored samples)
        return None
    keys = {unit.id: unit.key for unit in plan.units}
    wanted = [record for record in records if keys.get(record.unit_id) == record.key]
    return replay(wanted, scenario.compare, scenario.run.until, models=list(scenario.models),
                  builds=round_builds((unit.build, unit.repetition) for unit in plan.units),
                  metrics=scenario.metrics, cache=cache)


def not_needed(sampling: SamplingState, unit: Unit) -> bool:
    """Whether ``run.until`` stopped ``unit``'s model before ``unit``'s round."""
    try:
        item = sampling.get(unit.model)
    except KeyError:
        return False
    return item.stopped and unit.repetition >= item.repetitions


def _unit_artifacts(plan: Plan, unit: Unit) -> list[str]:
    """The declared names (as ``plan.artifact_hashes`` spells them) of the files a unit reads."""
    return list(unit_artifacts(plan.scenario, unit.build, unit.model))
