"""Report rendering: the published table's shape, the added columns, sections, and byte-identical
output."""

from __future__ import annotations

import io
import json
import os
import random
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from fvp_harness.report.rendering import charts
from fvp_harness.report.rendering.charts import render_png
from fvp_harness.report.rendering.context import ReportContext
from fvp_harness.report.rendering.json_report import REPORT_FORMAT_VERSION
from fvp_harness.report.rendering.markdown import render_markdown
from fvp_harness.report.rendering.md_tables import expectations_markdown
from fvp_harness.report.rendering.render import render_report
from fvp_harness.report.stats.analysis import analyse
from fvp_harness.report.stats.result import AnalysisResult, expectations_violated
from fvp_harness.report.stats.spec import Settings
from fvp_harness.scenario.model import Compare
from fvp_harness.store.folder import ResultStore
from fvp_harness.store.records import Record
from tests.helpers import interleaved, record

SAVINGS = {"ResNet8": (2.60, 0.93), "DS-CNN": (1.99, 0.93), "MobileNetV1 | 0.25": (4.35, 1.01)}
MANIFEST = {
    "scenario": {"name": "driver_reuse", "file": "scenarios/driver_reuse.yaml"},
    "platform": "corstone1000-a320",
    "fvp": {"binary": "FVP_Corstone-1000-A320", "version": "11.27.19"},
    "builds": {
        "before": {"id": "ethosu-driver per-inference", "sha256": "1" * 64},
        "after": {"id": "ethosu-driver reuse", "sha256": "2" * 64},
    },
    "started": "2026-03-01T10:00:00Z",
    "finished": "2026-03-01T10:42:00Z",
}


def build_records(npu_after: float = 85092.0, fail: bool = False, seed: int = 0,
                  reps: int = 3) -> list[Record]:
    rng = np.random.default_rng(seed)
    records = []
    for second, rep, model, build in interleaved(range(1, reps + 1), list(SAVINGS),
                                                 ("before", "after")):
        before, after = SAVINGS[model]
        centre = before if build == "before" else after
        values = (centre * (1 + 0.01 * rng.standard_normal(10))).tolist()
        npu = 85092.0 if build == "before" else npu_after
        records.append(record(
            f"r{rep}-{build}-{model}", key=f"{rep}{build}{model}", build=build, model=model,
            repetition=rep, samples={"cpu_time": values, "npu_cycles": [npu] * 10},
            metric_units={"cpu_time": "ms", "npu_cycles": "cycles"},
            outputs={"out-0.bin": "ab" * 32}, started=f"2026-03-01T10:{second:02d}:00Z",
        ))
    if fail:
        records.append(record(
            "r4-after-ResNet8", status="failed", key="crash", build="after", model="ResNet8",
            repetition=4,
            metric_units={}, failure_class="test",
            failure="runner exited with status 139 (segfault)",
            log="logs/s0/r4-after-ResNet8.log", started="2026-03-01T10:59:00Z",
        ))
    return records


def result_for(records: list[Record]) -> AnalysisResult:
    return analyse(records, Compare(), ["npu_cycles"], Settings(resamples=500))


CONTEXT = ReportContext.from_manifest(MANIFEST)


def table_lines(markdown: str, header_start: str) -> list[str]:
    lines = markdown.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    return lines[start:end]


def cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]


# --- markdown -------------------------------------------------------------------------------------


def test_markdown_table_is_headed_like_the_published_one() -> None:
    markdown = render_markdown(result_for(build_records()), context=CONTEXT)
    table = table_lines(markdown, "| Model")
    header = cells(table[0])
    assert header[:3] == ["Model", "CPU time per inference, before -> after", "Saved"]
    assert header[3:] == ["95% CI of saved", "p", "Processes", "NPU cycles", "Outputs identical",
                          "Verdict"]
    widths = {len(cells(line)) for line in table}
    # every row has every column: the escaped | in a model name did not split it
    assert widths == {9}
    rows = {cells(line)[0]: cells(line) for line in table[2:]}
    resnet = rows["ResNet8"]
    assert re.fullmatch(r"2\.\d\d -> 0\.9\d ms", resnet[1])
    assert re.fullmatch(r"\+6\d\.\d%", resnet[2])
    assert re.fullmatch(r"\d+\.\d … \d+\.\d%", resnet[3])
    # Processes: what the CI counts, 3 vs 3 runner processes
    assert re.fullmatch(r"<0\.001|0\.0[0-4]\d", resnet[4]) and resnet[5] == "3/3"
    assert resnet[6] == "= 85,092" and resnet[7] == "✓ yes" and resnet[8] == "faster"
    assert "MobileNetV1 \\| 0.25" in rows
    geo = rows["**Geometric mean** (3 models)"]
    assert geo[1].startswith("ratio 0.") and geo[8] == "faster"


