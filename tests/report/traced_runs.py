"""Two synthetic stored runs of builds ``before`` and ``after`` on model ``m1`` whose units kept
ETDump traces (or not), for the tests of ``compare``'s event section and ``compare --html``: the
traces are the simulator's writer's bytes (``sim.workloads.etdump``), one event named as a hostile
trace might name it."""

from __future__ import annotations

from pathlib import Path

from fvp_harness.sim.workloads.etdump import ProfileEvent, RunBlock, encode_etdump
from tests.report.stored_runs import write_run

__all__ = ["HOSTILE", "RUN_A", "RUN_B", "traced_runs"]

BASE = {("before", "m1"): 2.0, ("after", "m1"): 1.0}
RUN_A, RUN_B = "20260301-100000-aaaa", "20260302-100000-bbbb"
HOSTILE = "<img src=x onerror=alert(1)>"
"""An event name as an untrusted trace may carry it: text on the page, never markup."""
TRACED = {"etdump": "etdump.bin", "etdump_sha256": "0" * 64}


def _trace(npu: int, rng_offset: int) -> bytes:
    """A traced unit's file: the load, then four executions (the first the warmup) whose NPU call
    lasts ``npu``."""
    blocks = [RunBlock("Default",
                       (ProfileEvent(0, 500, name="Program::load_method", chain_index=-1),))]
    for index in range(4):
        end = 20 + npu + (index * 7 + rng_offset) % 11
        blocks.append(RunBlock("Execute", (
            ProfileEvent(10, 20, name=HOSTILE, instruction_id=0),
            ProfileEvent(20, end, name="+NPU", instruction_id=0),
            ProfileEvent(5, end + 2, name="DELEGATE_CALL", instruction_id=0),
            ProfileEvent(0, end + 6, name="Method::execute", chain_index=-1, instruction_id=0),
        )))
    return encode_etdump(blocks)


def _run(folder: Path, run_id: str, commit: str, *, after_m1: float, npu_after: int, traced: bool,
         seed: int) -> None:
    store = write_run(folder, BASE | {("after", "m1"): after_m1}, run_id=run_id, commit=commit * 40,
                      seed=seed,
                      branch="main" if commit == "a" else "feature",
                      extra=TRACED if traced else None)
    if traced:
        for unit in (record.unit_id for record in store.records()):
            npu = 2000 if "-before-" in unit else npu_after
            path = folder / "fetched" / unit / "etdump.bin"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(_trace(npu, seed + len(unit)))


def traced_runs(tmp_path: Path, *, traced: tuple[bool, bool], after_m1: float = 1.0) -> Path:
    """Run A (branch main) then run B (feature) in ``tmp_path/results/demo``, returned; ``traced``:
    which of them kept traces. B's ``after`` takes ``after_m1`` ms on m1 and its NPU call is 30 %
    longer than A's."""
    folder = tmp_path / "results" / "demo"
    _run(folder, RUN_A, "a", after_m1=1.0, npu_after=1000, traced=traced[0], seed=1)
    _run(folder, RUN_B, "b", after_m1=after_m1, npu_after=1300, traced=traced[1], seed=2)
    return folder
