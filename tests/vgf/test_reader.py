"""The VGF report reader on hand-written reports: valid, partial, unknown keys, elsewhere-layouts,
broken JSON, wrong types; and the conversion to the A/B path's Record and DataFrame."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fvp_harness.errors import EXIT_BAD_INPUT, ConfigurationError
from fvp_harness.report.stats.frames import to_frame
from fvp_harness.vgf.reader import (
    RECORD_FIELDS,
    VgfFormatError,
    parse_report,
    read_report,
    to_record,
)


def record(i: int = 0, **changes: Any) -> dict[str, Any]:
    """One per-execute record of a copy run, every runtime field present."""
    base: dict[str, Any] = {
        "iteration": i,
        "latency_ns": 120_000 + i,
        "in_copy_bytes": 3072,
        "out_copy_bytes": 10,
        "in_memcpy_ns": 3000,
        "out_memcpy_ns": 200,
        "submit_wait_ns": 100_000,
        "execute_ns": 90_000,
        "imports": 0,
        "import_ns": 0,
        "binding_refresh_ns": 0,
        "in_zero_copy_bytes": 0,
        "out_zero_copy_bytes": 0,
        "fallback_count": 0,
        "rejection_count": 0,
        "success": True,
        "delegate_handle": "0x10",
    }
    base.update(changes)
    return {k: v for k, v in base.items() if v is not ...}


def report(n: int = 3, **top: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "format": "executorch-vgf-perf",
        "format_version": 1,
        "device": {
            "vendor_id": 0x13B5,
            "device_id": 7,
            "api_version": (1 << 22) | (3 << 12) | 275,
            "driver_version": "2.1",
            "device_name": "Mali-G720",
            "driver_name": "arm",
            "driver_info": "r1p0",
        },
        "model": {"name": "resnet8", "path": "/m/resnet8.pte"},
        "config": {"zero_copy": False, "warmup": 20, "iterations": n},
        "buffers": [{"name": "input0", "direction": "input", "nbytes": 3072, "zero_copy": False}],
        "rejections": [],
        "records": [record(i) for i in range(n)],
    }
    doc.update(top)
    return {k: v for k, v in doc.items() if v is not ...}


def parse(doc: Any, name: str = "run.json"):
    return parse_report(json.dumps(doc, indent=1), name)


def test_valid_report_reads_every_part_without_warnings():
    run = parse(report())
    assert run.warnings == ()
    assert run.model == "resnet8"
    assert run.config.zero_copy is False and run.config.warmup == 20 and run.config.iterations == 3
    assert run.device.api_version == "1.3.275"
    assert run.device.label() == ("Mali-G720 (vendor 0x13b5, device 0x0007, driver arm 2.1, Vulkan "
                                  "1.3.275)")
    assert run.inferences == 3 and run.failures == 0
    assert run.samples["latency_ns"] == [120_000, 120_001, 120_002]
    assert run.samples["copy_bytes"] == [3082] * 3
    assert run.samples["memcpy_ns"] == [3200] * 3
    assert run.samples["boundary_ns"] == [3200] * 3
    assert run.samples["success"] == [1.0] * 3
    assert run.delegate_handles == ("0x10",)
    assert run.records_at == "$.records"
    assert run.buffers[0].nbytes == 3072


def test_unknown_keys_everywhere_are_warnings_never_errors():
    doc = report(colour="blue", config={"zero_copy": 1, "warmup": 0, "iterations": 3, "threads": 4})
    doc["device"]["pci_bus"] = 3
    doc["records"][0]["gpu_temp_c"] = 40
    run = parse(doc)
    text = "\n".join(run.warnings)
    assert "$.colour" in text
    assert "$.config.threads" in text
    assert "$.device.pci_bus" in text
    assert "gpu_temp_c (in 1 of 3)" in text
    assert run.config.zero_copy is True


def test_partial_report_missing_optional_parts_is_usable_with_warnings():
    doc = {"records": [record(i, binding_refresh_ns=..., latency_ns=..., delegate_handle=...)
                       for i in range(4)]}
    run = parse(doc)
    text = "\n".join(run.warnings)
    assert "binding_refresh_ns (in 4 of 4)" in text
    assert "no per-inference latency" in text
    assert "no device-info block" in text
    assert "binding_refresh_ns" not in run.samples and "latency_ns" not in run.samples
    assert run.samples["boundary_ns"] == [3200] * 4  # the parts that are there
    assert run.model is None and run.device.device_name is None


def test_field_present_in_only_some_inferences_is_not_compared():
    doc = report()
    del doc["records"][1]["import_ns"]
    run = parse(doc)
    assert "import_ns" not in run.samples
    assert any("import_ns is present in only 2 of 3" in w for w in run.warnings)


def test_records_found_by_search_one_list_per_delegate_summed_per_inference():
    doc = {
        "meta": {"device_info": {"device_name": "G", "vendor_id": 1, "driver_name": "d"}},
        "delegates": [
            {"handle": 1, "stats": [record(i, latency_ns=..., execute_ns=10) for i in range(3)]},
            {"handle": 2,
             "stats": [record(i, latency_ns=..., execute_ns=5, success=i != 1) for i in range(3)]},
        ],
        "latencies_us": [1.5, 2.5, 3.5],
    }
    run = parse(doc)
    assert run.records_at == "$.delegates[0].stats, $.delegates[1].stats"
    assert run.samples["execute_ns"] == [15, 15, 15]
    assert run.samples["in_copy_bytes"] == [6144] * 3
    # an inference succeeds only if every delegate did
    assert run.samples["success"] == [1.0, 0.0, 1.0]
    assert run.samples["latency_ns"] == [1500, 2500, 3500]
    assert run.device.device_name == "G"
    assert any("found by search" in w for w in run.warnings)


def test_records_with_iteration_index_group_several_delegates():
    rows = []
    for i in range(2):
        rows.append(record(i, execute_ns=100, delegate_handle=1, latency_ns=...))
        rows.append(record(i, execute_ns=50, delegate_handle="0xab", latency_ns=...))
    run = parse(report(records=rows, config={"warmup": 0, "iterations": 2}))
    assert run.samples["execute_ns"] == [150, 150]
    assert run.delegate_handles == ("0x0001", "0xab")


def test_bare_list_of_records_is_accepted():
    run = parse([record(i) for i in range(2)])
    assert run.inferences == 2
    assert any("bare list" in w for w in run.warnings)


def test_warmup_records_are_dropped_marked_or_by_count():
    marked = report(records=[record(0, warmup=True), record(1, warmup=True), record(2), record(3)])
    assert parse(marked).samples["latency_ns"] == [120_002, 120_003]
    counted = report(records=[record(i, iteration=...) for i in range(5)],
                     config={"warmup": 2, "iterations": 3})
    run = parse(counted)
    assert run.samples["latency_ns"] == [120_002, 120_003, 120_004]
    assert any("first 2 were dropped as warmup" in w for w in run.warnings)


def test_latency_list_outside_records_with_warmup_head_and_units():
    rows = [record(i, latency_ns=..., iteration=...) for i in range(3)]
    doc = report(records=rows, config={"warmup": 2, "iterations": 3}, latency_ns=[9, 9, 1, 2, 3])
    assert parse(doc).samples["latency_ns"] == [1, 2, 3]
    doc = report(records=rows, config={"warmup": 0, "iterations": 3},
                 timing={"per_iteration_latency_ms": [1, 2, 3]})
    assert parse(doc).samples["latency_ns"] == [1e6, 2e6, 3e6]
    doc = report(records=rows, latency_ns=[1, 2])
    run = parse(doc)
    assert "latency_ns" not in run.samples
    assert any("holds 2 latencies for 3 measured records" in w for w in run.warnings)


def test_numbers_as_decimal_text_and_booleans_as_01_are_accepted():
    run = parse(report(records=[record(0, execute_ns="18446744073709", success=1),
                                record(1, success="false")]))
    assert run.samples["execute_ns"][0] == 18446744073709.0
    assert run.samples["success"] == [1.0, 0.0]


def test_rejection_reasons_from_top_level_or_records():
    doc = report(rejections=[{"buffer": "output0", "reason": "misaligned", "count": 200},
                             "no import"])
    assert parse(doc).rejections == {"output0: misaligned": 200, "no import": 1}
    doc = report(rejections=...,
                 records=[record(0, rejections=["size"]), record(1, rejections=["size"])])
    assert parse(doc).rejections == {"size": 2}


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"records": [ {"execute_ns": 1,', "run.json:1:32: not valid JSON"),
        ('{\n  "records": [\n    {"execute_ns": 1}\n    {"x": 2}\n  ]\n}',
         "run.json:4:5: not valid JSON"),
        ("", "run.json: the VGF report is empty"),
        ('{"records": [{"execute_ns": NaN, "success": true}]}', "run.json: not valid JSON"),
    ],
)
def test_broken_json_names_file_line_and_column(text, where):
    with pytest.raises(VgfFormatError) as info:
        parse_report(text, "run.json")
    assert str(info.value).startswith(where)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda d: d["records"][1].update(execute_ns="abc"),
            "$.records[1].execute_ns: expected a number >= 0, got 'abc'",
        ),
        (
            lambda d: d["records"][2].update(in_copy_bytes=-1),
            "$.records[2].in_copy_bytes: expected a finite number >= 0",
        ),
        (lambda d: d["records"][0].update(imports=True),
         "$.records[0].imports: expected a number >= 0, got True"),
        (lambda d: d["records"][0].update(success="maybe"),
         "$.records[0].success: expected true or false"),
        (lambda d: d["records"][0].update(delegate_handle=[1]),
         "$.records[0].delegate_handle: expected an integer"),
        (lambda d: d["records"][0].update(iteration="1"),
         "$.records[0].iteration: expected an integer"),
        (lambda d: d["records"][0].pop("execute_ns"),
         "$.records[0]: required field 'execute_ns' is missing"),
        (lambda d: d["records"][1].pop("success"),
         "$.records[1]: required field 'success' is missing"),
        (lambda d: d.update(records={"a": 1}),
         "$.records: expected a list of per-execute records, got dict"),
        (lambda d: d.update(records=[]), "$.records: the list of per-execute records is empty"),
        (lambda d: d["records"].__setitem__(0, 5),
         "$.records[0]: expected a per-execute record (object), got int"),
        (lambda d: d["config"].update(zero_copy="yes please"),
         "$.config.zero_copy: expected true or false"),
        (lambda d: d["config"].update(warmup=-2), "$.config.warmup: expected a whole number >= 0"),
        (lambda d: d["device"].update(device_name=5),
         "$.device.device_name: expected text, got 5 (int)"),
        (lambda d: d["device"].update(vendor_id=1.5),
         "$.device.vendor_id: expected an integer (or hex text)"),
        (lambda d: d.update(device=[1]), "$.device: expected an object"),
        (lambda d: d.update(rejections=[{"reason": "x", "count": "2"}]),
         "$.rejections[0].count: expected a whole"),
        (lambda d: d.update(model=3), "$.model: expected an object or a path, got int"),
    ],
)
def test_wrong_types_and_missing_required_fields_name_file_and_json_path(mutate, message):
    doc = report()
    mutate(doc)
    with pytest.raises(VgfFormatError) as info:
        parse(doc, "runs/zero.json")
    assert str(info.value).startswith("runs/zero.json: ")
    assert message in str(info.value)
    assert info.value.path == "runs/zero.json"


def test_no_records_anywhere_is_a_clear_error():
    with pytest.raises(VgfFormatError,
                       match=r"no per-execute records found.*top-level keys: format, device"):
        parse({"format": "x", "device": {}})
    with pytest.raises(VgfFormatError, match=r"\$: expected a JSON object"):
        parse(42)


def test_errors_are_configuration_errors_with_exit_2(tmp_path):
    with pytest.raises(ConfigurationError) as info:
        read_report(tmp_path / "missing.json")
    assert info.value.exit_code == EXIT_BAD_INPUT
    assert "missing.json: cannot read the VGF report" in str(info.value)


def test_read_report_from_a_file_hashes_its_bytes(tmp_path):
    path = tmp_path / "a.json"
    path.write_text(json.dumps(report()), encoding="utf-8")
    first, second = read_report(path), read_report(path)
    assert first.sha256 == second.sha256 and len(first.sha256) == 64
    assert first.path == str(path)


def test_to_record_feeds_the_ab_dataframe():
    run = parse(report(n=4))
    rec = to_record(run, scenario="vgf", build="copy", repetition=1)
    assert rec.unit_id == "r1-copy-resnet8" and rec.model == "resnet8" and rec.status == "ok"
    assert rec.key == run.sha256
    units = rec.metric_units
    assert units["execute_ns"] == "ns" and units["in_copy_bytes"] == "B" and units["imports"] == ""
    assert rec.extra["device.device_name"] == "Mali-G720" and rec.extra["zero_copy"] is False
    frame = to_frame([rec])
    assert set(frame["metric"]) >= {name
                                    for name, kind in RECORD_FIELDS.items() if kind != "handle"}
    assert len(frame[frame["metric"] == "execute_ns"]) == 4
    assert frame["build"].unique().tolist() == ["copy"]


def test_a_run_whose_every_execute_failed_is_a_failed_record():
    run = parse(report(records=[record(i, success=False) for i in range(3)]))
    rec = to_record(run, scenario="vgf", build="zero_copy")
    assert rec.status == "failed" and rec.failure_class == "test"
    assert "every one of 3 measured VGF executions failed" in (rec.failure or "")


@pytest.mark.parametrize(
    "name",
    [
        "fvp_harness.vgf.reader", "fvp_harness.vgf.report", "fvp_harness.sim.workloads.vgf_runner",
        "fvp_harness.cli.verb_vgf",
    ],
)
def test_all_matches_what_is_public(name):
    import importlib
    import inspect

    module = importlib.import_module(name)
    assert all(hasattr(module, item) for item in module.__all__)
    assert list(module.__all__) == sorted(module.__all__, key=lambda n: (not n.isupper(), n))
    defined = {
        item
        for item, value in vars(module).items()
        if not item.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__ == module.__name__
    }
    assert defined <= set(module.__all__), defined - set(module.__all__)