def test_markdown_context_line_and_sections() -> None:
    markdown = render_markdown(result_for(build_records(fail=True)), context=CONTEXT)
    assert markdown.startswith("# driver_reuse: after vs before\n")
    line = markdown.split("\n")[2]
    assert ("Platform: **corstone1000-a320**" in line and
            "FVP: **FVP_Corstone-1000-A320 11.27.19**" in line)
    assert "**before** (id `ethosu-driver per-inference`, runner sha256 `111111111111`)" in line
    assert "date: 2026-03-01" in line
    assert "## Expectations" in markdown and "**PASS**: no expectation violated" in markdown
    failures = table_lines(markdown, "| Unit")
    assert cells(failures[2]) == [
        "r4-after-ResNet8",
        "after",
        "ResNet8",
        "1",
        "test",
        "runner exited with status 139 (segfault)",
        "logs/s0/r4-after-ResNet8.log",
    ]
    assert "## Per build" in markdown
    assert markdown.endswith("\n") and not markdown.endswith("\n\n")


def test_identity_failure_is_a_visible_fail() -> None:
    result = result_for(build_records(npu_after=85100.0))
    markdown = render_markdown(result, context=CONTEXT)
    assert "**FAIL**: 3 of 9 expectations violated" in markdown
    rows = {cells(line)[0]: cells(line) for line in table_lines(markdown, "| Model")[2:]}
    assert rows["ResNet8"][6] == "85,092 -> 85,100"
    assert "### Identity differences" in markdown
    assert "  - before: 85092 x30" in markdown and "  - after: 85100 x30" in markdown
    assert expectations_violated(result)


def test_title_and_no_context() -> None:
    markdown = render_markdown(result_for(build_records()), title="Driver reuse | A320")
    assert markdown.startswith("# Driver reuse | A320\n\nbuilds: **before**, "
                               "**after**\n\n**Verdict: PASS**: no expectation violated (9 of 9 "
                               "verified).\n\n| Model")


def test_few_processes_warning() -> None:
    markdown = render_markdown(result_for(build_records(reps=2)), context=CONTEXT)
    assert "## Warnings" in markdown and "only 2 runner process(es)" in markdown


# --- CSV / JSON / PNG -----------------------------------------------------------------------------


def test_csv_and_json_carry_the_same_numbers(tmp_path: Path) -> None:
    result = result_for(build_records())
    # the default set: below
    paths = render_report(result, tmp_path, outputs=["csv", "json"], context=CONTEXT)
    frame = pd.read_csv(paths["csv"])
    assert frame["model"].tolist() == [*SAVINGS, "geometric mean"]
    data = json.loads(paths["json"].read_text())
    assert (data["format"] == "fvp-harness-report" and
            data["format_version"] == REPORT_FORMAT_VERSION)
    assert data["expectations_violated"] is False
    assert data["context"]["platform"] == "corstone1000-a320"
    models = data["comparison"]["models"]
    for (_, row), model in zip(frame.iloc[:-1].iterrows(), models, strict=True):
        assert row["saved_pct"] == pytest.approx(model["saved_pct"], rel=1e-5)
        assert row["verdict"] == model["verdict"]
    assert "NaN" not in paths["json"].read_text()


def test_report_files_get_normal_permissions(tmp_path: Path) -> None:
    """Reports are for sharing: 0o666 minus the umask like any file the user makes, not a temp
    file's 0o600."""
    old = os.umask(0o022)
    try:
        paths = render_report(result_for(build_records()), tmp_path, context=CONTEXT)
    finally:
        os.umask(old)
    assert list(paths) == ["markdown", "csv", "json", "png"], (
        "the outputs written when none are asked for")
    assert ({name: path.stat().st_mode & 0o777 for name, path in paths.items()}
            == dict.fromkeys(paths, 0o644))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "report.csv",
        "report.json",
        "report.md",
        "report.png",
        "report.samples.png",
    ]
    assert (tmp_path / "report.samples.png").stat().st_mode & 0o777 == 0o644


def test_png_is_written_without_timestamps(tmp_path: Path) -> None:
    paths = render_report(result_for(build_records()), tmp_path, outputs=["png"], context=CONTEXT)
    data = paths["png"].read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert b"Software" not in data and b"Creation" not in data


