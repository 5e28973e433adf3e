"""The fail-fast rule on records (``run.fail_fast``): a build whose first units fail alike stops the
run; a flaky failure (another message, one model only, an ok unit first) never does."""

from __future__ import annotations

from fvp_harness.run.fail_fast import FailFast, Scope
from fvp_harness.store.records import Record

T = "2026-01-01T00:00:00+00:00"
CRASH = "CommandFailed: the runner exited with status 139; last output: Segmentation fault"


def _record(
    build: str,
    model: str,
    rep: int,
    failure: str | None = CRASH,
    cls: str = "test",
    attempt: int = 1,
) -> Record:
    unit = f"r{rep}-{build}-{model}"
    if failure is None:
        return Record(
            scenario="s",
            key=unit,
            unit_id=unit,
            instance="s0",
            build=build,
            model=model,
            repetition=rep,
            status="ok",
            started=T,
            duration_s=1.0,
        )
    return Record(
        scenario="s",
        key=unit,
        unit_id=unit,
        instance="s0",
        build=build,
        model=model,
        repetition=rep,
        status="failed",
        started=T,
        duration_s=1.0,
        failure_class=cls,
        failure=failure,  # type: ignore[arg-type]
        log=f"logs/s0/{unit}.log",
        attempt=attempt,
    )


def _feed(rule: FailFast, records: list[Record]) -> list[str]:
    return [line for record in records if (line := rule.observe(0, record)) is not None]


def test_two_models_failing_alike_trip_once_naming_the_failure_and_the_log() -> None:
    rule = FailFast({0: Scope(models=2, retries=1, label="smoke", root="results/smoke")})
    lines = _feed(
        rule,
        [
            _record("before", "a", 0),
            _record("after", "a", 0),
            _record("before", "b", 0),
            _record("after", "b", 0),
        ],
    )
    assert len(lines) == 1
    assert "build before" in lines[0] and CRASH in lines[0]
    assert "results/smoke/logs/s0/r0-before-b.log" in lines[0] and "--keep-going" in lines[0]


def test_one_model_failing_twice_on_one_model_scenario_trips() -> None:
    rule = FailFast({0: Scope(models=1, retries=1)})
    assert not _feed(rule, [_record("before", "a", 0)])
    assert _feed(rule, [_record("before", "a", 1)])


def test_one_models_failure_is_not_the_runners() -> None:
    rule = FailFast({0: Scope(models=2, retries=1)})
    assert not _feed(
        rule,
        [
            _record("before", "a", 0),
            _record("before", "a", 1),
            _record("before", "b", 0, None),
            _record("before", "a", 2),
            _record("before", "b", 1, None),
        ],
    )
    assert rule.tripped is None


def test_different_messages_are_flaky() -> None:
    rule = FailFast({0: Scope(models=2, retries=1)})
    assert not _feed(
        rule,
        [
            _record("before", "a", 0),
            _record("before", "b", 0, "CommandTimeout: 124"),
            _record("before", "a", 1),
            _record("before", "b", 1),
        ],
    )


def test_an_ok_unit_first_disarms_the_build() -> None:
    rule = FailFast({0: Scope(models=2, retries=1)})
    assert not _feed(
        rule,
        [_record("before", "a", 0, None), _record("before", "a", 1), _record("before", "b", 1)],
    )


def test_an_infrastructure_failure_that_is_retried_does_not_count() -> None:
    rule = FailFast({0: Scope(models=2, retries=1)})
    assert not _feed(
        rule,
        [
            _record("before", "a", 0, "lost", "infrastructure", attempt=1),
            _record("before", "b", 0, "lost", "infrastructure", attempt=1),
        ],
    )
    assert _feed(
        rule,
        [
            _record("before", "a", 0, "lost", "infrastructure", attempt=2),
            _record("before", "b", 0, "lost", "infrastructure", attempt=2),
        ],
    )
