"""``manifest.json``: what a results folder's records were measured with, as one typed, versioned
model.

Why it is shaped so: docs/architecture.md, "Inside `run/`"."""

from __future__ import annotations

import os
import platform
import secrets
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fvp_harness.errors import ConfigurationError
from fvp_harness.run.artifacts import BuildResult, artifact_digests, built_from_commit
from fvp_harness.run.execute import SessionOutcome
from fvp_harness.run.machine import (
    cpu_model,
    git_describe,
    git_head,
    harness_checkout,
    load_average,
    memory_bytes,
    os_name,
    resolve_binary,
)
from fvp_harness.run.plan import Plan, Unit
from fvp_harness.run.scrape import PARSERS_VERSION
from fvp_harness.run.unit import utc_now
from fvp_harness.scenario import LoadedScenario, Scenario
from fvp_harness.scenario.secrets import redact_manifest
from fvp_harness.store.folder import MANIFEST_FORMAT_VERSION, ResultStore
from fvp_harness.version import __version__

__all__ = [
    "BatchInfo",
    "BuildInfo",
    "BuildSourceInfo",
    "BuiltStep",
    "FvpInfo",
    "HarnessInfo",
    "HostInfo",
    "InstanceEntry",
    "Manifest",
    "PlanInfo",
    "RunInfo",
    "RunSettings",
    "ScenarioInfo",
    "git_head",
]

Status = Literal["running", "complete", "aborted", "interrupted"]


class _Part(BaseModel):
    """Base of every manifest section: unknown fields are errors (a newer format has a newer
    version)."""

    model_config = ConfigDict(extra="forbid")


class ScenarioInfo(_Part):
    """The scenario as it was run: its name, its file, and the whole resolved scenario (what
    ``report`` re-reads)."""

    name: str
    file: str
    resolved: dict[str, Any]


class FvpInfo(_Part):
    """The model: binary as configured, the version it reported, its banner, the argv of the first
    instance, the identity folded into content keys, and the scenario's parameters, options and
    simulator knobs."""

    binary: str
    version: str | None = None
    banner: str = ""
    argv: list[str] | None = None
    identity: dict[str, Any] = Field(default_factory=dict)
    params: dict[str, Any] = Field(default_factory=dict)
    args: list[str] = Field(default_factory=list)
    sim: dict[str, Any] = Field(default_factory=dict)
    path: str | None = None
    """A real model: the binary's absolute path as a boot resolves it (None for ``sim`` and when not
    found)."""
    sha256: str | None = None
    """A real model: the binary's sha256 (which FVP build measured the numbers)."""
    simulator: str | None = None
    """``sim``: the simulator's release, the harness version it ships with (``fvp-harness
    0.1.0``)."""


class BuildSourceInfo(_Part):
    """Where a build's runner came from: the scenario's ``builds.X.source`` (``origin: scenario``),
    or the git checkout holding the runner file (``origin: checkout``: its commit and ``git
    describe``)."""

    origin: Literal["scenario", "checkout"]
    repository: str | None = None
    commit: str | None = None
    describe: str | None = None
    ref: str | None = None
    """``builds.X.source.commit`` as written when it was not the full commit (a branch, tag, short
    hash)."""
    tree: str | None = None
    """The commit's tree (a runner built from a local repository: what the build cache is keyed
    by)."""


class BuildInfo(_Part):
    """One build of the runner: the id it must print (if any), its runner path and sha256, env and
    args, and its source where it is known."""

    id: str | None = None
    runner: str
    sha256: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    args: list[str] = Field(default_factory=list)
    source: BuildSourceInfo | None = None


class BuiltStep(_Part):
    """An artifact build command that ran before the units."""

    name: str
    command: str
    reason: str
    seconds: float


class HostInfo(_Part):
    """The machine the harness ran on (``run/machine.py`` reads it; every field but the first five
    may be None where this host does not say, and is absent from manifests of format 4 and
    older)."""

    hostname: str
    platform: str
    machine: str
    python: str
    cpus: int | None = None
    cpu_model: str | None = None
    memory_bytes: int | None = None
    os: str | None = None
    load_before: list[float] | None = None
    """1, 5 and 15 minute load averages when the manifest was started (before any unit ran)."""
    load_after: list[float] | None = None
    """The same when the run finished: a busy host during the run shows here."""

    @classmethod
    def this_machine(cls) -> HostInfo:
        return cls(hostname=socket.gethostname(), platform=platform.platform(),
                   machine=platform.machine(),
                   python=platform.python_version(), cpus=os.cpu_count(), cpu_model=cpu_model(),
                   memory_bytes=memory_bytes(), os=os_name(), load_before=load_average())


