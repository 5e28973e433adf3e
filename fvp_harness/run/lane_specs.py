"""What a lane carries and how it travels: the pickled specs of lanes and jobs, their results, the
events that steer them, and shipping by content (artifact bytes, withheld secrets) for a remote
worker (``run.lanes``)."""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from fvp_harness.errors import ConfigurationError
from fvp_harness.events import Listener, null_listener
from fvp_harness.files import atomic_write
from fvp_harness.profiles import Profile
from fvp_harness.run.execute import DeployFunction, SessionOutcome
from fvp_harness.run.fail_fast import FailFast
from fvp_harness.run.plan import Plan
from fvp_harness.run.preboot import PreBooted
from fvp_harness.scenario.model import Scenario
from fvp_harness.scenario.secrets import redact_data, secret_names
from fvp_harness.store.folder import LOGS_DIR
from fvp_harness.store.records import Record

__all__ = [
    "ARTIFACT_CACHE_ENV",
    "BOOT_COST",
    "WITHHELD",
    "JobResult",
    "JobSpec",
    "LaneControl",
    "LaneResult",
    "LaneSpec",
    "LocalRun",
    "RecordSink",
    "collect_logs",
    "relocated",
    "restore_secrets",
    "withhold_secrets",
]

RecordSink = Callable[[int, Record], None]
"""``sink(node, record)``: hand one finished record of scenario ``node`` to the coordinator
(thread-safe)."""

BOOT_COST = 20
"""A boot's estimated cost in ``JobSpec.cost`` units (executions): what balancing adds per lane, and
what a job of another pool must exceed before an idle lane closes its instance and boots one for it
(work stealing)."""

ARTIFACT_CACHE_ENV = "FVP_HARNESS_ARTIFACT_CACHE"
"""Where a worker keeps shipped artifacts (default: ``<tmp>/fvp-harness-artifacts``), by sha256."""


@dataclass(frozen=True)
class JobSpec:
    """One plan session of one scenario: the units to run (ids, in plan order) and the keys they
    must have."""

    node: int
    """Index of the scenario in the batch: routes records back to its store."""
    scenario: Scenario
    scenario_path: str
    profile: Profile
    session: int
    units: tuple[str, ...]
    keys: tuple[str, ...]
    fvp_version: str | None = None
    artifacts: Mapping[str, str] = field(default_factory=dict)
    """Host path -> sha256 of every artifact file the scenario names (used when the bytes are
    shipped)."""
    withheld: tuple[tuple[str, str], ...] = ()
    """Secret environment entries whose values this spec does not carry (``withhold_secrets``):
    (section, name), section ``run`` or ``builds.<build>``; the worker takes each value from its own
    environment variable NAME."""

    @property
    def cost(self) -> int:
        """Rough work estimate for balancing lanes: executions to run."""
        run = self.scenario.run
        return len(self.units) * (run.executions + 2)


@dataclass(frozen=True)
class LaneSpec:
    """Jobs that run one after another on one booted instance (same pool)."""

    index: int
    pool: str
    jobs: tuple[JobSpec, ...]
    timeout_scale: float = 1.0
    blobs: Mapping[str, bytes] | None = None
    """sha256 -> bytes of every artifact the jobs need, when shipped by content; None: read the
    paths as given."""

    @property
    def cost(self) -> int:
        return sum(job.cost for job in self.jobs) + BOOT_COST


@dataclass
class JobResult:
    """What one job did. ``records``/``logs`` are filled only when the lane ran away from the store
    (remote)."""

    node: int
    session: int
    units: tuple[str, ...]
    outcomes: list[SessionOutcome] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    logs: dict[str, bytes] = field(default_factory=dict)
    """Path relative to the results folder (``logs/s0/x.log``) -> bytes."""
    error: str | None = None
    error_class: str | None = None
    ran: bool = False


@dataclass
class LaneResult:
    """Every job of a lane that started, in order; ``interrupted`` when a stop request ended it
    early; ``error`` when the lane as a whole failed (its task died with its worker, the scheduler
    went away, the task raised): then the units of its jobs that have no record here did not run,
    for that reason."""

    index: int
    jobs: list[JobResult] = field(default_factory=list)
    interrupted: bool = False
    boots: int = 0
    """Instances booted (more than one when an infrastructure failure forced a fresh instance, or
    the lane went on with another pool's job: pre-booted instances count, used or not)."""
    error: str | None = None
    error_class: str = "infrastructure"
    owned: list[JobSpec] | None = None
    """With work stealing (``LocalExecutor``): the jobs this lane answers for, started or not: its
    dealt jobs no other lane took, and those it took from other lanes. The coordinator explains the
    units of these that got no record (a job is in exactly one lane's list). None: the lane's dealt
    jobs (no stealing, e.g. on Dask)."""


@dataclass(frozen=True)
class LocalRun:
    """What ``run`` (one scenario, on this machine) adds to its lanes: its plan (keys final, nothing
    re-planned), how artifacts are deployed, fresh boots per unit, its ``run.until`` rule (judged
    with a stored baseline) and the instances that booted while the artifacts built
    (``run.preboot.PreBoot.take``). A job's failure that no other instance can help (a
    ``HarnessError`` out of ``execute_plan``) ends the run instead of being recorded."""

    plan: Plan
    deploy: DeployFunction | None = None
    fresh_boot_per_unit: bool = False
    wanted: Callable[[str, int], bool] | None = None
    early: Callable[[str], PreBooted | None] | None = None


