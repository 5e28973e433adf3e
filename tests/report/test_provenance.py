"""The label travels with the numbers: simulated or which FVP build, the machine record, builds'
sources, and the samples chart (``report/rendering/``: ``machine.py``, ``charts.py``, their use in
``render.py``)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from fvp_harness.report import format as fmt
from fvp_harness.report.rendering.charts import samples_figure
from fvp_harness.report.rendering.context import ReportContext
from fvp_harness.report.rendering.csv_report import render_csv
from fvp_harness.report.rendering.json_report import render_json
from fvp_harness.report.rendering.machine import is_simulated, machine_section, measured_on
from fvp_harness.report.rendering.markdown import render_markdown
from fvp_harness.report.rendering.render import render_report
from tests.report.test_render import MANIFEST, build_records, cells, result_for, table_lines

SIM_MANIFEST: dict[str, Any] = {
    **MANIFEST,
    "harness_version": "0.1.0",
    "fvp": {"binary": "sim", "version": "11.30.27 (simulated by fvp-harness sim)",
            "simulator": "fvp-harness 0.1.0"},
    "host": {"hostname": "ci-7", "platform": "Linux-6.1-x86_64", "machine": "x86_64",
             "python": "3.11.7", "cpus": 8,
             "cpu_model": "AMD EPYC 7B13", "memory_bytes": 16 * 2**30,
             "os": "Debian GNU/Linux 12 (bookworm)",
             "load_before": [0.5, 0.4, 0.3], "load_after": [1.9, 0.8, 0.4]},
    "harness": {"version": "0.1.0", "commit": "c" * 40, "describe": "v0.1.0-3-gcccccc"},
    "builds": {
        "before": {"sha256": "1" * 64,
                   "source": {"origin": "checkout", "commit": "d" * 40, "describe": "v1.0-dirty"}},
        "after": {"sha256": "2" * 64,
                  "source": {"origin": "scenario", "repository": "pytorch/executorch",
                                                 "commit": "abcdef1234567890" * 2 + "abcdefab"}},
    },
}
REAL_MANIFEST: dict[str, Any] = {
    **MANIFEST,
    "fvp": {"binary": "FVP_Corstone-1000-A320", "version": "11.31.cs1000_a320_2",
            "path": "/opt/fvp/FVP_Corstone-1000-A320", "sha256": "9" * 64},
}
FORMAT_4_HOST = {"hostname": "vm", "platform": "Linux", "machine": "x86_64", "python": "3.11.7",
                 "cpus": 2}


def _caption_and_table(markdown: str) -> tuple[str, list[str]]:
    lines = markdown.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("| Model"))
    assert lines[start - 1] == "", "one blank line between the caption and the table"
    return lines[start - 2], table_lines(markdown, "| Model")


def test_a_simulated_report_pasted_without_its_header_still_says_so() -> None:
    markdown = render_markdown(result_for(build_records()),
                               context=ReportContext.from_manifest(SIM_MANIFEST))
    body = markdown.split("\n", 3)[3]  # no title, no context line
    caption, _ = _caption_and_table(markdown)
    assert caption.startswith("**Simulated, not measured on an FVP** (fvp-harness 0.1.0 simulator "
                              "of FVP 11.30.27)")
    assert caption in body
    assert "What these numbers are: **simulated**" in body


def test_a_real_fvp_report_names_the_fvp_build_and_what_its_cpu_time_is() -> None:
    markdown = render_markdown(result_for(build_records()),
                               context=ReportContext.from_manifest(REAL_MANIFEST))
    caption, _ = _caption_and_table(markdown)
    assert caption.startswith("Measured on FVP 11.31.cs1000_a320_2 (FVP_Corstone-1000-A320, sha256 "
                              "999999999999)")
    assert "instruction-accurate, not cycle-accurate" in markdown and "Simulated" not in markdown


QEMU_FVP = {"binary": "qemu-system-aarch64", "version": "7.2.22",
            "path": "/usr/bin/qemu-system-aarch64",
            "sha256": "7148d1e6c8587f9b017dbcd2ab6d18eb9b84d20ef5284e0c4915b614c8a61b31"}


@pytest.mark.parametrize("profile", [{"kind": "qemu", "name": "qemu-aarch64-virt"}, None])
def test_a_qemu_report_calls_qemu_qemu(profile: dict[str, str] | None) -> None:
    """Issue 38, finding 9: a QEMU run read "Measured on FVP 7.2.22 (qemu-system-aarch64 ...)". The
    platform is named by what it is in the context line, the caption, the note and the footer (an
    older manifest without the profile is known by its binary)."""
    manifest = {**MANIFEST, "platform": "qemu-aarch64-virt", "fvp": QEMU_FVP,
                **({"profile": profile} if profile else {})}
    context = ReportContext.from_manifest(manifest)
    markdown = render_markdown(result_for(build_records()), context=context)
    caption, _ = _caption_and_table(markdown)
    shown = "Measured on QEMU 7.2.22 (qemu-system-aarch64, sha256 7148d1e6c858): "
    assert caption.startswith(shown)
    assert "QEMU: **qemu-system-aarch64 7.2.22**" in markdown.split("\n")[2]
    assert "- QEMU: `--version` 7.2.22, `/usr/bin/qemu-system-aarch64`" in markdown
    assert "FVP:" not in markdown and "on FVP" not in markdown
    assert "instruction-accurate" not in markdown
    assert "What these numbers are: times of the runner in a QEMU guest" in markdown
    assert context.measured_on is not None and context.measured_on.startswith("QEMU 7.2.22")
    csv_rows = list(csv.DictReader(io.StringIO(render_csv(result_for(build_records()), context))))
    assert {row["measured_on"] for row in csv_rows} == {context.measured_on}


@pytest.mark.parametrize(("manifest", "simulated"), [
    (SIM_MANIFEST, True),
    # disguised
    ({"fvp": {"binary": "/opt/x/FVP", "version": "11.30.27 (simulated by fvp-harness sim)"}}, True),
    ({"fvp": {"binary": "/opt/x/FVP", "version": "11.31"},
      "instances": {"s0": {"version": "simulated by fvp-harness sim"}}}, True),
    (REAL_MANIFEST, False),
    ({"fvp": {"binary": "sim"}, "scenario": {"name": "h", "resolved": {"target": "host"}}}, False),
    (None, False),
])
def test_what_counts_as_simulated(manifest: dict[str, Any] | None, simulated: bool) -> None:
    assert is_simulated(manifest) is simulated


def test_a_host_run_is_measured_on_the_host() -> None:
    manifest = {"scenario": {"name": "h", "resolved": {"target": "host"}}, "host": FORMAT_4_HOST}
    assert measured_on(manifest) == "host vm (x86_64)"


def test_a_declared_source_shows_its_commit_in_the_table_header() -> None:
    markdown = render_markdown(result_for(build_records()),
                               context=ReportContext.from_manifest(SIM_MANIFEST))
    _, table = _caption_and_table(markdown)
    assert cells(table[0])[1] == ("CPU time per inference, before -> after "
                                  "(pytorch/executorch@abcdef123456)")


def test_csv_rows_and_json_carry_the_label_and_the_machine_record() -> None:
    result = result_for(build_records())
    context = ReportContext.from_manifest(SIM_MANIFEST)
    rows = list(csv.DictReader(io.StringIO(render_csv(result, context))))
    assert rows and {(r["simulated"], r["measured_on"]) for r in rows} == {
        ("true", "fvp-harness 0.1.0 simulator of FVP 11.30.27")}
    assert all(r["p_pooled_iterations_mann_whitney"] for r in rows if r["row"] == "primary")
    data = json.loads(render_json(result, context=context))
    assert (data["simulated"] is True and
            data["measured_on"].startswith("fvp-harness 0.1.0 simulator"))
    machine = data["machine"]
    assert (machine["host"]["cpu_model"] == "AMD EPYC 7B13" and
            machine["host"]["load_after"] == [1.9, 0.8, 0.4])
    assert (machine["harness"]["commit"] == "c" * 40 and
            machine["fvp"]["simulator"] == "fvp-harness 0.1.0")
    assert machine["builds"]["after"]["source"]["repository"] == "pytorch/executorch"
    real = list(
        csv.DictReader(io.StringIO(render_csv(result, ReportContext.from_manifest(REAL_MANIFEST)))))
    assert {r["simulated"] for r in real} == {"false"}


def test_the_footer_lists_the_machine_and_an_old_manifest_still_renders() -> None:
    markdown = render_markdown(result_for(build_records()),
                               context=ReportContext.from_manifest(SIM_MANIFEST))
    footer = markdown.split("## Machine\n", 1)[1]
    host = ("- Host: ci-7 · AMD EPYC 7B13 · 8 cores · 16.0 GiB · Debian GNU/Linux 12 (bookworm) · "
            "Python 3.11.7")
    assert host in footer
    assert ("- Load average (1 / 5 / 15 min): before 0.50 / 0.40 / 0.30, after 1.90 / 0.80 / "
            "0.40" in footer)
    assert "- Harness: fvp-harness 0.1.0 (checkout v0.1.0-3-gcccccc)" in footer
    assert "- Build **before**: runner sha256 `111111111111`, source checkout v1.0-dirty" in footer
    old = machine_section(ReportContext.from_manifest({**MANIFEST, "host": FORMAT_4_HOST}).machine,
                          ["before"])
    assert old[2] == "- Host: vm · x86_64 · 2 cores · memory n/a · Linux · Python 3.11.7"
    assert not any(line.startswith("- Load average") for line in old)  # format 4 did not record it


def test_saved_signs_read_naturally() -> None:
    assert ([fmt.saved_percent(v) for v in (64.26, -20.0, -0.04, None)]
            == ["+64.3%", "20.0% slower", "0.0%", "n/a"])
    assert ([fmt.saving_phrase(v, 0) for v in (64.3, -20.2, -0.3)]
            == ["saved 64%", "20% slower", "no change"])
    assert fmt.saved_interval(62.93, 65.94) == "62.9 … 65.9%"
    assert fmt.saved_interval(-22.0, -18.0) == "18.0 … 22.0% slower"
    assert fmt.saved_interval(-3.0, 5.2) == "3.0% slower … 5.2%"


def test_the_samples_chart_has_a_panel_per_model_and_a_dot_per_sample(tmp_path: Path) -> None:
    result = result_for(build_records())
    figure = samples_figure(result, ["before", "after"], "title")
    assert figure is not None
    panels = figure.axes
    assert ([axes.texts[-1].get_text() for axes in panels]
            == ["ResNet8", "DS-CNN", "MobileNetV1 | 0.25"])
    dots = [line for line in panels[0].lines if line.get_marker() == "o"]
    # per build: 3 processes x 10 iterations
    assert [len(line.get_xdata()) for line in dots] == [30, 30]
    assert all(abs(y) < 10 for line in dots for y in line.get_ydata())  # % from the build's median
    files = render_report(result, tmp_path, outputs=["markdown", "png"],
                          context=ReportContext.from_manifest(SIM_MANIFEST))
    assert (tmp_path / "report.samples.png").read_bytes().startswith(b"\x89PNG")
    assert "[report.samples.png](report.samples.png)" in files["markdown"].read_text()
    render_report(result, tmp_path, outputs=["markdown"],
                  context=ReportContext.from_manifest(SIM_MANIFEST))
    # no link to a chart not written
    assert "report.samples.png" not in (tmp_path / "report.md").read_text()
