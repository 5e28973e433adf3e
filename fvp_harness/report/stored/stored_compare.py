"""Comparisons whose sides were measured by different runs: ``fvp-harness compare RUN_A RUN_B`` and
a scenario's ``compare.baseline_from``."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fvp_harness.errors import ConfigurationError, check_names
from fvp_harness.report import format as fmt
from fvp_harness.report.rendering.context import ReportContext
from fvp_harness.report.rendering.machine import is_simulated
from fvp_harness.report.stats.analysis import analyse
from fvp_harness.report.stats.comparison import compare
from fvp_harness.report.stats.etdump_events import EventReport, compare_traces, load_traces
from fvp_harness.report.stats.findings import Comparison, Expectation, GateCheck, ModelComparison
from fvp_harness.report.stats.result import AnalysisResult
from fvp_harness.scenario.model import Scenario
from fvp_harness.store.folder import ResultStore, StoredRun
from fvp_harness.store.locate import describe_run, find_run
from fvp_harness.store.records import Record

__all__ = [
    "DRIFT_CHECK",
    "RERUN_SUFFIX",
    "Comparability",
    "LoadedRun",
    "PairSpec",
    "RunComparison",
    "StoredBaseline",
    "analyse_with_stored_baseline",
    "comparable",
    "compare_run_events",
    "compare_runs",
    "dotted_get",
    "load_run",
    "load_stored_baseline",
    "run_labels",
    "stored_baseline_events",
]

RERUN_SUFFIX = " (re-run)"
"""Appended to the baseline build's name for the units a ``baseline_from`` run re-measures (the
drift check)."""
DRIFT_CHECK = "drift check"
"""The name of the drift check's expectation rows (kind ``gate``: an unverified one leaves the run
NOT VERIFIED)."""


@dataclass(frozen=True)
class LoadedRun:
    """One stored run as the comparisons read it: where (``run``), its manifest (JSON), its
    scenario, its records of planned keys (all records when the manifest plans none) and the planned
    unit id -> key."""

    run: StoredRun
    manifest: Mapping[str, Any]
    scenario: Scenario
    records: tuple[Record, ...]
    planned: Mapping[str, str] | None

    @property
    def builds(self) -> list[str]:
        """Builds with a record, in the order they first ran."""
        return list(dict.fromkeys(record.build for record in self.records))

    @property
    def models(self) -> list[str]:
        return list(dict.fromkeys(record.model for record in self.records))


def _planned(manifest: Mapping[str, Any], records: Sequence[Record]) -> dict[str, str] | None:
    """``manifest.plan.planned``, on the JSON form (the report layer does not read
    ``run.manifest``): every selected unit but those ``run.until``'s stopping rule spared
    (``plan.spared``: deliberately not run, so never "not run"), plus the plan's other units that
    have a stored record of their planned key."""
    plan = manifest.get("plan")
    keys = plan.get("keys") if isinstance(plan, Mapping) else None
    if not isinstance(keys, Mapping) or not keys:
        return None
    stored: dict[str, set[str]] = {}
    for record in records:
        stored.setdefault(record.unit_id, set()).add(record.key)
    selected = plan.get("selected") if isinstance(plan, Mapping) else None
    wanted = set(keys) if not isinstance(selected, list) else set(selected)
    spared = plan.get("spared") if isinstance(plan, Mapping) else None
    wanted -= set(spared) if isinstance(spared, list) else set()
    return {str(unit): str(key)
            for unit, key in keys.items() if unit in wanted or key in stored.get(unit, set())}


def load_run(run: StoredRun) -> LoadedRun:
    """Read a stored run's manifest, scenario and records; a ConfigurationError names the folder
    when one is missing or unreadable."""
    store = ResultStore(run.path, create=False)
    manifest = store.read_manifest()
    if manifest is None:
        raise ConfigurationError(f"{run.path} has no manifest.json: it is not a stored run (or a "
                                 "run that never started)")
    scenario_info = manifest.get("scenario")
    resolved = scenario_info.get("resolved") if isinstance(scenario_info, Mapping) else None
    if not isinstance(resolved, Mapping):
        resolved = scenario_info if isinstance(scenario_info, Mapping) else None
    try:
        scenario = Scenario.model_validate(resolved)
    except ValueError as exc:
        raise ConfigurationError(f"{store.manifest_path}: the stored scenario is not valid for "
                                 f"this fvp-harness ({exc}); compare runs made by the same "
                                 "version") from exc
    records = store.records()
    planned = _planned(manifest, records)
    if planned is not None:
        records = [record for record in records if planned.get(record.unit_id) == record.key]
    return LoadedRun(run, manifest, scenario, tuple(records), planned)


# --- may these two runs be compared? --------------------------------------------------------------


@dataclass(frozen=True)
class Comparability:
    """What ``comparable`` found: ``problems`` make a comparison meaningless (refuse), ``warnings``
    do not."""

    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def raise_if_refused(self, what: str) -> None:
        """A ConfigurationError (exit 2) listing every problem, when there is one."""
        if self.problems:
            raise ConfigurationError(f"{what}: the two runs measured different things, so their "
                                     "numbers cannot be compared:\n"
                                     + "\n".join(f"  {problem}" for problem in self.problems)
                                     + "\nmeasure both with the same platform, model files and run "
                                       "settings (or "
                                     "compare builds inside one run)")


def dotted_get(data: Mapping[str, Any], dotted: str) -> Any:
    """``data["a"]["b"]`` for ``"a.b"``; None where a level is missing or not a mapping (manifests
    of older runs)."""
    value: Any = data
    for part in dotted.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _shown(value: Any, at: int = 0) -> str:
    """``repr(value)`` in at most 80 characters; a long one from a little before index ``at`` (where
    it differs from the other side), so the difference is in what is shown."""
    if value is _ABSENT:
        return "(absent)"
    text = repr(value)
    if len(text) <= 80:
        return text
    start = max(0, min(at - 20, len(text) - 77))
    shown = text[start:start + 77]
    return ("..." if start else "") + shown + ("..." if start + 77 < len(text) else "")


_ABSENT = object()
"""A key one side's mapping lacks (shown ``(absent)``)."""