class HarnessInfo(_Part):
    """The harness that measured: its version, and its commit and ``git describe`` when it runs from
    a git checkout (an editable install); None for a wheel."""

    version: str = __version__
    commit: str | None = None
    describe: str | None = None

    @classmethod
    def this_harness(cls) -> HarnessInfo:
        commit, describe = harness_checkout()
        return cls(commit=commit, describe=describe)


class RunSettings(_Part):
    """The command-line choices a run was made with (``run`` flags; ``make`` records ``resume``)."""

    resume: bool = False
    fresh_boot_per_unit: bool = False
    timeout_scale: float = 1.0
    only_builds: list[str] = Field(default_factory=list)
    only_models: list[str] = Field(default_factory=list)
    rebuild: bool = False


class PlanInfo(_Part):
    """The plan's size, order and sessions (plan session name -> unit ids in run order; a session is
    served by one instance at a time), and ``keys``: the content key of every unit of the plan. Only
    records with those keys count in the report: the folder may hold records of other settings."""

    units: int
    order: str
    sessions: dict[str, list[str]]
    keys: dict[str, str] = Field(default_factory=dict)
    selected: list[str] | None = None
    """The unit ids this run was asked for (``--only-build``/``--only-model``, ``make --only``);
    None: all."""
    spared: list[str] = Field(default_factory=list)
    """``run.until``: the selected units the stopping rule spared (their model had stopped before
    their round), written when the units have run (``run.adaptive.spared_units`` over this run's
    records). A deliberate status, recorded so every reader of the stored run (``compare``,
    ``history``, ``runs``, ``--baseline-from``) tells them from units that did not run; they are no
    part of the units a report accounts for."""

    def planned(self, stored_keys: Mapping[str, set[str]]) -> dict[str, str]:
        """Unit id -> content key of the units a report must account for: every selected unit the
        stopping rule did not spare, plus any other unit of the plan that has a stored record of its
        current key (measured earlier in the same run). ``stored_keys``: unit id -> the keys its
        stored records have."""
        selected = set(self.keys) if self.selected is None else set(self.selected)
        selected -= set(self.spared)
        return {unit: key for unit, key in self.keys.items()
                if unit in selected or key in stored_keys.get(unit, set())}


class RunInfo(_Part):
    """Which run this is: an id (UTC start time and a random suffix; ``runs/<id>/`` when it is
    archived) and the git commit of the scenario's folder when it is in a git checkout (``dirty`` is
    not known without running git)."""

    id: str
    commit: str | None = None
    branch: str | None = None

    @classmethod
    def new(cls, started: str, scenario_dir: Path) -> RunInfo:
        stamp = started.replace("-", "").replace(":", "").replace("T", "-")[:15]
        commit, branch = git_head(scenario_dir)
        return cls(id=f"{stamp}-{secrets.token_hex(2)}", commit=commit, branch=branch)


class InstanceEntry(_Part):
    """One booted instance (``s0``, or ``s0.2`` after a retry) and what it reported."""

    session: str
    argv: list[str] | None = None
    version: str | None = None
    ports: dict[str, int] | None = None
    boot_seconds: float | None = None
    deploy_seconds: float | None = None
    units: int = 0
    stat: dict[str, str] | None = None
    exit: str | None = None
    error: str | None = None
    deploy: str | None = None
    """How artifacts reached this instance: ``ssh``, or ``console`` and why not ssh
    (``deploy.method: auto``)."""


class BatchInfo(_Part):
    """How ``make`` ran this folder's units."""

    executor: str
    jobs: int
    only: list[str] = Field(default_factory=list)
    always: bool = False