@dataclass(frozen=True)
class LaneControl:
    """What the coordinator gives an executor with the lanes: where records, logs and finished lanes
    go, and the events that stop them (see the module docstring). Executors call ``on_lane_done`` in
    the coordinating thread."""

    sink: RecordSink
    results_roots: Mapping[int, Path]
    on_lane_done: Callable[[LaneResult], None]
    drain: threading.Event = field(default_factory=threading.Event)
    abort: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    listener: Listener = null_listener
    run: LocalRun | None = None
    """Set by ``run`` (local executor only)."""
    fail_fast: FailFast | None = None
    """The fail-fast rule (None: ``-k``); when it trips the local executor sets ``drain`` and
    ``halt``."""
    halt: threading.Event = field(default_factory=threading.Event)
    """Like ``stop`` (the units in flight finish, nothing new starts), but the run failed: not
    an interrupt."""


def _cache_root() -> Path:
    return Path(os.environ.get(ARTIFACT_CACHE_ENV) or
                Path(tempfile.gettempdir()) / "fvp-harness-artifacts")


def _materialise(blobs: Mapping[str, bytes], path: str, sha256: str) -> str:
    """Put a shipped artifact into the worker's cache (by content, keeping its file name) and return
    its path."""
    target = _cache_root() / sha256[:2] / sha256 / Path(path).name
    if target.is_file() and target.stat().st_size == len(blobs[sha256]):
        return str(target)
    data = blobs[sha256]
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ConfigurationError(f"shipped artifact {path} arrived damaged (sha256 mismatch)")
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, data, mode=0o755)  # runners must stay executable; harmless for models
    return str(target)


def relocated(scenario: Scenario, blobs: Mapping[str, bytes],
              hashes: Mapping[str, str]) -> Scenario:
    """The scenario with every artifact path pointing at the worker's cached copy (keys do not
    include paths)."""

    def where(path: str) -> str:
        digest = hashes.get(path)
        if digest is None or digest not in blobs:
            raise ConfigurationError(f"artifact {path} was not shipped with the job")
        return _materialise(blobs, path, digest)

    builds = {name: build.model_copy(update={
        "runner": where(build.runner),
        "models": {model: own.model_copy(update={"file": where(own.file)})
                   for model, own in build.models.items()}})
        for name, build in scenario.builds.items()}
    models = {}
    for name, model in scenario.models.items():
        inputs = [item.model_copy(update={"file": where(item.file)}) for item in model.inputs]
        models[name] = model.model_copy(update={"file": where(model.file), "inputs": inputs})
    return scenario.model_copy(update={"builds": builds, "models": models})


def collect_logs(root: Path) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    logs = root / LOGS_DIR
    if logs.is_dir():
        for path in sorted(logs.rglob("*")):
            if path.is_file():
                found[path.relative_to(root).as_posix()] = path.read_bytes()
    return found


WITHHELD = "<secret withheld: taken from the worker's environment>"
"""What a withheld secret's value reads as in a shipped spec (long enough to stay secret by the name
patterns)."""


def withhold_secrets(spec: LaneSpec) -> LaneSpec:
    """The lane without its scenarios' secret values: each secret ``env`` value becomes ``WITHHELD``
    (its name is kept in ``JobSpec.withheld``) and ``vars`` are masked, so a spec sent over a plain
    (unencrypted) connection carries the names, never the values. ``restore_secrets`` puts them back
    on the worker from its environment; the worker's re-plan then checks the keys, so a different
    value there refuses the units (key mismatch)."""
    jobs: list[JobSpec] = []
    for job in spec.jobs:
        scenario = job.scenario
        names = secret_names(scenario)
        if not names:
            jobs.append(job)
            continue
        withheld: list[tuple[str, str]] = [("run", name)
                                           for name in scenario.run.env if name in names]
        builds = {}
        for build_name, build in scenario.builds.items():
            withheld += [(f"builds.{build_name}", name) for name in build.env if name in names]
            builds[build_name] = build.model_copy(update={"env": {
                name: WITHHELD if name in names else value for name, value in build.env.items()}})
        run = scenario.run.model_copy(update={"env": {
            name: WITHHELD if name in names else value
            for name, value in scenario.run.env.items()}})
        hidden = scenario.model_copy(
            update={
                "run": run,
                "builds": builds,
                "vars": redact_data(scenario.vars, scenario.secret_values()),
            }
        )
        jobs.append(replace(job, scenario=hidden, withheld=tuple(withheld)))
    return replace(spec, jobs=tuple(jobs))


def restore_secrets(spec: LaneSpec, environ: Mapping[str, str]) -> LaneSpec:
    """The lane with every withheld secret taken from ``environ`` (the worker's own environment), by
    its ``env`` name. Raises ConfigurationError naming every one that is not set there (nothing
    runs)."""
    missing = sorted({name for job in spec.jobs
                      for _section, name in job.withheld if name not in environ})
    if missing:
        raise ConfigurationError(
            f"secret environment value(s) {', '.join(missing)} are not sent to Dask workers over a "
            "plain connection; set them in each worker's environment under the same names, or use "
            "a tls:// scheduler (distributed's security settings)")
    jobs: list[JobSpec] = []
    for job in spec.jobs:
        if not job.withheld:
            jobs.append(job)
            continue
        scenario = job.scenario
        wanted = set(job.withheld)
        run = scenario.run.model_copy(update={"env": {
            name: environ[name] if ("run", name) in wanted else value
            for name, value in scenario.run.env.items()}})
        builds = {build_name: build.model_copy(update={"env": {
            name: environ[name] if (f"builds.{build_name}", name) in wanted else value
            for name, value in build.env.items()}})
                  for build_name, build in scenario.builds.items()}
        jobs.append(replace(job,
                            scenario=scenario.model_copy(update={"run": run, "builds": builds}),
                            withheld=()))
    return replace(spec, jobs=tuple(jobs))
