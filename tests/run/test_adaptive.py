"""Adaptive sampling's stopping rules on synthetic records (``run.adaptive``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pytest

from fvp_harness.report.stats.analysis import analyse, primary_comparisons
from fvp_harness.report.stats.findings import ModelComparison
from fvp_harness.report.stats.spec import Settings
from fvp_harness.run import adaptive
from fvp_harness.store.records import Record
from tests.helpers import record

SETTINGS = Settings(resamples=400)
BUILDS = ("before", "after")


@dataclass(frozen=True)
class Spec:
    baseline: str = "before"
    candidate: str = "after"
    primary: str = "cpu_time"
    expect_identical: tuple[object, ...] = ()
    min_effect: float = 5.0
    gates: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Until:
    ci_width: float = 2.0
    min_repetitions: int = 2
    max_repetitions: int = 6


def _records(models: dict[str, tuple[float, float, float]], reps: int,
             seed: int = 1) -> list[Record]:
    """``models``: name -> (before ms, after ms, relative unit-to-unit noise); 10 samples per
    unit."""
    rng = np.random.default_rng(seed)
    out: list[Record] = []
    minute = 0
    for rep in range(reps):  # numbered from 0, as the plan numbers them
        for model, (before, after, noise) in models.items():
            for build, centre in (("before", before), ("after", after)):
                level = centre * (1 + rng.normal(0, noise))
                values = [float(v) for v in level * (1 + rng.normal(0, noise / 4, 10))]
                unit = f"r{rep}-{build}-{model}"
                out.append(record(unit, build=build, model=model, repetition=rep,
                                  samples={"cpu_time": values},
                                  started=f"2026-03-01T10:{minute // 60:02d}:{minute % 60:02d}Z"))
                minute += 1
    return out


def _replay(records: list[Record], models: list[str], until: Until = Until(), spec: Spec = Spec()
            ) -> adaptive.SamplingState:
    return adaptive.replay(records, spec, until, models=models, builds=BUILDS, settings=SETTINGS)


def test_a_quiet_model_stops_at_min_repetitions_a_noisy_one_goes_on() -> None:
    # quiet: a 3 % change measured with 0.1 % noise (CI narrow at once); noisy: the same change with
    # 4 % noise
    records = _records({"quiet": (10.0, 9.7, 0.001), "noisy": (10.0, 9.7, 0.04)}, reps=6)
    state = _replay(records, ["quiet", "noisy"])
    quiet, noisy = state.get("quiet"), state.get("noisy")
    assert (quiet.repetitions, quiet.reason) == (2, "ci_width")
    assert "<= 2" in quiet.detail
    assert noisy.reason == "max_repetitions" and noisy.repetitions == 6
    assert state.done and state.running() == []


def test_a_settled_verdict_stops_even_when_the_ci_is_wider_than_the_target() -> None:
    # a 50 % saving with 2 % noise: the CI is several points wide, but far from ±5 %
    records = _records({"big": (10.0, 5.0, 0.02)}, reps=6)
    state = _replay(records, ["big"], Until(ci_width=0.1))
    item = state.get("big")
    assert (item.repetitions, item.reason) == (2, "verdict settled")
    assert item.detail.startswith("faster")


def test_a_ci_straddling_the_minimum_effect_is_not_settled() -> None:
    records = _records({"edge": (10.0, 9.5, 0.03)}, reps=3)  # 5 % saving against min_effect 5
    state = _replay(records, ["edge"], Until(ci_width=0.1, max_repetitions=10))
    assert state.get("edge").reason is None
    assert state.running() == ["edge"]
    assert state.get("edge").repetitions == 3


def test_nobody_stops_before_min_repetitions_and_incomplete_rounds_do_not_count() -> None:
    records = _records({"quiet": (10.0, 9.7, 0.001)}, reps=3)
    one_round = [r for r in records if r.repetition == 0]
    state = adaptive.advance(adaptive.start(["quiet"]), one_round, Spec(), Until(), builds=BUILDS,
                             settings=SETTINGS)
    assert state.get("quiet") == adaptive.ModelSampling("quiet", 1)
    half = [*one_round, *(r for r in records if r.repetition == 1 and r.build == "before")]
    assert adaptive.complete_rounds(half, "quiet", BUILDS) == 1
    state = adaptive.advance(state, half, Spec(), Until(), builds=BUILDS, settings=SETTINGS)
    assert state.get("quiet").repetitions == 1 and not state.get("quiet").stopped


def test_live_advancing_round_by_round_matches_the_replay() -> None:
    records = _records({"quiet": (10.0, 9.7, 0.001), "noisy": (10.0, 9.7, 0.02)}, reps=6, seed=7)
    state = adaptive.start(["quiet", "noisy"])
    for k in range(1, 7):
        wanted = set(state.running())
        # a live run only measures the models still running
        so_far = [r for r in records if r.repetition < k and
                  (r.repetition < k - 1 or r.model in wanted)]
        state = adaptive.advance(state, so_far, Spec(), Until(), builds=BUILDS, settings=SETTINGS)
    assert state == _replay(records, ["quiet", "noisy"])


def test_planned_units_leaves_out_only_the_rounds_the_rule_spared() -> None:
    state = adaptive.SamplingState((adaptive.ModelSampling("quiet", 2, "ci_width", ""),
                                    adaptive.ModelSampling("noisy", 3)))
    units = [(f"r{rep}-{b}-{m}", m, rep, f"k{rep}{b}{m}") for rep in range(6)
             for m in ("quiet", "noisy") for b in BUILDS]
    wanted = adaptive.planned_units(units, state)
    assert sorted(u for u in wanted if u.endswith("quiet")) == sorted(
        f"r{rep}-{b}-quiet" for rep in (0, 1) for b in BUILDS)
    # a model the rule had not stopped (an aborted run) spared nothing: every round it lacks did not
    # run
    assert len([u for u in wanted if u.endswith("noisy")]) == 12
    spared = adaptive.spared_units(((u, m, r) for u, m, r, _k in units), state)
    assert sorted(spared) == sorted(f"r{rep}-{b}-quiet" for rep in (2, 3, 4, 5) for b in BUILDS)
    again = adaptive.planned_units(units, state, measured={"r2-after-quiet"})
    assert set(again) - set(wanted) == {"r2-after-quiet"}, "a unit that ran is never left out"


def test_round_builds_leave_out_a_build_measured_in_round_zero_only() -> None:
    # compare.baseline_from: the baseline's drift-check units are round 0 only; the candidate runs
    # every round
    units = [("before", 0), ("after", 0), ("after", 1), ("after", 2)]
    assert adaptive.round_builds(units) == ["after"]
    assert (adaptive.round_builds([("before", 0), ("after", 0), ("before", 1), ("after", 1)])
            == ["before", "after"])


def test_fixed_records_are_judged_in_every_round_but_never_count_as_one() -> None:
    # a stored baseline: its before records are fixed; this run measures only after
    records = _records({"quiet": (10.0, 9.7, 0.001)}, reps=6)
    stored = [r for r in records if r.build == "before"]
    fresh = [r for r in records if r.build == "after"]
    state = adaptive.replay(fresh, Spec(), Until(), models=["quiet"], builds=["after"],
                            settings=SETTINGS, fixed=stored)
    assert (state.get("quiet").repetitions, state.get("quiet").reason) == (2, "ci_width")
    alone = adaptive.replay(fresh, Spec(), Until(), models=["quiet"], builds=["after"],
                            settings=SETTINGS)
    assert alone.get("quiet").reason == "max_repetitions", (
        "without them no CI narrows: the budget is spent")


def test_a_model_without_samples_stops_after_its_first_round() -> None:
    """Issue 38 (2): a model whose units all failed used to sample to ``max_repetitions`` (nothing
    could be judged, so nothing stopped it); it now stops after its first complete round, before
    ``min_repetitions``."""
    failed = [record(f"r{rep}-{b}-m", status="failed", build=b, model="m", repetition=rep)
              for rep in (0, 1, 2) for b in BUILDS]
    state = _replay(failed, ["m"], Until(max_repetitions=3))
    assert (state.get("m").repetitions, state.get("m").reason) == (1, "no sample")
    assert state.get("m").detail == "no ok sample of before, after after 1 repetition"


def test_one_build_without_an_ok_sample_stops_its_model_not_the_others() -> None:
    good = _records({"m": (10.0, 9.7, 0.04), "n": (10.0, 9.7, 0.04)}, reps=6)
    dead = {"status": "failed", "samples": {}}
    broken = [r.model_copy(update=dead) if (r.model, r.build) == ("m", "after") else r
              for r in good]
    state = _replay(broken, ["m", "n"])
    assert (state.get("m").repetitions, state.get("m").reason) == (1, "no sample")
    assert state.get("m").detail == "no ok sample of after after 1 repetition"
    assert state.get("n").reason == "max_repetitions" and state.get("n").repetitions == 6
    assert adaptive.unsampled(broken, "n", BUILDS, 1) is None
    assert adaptive.unsampled(broken, "m", BUILDS, 0) is None  # no complete round yet


# --- the rows the rule judges: analyse's own numbers ----------------------------------------------


@dataclass(frozen=True)
class Pairs(Spec):
    primary: object = ("cpu_time", "iteration_time")
    expect_identical: tuple[object, ...] = ("outputs", "npu_cycles")
    build_pairs: tuple[tuple[str, str], ...] = (("before", "after"), ("before", "other"))


def _three_builds(reps: int) -> list[Record]:
    """Two models in three builds (``cpu_time`` missing from some units, so the primary list
    decides), plus a model whose every unit failed, and NPU cycles and outputs for the checks a full
    analysis adds."""
    rng = np.random.default_rng(5)
    out: list[Record] = []
    minute = 0
    for rep in range(reps):
        for model, centre in (("m1", 10.0), ("m2", 4.0), ("dead", 1.0)):
            for build, factor in (("before", 1.0), ("after", 0.9), ("other", 1.02)):
                unit = f"r{rep}-{build}-{model}"
                started = f"2026-03-01T10:{minute // 60:02d}:{minute % 60:02d}Z"
                minute += 1
                if model == "dead":
                    out.append(record(unit, status="failed", build=build, model=model,
                                      repetition=rep, started=started))
                    continue
                values = [float(v) for v in centre * factor * (1 + rng.normal(0, 0.02, 8))]
                samples = {"iteration_time": values, "npu_cycles": [100.0] * 8}
                if not (model == "m2" and build == "other" and rep == 1):
                    samples["cpu_time"] = [v - 0.1 for v in values]
                out.append(record(unit, build=build, model=model, repetition=rep, samples=samples,
                                  metric_units={"cpu_time": "ms", "iteration_time": "ms",
                                                "npu_cycles": "cycles"},
                                  outputs={"out.bin": "ab" * 32}, started=started))
    return out


def _full_rows(records: Sequence[Record], spec: object, settings: Settings | None = None
               ) -> list[tuple[tuple[str, str], tuple[ModelComparison, ...]]]:
    """What ``advance`` judged before ``primary_comparisons``: every comparison of the whole
    ``analyse``."""
    result = analyse(records, spec, ["npu_cycles", "iteration_time"], settings)  # type: ignore[arg-type]
    return [((c.baseline, c.candidate), tuple(replace(m, identity=(), others=()) for m in c.models))
            for c in result.comparisons]


def test_primary_comparisons_are_the_rows_of_the_full_analysis() -> None:
    cases = [(_three_builds(3), Pairs()), (_three_builds(1), Pairs()),
             (_records({"quiet": (10.0, 9.7, 0.001), "noisy": (10.0, 9.7, 0.04)}, reps=3), Spec()),
             ([], Spec())]
    for records, spec in cases:
        restricted = primary_comparisons(records, spec, SETTINGS)  # type: ignore[arg-type]
        assert restricted == _full_rows(records, spec, SETTINGS)
    rows = dict(primary_comparisons(_three_builds(3), Pairs(), SETTINGS))  # type: ignore[arg-type]
    assert [row.model for row in rows[("before", "other")]] == ["m1", "m2", "dead"]
    # m2 lacks cpu_time there
    assert {row.metric for row in rows[("before", "other")]} == {"iteration_time"}
    assert {row.metric for row in rows[("before", "after")]} == {"cpu_time"}
    assert (rows[("before", "after")][0].verdict == "faster" and
            rows[("before", "other")][2].verdict == "not measured")


def test_decisions_are_those_the_full_analysis_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    noisy = _records({"quiet": (10.0, 9.7, 0.001), "noisy": (10.0, 9.7, 0.03),
                      "big": (10.0, 5.0, 0.02)}, reps=6)
    failed = [record(f"r{rep}-{b}-m", status="failed", build=b, model="m", repetition=rep)
              for rep in (0, 1, 2) for b in BUILDS]
    cases = [(noisy, Spec(), ["quiet", "noisy", "big"]),
             ([*noisy, *failed], Spec(), ["quiet", "noisy", "big", "m"]),
             (_three_builds(6), Pairs(), ["m1", "m2", "dead"])]
    for until in (Until(), Until(ci_width=0.5, max_repetitions=5)):
        for records, spec, models in cases:
            builds = sorted({r.build for r in records})
            fast = adaptive.replay(records, spec, until, models=models, builds=builds,
                                   settings=SETTINGS)
            with monkeypatch.context() as patched:
                patched.setattr(adaptive, "primary_comparisons", _full_rows)
                full = adaptive.replay(records, spec, until, models=models, builds=builds,
                                       settings=SETTINGS)
            assert fast == full
            assert any(m.reason is not None for m in fast.models)