class Manifest(_Part):
    """The whole ``manifest.json`` (see the module docstring). Mutable: a run finishes it in
    place."""

    format_version: int = MANIFEST_FORMAT_VERSION
    scenario: ScenarioInfo
    scenario_files: list[str] = Field(default_factory=list)
    overrides: list[str] = Field(default_factory=list)
    platform: str
    profile: dict[str, Any] = Field(default_factory=dict)
    fvp: FvpInfo
    artifacts: dict[str, str | None] = Field(default_factory=dict)
    artifact_paths: dict[str, str] = Field(default_factory=dict)
    builds: dict[str, BuildInfo] = Field(default_factory=dict)
    built: list[BuiltStep] = Field(default_factory=list)
    harness_version: str = __version__
    harness: HarnessInfo | None = None
    parsers_version: int = PARSERS_VERSION
    host: HostInfo
    started: str
    finished: str | None = None
    status: Status = "running"
    options: RunSettings = Field(default_factory=RunSettings)
    run: RunInfo
    plan: PlanInfo
    instances: dict[str, InstanceEntry] = Field(default_factory=dict)
    batch: BatchInfo | None = None
    aborted: list[str] | None = None

    # -- the three steps ---------------------------------------------------------------------------

    @classmethod
    def start(cls, loaded: LoadedScenario, plan: Plan, version: str | None, banner: str,
              options: RunSettings, builds: Sequence[BuildResult], started: str | None = None,
              units: Sequence[Unit] | None = None) -> Manifest:
        """The manifest written before any unit runs (``status`` ``running``). ``version`` and
        ``banner`` are the model's ``--version`` answer (``run.instances.query_fvp_version``);
        ``units`` the ones this run wants (all of the plan's by default)."""
        scenario = loaded.scenario
        digests = artifact_digests(plan.artifacts)
        started = started or utc_now()
        wanted = plan.units if units is None else units
        return cls(
            scenario=ScenarioInfo(name=scenario.name, file=str(loaded.path),
                                  resolved=scenario.model_dump(mode="json")),
            scenario_files=[str(path) for path in loaded.files],
            overrides=list(loaded.overrides),
            platform=loaded.profile.name,
            profile=loaded.profile.model_dump(mode="json"),
            fvp=_fvp_info(loaded, plan, version, banner),
            artifacts=digests,
            artifact_paths={name: str(state.path)
                            for name, state in sorted(plan.artifacts.items())},
            builds={name: BuildInfo(id=build.id, runner=build.runner,
                                    sha256=digests.get(f"builds.{name}.runner"),
                                    env=dict(build.env), args=list(build.args),
                                    source=_build_source(build))
                    for name, build in scenario.builds.items()},
            harness=HarnessInfo.this_harness(),
            built=[BuiltStep(name=result.step.name, command=result.step.command,
                             reason=result.step.reason,
                             seconds=round(result.seconds, 3)) for result in builds],
            host=HostInfo.this_machine(),
            started=started,
            options=options,
            run=RunInfo.new(started, loaded.directory),
            plan=PlanInfo(units=len(plan.units), order=scenario.run.order,
                          sessions={session.name: list(session.units) for session in plan.sessions},
                          keys={unit.id: unit.key for unit in plan.units},
                          selected=None if len(wanted) == len(plan.units)
                          else [unit.id for unit in wanted]),
        )

    def continue_from(self, previous: Manifest | None, *, keep_start: bool = True) -> Manifest:
        """Carry over what the folder's earlier run recorded: the instances (this run adds its own),
        and with ``keep_start`` (``--resume``: the same run, continued) its start time and run id.
        Returns self."""
        if previous is not None:
            if keep_start:
                self.started = previous.started or self.started
                self.run = previous.run  # the same run, continued (--resume)
            self.instances = {**previous.instances, **self.instances}
        return self

    def finish(self, outcomes: Sequence[SessionOutcome], *, interrupted: bool = False) -> Manifest:
        """Record the instances these sessions booted, the end time and the status. Returns self."""
        for outcome in outcomes:
            for info in outcome.instances:
                meta = info.metadata
                self.instances[info.name] = InstanceEntry(
                    session=info.session, argv=_strings(meta.get("argv")),
                    version=_text(meta.get("version")),
                    ports=_ports(meta.get("ports")), boot_seconds=info.boot_seconds,
                    deploy_seconds=info.deploy_seconds, units=info.units,
                    stat=_stat(meta.get("stat")),
                    exit=_text(meta.get("exit")), error=info.error,
                    deploy=_text(meta.get("deploy")))
        argvs = [entry.argv for entry in self.instances.values() if entry.argv]
        self.fvp.argv = argvs[0] if argvs else self.fvp.argv
        aborted = [outcome.aborted for outcome in outcomes if outcome.aborted]
        self.finished = utc_now()
        self.host.load_after = load_average()
        self.status = "interrupted" if interrupted else "aborted" if aborted else "complete"
        if aborted:
            self.aborted = aborted
        return self

    # -- JSON --------------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The JSON object stored in ``manifest.json`` (optional sections left out when unset;
        secret environment values masked everywhere: ``scenario.secrets``)."""
        data = redact_manifest(self.model_dump(mode="json"))
        for optional in ("batch", "aborted"):
            if data.get(optional) is None:
                data.pop(optional, None)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, source: str = "manifest.json") -> Manifest:
        """Validate a stored manifest; a ConfigurationError names the file and the first bad
        field."""
        try:
            return cls.model_validate(_upgrade(dict(data)))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(top level)"
            raise ConfigurationError(f"{source}: {where}: {first['msg']} ({exc.error_count()} "
                                     "problem(s)); the folder was written by another fvp-harness, "
                                     "or edited by hand") from exc

    @classmethod
    def read(cls, store: ResultStore) -> Manifest | None:
        """The folder's manifest, or None when it has none yet."""
        data = store.read_manifest()
        return None if data is None else cls.from_json(data, source=str(store.manifest_path))

    def write(self, store: ResultStore, *, final: bool = False) -> None:
        """Replace the folder's ``manifest.json`` atomically; ``final``: the run's last status,
        written with the room the store kept for it (``ResultStore.reserve_space``)."""
        store.write_manifest(self.to_json(), final=final)

    @property
    def resolved_scenario(self) -> Scenario:
        """The scenario as it was run (``report DIR`` analyses with it)."""
        try:
            return Scenario.model_validate(self.scenario.resolved)
        except ValueError as exc:
            raise ConfigurationError(f"the stored scenario {self.scenario.name!r} is not valid: "
                                     f"{exc}") from exc