def test_only_requested_outputs_and_unknown_ones_refused(tmp_path: Path) -> None:
    paths = render_report(result_for(build_records()), tmp_path, outputs=["markdown"])
    assert (list(paths) == ["markdown"] and
            sorted(p.name for p in tmp_path.iterdir()) == ["report.md"])
    with pytest.raises(ValueError, match="unknown report output"):
        render_report(result_for(build_records()), tmp_path, outputs=["pdf"])


def test_report_without_comparison(tmp_path: Path) -> None:
    result = analyse(build_records(), None, (), Settings(resamples=200))
    paths = render_report(result, tmp_path, title="smoke")
    markdown = paths["markdown"].read_text()
    assert "## Per build" in markdown and "| Model | CPU time" not in markdown
    assert pd.read_csv(paths["csv"])["metric"].tolist()[:2] == ["cpu_time", "npu_cycles"]
    assert paths["png"].stat().st_size > 1000


# --- build order ----------------------------------------------------------------------------------


def abba_records() -> list[Record]:
    """Run order as the interleaved plan makes it: per model the builds alternate, so for DS-CNN
    ``after`` runs first; plus a third build, ``debug``, that is neither compared one and runs
    last."""
    records = []
    for i, r in enumerate(build_records(reps=3)):
        # the same samples, the two builds' run slots (minutes s and s + 1) swapped
        if r.model == "DS-CNN":
            minute = int(r.started[14:16]) + (-1 if r.build == "after" else 1)
            r = r.model_copy(update={"started": f"{r.started[:14]}{minute:02d}{r.started[16:]}"})
        records.append(r)
        if r.build == "before":
            debug = {
                "build": "debug",
                "unit_id": f"{r.unit_id}-debug",
                "key": f"d{i}",
                "started": r.started.replace("T10:", "T11:"),
            }
            records.append(r.model_copy(update=debug))
    return records


def test_builds_are_listed_baseline_first_everywhere(tmp_path: Path) -> None:
    result = result_for(abba_records())
    manifest = {**MANIFEST,
                "builds": dict(sorted({**MANIFEST["builds"], "debug": {"id": "dbg"}}.items()))}
    # sorted like manifest.json: after, before, debug
    context = ReportContext.from_manifest(manifest)
    paths = render_report(result, tmp_path, outputs=["markdown", "json"], context=context)
    markdown = paths["markdown"].read_text()
    line = markdown.split("\n")[2]
    assert line.index("**before**") < line.index("**after**") < line.index("**debug**")
    per_build = [cells(row)[:2]
                 for row in table_lines(markdown.split("## Per build")[1], "| Model")[2:]]
    builds_per_model: dict[str, list[str]] = {}
    for model, build in per_build:
        model = model.replace("\\|", "|")  # the table escapes | in a model name
        if build not in builds_per_model.setdefault(model, []):
            builds_per_model[model].append(build)
    assert list(builds_per_model) == list(SAVINGS)  # models keep their run order
    assert set(map(tuple, builds_per_model.values())) == {("before", "after", "debug")}
    data = json.loads(paths["json"].read_text())
    assert data["builds"] == ["before", "after", "debug"]
    summary_builds = [
        row["build"]
        for row in data["summary"] if row["model"] == "DS-CNN" and row["metric"] == "cpu_time"
    ]
    assert summary_builds == ["before", "after", "debug"]


def test_builds_without_comparison_follow_the_order_they_first_ran(tmp_path: Path) -> None:
    result = analyse(abba_records(), None, (), Settings(resamples=200))
    paths = render_report(result, tmp_path, outputs=["csv", "json"])
    frame = pd.read_csv(paths["csv"])
    for model in SAVINGS:
        rows = frame[(frame["model"] == model) & (frame["metric"] == "cpu_time")]
        assert rows["build"].tolist() == ["before", "after", "debug"], model
    assert json.loads(paths["json"].read_text())["builds"] == ["before", "after", "debug"]


# --- determinism ----------------------------------------------------------------------------------


def test_regeneration_from_stored_records_is_byte_identical(tmp_path: Path) -> None:
    """What ``fvp-harness report DIR`` relies on: store -> records -> analysis -> files, twice, same
    bytes."""
    store = ResultStore(tmp_path / "results" / "driver_reuse")
    store.write_manifest(MANIFEST)
    for built in build_records(fail=True):
        store.append(built)

    def regenerate(out: Path) -> dict[str, bytes]:
        manifest = store.read_manifest()
        result = result_for(store.records())
        paths = render_report(result, out, context=ReportContext.from_manifest(manifest))
        return {name: path.read_bytes() for name, path in paths.items()}

    first = regenerate(tmp_path / "one")
    second = regenerate(tmp_path / "two")
    assert first.keys() == second.keys()
    for name in first:
        assert first[name] == second[name], name


