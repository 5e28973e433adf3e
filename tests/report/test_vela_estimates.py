"""Measured NPU cycles next to Vela's estimate: reading Vela's CSVs, the scenario's ``vela`` entry,
the report section and its flags, and doctor's line."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest
from pydantic import ValidationError

from fvp_harness.report.rendering import vela_estimates
from fvp_harness.report.rendering.context import ReportContext
from fvp_harness.report.rendering.json_report import render_json
from fvp_harness.report.rendering.markdown import render_markdown
from fvp_harness.report.rendering.vela_estimates import (
    VelaCsvError,
    load_vela_inputs,
    npu_cycles_source,
    read_vela_csv,
    vela_rows,
    vela_section,
)
from fvp_harness.report.stats.analysis import analyse
from fvp_harness.report.stats.result import AnalysisResult
from fvp_harness.report.stats.spec import Settings
from fvp_harness.scenario.model import Compare, Model
from fvp_harness.store.records import Record
from tests.helpers import record

# the header and row shapes Vela 5.2 writes with --verbose-performance (values of a DS-CNN at 256
# MACs)
SUMMARY_HEADER = (
    "experiment,network,accelerator_configuration,system_config,memory_mode,core_clock,arena_cache_size,"
    "sram_bandwidth,inferences_per_second,batch_size,inference_time,nn_macs,cycles_npu,cycles_sram_access,"
    "cycles_dram_access,cycles_total"
)
PER_LAYER_HEADER = ("Original Operator,NNG Operator,Target,Staging Usage,Peak% (Staging),Op Cycles,"
                    "Network% (cycles),NPU,SRAM AC,DRAM AC,OnFlash AC,OffFlash AC,MAC "
                    "Count,Network% (MAC),Util% (MAC),Name")


def summary_csv(path: Path, cycles: str = "39800") -> Path:
    path.write_text(f"{SUMMARY_HEADER}\ndefault,ds_cnn,Ethos_U85_256,Ethos_U85_SYS_DRAM_Mid,Sram_Only,"
                    f"1000000000.0,1073741824.0,29.8,25125.6,1,3.98e-05,2504768,{cycles},11296,0,{cycles}\n")
    return path


def per_layer_csv(path: Path) -> Path:
    path.write_text(
        f"{PER_LAYER_HEADER}\n"
        "Conv2D,Conv2D,NPU,8496,17.6,6790,14.1,6790,1105,0,0,0,160000,6.4,9.2,conv1\n"
        "Conv2D,Relu,NPU,0,0.0,0,0.0,0,0,0,0,0,0,0.0,100,conv1\n"
        "FullyConnected,FullyConnected,NPU,80,0.17,150,0.3,150,51,0,0,0,768,0.03,2.0,fc\n"
        "Softmax,Softmax,CPU,0,0.0,999,0.0,0,0,0,0,0,0,0.0,0,softmax\n"
    )
    return path


def test_reads_the_summary_and_the_per_layer_csv(tmp_path: Path) -> None:
    summary = read_vela_csv(summary_csv(tmp_path / "ds_cnn_summary_Ethos_U85_SYS_DRAM_Mid.csv"))
    assert (summary.kind, summary.cycles) == ("summary", 39800.0)
    assert summary.configuration == "Ethos_U85_256, Ethos_U85_SYS_DRAM_Mid, Sram_Only"
    layers = read_vela_csv(per_layer_csv(tmp_path / "ds_cnn_per-layer.csv"))
    assert (layers.kind, layers.cycles, layers.configuration) == (
        "per-layer",
        6940.0,
        "per-layer CSV",
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"x\.csv:1: empty"),
        ("a,b\n1,2\n", r"x\.csv:1: neither a Vela summary CSV .* nor a per-layer CSV"),
        (f"{SUMMARY_HEADER}\n" + "1," * 15 + "lots\n",
         r"x\.csv:2: cycles_total: 'lots' is not a number"),
        (f"{SUMMARY_HEADER}\n" + "1," * 15 + "5\n" + "1," * 15 + "6\n",
         "one row of values; found 2"),
        (f"{PER_LAYER_HEADER}\nConv2D,Conv2D,NPU,0,0,-5,0,0,0,0,0,0,0,0,0,c\n",
         r"x\.csv:2: Op Cycles: '-5' is not a cycle count"),
        (f"{PER_LAYER_HEADER}\n", r"x\.csv:2: a Vela per-layer CSV without layers"),
    ],
)
def test_bad_files_are_refused_naming_file_line_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    (tmp_path / "x.csv").write_text(text)
    with pytest.raises(VelaCsvError, match=message):
        read_vela_csv(tmp_path / "x.csv")
    with pytest.raises(VelaCsvError, match=r"nope\.csv: not found"):
        read_vela_csv(tmp_path / "nope.csv")


def test_the_scenario_entry() -> None:
    assert Model.model_validate({"file": "m", "vela": "v.csv"}).vela.file == "v.csv"  # type: ignore[union-attr]
    spec = Model.model_validate({"file": "m",
                                 "vela": {"builds": {"after": "a.csv"}, "band": [0.9, 1.1]}}).vela
    assert (spec is not None and spec.file_for("after") == "a.csv" and
            spec.file_for("before") is None)
    with pytest.raises(ValidationError, match="name an estimate file"):
        Model.model_validate({"file": "m", "vela": {"band": [0.9, 1.1]}})
    with pytest.raises(ValidationError, match=r"0 < low <= 1 <= high"):
        Model.model_validate({"file": "m", "vela": {"file": "v.csv", "band": [1.1, 1.3]}})
    with pytest.raises(ValidationError, match="Extra inputs"):
        Model.model_validate({"file": "m", "vela": {"file": "v.csv", "bands": [0.9, 1.1]}})


def npu_records(metric: str = "npu_cycles",
                measured: dict[tuple[str, str], float] | None = None) -> list[Record]:
    measured = measured or {("ds_cnn", "before"): 39800.0, ("ds_cnn", "after"): 39800.0,
                            ("resnet8", "before"): 84546.0, ("resnet8", "after"): 84546.0}
    return [
        record(f"r1-{build}-{model}", key=f"{build}{model}", build=build, model=model,
               samples={"cpu_time": [1.0, 1.1], metric: [value, value]},
               metric_units={"cpu_time": "ms", metric: "cycles"})
        for (model, build), value in measured.items()
    ]


def result_for(records: list[Record], metric: str = "npu_cycles") -> AnalysisResult:
    return analyse(records, Compare(), [metric], Settings(resamples=200))


def manifest_for(tmp_path: Path, models: dict[str, object],
                 binary: str = "sim") -> dict[str, object]:
    return {
        "scenario": {"name": "vela_check", "file": str(tmp_path / "vela_check.yaml"),
                     "resolved": {"models": {name: {"file": "x", "vela": vela}
                                             for name, vela in models.items()}}},
        "fvp": {"binary": binary, "version": "x"},
    }


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def test_measured_next_to_the_estimate_with_a_wrong_one_flagged(tmp_path: Path) -> None:
    summary_csv(tmp_path / "ds_cnn_summary.csv")
    summary_csv(tmp_path / "wrong.csv", cycles="40000")  # resnet8 measures 84,546: ratio 2.11
    summary_csv(tmp_path / "after.csv", cycles="84000")
    inputs = load_vela_inputs(manifest_for(tmp_path, {
        "ds_cnn": "ds_cnn_summary.csv",  # relative to the scenario file
        "resnet8": {"file": str(tmp_path / "wrong.csv"), "builds": {"after": "after.csv"}},
        "mobilenet_v1_025": None,
    }))
    assert inputs is not None and inputs.simulated
    rows = {(row.model, row.build): row for row in vela_rows(result_for(npu_records()), inputs)}
    assert set(rows) == {("ds_cnn", "before"), ("ds_cnn", "after"), ("resnet8", "before"),
                         ("resnet8", "after")}
    assert rows["ds_cnn", "before"].ratio == 1.0 and not rows["ds_cnn", "before"].outside
    assert (rows["resnet8", "before"].ratio == pytest.approx(84546 / 40000) and
            rows["resnet8", "before"].outside)
    assert (rows["resnet8", "after"].estimate is not None and
            rows["resnet8", "after"].estimate.cycles == 84000)
    assert not rows["resnet8", "after"].outside

    markdown = "\n".join(vela_section(result_for(npu_records()), inputs))
    assert "## NPU cycles: measured vs Vela" in markdown
    table = {tuple(c[:2]): c[2:]
             for c in (cells(line) for line in markdown.splitlines() if line.startswith("| "))}
    assert table["ds_cnn", "before"] == ["39,800", "39,800", "1.000", "✓ within",
                                         "Ethos_U85_256, Ethos_U85_SYS_DRAM_Mid, Sram_Only"]
    assert table["resnet8", "before"][1:4] == ["40,000", "2.114", "⚠ outside 0.8–1.25"]
    assert "**1 of 4 ratios outside their band:** resnet8 (before) 2.114." in markdown
    assert "*is* Vela's estimate" in markdown, "the simulator's counter is explained"


def test_bare_metal_counters_and_problems_are_shown(tmp_path: Path) -> None:
    summary_csv(tmp_path / "ok.csv", cycles="20000")
    inputs = load_vela_inputs(manifest_for(tmp_path, {"ds_cnn": "ok.csv", "resnet8": "missing.csv"},
                                           binary="FVP_Corstone_SSE-300_Ethos-U55"))
    assert inputs is not None and not inputs.simulated
    measured = {("ds_cnn", "m128"): 21000.0, ("resnet8", "m128"): 90000.0}
    result = result_for(npu_records("bm_npu_cycles", measured), "bm_npu_cycles")
    rows = {row.model: row for row in vela_rows(result, inputs)}
    assert rows["ds_cnn"].metric == "bm_npu_cycles" and rows["ds_cnn"].ratio == pytest.approx(1.05)
    assert (rows["resnet8"].problem is not None and
            "missing.csv: not found" in rows["resnet8"].problem)
    markdown = "\n".join(vela_section(result, inputs))
    assert "estimate unreadable" in markdown and "missing.csv: not found" in markdown
    assert "*is* Vela's estimate" not in markdown


def test_no_vela_entry_no_section_and_the_report_carries_it(tmp_path: Path) -> None:
    assert load_vela_inputs(manifest_for(tmp_path, {"ds_cnn": None})) is None
    assert load_vela_inputs(None) is None
    result = result_for(npu_records())
    plain = ReportContext.from_manifest(manifest_for(tmp_path, {"ds_cnn": None}))
    assert "measured vs Vela" not in render_markdown(result, context=plain)
    summary_csv(tmp_path / "ds_cnn_summary.csv")
    context = ReportContext.from_manifest(manifest_for(tmp_path, {"ds_cnn": "ds_cnn_summary.csv"}))
    markdown = render_markdown(result, context=context)
    assert "## NPU cycles: measured vs Vela" in markdown
    assert markdown.index("measured vs Vela") < markdown.index("## Per build")
    assert str(tmp_path / "ds_cnn_summary.csv") in render_json(result, context=context), (
        "context.vela in json")
    assert render_markdown(result, context=context) == markdown, "deterministic"
    idle = load_vela_inputs(manifest_for(tmp_path, {"mobilenet_v1_025": "ds_cnn_summary.csv"}))
    assert "No unit of mobilenet_v1_025 ran" in "\n".join(vela_section(result, idle))


def test_a_malformed_entry_in_a_stored_manifest_is_a_problem_line(tmp_path: Path) -> None:
    inputs = load_vela_inputs(manifest_for(tmp_path, {"ds_cnn": {"band": [0.5, 2]}}))
    assert inputs is not None and not inputs.specs
    assert "models.ds_cnn.vela: Value error, name an estimate file" in "\n".join(vela_section(
        result_for(npu_records()), inputs))


def test_doctor_says_where_npu_estimates_come_from(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vela_estimates.importlib.metadata, "version", lambda name: "5.2.0")
    assert npu_cycles_source(True)[0:2] == (
        "ok",
        "Vela 5.2.0: `sim model` stores its estimates; the simulated counter follows them",
    )
    assert npu_cycles_source(False)[0] == "ok"

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(vela_estimates.importlib.metadata, "version", missing)
    status, detail, fix = npu_cycles_source(True)
    assert (status == "warn" and "analytic cycle model" in detail and
            "pip install ethos-u-vela" in fix)
    assert npu_cycles_source(False)[0] == "skip"