def _upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """Older manifests, read as they were meant.

    Format 1 kept the booted instances under ``sessions``; before format 3 a manifest had no ``run``
    (its start time names it now). And ``make`` used to overwrite ``scenario`` with the bare
    resolved scenario when a report setting changed; such a folder is read as if it had been wrapped
    properly."""
    version = int(data.get("format_version", 1))
    if version < 2 and "sessions" in data:
        data["instances"] = data.pop("sessions")
    if version < 3 and "run" not in data:  # runs were not kept apart: the start time names it
        started = str(data.get("started") or "unknown")
        data["run"] = {"id": started.replace("-", "").replace(":", "").replace("T", "-")[:15] or
                       "unknown"}
    data["format_version"] = MANIFEST_FORMAT_VERSION
    scenario = data.get("scenario")
    if isinstance(scenario, Mapping) and "resolved" not in scenario and "builds" in scenario:
        files = data.get("scenario_files") or [""]
        data["scenario"] = {"name": scenario.get("name", ""), "file": str(files[0]),
                            "resolved": dict(scenario)}
    return data


def _fvp_info(loaded: LoadedScenario, plan: Plan, version: str | None, banner: str) -> FvpInfo:
    """The model's section: as configured and as it answered, plus which bytes it is (a real
    binary's path and sha256) or which simulator release (``sim``); ``target: host`` runs no model
    and records no binary."""
    fvp = loaded.scenario.fvp
    info = FvpInfo(binary=fvp.binary, version=version, banner=banner, identity=dict(plan.fvp),
                   params=dict(fvp.params), args=list(fvp.args),
                   sim=dict(fvp.sim) if fvp.is_sim else {})
    if fvp.is_sim:
        info.simulator = f"fvp-harness {__version__}"
    elif loaded.scenario.target != "host":
        info.path, info.sha256 = resolve_binary(fvp.binary)
    return info


def _build_source(build: Any) -> BuildSourceInfo | None:
    """A build's source: the scenario's ``source:`` when given, else the git checkout holding its
    runner (commit read from ``.git`` files, ``git describe`` asked of git), else None."""
    declared = getattr(build, "source", None)
    if declared is not None:
        built = built_from_commit(Path(build.runner))
        if built is not None:  # built here from a local repository: the commit, ref and tree
            ref = declared.commit if declared.commit != built[0] else None
            return BuildSourceInfo(origin="scenario", repository=declared.repository,
                                   commit=built[0], ref=ref, tree=built[1])
        return BuildSourceInfo(origin="scenario", repository=declared.repository,
                               commit=declared.commit)
    folder = Path(build.runner).parent
    commit, _ = git_head(folder)
    if commit is None:
        return None
    return BuildSourceInfo(origin="checkout", commit=commit, describe=git_describe(folder))


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _strings(value: object) -> list[str] | None:
    return [str(item) for item in value] if isinstance(value, (list, tuple)) else None


def _ports(value: object) -> dict[str, int] | None:
    return ({str(name): int(port) for name, port in value.items()} if isinstance(value, Mapping)
            else None)


def _stat(value: object) -> dict[str, str] | None:
    return ({str(name): str(text) for name, text in value.items()} if isinstance(value, Mapping)
            else None)
