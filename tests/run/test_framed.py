"""One round trip per unit (``run.framed``): the framed line's parts, and the commands a unit costs
on a fake."""

from __future__ import annotations

import hashlib
from pathlib import Path

from fvp_harness.run.framed import frame_unit, parse_framed
from fvp_harness.run.pipeline import RunOptions, run_scenario
from fvp_harness.scenario import load_scenario
from fvp_harness.store.folder import ResultStore
from fvp_harness.targets.fake import FakeTarget
from tests.fakes import FakeFleet

DIGEST = "ab" * 32
SCENARIO = """
name: framed
fvp: {{binary: sim}}
builds:
  before: {{runner: bin/runner-before, id: id-before}}
  after: {{runner: bin/runner-after, id: id-after}}
models:
  m1: {{file: m1.model}}
run:
  command: "{{runner}} --model_path={{model}} --num_executions={{iterations}}
    --output_file={{output}}"
  iterations: 3
  repetitions: 2
{fetch}
metrics: [{{name: cpu_time, required: true}}]
compare: {{baseline: before, candidate: after}}
report: {{outputs: [markdown]}}
"""


def test_the_runner_output_is_exactly_what_lies_between_the_markers() -> None:
    text = "T.ready\nIteration 1: 2 ms\nno newline at the end\nT.status 3\n" + (
        f"{DIGEST}  out.bin\n"
    )
    framed = parse_framed(text, "T")
    assert framed.ready and framed.status == 3
    assert framed.output == "Iteration 1: 2 ms\nno newline at the end"
    assert framed.digests == {"out.bin": DIGEST} and framed.problems == ()
    faked = parse_framed("T.ready\nX.status 0\n\nT.status 1\n", "T")
    assert (faked.status, faked.output) == (1, "X.status 0\n"), "only the token's own marker counts"


def test_missing_markers_an_empty_folder_and_a_folder_among_the_outputs() -> None:
    assert not parse_framed("mkdir: can't create directory '/x': Read-only file system\n",
                            "T").ready
    cut = parse_framed("T.ready\nhalf of the output", "T")
    assert cut.ready and cut.status is None and cut.output == "half of the output"
    empty = parse_framed("T.ready\n\nT.status 0\nsha256sum: can't open '*': No such file or "
                         "directory\n", "T")
    assert empty.digests == {} and empty.problems == ()
    folder = parse_framed(f"T.ready\n\nT.status 0\n{DIGEST}  a\nsha256sum: sub: Is a directory\n",
                          "T")
    assert (folder.digests == {"a": DIGEST} and
            folder.problems == ("sha256sum: sub: Is a directory",))


def test_a_framed_line_runs_on_the_guest_contract() -> None:
    fake = FakeTarget()
    fake.program("/g/runner", lambda call: call.write("/u/1/out.bin", b"o") or "ran\n")
    line = frame_unit("/g/runner --x", "/u/1", "T")
    framed = parse_framed(fake.run(line).output, "T")
    assert (framed.ready, framed.status, framed.output) == (True, 0, "ran\n")
    assert framed.digests == {"out.bin": hashlib.sha256(b"o").hexdigest()}
    assert not any(path.startswith("/u/1") for path in fake.files), (
        "the folder is removed in the same line")
    fake.program("/g/fails", lambda call: 7)
    assert parse_framed(fake.run(frame_unit("/g/fails", "/u/2", "T")).output, "T").status == 7


def _run(tmp_path: Path, fetch: str = "") -> tuple[FakeFleet, list[str]]:
    (tmp_path / "bin").mkdir()
    for name in ("bin/runner-before", "bin/runner-after", "m1.model"):
        (tmp_path / name).write_text(name)
    path = tmp_path / "framed.yaml"
    path.write_text(SCENARIO.format(fetch=fetch))
    fleet = FakeFleet(outputs={"out-0.bin": b"same", "perf.json": b"{}"})
    outcome = run_scenario(load_scenario(path), RunOptions(output_dir=tmp_path / "out"),
                           factory=fleet.factory, deploy=fleet.deploy)
    assert outcome.exit_code == 0
    unit_ids = [r.unit_id for r in ResultStore(tmp_path / "out").records()]
    return fleet, unit_ids


def test_a_unit_costs_one_round_trip(tmp_path: Path) -> None:
    fleet, unit_ids = _run(tmp_path)
    target = fleet.targets[0]
    per_unit = {unit: [c for c in target.commands if f"/units/{unit}" in c] for unit in unit_ids}
    assert len(unit_ids) == 4 and all(len(commands) == 1 for commands in per_unit.values()), (
        per_unit)
    assert target.commands[0].startswith("df -kP"), (
        "the guest check (run.guest_needs) before the deploy")
    assert len(target.commands) == 2 + len(unit_ids), (
        "the guest check, the runner check, then one command per unit")
    assert target.transfers == [("put", p) for _, p in target.transfers if _ == "put"], (
        "nothing read back")
    for record in ResultStore(tmp_path / "out").records():
        assert record.outputs == {"out-0.bin": hashlib.sha256(b"same").hexdigest(),
                                  "perf.json": hashlib.sha256(b"{}").hexdigest()}
        assert "fvpunit" not in (tmp_path / "out" / str(record.log)).read_text(), (
            "the log holds the runner's text")


def test_run_fetch_reads_back_only_what_is_asked_then_cleans_up(tmp_path: Path) -> None:
    fleet, unit_ids = _run(tmp_path, fetch='  fetch: ["{unit_dir}/perf.json"]')
    target = fleet.targets[0]
    per_unit = {unit: [c for c in target.commands if f"/units/{unit}" in c] for unit in unit_ids}
    assert all(len(commands) == 2 and commands[1].startswith("rm -rf")
               for commands in per_unit.values())
    assert ([path.rsplit("/", 1)[1] for kind, path in target.transfers if kind == "get"]
            == ["perf.json"] * 4)
    assert not any("/units/" in path for path in target.files), "every unit folder is removed"