def test_output_does_not_depend_on_the_order_of_lines_in_records_jsonl() -> None:
    """Parallel sessions append in completion order; the report follows execution (start) order
    instead."""
    records = build_records(fail=True)
    shuffled = records[:]
    random.Random(7).shuffle(shuffled)
    assert render_markdown(result_for(records), context=CONTEXT) == render_markdown(
        result_for(shuffled), context=CONTEXT
    )


def test_public_names_exist() -> None:
    """``__all__`` of every report module, the scraper and the store names only things that exist
    (the API execute and the CLI use), constants first, each group sorted."""
    import importlib
    import pkgutil

    import fvp_harness.report
    import fvp_harness.run.scrape as scrape
    import fvp_harness.store.folder as store

    report = [importlib.import_module(info.name) for info in
              pkgutil.walk_packages(fvp_harness.report.__path__, prefix="fvp_harness.report.")
              if not info.ispkg]
    assert len(report) > 30, "the walk finds the report package's modules"
    for module in (*report, scrape, store):
        missing = [name for name in module.__all__ if not hasattr(module, name)]
        assert not missing, (module.__name__, missing)
        assert list(module.__all__) == sorted(module.__all__, key=lambda n: (not n.isupper(), n))


CHART_CHILD = """
import json, sys
from pathlib import Path
from fvp_harness.report.stats.analysis import analyse
from fvp_harness.report.rendering.render import render_report
from fvp_harness.scenario.model import Compare
from tests.helpers import record
records = [record(f"r{rep}-{build}-m", build=build, model="m", repetition=rep,
                  samples={"cpu_time": ([1.0 + rep / 10, 1.1, 1.2] if build == "before"
                                        else [0.5, 0.6, 0.7])},
                  started=f"2026-03-01T10:0{rep}:0{build == 'after'}Z")
           for rep in (1, 2) for build in ("before", "after")]
result = analyse(records, Compare(), ())
loaded = []
for outputs in (["markdown", "csv", "json"], ["png"]):
    render_report(result, Path(sys.argv[1]), outputs)
    loaded.append("matplotlib" in sys.modules)
print(json.dumps(loaded))
"""


def test_matplotlib_loads_only_when_a_chart_is_written(tmp_path: Path) -> None:
    """A report without its PNG (``render_report`` asked for markdown, CSV and JSON; the pytest
    plugin's and ``--github-summary``'s markdown) imports no matplotlib: it costs more than the
    analysis of a small run. The control: writing the chart must load it."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", CHART_CHILD, str(tmp_path)], cwd=repo,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == [False, True], (
        "matplotlib loaded before any chart was written")
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "report.csv", "report.json", "report.md", "report.png", "report.samples.png"]


def test_expectations_that_nothing_could_check_are_not_called_a_pass() -> None:
    """A run that measured nothing must not show a green PASS over no evidence."""
    rows = [("m", "identical outputs", "unverified", "no values"),
            ("m", "identical npu_cycles", "unverified", "")]
    head = expectations_markdown(rows)[2]
    assert head.startswith("**NOT VERIFIED**: none of 2 expectations") and "PASS" not in head
    mixed = expectations_markdown([("m", "identical outputs", "pass", ""), *rows[1:]])[2]
    assert mixed.startswith("**PASS**") and "1 could not be verified" in mixed
    failed = expectations_markdown([("m", "identical outputs", "fail", "a != b"), *rows])[2]
    assert failed.startswith("**FAIL**: 1 of 3")


def _save_laid_out_twice(figure: Figure, path: Path) -> Path:
    """How the chart was saved before: ``tight_layout`` leaves its placeholder engine, so
    ``savefig`` lays the figure out once more in a draw of its own."""
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    path.write_bytes(buffer.getvalue())
    return path


@pytest.mark.parametrize("with_comparison", [True, False])
def test_png_chart_is_drawn_once_and_has_the_bytes_of_the_chart_laid_out_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_comparison: bool
) -> None:
    records = build_records(fail=True)
    result = (
        result_for(records)
        if with_comparison
        else analyse(records, None, (), Settings(resamples=200))
    )
    draws: list[object] = []
    draw = Figure.draw

    def counted(self: Figure, renderer: object) -> None:
        draws.append(renderer)
        draw(self, renderer)

    with monkeypatch.context() as patched:
        patched.setattr(Figure, "draw", counted)
        once = render_png(result, tmp_path / "once.png", "driver reuse").read_bytes()
    assert len(draws) == 1
    monkeypatch.setattr(charts, "save_png", _save_laid_out_twice)
    assert once == render_png(result, tmp_path / "twice.png", "driver reuse").read_bytes()
