"""``expect_identical: npu_cycles`` on a partly delegated model: the sums, and each partition,
compared.

The values imitate a model in three Ethos-U partitions: each inference prints three ``Ethos-U Linux
delegate cycle counter`` lines (backends/arm/runtime/EthosUBackend_Cortex_A.cpp:294-299, one per
delegate call), the record keeps their sum as the sample and the three values in ``partitions``.
"""

from __future__ import annotations

from collections.abc import Sequence

from fvp_harness.report.stats.analysis import analyse
from fvp_harness.report.stats.identity import compare_partitions
from fvp_harness.scenario.model import Compare
from fvp_harness.store.records import Record
from tests.helpers import record

SAME = (43863.0, 11679.0, 4420.0)


def records(after: Sequence[float], *, before: Sequence[float] = SAME, n: int = 3) -> list[Record]:
    rows = []
    for rep in (1, 2):
        for build, calls in (("before", before), ("after", after)):
            rows.append(record(f"r{rep}-{build}-resnet8", build=build, repetition=rep,
                               samples={"cpu_time": [2.0 if build == "before" else 1.0] * n,
                                        "npu_cycles": [sum(calls)] * n},
                               partitions={"npu_cycles": [list(calls)] * n},
                               metric_units={"cpu_time": "ms", "npu_cycles": "cycles"}))
    return rows


def npu_check(rows: list[Record]):  # type: ignore[no-untyped-def]
    spec = Compare(baseline="before", candidate="after", primary="cpu_time",
                   expect_identical=["npu_cycles"])
    comparison = analyse(rows, spec).comparisons[0]
    return next(check for check in comparison.models[0].identity if check.name == "npu_cycles")


def test_unchanged_partitions_pass_and_say_how_the_sum_is_made() -> None:
    check = npu_check(records(SAME))
    assert check.status == "pass"
    assert check.detail == "all identical (59962 = 43863 + 11679 + 4420, 3 partitions)"


def test_one_partition_that_changed_fails_naming_it() -> None:
    check = npu_check(records((43863.0, 12847.0, 4420.0)))
    assert check.status == "fail"
    assert check.detail == "partition 2 of 3 differs (before: 11679 x6; after: 12847 x6)"


def test_partitions_that_moved_against_each_other_fail_though_the_sums_agree() -> None:
    check = npu_check(records((43000.0, 12542.0, 4420.0)))
    assert sum((43000.0, 12542.0, 4420.0)) == sum(SAME)
    assert (check.status == "fail" and "partition 1 of 3" in check.detail and
            "partition 2 of 3" in check.detail)


def test_another_number_of_partitions_fails() -> None:
    status, detail = compare_partitions({"before": [SAME], "after": [(59962.0,)]}) or ("", "")
    assert status == "fail" and "before: 3; after: 1" in detail


def test_fully_delegated_models_are_left_to_the_plain_check() -> None:
    assert compare_partitions({"before": [(84294.0,)], "after": [(84294.0,)]}) is None
    assert compare_partitions({"before": [SAME], "after": []}) is None, (
        "a build without values: unverified")
