"""Adaptive sampling (``run.until``): after each round of units, which models still need
repetitions, and why the others stopped.

Why it is shaped so: docs/architecture.md, "Inside `run/`"."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, Protocol

from fvp_harness.report.stored.summary_cache import (
    ANALYSIS_MODULES,
    SummaryCache,
    cache_key,
    records_digest,
)
from fvp_harness.store.records import Record

# the analysis (pandas, scipy) loads only when a round is judged: ``make``'s check needs none
if TYPE_CHECKING:
    from fvp_harness.report.stats.findings import ModelComparison
    from fvp_harness.report.stats.spec import CompareLike, Settings

__all__ = [
    "STOP_REASONS",
    "ModelSampling",
    "SamplingState",
    "StoppingRule",
    "UntilLike",
    "advance",
    "complete_rounds",
    "judge",
    "planned_units",
    "primary_comparisons",
    "replay",
    "round_builds",
    "spared_units",
    "start",
    "unit_parts",
    "unsampled",
]

StopReason = Literal["ci_width", "verdict settled", "max_repetitions", "no sample"]
STOP_REASONS: tuple[StopReason, ...] = (
    "ci_width", "verdict settled", "max_repetitions", "no sample")


class UntilLike(Protocol):
    """``scenario.Until``: the target full width of the saved-% CI in points, and the repetition
    bounds."""

    @property
    def ci_width(self) -> float: ...
    @property
    def min_repetitions(self) -> int: ...
    @property
    def max_repetitions(self) -> int: ...


@dataclass(frozen=True)
class ModelSampling:
    """Where one model stands: ``repetitions`` complete rounds judged, ``reason`` why it stopped
    (None while it still needs rounds), ``detail`` the numbers behind the decision (widths,
    verdicts)."""

    model: str
    repetitions: int = 0
    reason: StopReason | None = None
    detail: str = ""

    @property
    def stopped(self) -> bool:
        return self.reason is not None


@dataclass(frozen=True)
class SamplingState:
    """Every model's ``ModelSampling``, in the plan's model order."""

    models: tuple[ModelSampling, ...]

    def running(self) -> list[str]:
        """Models that need another round."""
        return [m.model for m in self.models if not m.stopped]

    def get(self, model: str) -> ModelSampling:
        for item in self.models:
            if item.model == model:
                return item
        raise KeyError(model)

    @property
    def done(self) -> bool:
        return all(m.stopped for m in self.models)


def start(models: Sequence[str]) -> SamplingState:
    """The state before any round: every model running."""
    return SamplingState(tuple(ModelSampling(model) for model in dict.fromkeys(models)))


def complete_rounds(records: Iterable[Record], model: str, builds: Sequence[str]) -> int:
    """How many leading rounds of ``model`` are complete: the largest r such that every repetition
    0..r-1 (the plan numbers repetitions from 0) has a record (any status: a failed unit is a
    measured failure, reported as such) for every build."""
    seen: dict[str, set[int]] = {build: set() for build in builds}
    for record in records:
        if record.model == model and record.build in seen:
            seen[record.build].add(record.repetition)
    rounds = 0
    while seen and all(rounds in reps for reps in seen.values()):
        rounds += 1
    return rounds


def _width(item: ModelComparison) -> float | None:
    if item.exact:  # one number in every sample: more rounds would narrow nothing
        return 0.0
    if item.ci_low is None or item.ci_high is None:
        return None
    return item.ci_high - item.ci_low


def _settled(item: ModelComparison, min_effect: float) -> bool:
    """A decided verdict whose CI lies at least its own width away from every boundary
    (±min_effect)."""
    width = _width(item)
    if width is None or item.ci_low is None or item.ci_high is None:
        return False
    if item.verdict == "faster":
        margin = item.ci_low - min_effect
    elif item.verdict == "slower":
        margin = -min_effect - item.ci_high
    elif item.verdict == "no change":
        margin = min(item.ci_low + min_effect, min_effect - item.ci_high)
    else:
        return False
    return margin >= width


def judge(rows: Sequence[ModelComparison], until: UntilLike,
          min_effect: float) -> tuple[StopReason, str] | None:
    """Whether a model with these comparisons (one per pair) may stop, and why; None when it needs
    more rounds.

    ``rows`` empty (the model is in no comparison) stops it on ``ci_width`` at once: there is no
    question more samples would answer."""
    if not rows:
        return "ci_width", "no comparison to narrow"
    widths = [_width(row) for row in rows]
    shown = ", ".join("no CI" if w is None else f"{w:.2f}" for w in widths)
    if all(w is not None and w <= until.ci_width for w in widths):
        return "ci_width", f"CI width {shown} points <= {until.ci_width:g}"
    if all(_settled(row, min_effect) for row in rows):
        verdicts = ", ".join(row.verdict for row in rows)
        return "verdict settled", (f"{verdicts}: CI width {shown} points, at least that far from "
                                   f"±{min_effect:g}%")
    return None


def unsampled(records: Iterable[Record], model: str, builds: Sequence[str], rounds: int
              ) -> tuple[StopReason, str] | None:
    """``no sample`` when a build of ``model`` has no ok record after its complete ``rounds`` (at
    least one): no comparison can be judged, so more rounds would only repeat the failure up to
    ``max_repetitions``."""
    ok = {record.build for record in records if record.model == model and record.status == "ok"}
    missing = [build for build in builds if build not in ok]
    if rounds < 1 or not missing:
        return None
    plural = "s" * (rounds > 1)
    return "no sample", f"no ok sample of {', '.join(missing)} after {rounds} repetition{plural}"


def primary_comparisons(records: Iterable[Record], spec: CompareLike,
                        settings: Settings | None = None
                        ) -> list[tuple[tuple[str, str], tuple[ModelComparison, ...]]]:
    """``report.analysis.primary_comparisons``, loaded when a round is first judged."""
    # late: pandas and scipy load only when a round is really judged (not for make's up-to-date
    # check)
    from fvp_harness.report.stats.analysis import primary_comparisons as rows

    return rows(records, spec, settings)


def advance(state: SamplingState, records: Sequence[Record], spec: CompareLike | None,
            until: UntilLike, *,
            builds: Sequence[str], metrics: Sequence[object] = (), settings: Settings | None = None,
            fixed: Sequence[Record] = ()) -> SamplingState:
    """The state after the records now stored: each running model with a new complete round is
    judged on its records of rounds 1..that round (``complete_rounds``). ``records`` must be those
    of the planned keys only (``analyse(planned=...)`` rules); stopped models never restart. Without
    a ``compare`` spec there is no question to answer: every model stops at ``min_repetitions``.

    The rows judged are ``analysis.primary_comparisons``: the primary comparison of each pair, the
    very numbers ``analyse`` reports, without the summary, checks and secondary metrics nobody reads
    here. ``metrics`` is accepted for the callers' sake and changes nothing: secondary metrics never
    decide when to stop. ``fixed``: records judged with every round but never counted as one (a
    stored baseline's, ``compare.baseline_from``)."""
    rounds = {m.model: complete_rounds(records, m.model, builds) for m in state.models}
    fresh = [m for m in state.models if not m.stopped and rounds[m.model] > m.repetitions]
    if not fresh:
        return state
    judged = {m.model for m in fresh}
    cut = [r for r in records if r.model in judged and r.repetition < rounds[r.model]]
    cut += [r for r in fixed if r.model in judged]
    by_model: dict[str, list[ModelComparison]] = {}
    # below min_repetitions only ``unsampled`` asks: the analysis runs when a model may be judged
    judging = any(rounds[m.model] >= until.min_repetitions for m in fresh)
    compared = primary_comparisons(cut, spec, settings) if judging and spec is not None else []
    for _, pair_rows in compared:
        for row in pair_rows:
            by_model.setdefault(row.model, []).append(row)
    updated: list[ModelSampling] = []
    for item in state.models:
        if item.model not in judged:
            updated.append(item)
            continue
        done = rounds[item.model]
        min_effect = spec.min_effect if spec is not None else 0.0
        decision = unsampled(cut, item.model, builds, done)
        if decision is None and done >= until.min_repetitions:
            decision = judge(by_model.get(item.model, []), until, min_effect)
        if decision is None and done >= until.max_repetitions:
            rows = by_model.get(item.model, [])
            widths = (", ".join("no CI" if _width(r) is None else f"{_width(r):.2f}"
                                for r in rows) or "no CI")
            decision = ("max_repetitions",
                        f"CI width {widths} points after {done} repetitions; target "
                f"{until.ci_width:g}")
        if decision is None:
            updated.append(replace(item, repetitions=done))
        else:
            updated.append(ModelSampling(item.model, done, decision[0], decision[1]))
    return SamplingState(tuple(updated))


def replay(records: Sequence[Record], spec: CompareLike | None, until: UntilLike, *,
           models: Sequence[str],
           builds: Sequence[str], metrics: Sequence[object] = (), settings: Settings | None = None,
           fixed: Sequence[Record] = (), cache: SummaryCache | None = None) -> SamplingState:
    """The decisions a live run made, rebuilt from its stored records: ``advance`` after every round
    1..max in turn, each seeing only the records of the rounds done by then (repetitions numbered
    from 0, as planned), plus the ``fixed`` ones (a stored baseline) in every round.

    ``cache``: the stored run's ``summary-cache.json``, keyed by these very records and settings
    (the order of ``models`` and ``builds`` changes no decision, so it is no part of the key): a hit
    is the state without the analysis (``make``'s up-to-date check loads no pandas or scipy), a miss
    is computed and kept."""
    key = (_replay_key(records, spec, until, models, builds, settings, fixed) if cache is not None
           else None)
    kept = _state_of(cache.get(key), models) if cache is not None else None
    if kept is not None:
        return kept
    state = _replay(records, spec, until, models=models, builds=builds, metrics=metrics,
                    settings=settings, fixed=fixed)
    if cache is not None:
        cache.put(key, [[m.model, m.repetitions, m.reason, m.detail] for m in state.models])
    return state


def _jsonable(value: object) -> object:
    """A compare spec, ``until`` or settings as JSON for a cache key (pydantic models, dataclasses,
    None)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"no JSON form for {type(value).__name__}")


def _replay_key(records: Sequence[Record], spec: CompareLike | None, until: UntilLike,
                models: Sequence[str],
                builds: Sequence[str], settings: Settings | None,
                fixed: Sequence[Record]) -> str | None:
    # each model is judged on its own records in their order: how the models interleave changes
    # nothing (the report passes them in the plan's order, make's check as stored), so the key keeps
    # only each model's order
    by_model = sorted(records, key=lambda record: record.model)  # stable
    try:
        inputs = {"records": records_digest(by_model), "fixed": records_digest(fixed),
                  "spec": _jsonable(spec),
                  "until": _jsonable(until), "models": sorted(set(models)),
                  "builds": sorted(set(builds)), "settings": _jsonable(settings)}
    except TypeError:
        return None
    return cache_key("run.until replay", inputs, code=(__name__, *ANALYSIS_MODULES))


def _state_of(kept: object, models: Sequence[str]) -> SamplingState | None:
    """The cached state in the order of ``models``; None unless it is one well-formed entry per
    model."""
    if not isinstance(kept, list):
        return None
    by_model: dict[str, ModelSampling] = {}
    for item in kept:
        if not (isinstance(item, list) and len(item) == 4 and isinstance(item[0], str)
                and isinstance(item[1], int) and (item[2] is None or item[2] in STOP_REASONS)
                and isinstance(item[3], str)):
            return None
        by_model[item[0]] = ModelSampling(item[0], item[1], item[2], item[3])
    wanted = list(dict.fromkeys(models))
    if sorted(by_model) != sorted(wanted):
        return None
    return SamplingState(tuple(by_model[model] for model in wanted))


def _replay(records: Sequence[Record], spec: CompareLike | None, until: UntilLike, *,
            models: Sequence[str],
            builds: Sequence[str], metrics: Sequence[object] = (), settings: Settings | None = None,
            fixed: Sequence[Record] = ()) -> SamplingState:
    state = start(models)
    for k in range(1, until.max_repetitions + 1):
        if state.done:
            break
        state = advance(state, [r for r in records if r.repetition < k], spec, until, builds=builds,
                        metrics=metrics, settings=settings, fixed=fixed)
    return state


def round_builds(units: Iterable[tuple[str, int]]) -> list[str]:
    """The builds whose units make up the rounds, from ``(build, repetition)`` of the units a run
    measures: those with a unit past round 0. A stored baseline's re-run build
    (``compare.baseline_from``: drift-check units, round 0 only) is no part of a round; counting it
    would keep every round incomplete, so no model would ever stop. The live rule and every replay
    take their builds from here, so they count the same rounds."""
    pairs = list(units)
    return list(dict.fromkeys(build for build, repetition in pairs if repetition > 0)) or \
        list(dict.fromkeys(build for build, _ in pairs))


def unit_parts(unit_id: str, builds: Sequence[str],
               models: Sequence[str]) -> tuple[str, int] | None:
    """(model, repetition) of a plan unit id ``r<rep>-<build>-<model>`` (names may contain ``-``:
    the scenario's own build and model names decide), or None when it is not one of this
    scenario's."""
    head, _, rest = unit_id.partition("-")
    if not head.startswith("r") or not head[1:].isdigit():
        return None
    for model in sorted(models, key=len, reverse=True):
        if rest.endswith(f"-{model}") and rest[: -len(model) - 1] in builds:
            return model, int(head[1:])
    return None


def spared_units(units: Iterable[tuple[str, str, int]], state: SamplingState,
                 measured: Iterable[str] = ()) -> list[str]:
    """The units the stopping rule spared, from ``(unit id, model, repetition)`` of the planned
    units (numbered from 0): a *stopped* model's units of the rounds after the ones it needed,
    except those in ``measured`` (ids with a record of their planned key: units that ran although
    the rule had stopped their model, when instances ran rounds in parallel, still count). A model
    the rule had not stopped (an aborted or interrupted run) spares nothing: its missing units did
    not run."""
    measured = set(measured)
    by_model: Mapping[str, ModelSampling] = {m.model: m for m in state.models}
    spared: list[str] = []
    for unit_id, model, repetition in units:
        item = by_model.get(model)
        if (item is not None and item.stopped and repetition >= item.repetitions and
            unit_id not in measured):
            spared.append(unit_id)
    return spared


def planned_units(units: Iterable[tuple[str, str, int, str]], state: SamplingState,
                  measured: Iterable[str] = ()) -> dict[str, str]:
    """Which planned units a report accounts for, as ``{unit id: key}`` for
    ``analyse(planned=...)``, from ``(unit id, model, repetition, key)`` of the plan: every unit but
    the ones ``spared_units`` names. Spared units are never "did not run"; every other unit without
    a record is."""
    listed = list(units)
    spared = set(spared_units(((u, m, r) for u, m, r, _k in listed), state, measured))
    return {unit_id: key for unit_id, _model, _rep, key in listed if unit_id not in spared}


class StoppingRule:
    """The live side of ``run.until`` for ``run.execute``: ``wanted(model, repetition)`` before each
    unit says whether its model still needs that round. Thread-safe (sessions ask from their own
    threads).

    ``records`` reads what is stored so far (``ResultStore.records``); only records of their unit's
    planned key (``keys``: unit id -> key) count, as in the report; ``fixed`` records (a stored
    baseline) count in every judgement. A round that another instance has not finished yet is
    not judged: its next round runs anyway (the report then counts those units too:
    ``planned_units``)."""

    def __init__(self, spec: CompareLike | None, until: UntilLike, *, models: Sequence[str],
                 builds: Sequence[str],
                 keys: Mapping[str, str], records: Callable[[], Sequence[Record]],
                 metrics: Sequence[object] = (), settings: Settings | None = None,
                 fixed: Sequence[Record] = ()) -> None:
        self.spec, self.until, self.builds = spec, until, list(builds)
        self.fixed = list(fixed)
        self.keys = dict(keys)
        self.metrics, self.settings = metrics, settings
        self._records = records
        self._lock = threading.Lock()
        self.state = start(models)

    def wanted(self, model: str, repetition: int) -> bool:
        """Whether the unit of ``model``'s round ``repetition`` (from 0) should run."""
        if repetition < 1:
            return True  # no round is complete before the first: nothing to judge yet
        with self._lock:
            try:
                item = self.state.get(model)
            except KeyError:
                return True
            if not item.stopped and item.repetitions < repetition:
                stored = [r for r in self._records() if self.keys.get(r.unit_id) == r.key]
                self.state = advance(self.state, stored, self.spec, self.until, builds=self.builds,
                                     metrics=self.metrics, settings=self.settings, fixed=self.fixed)
                item = self.state.get(model)
            return not item.stopped
