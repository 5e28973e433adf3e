"""The report lists models in the order the plan runs them, whatever order their units finished
in."""

from __future__ import annotations

import json
from pathlib import Path

from fvp_harness.run.reporting import rebuild_report
from tests.report.stored_runs import write_run


def test_models_are_reported_in_the_plan_order_not_the_order_units_finished(tmp_path: Path) -> None:
    # instances: 2 (two launches side by side): m2's units happened to be stored before m1's
    values = {("before", "m2"): 20.0, ("after", "m2"): 10.0, ("before", "m1"): 8.0,
              ("after", "m1"): 4.0}
    planned = [f"r{rep}-{build}-{model}" for rep in range(3) for model in ("m1", "m2")
               for build in ("before", "after")]
    store = write_run(tmp_path / "demo", values, run_id="r1",
                      changes={"plan.sessions": {"s0": planned}})
    records = [json.loads(line) for line in (store.root / "records.jsonl").read_text().splitlines()]
    assert records[0]["model"] == "m2", "the stored order is the race's"
    rebuild_report(store.root)
    report = json.loads((store.root / "report.json").read_text())
    assert list(dict.fromkeys(row["model"] for row in report["summary"])) == ["m1", "m2"]
    markdown = (store.root / "report.md").read_text()
    assert markdown.index("| m1 ") < markdown.index("| m2 ")