def _differences(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Where ``a`` and ``b`` differ, as (dotted path, left, right): mappings key by key, lists of
    one length item by item, anything else whole."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        found: list[tuple[str, Any, Any]] = []
        for key in sorted(set(a) | set(b), key=str):
            where = f"{path}.{key}" if path else str(key)
            found += _differences(a.get(key, _ABSENT), b.get(key, _ABSENT), where)
        return found
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        pairs = enumerate(zip(a, b, strict=True))
        return [d for i, (x, y) in pairs for d in _differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path, a, b)]


def _differs(name: str, a: Any, b: Any, sides: tuple[str, str] = ("A", "B")) -> str:
    """``name: left (A) -> right (B)``; for mappings and lists each differing field by its path with
    both values (``fvp.params (model parameters): cpu0.clock: 100 (A) -> 200 (B)``), so a refusal
    names what differs however large the rest."""
    found = _differences(a, b)
    parts = []
    for path, left, right in found or [("", a, b)]:
        at = _first_difference(repr(left), repr(right))
        pair = f"{_shown(left, at)} ({sides[0]}) -> {_shown(right, at)} ({sides[1]})"
        parts.append(f"{path}: {pair}" if path else pair)
    return f"{name}: " + "; ".join(parts)


def _first_difference(left: str, right: str) -> int:
    pairs = enumerate(zip(left, right, strict=False))  # the shorter one may end where they differ
    return next((i for i, (x, y) in pairs if x != y), min(len(left), len(right)))


_REFUSED_FIELDS = (
    ("platform", "platform"),
    ("scenario.resolved.target", "target"),
    ("fvp.binary", "fvp.binary"),
    ("fvp.params", "fvp.params (model parameters)"),
    ("fvp.args", "fvp.args"),
    ("parsers_version", "parsers version (how values are read from the output)"),
    ("scenario.resolved.run.command", "run.command"),
    ("scenario.resolved.run.warmup", "run.warmup"),
    ("scenario.resolved.run.env", "run.env"),
    ("options.fresh_boot_per_unit", "--fresh-boot-per-unit"),
)
_WARNED_FIELDS = (
    ("harness_version", "harness version"),
    ("host.hostname", "host"),
    ("host.machine", "host machine"),
    ("host.cpus", "host CPUs"),
    ("host.python", "Python"),
    ("scenario.resolved.run.iterations", "run.iterations"),
    ("scenario.resolved.run.repetitions", "run.repetitions"),
    ("scenario.resolved.run.order", "run.order"),
    ("fvp.sim", "simulator knobs (fvp.sim)"),
    ("scenario.name", "scenario name"),
)


def _fvp_identity(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The model's identity without what does not change the platform: a real binary's mtime, and
    the simulator's version (the harness version, warned about separately)."""
    identity = dict(dotted_get(manifest, "fvp.identity") or {})
    identity.pop("mtime_ns", None)
    if identity.get("binary") == "sim":
        identity.pop("version", None)
    version = dotted_get(manifest, "fvp.version")
    if identity.get("binary") != "sim" and version is not None:
        identity["reported"] = version
    return identity


def comparable(a: Mapping[str, Any], b: Mapping[str, Any], *, models: Iterable[str],
               builds: Iterable[str] = (),
               metrics: Iterable[str] = (), sides: tuple[str, str] = ("A", "B")) -> Comparability:
    """Whether runs with manifests ``a`` and ``b`` measured the same thing for ``models`` (and the
    metric definitions of ``metrics``); ``builds``' environment and arguments are compared for
    warnings only (their runners are what is compared). See the module docstring for the rules.
    ``sides`` name the two runs in the messages."""
    problems: list[str] = []
    warnings: list[str] = []

    def _differ(name: str, left: Any, right: Any) -> str:
        return _differs(name, left, right, sides)

    for path, name in _REFUSED_FIELDS:
        if dotted_get(a, path) != dotted_get(b, path):
            problems.append(_differ(name, dotted_get(a, path), dotted_get(b, path)))
    if dotted_get(a, "platform") == dotted_get(b, "platform"):
        # fields only one side has are a newer harness's additions (warned about as the harness
        # version)
        left, right = dotted_get(a, "profile") or {}, dotted_get(b, "profile") or {}
        keys = sorted(k for k in set(left) & set(right) if left.get(k) != right.get(k))
        if keys:
            problems.append(f"platform profile {dotted_get(a, 'platform')}: its definition differs "
                            f"({', '.join(keys)})")
    if _fvp_identity(a) != _fvp_identity(b):
        problems.append(_differ("FVP identity", _fvp_identity(a), _fvp_identity(b)))
    artifacts_a, artifacts_b = dotted_get(a, "artifacts") or {}, dotted_get(b, "artifacts") or {}
    for name in sorted(set(artifacts_a) | set(artifacts_b)):
        if name.startswith("fvp.firmware.") and artifacts_a.get(name) != artifacts_b.get(name):
            problems.append(_differ(f"{name} sha256", artifacts_a.get(name), artifacts_b.get(name)))
    for model in models:
        for name in sorted(set(artifacts_a) | set(artifacts_b)):
            ours = name == f"models.{model}.file" or name.startswith(f"models.{model}.inputs[")
            if ours and artifacts_a.get(name) != artifacts_b.get(name):
                what = "input file" if ".inputs[" in name else "model file"
                problems.append(f"{model}: {what} bytes differ ({name}: sha256 "
                                f"{str(artifacts_a.get(name))[:12]} ({sides[0]}) -> "
                                f"{str(artifacts_b.get(name))[:12]} ({sides[1]}))")
    specs_a = {m.get("name"): m for m in (dotted_get(a, "scenario.resolved.metrics") or [])
               if isinstance(m, Mapping)}
    specs_b = {m.get("name"): m for m in (dotted_get(b, "scenario.resolved.metrics") or [])
               if isinstance(m, Mapping)}
    for metric in metrics:
        if metric in specs_a and metric in specs_b and specs_a[metric] != specs_b[metric]:
            problems.append(_differ(f"metric {metric} definition", specs_a[metric],
                                    specs_b[metric]))
    for path, name in _WARNED_FIELDS:
        if dotted_get(a, path) != dotted_get(b, path):
            warnings.append(_differ(name, dotted_get(a, path), dotted_get(b, path)))
    for build in builds:
        # a build's own compiled models: part of the build
        for name in sorted(set(artifacts_a) | set(artifacts_b)):
            if (name.startswith(f"builds.{build}.models.") and
                artifacts_a.get(name) != artifacts_b.get(name)):
                warnings.append(_differ(f"{name} sha256 (this build's own model file)",
                                        artifacts_a.get(name), artifacts_b.get(name)))
        for part in ("env", "args"):
            left, right = (
                dotted_get(a, f"builds.{build}.{part}"),
                dotted_get(b, f"builds.{build}.{part}"),
            )
            if left != right:
                warnings.append(_differ(f"build {build} {part}", left, right))
    status = dotted_get(a, "status")
    # B may be the run in progress (baseline_from): only A must be finished
    if status != "complete":
        warnings.append(f"run {sides[0]} ({dotted_get(a, 'run.id')}) is {status}, not complete: it "
                        "may lack units")
    if sides == ("A", "B") and dotted_get(b, "status") != "complete":
        status_b = dotted_get(b, "status")
        warnings.append(f"run B ({dotted_get(b, 'run.id')}) is {status_b}, not complete: it may "
                        "lack units")
    if dotted_get(a, "run.id") is not None and dotted_get(a, "run.id") == dotted_get(b, "run.id"):
        warnings.append(f"{sides[0]} and {sides[1]} are the same run ({dotted_get(a, 'run.id')}): "
                        "every difference is noise")
    return Comparability(tuple(problems), tuple(warnings))


# --- a spec for labelled pairs --------------------------------------------------------------------


@dataclass(frozen=True)
class PairSpec:
    """A comparison spec (``analysis.CompareLike``) over labelled builds: every ``build_pairs``
    entry is one ``(baseline, candidate)``; the rest as the scenario's ``compare`` says."""

    build_pairs: tuple[tuple[str, str], ...]
    primary: str | list[str] = "cpu_time"
    expect_identical: Sequence[object] = ()
    min_effect: float = 1.0
    gates: Mapping[str, Any] = field(default_factory=dict)

    @property
    def baseline(self) -> str:
        return self.build_pairs[0][0]

    @property
    def candidate(self) -> str:
        return self.build_pairs[0][1]


def _relabelled(records: Iterable[Record], label: str, builds: set[str],
                models: set[str]) -> list[Record]:
    return [record.model_copy(update={"build": f"{record.build}@{label}",
                                      "unit_id": f"{record.unit_id}@{label}"})
            for record in records if record.build in builds and record.model in models]


def run_labels(a: StoredRun, b: StoredRun) -> tuple[str, str]:
    """Short names of two runs for build labels: their commits (7 digits) when both recorded
    different ones, else ``A`` and ``B`` (the report's context line says which run each is)."""
    if a.commit and b.commit and a.commit[:7] != b.commit[:7]:
        return a.commit[:7], b.commit[:7]
    return "A", "B"


@dataclass(frozen=True)
class RunComparison:
    """``compare_runs``' answer: the analysis (one comparison per build and metric, labelled
    builds), the report's context and title, the builds and models compared, and the warnings of
    ``comparable``."""

    result: AnalysisResult
    context: ReportContext
    title: str
    builds: tuple[str, ...]
    models: tuple[str, ...]
    warnings: tuple[str, ...]
    labels: tuple[str, str]


def _build_text(manifest: Mapping[str, Any], build: str, run: StoredRun) -> str:
    bits = [describe_run(run)]
    sha = dotted_get(manifest, f"builds.{build}.sha256")
    if sha:
        bits.append(f"runner sha256 `{str(sha)[:12]}`")
    return ", ".join(bits)


def compare_runs(a: LoadedRun, b: LoadedRun, *, metrics: Sequence[str] = (),
                 builds: Sequence[str] = ()) -> RunComparison:
    """Run B against run A (A is the baseline) for every build and model both have records of
    (``builds``: only these), on ``metrics`` (each its own comparison per build; default: the
    scenario's ``compare.primary``).

    Refuses (ConfigurationError, exit 2) when ``comparable`` finds a problem, or when the runs share
    no build and model; a ``builds`` or ``metrics`` name that both runs did not measure is
    ``UnknownName`` (exit 2)."""
    common_builds = [name for name in b.builds if name in set(a.builds)]
    if builds:
        check_names("--build", builds, common_builds, what="build",
                    plural="the builds both runs measured")
        common_builds = [name for name in common_builds if name in builds]
    if metrics:  # checked before the refusal rules: a typo is the first thing to hear about
        measured = [{name for r in side.records if r.build in common_builds for name in r.samples}
                    for side in (a, b)]
        check_names("--metric", metrics, sorted(measured[0] & measured[1]), what="metric",
                    plural="the metrics both runs measured")
    common_models = [name for name in b.models if name in set(a.models)]
    if not common_builds or not common_models:
        raise ConfigurationError(
            f"nothing to compare: run A ({a.run.path}) has builds {', '.join(a.builds) or 'none'} "
            f"and models {', '.join(a.models) or 'none'}; run B ({b.run.path}) has builds "
            f"{', '.join(b.builds) or 'none'} and models {', '.join(b.models) or 'none'}")
    spec_source = b.scenario.compare or a.scenario.compare
    primary: str | list[str] = spec_source.primary if spec_source is not None else _first_metric(b)
    # one comparison per metric (or the primary list)
    wanted: list[str | list[str]] = list(metrics) or [primary]
    names = {m for item in wanted for m in ([item] if isinstance(item, str) else item)}
    check = comparable(a.manifest, b.manifest, models=common_models, builds=common_builds,
                       metrics=sorted(names | {"npu_cycles"}))
    check.raise_if_refused(f"compare {a.run.path} {b.run.path}")
    la, lb = run_labels(a.run, b.run)
    keep_builds, keep_models = set(common_builds), set(common_models)
    records = _relabelled(a.records, la, keep_builds, keep_models) + _relabelled(
        b.records, lb, keep_builds, keep_models
    )
    planned = None
    if a.planned is not None and b.planned is not None:
        planned = {}
        for side, label in ((a, la), (b, lb)):
            for unit_id, key in (side.planned or {}).items():
                if _unit_in(unit_id, side.records, keep_builds, keep_models):
                    planned[f"{unit_id}@{label}"] = key
    pairs = tuple((f"{build}@{la}", f"{build}@{lb}") for build in common_builds)
    expect = list(spec_source.expect_identical) if spec_source is not None else ["outputs"]
    gates = dict(spec_source.gates) if spec_source is not None else {}
    min_effect = spec_source.min_effect if spec_source is not None else 1.0
    scenario_metrics = b.scenario.metrics
    first = wanted[0]
    result = analyse(records, PairSpec(pairs, first, expect, min_effect, gates), scenario_metrics,
                     planned=planned)
    comparisons = list(result.comparisons)
    for metric in wanted[1:]:
        spec = PairSpec(pairs, metric, expect, min_effect, gates)
        comparisons += [compare(result.frame, spec, scenario_metrics, units=result.units,
                                settings=result.settings, pair=pair) for pair in pairs]
    if len(wanted) > 1:
        result = dataclasses.replace(result, comparisons=tuple(comparisons))
    context = ReportContext.from_manifest(b.manifest)
    builds_text = {f"{build}@{la}": _build_text(a.manifest, build, a.run)
                   for build in common_builds}
    builds_text.update({f"{build}@{lb}": _build_text(b.manifest, build, b.run)
                        for build in common_builds})
    context = dataclasses.replace(context, builds=builds_text,  # simulated when either run was
                                  simulated=context.simulated or is_simulated(a.manifest))
    title = f"{b.scenario.name}: {lb} vs {la}"
    return RunComparison(result, context, title, tuple(common_builds), tuple(common_models),
                         check.warnings, (la, lb))


def compare_run_events(a: LoadedRun, b: LoadedRun, done: RunComparison) -> EventReport | None:
    """The ETDump event section of ``compare A B``: each run's traces of the compared builds and
    models, read from its own folder and labelled as ``compare_runs`` labels its records
    (``after@A``), then compared event by event exactly as a run's report compares its two builds
    (``etdump_events.compare_traces``, on the comparison's bootstrap settings and the runs' warm-up,
    which ``comparable`` requires to be equal). When only one run kept traces, a section of one line
    says which; when neither did (and no file was unreadable), None: no section."""
    traces = []
    warnings: list[str] = []
    kept: list[str] = []
    builds, models = set(done.builds), set(done.models)
    for name, side, label in (("A", a, done.labels[0]), ("B", b, done.labels[1])):
        records = [record
                   for record in side.records if record.build in builds and record.model in models]
        found, unreadable = load_traces(side.run.path, records, side.planned, label=label)
        traces += found
        warnings += [f"run {name}: {warning}" for warning in unreadable]
        if found:
            kept.append(name)
    if not traces and not warnings:
        return None
    pairs = [(c.baseline, c.candidate) for c in done.result.comparisons]
    report = compare_traces(traces, pairs, done.result.settings, warmup=b.scenario.run.warmup,
                            warnings=warnings)
    if len(kept) == 1:
        only, other = kept[0], "B" if kept[0] == "A" else "A"
        traced = ", ".join(dict.fromkeys(trace.build for trace in traces))
        note = (f"Only run {only} kept ETDump traces ({traced}); run {other} has none, so there is "
                "no event-by-event comparison: trace the builds in both runs "
                "(`builds.<name>.traced`).")
        report = dataclasses.replace(report, note=note)
    return report


def _unit_in(unit_id: str, records: Sequence[Record], builds: set[str], models: set[str]) -> bool:
    """Whether a planned unit belongs to ``builds`` x ``models``: by its record, or (a unit that did
    not run, so it is reported as not run rather than silently left out) by its id
    ``r<rep>-<build>-<model>``."""
    record = next((r for r in records if r.unit_id == unit_id), None)
    if record is not None:
        return record.build in builds and record.model in models
    return any(unit_id.split("-", 1)[-1] == f"{build}-{model}" for build in builds
               for model in models)


def _first_metric(run: LoadedRun) -> str:
    for record in run.records:
        for name in record.samples:
            return name
    return "cpu_time"


# --- a baseline taken from a stored run -----------------------------------------------------------


@dataclass(frozen=True)
class _DriftSpec:
    """The drift check as a comparison: the stored baseline against its re-run units, on the primary
    metric, with ``max_shift`` as the minimum effect (so ``no change`` means within it)."""

    baseline: str
    candidate: str
    primary: str
    min_effect: float
    expect_identical: Sequence[object] = ()


def _stored_baseline_spec(scenario: Scenario, manifest: Mapping[str, Any]) -> str | None:
    """The run ``baseline_from`` names, as this run pinned it in its manifest (``run.baseline.pin``)
    when it did."""
    pinned = dotted_get(manifest, "scenario.resolved.compare.baseline_from")
    if isinstance(pinned, str) and pinned:
        return pinned
    return scenario.compare.baseline_from if scenario.compare is not None else None


@dataclass(frozen=True)
class StoredBaseline:
    """The baseline a ``compare.baseline_from`` run compares with: the stored run (``run``,
    ``loaded``) and its records of the baseline build, unit ids labelled ``<unit>@<run id>``
    (``records``), as the report analyses them; ``baseline`` the build's name."""

    run: StoredRun
    loaded: LoadedRun
    baseline: str
    records: tuple[Record, ...]

    @property
    def label(self) -> str:
        return self.run.run_id

    def merged(self, records: Iterable[Record]) -> list[Record]:
        """This run's ``records`` with the re-run baseline units as ``<baseline> (re-run)`` (the
        stored records alone are the baseline); without the stored records themselves."""
        rerun = self.baseline + RERUN_SUFFIX
        return [record.model_copy(update={"build": rerun}) if record.build == self.baseline
                else record for record in records]


def load_stored_baseline(scenario: Scenario, manifest: Mapping[str, Any],
                         results_dir: Path) -> StoredBaseline:
    """The stored run a ``compare.baseline_from`` run (``manifest``, in ``results_dir``) takes its
    baseline from, as pinned in its manifest. A ConfigurationError when it cannot be found, is this
    very run, has no baseline records, or measured something else (``comparable``). The report and
    ``run.until``'s stopping rule both read it here, so the rule judges on exactly the baseline
    samples the report shows."""
    compare_spec = scenario.compare
    spec_text = _stored_baseline_spec(scenario, manifest)
    if compare_spec is None or not spec_text:
        raise ConfigurationError("a stored baseline needs a scenario with compare.baseline_from")
    baseline = compare_spec.baseline
    stored_run = find_run(spec_text, results_base=results_dir.parent, scenario_folder=results_dir)
    if stored_run.run_id == dotted_get(manifest, "run.id"):
        raise ConfigurationError(f"compare.baseline_from {spec_text!r} names this very run "
                                 f"({stored_run.run_id}); name an earlier run (e.g. SCENARIO@main)")
    stored = load_run(stored_run)
    stored_records = [record for record in stored.records if record.build == baseline]
    if not stored_records:
        raise ConfigurationError(f"compare.baseline_from: {describe_run(stored_run)} in "
                                 f"{stored_run.path} has no record of build {baseline!r} (it has: "
                                 f"{', '.join(stored.builds) or 'none'})")
    models = list(scenario.models)
    check = comparable(stored.manifest, manifest, models=models, builds=(),
                       metrics=[*compare_spec.primary_candidates, "npu_cycles"],
                       sides=("stored", "this run"))
    check.raise_if_refused(f"compare.baseline_from {spec_text!r}")
    label = stored_run.run_id
    labelled = tuple(record.model_copy(update={"unit_id": f"{record.unit_id}@{label}"})
                     for record in stored_records)
    return StoredBaseline(stored_run, stored, baseline, labelled)


def analyse_with_stored_baseline(
    records: Sequence[Record],
    scenario: Scenario,
    manifest: Mapping[str, Any],
    planned: Mapping[str, str] | None,
    results_dir: Path,
    stored_baseline: StoredBaseline | None = None,
) -> tuple[AnalysisResult, ReportContext]:
    """The report analysis of a run whose ``compare.baseline_from`` names a stored run: that run's
    baseline records as the baseline, this run's re-run baseline units as ``<baseline> (re-run)``
    (the drift check), everything else as measured. ``stored_baseline``: ``load_stored_baseline``'s
    answer when the caller has it already. A ConfigurationError as ``load_stored_baseline``
    raises."""
    compare_spec = scenario.compare
    if compare_spec is None:
        raise ConfigurationError("analyse_with_stored_baseline needs a scenario with "
                                 "compare.baseline_from")
    source = stored_baseline or load_stored_baseline(scenario, manifest, results_dir)
    stored_run, stored, baseline, label = source.run, source.loaded, source.baseline, source.label
    stored_records = [record for record in stored.records if record.build == baseline]
    models = list(scenario.models)
    rerun = baseline + RERUN_SUFFIX
    merged = [*source.records, *source.merged(records)]
    merged_planned: dict[str, str] | None = None
    if planned is not None:
        merged_planned = dict(planned)
        for unit_id, key in (stored.planned or {}).items():
            if _unit_in(unit_id, stored_records, {baseline}, set(models)):
                merged_planned[f"{unit_id}@{label}"] = key
    result = analyse(merged, compare_spec, scenario.metrics, planned=merged_planned)
    result = _apply_drift_check(result, baseline, rerun, compare_spec.drift_check.max_shift,
                                compare_spec.drift_check.units)
    context = ReportContext.from_manifest(manifest)
    # the stored baseline's units ran on the simulator
    if is_simulated(stored.manifest) and not context.simulated:
        context = dataclasses.replace(context, simulated=True)
    builds_text = dict(context.builds)
    builds_text[baseline] = "stored " + _build_text(stored.manifest, baseline, stored_run)
    drift = _drift_summary(result, rerun, compare_spec.drift_check.units)
    if drift:
        builds_text[rerun] = drift
    return result, dataclasses.replace(context, builds=builds_text)


def stored_baseline_events(records: Sequence[Record], result: AnalysisResult, root: Path,
                           stored: StoredBaseline, *,
                           warmup: int = 0,
                           planned: Mapping[str, str] | None = None) -> EventReport | None:
    """The ETDump event section of a ``compare.baseline_from`` run: this run's traces of the builds
    it measured (its re-run baseline units left out: they are the drift check, not the baseline)
    against the stored run's traces of the baseline build, read from the stored run's folder as
    ``compare_run_events`` reads each run's, units named ``<unit>@<run id>`` as the report names
    their records. When only one side kept traces, a section of one line says which; when neither
    did (and no file was unreadable), None: no section."""
    models = {record.model for record in records}  # this run's models: the stored run may have more
    ours = [record for record in records if record.build != stored.baseline]
    traces, warnings = load_traces(root, ours, planned)
    base_records = [record for record in stored.loaded.records
                    if record.build == stored.baseline and record.model in models]
    found, unreadable = load_traces(stored.run.path, base_records, stored.loaded.planned)
    label = stored.label
    traces += [dataclasses.replace(trace, unit_id=f"{trace.unit_id}@{label}") for trace in found]
    warnings += [f"stored run {label}: {warning}" for warning in unreadable]
    if not traces and not warnings:
        return None
    pairs = [(c.baseline, c.candidate) for c in result.comparisons]
    report = compare_traces(traces, pairs, result.settings, warmup=warmup, warnings=warnings)
    against = {candidate for baseline, candidate in pairs if baseline == stored.baseline}
    ours_traced = list(dict.fromkeys(t.build for t in traces if t.build in against))
    if against and not found and ours_traced:
        note = (f"The stored baseline run {label} kept no ETDump traces of {stored.baseline}, so "
                f"there is no event-by-event comparison of {', '.join(ours_traced)} against it: "
                f"trace {stored.baseline} in the stored run (`builds.<name>.traced`).")
        report = dataclasses.replace(report, note=note)
    elif against and found and not ours_traced:
        note = (f"Only the stored baseline run {label} kept ETDump traces ({stored.baseline}); "
                f"this run traced none of {', '.join(sorted(against))}, so there is no "
                "event-by-event comparison: trace the builds in this run (`builds.<name>.traced`).")
        report = dataclasses.replace(report, note=note)
    return report


def _drift_summary(result: AnalysisResult, rerun: str, units: int) -> str:
    rows = [e for c in result.comparisons
            for e in c.expectations if e.kind == "gate" and e.name == DRIFT_CHECK]
    if not units:
        return ("no drift check (drift_check.units: 0): a platform change cannot be told from a "
                "code change")
    if not rows:
        return f"drift check: no {rerun} unit measured"
    def state(e: Expectation) -> str:
        if e.status == "pass":
            return "steady"
        return "MOVED" if "platform moved" in e.detail else "not verified"

    return "drift check: " + ", ".join(f"{e.model} {state(e)}" for e in rows)


def _apply_drift_check(result: AnalysisResult, baseline: str, rerun: str, max_shift: float,
                       units: int) -> AnalysisResult:
    """Judge the re-run baseline units against the stored baseline and fold the outcome into the
    comparisons against ``baseline``: one ``drift check`` expectation per re-run model (pass: within
    ±max_shift; unverified otherwise; one unverified row when ``units`` were asked for and none was
    measured), and when any moved, every verdict against the stored baseline inconclusive."""
    against = [c for c in result.comparisons if c.baseline == baseline]
    if not against or not units:
        return result
    if not len(result.frame) or rerun not in set(result.frame["build"]):
        missing = Expectation("gate", "(all)", DRIFT_CHECK, "unverified",
                              f"no {baseline} unit was re-run and measured (drift_check.units: "
                              f"{units}; they are dealt over the scenario's models from the first "
                              "one, so --only-model may leave them out): nothing shows the "
                              "platform did not move", f"±{max_shift:g}%")
        top = against[0]
        patched = dataclasses.replace(top, expectations=(*top.expectations, missing))
        return dataclasses.replace(
            result, comparisons=tuple(patched if c is top else c for c in result.comparisons)
        )
    primary = against[0].primary
    drift = compare(result.frame, _DriftSpec(baseline, rerun, primary, max_shift), (),
                    settings=result.settings)
    checks: list[Expectation] = []
    moved: list[str] = []
    for row in drift.models:
        if row.n_candidate == 0:
            continue  # this model was not re-run
        shift = None if row.ratio is None else 100.0 * (row.ratio - 1.0)
        shown = "n/a" if shift is None else fmt.signed_percent(shift, 1)
        ci = ("no CI" if row.ci_low is None or row.ci_high is None
              else f"CI {fmt.signed_percent(-row.ci_high, 1)} … "
                   f"{fmt.signed_percent(-row.ci_low, 1)}")
        head = f"{rerun} {shown} vs the stored run ({ci}, n={row.n_candidate})"
        if row.verdict == "no change":
            checks.append(Expectation("gate", row.model, DRIFT_CHECK, "pass",
                                      f"{head}: within ±{max_shift:g}%, the platform is steady",
                                      f"±{max_shift:g}%"))
        elif row.verdict in ("faster", "slower"):
            moved.append(f"{row.model} {shown}")
            checks.append(Expectation("gate", row.model, DRIFT_CHECK, "unverified",
                                      f"{head}: beyond ±{max_shift:g}%, the platform moved; every "
                                      f"verdict against the stored {baseline} is inconclusive",
                                      f"±{max_shift:g}%"))
        else:
            checks.append(Expectation("gate", row.model, DRIFT_CHECK, "unverified",
                                      f"{head}: cannot tell whether it is within ±{max_shift:g}% "
                                      f"({row.reason}); re-run more units (drift_check.units) or "
                                      "iterations", f"±{max_shift:g}%"))
    why = (f"the platform moved since the stored baseline (drift check: {', '.join(moved)})"
           if moved else "")
    comparisons: list[Comparison] = []
    first = True
    for comparison in result.comparisons:
        if comparison.baseline == baseline:
            if why:
                comparison = _inconclusive(comparison, why)
            if first:
                comparison = dataclasses.replace(comparison,
                                                 expectations=(*comparison.expectations, *checks))
                first = False
        comparisons.append(comparison)
    return dataclasses.replace(result, comparisons=tuple(comparisons))


def _inconclusive(comparison: Comparison, why: str) -> Comparison:
    """The comparison with every statistical verdict made inconclusive for ``why`` (exact identity
    checks stand: equal bytes are equal on any platform)."""

    def model(row: ModelComparison) -> ModelComparison:
        identity = tuple(dataclasses.replace(check, status="unverified",
                                             detail=f"{check.detail}; {why}")
                         if check.tolerance and check.status != "unverified" else check
                         for check in row.identity)
        if row.verdict == "not measured":
            return dataclasses.replace(row, identity=identity)
        return dataclasses.replace(row, verdict="inconclusive", reason=why, identity=identity)

    def gate(check: GateCheck) -> GateCheck:
        if check.verdict == "not measured":
            return check
        return dataclasses.replace(check, verdict="inconclusive", status="unverified",
                                   detail=f"{check.detail}; {why}")

    def expectation(e: Expectation) -> Expectation:
        statistical = e.kind in ("gate", "min_effect") or (e.kind == "identity" and bool(e.limit))
        if not statistical or e.status == "unverified":
            return e
        return dataclasses.replace(e, status="unverified",
                                   detail=f"inconclusive: {e.detail}; {why}")

    geomean = comparison.geomean
    if geomean is not None:
        geomean = dataclasses.replace(geomean, verdict="inconclusive", reason=why)
    return dataclasses.replace(comparison, models=tuple(model(row) for row in comparison.models),
                               gates=tuple(gate(check) for check in comparison.gates),
                               expectations=tuple(expectation(e) for e in comparison.expectations),
                               geomean=geomean)
