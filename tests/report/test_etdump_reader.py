"""``report/stats/etdump.py`` against an independent reader: ``flatc --json`` (Debian's
flatbuffers-compiler) decoding the same simulator-written bytes with the same schema file; and
hostile bytes give ``EtdumpError``, nothing else.

Under ``CI=true`` a missing ``flatc`` fails the comparison (``.ci/run`` installs it); elsewhere it
skips saying how to install it."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from fvp_harness.report.stats.etdump import (
    EVENT_COLUMNS,
    SCHEMA_FILE,
    EtdumpError,
    events_frame,
    read_etdump,
    schema,
)
from fvp_harness.sim.networks.architectures import get_architecture
from fvp_harness.sim.networks.modelfile import (
    RunnerArtifact,
    compile_model,
    encode_model,
    encode_runner,
)
from fvp_harness.sim.workloads.etdump import DebugTensor, ProfileEvent, RunBlock, encode_etdump
from fvp_harness.sim.workloads.executor_runner import executor_runner
from tests.helpers import skip_or_fail_in_ci
from tests.sim.workloads.fake_context import FakeContext


@functools.cache
def _model() -> bytes:
    return encode_model(compile_model(get_architecture("resnet8"), 0, 256))


def _runner_etdump(driver: str, executions: int = 2) -> bytes:
    """The ETDump the emulated Linux executor_runner (built with the event tracer) writes for
    resnet8."""
    files = {"/g/runner": encode_runner(RunnerArtifact(driver, event_tracer=True)),
             "/g/m.bin": _model(),
             "/dev/ethosu0": b""}  # the default image's NPU node (the delegate opens it)
    ctx = FakeContext(["/g/runner", "--model_path=/g/m.bin", f"--num_executions={executions}",
                       "--etdump_path=/g/trace.etdp"], files, {}, 256)
    assert executor_runner(ctx) == 0, ctx.stderr_text
    return ctx.files["/g/trace.etdp"]


def _baremetal_etdump() -> bytes:
    """The writer's other shape (bare-metal runner): cycles, a delegate event named by its debug id,
    a debug event holding a tensor."""
    return encode_etdump([
        RunBlock("Default", (ProfileEvent(5, 900, name="Method::init"),)),
        RunBlock("Execute",
                 (ProfileEvent(1000, 1500, delegate_debug_id_str="ethos-u", instruction_id=0),
                             DebugTensor((1, 10), 64, name="output"),
                             ProfileEvent(990, 1600, name="Method::execute", chain_index=-1,
                                          instruction_id=0))),
    ])


def _flatc() -> str:
    found = shutil.which("flatc")
    if found is None:
        skip_or_fail_in_ci("flatc is missing: apt-get install flatbuffers-compiler",
                           "flatc is missing: .ci/run installs Debian's flatbuffers-compiler for "
                           "this test")
    return found


def _flatc_rows(data: bytes,
                tmp_path: Path) -> tuple[int, list[str], list[tuple[object, ...]], int]:
    """Decode with flatc into JSON, then into the reader's rows: (version, block names, profile
    rows, others)."""
    source = tmp_path / "trace.etdp"
    source.write_bytes(data)
    subprocess.run([_flatc(), "--json", "--strict-json", "--size-prefixed", "--raw-binary",
                    "--defaults-json",
                    "-o", str(tmp_path), str(SCHEMA_FILE), "--", str(source)], check=True,
                   capture_output=True, timeout=60)
    decoded = json.loads((tmp_path / "trace.json").read_text())
    rows: list[tuple[object, ...]] = []
    others = 0
    blocks = []
    for b, run in enumerate(decoded.get("run_data", [])):
        blocks.append(run.get("name", ""))
        for position, event in enumerate(run.get("events", [])):
            profile = event.get("profile_event")
            if profile is None:
                others += 1
                continue
            debug = profile.get("delegate_debug_id_str")
            if debug is None and profile["delegate_debug_id_int"] != -1:
                debug = str(profile["delegate_debug_id_int"])
            rows.append((b, run.get("name", ""), position, profile.get("name", debug or ""),
                         profile["chain_index"],
                         profile["instruction_id"], debug, profile["start_time"],
                         profile["end_time"], profile["end_time"] - profile["start_time"]))
    return decoded["version"], blocks, rows, others


@pytest.mark.parametrize("make",
                         [lambda: _runner_etdump("per-inference"), lambda: _runner_etdump("reuse"),
                                  _baremetal_etdump],
                         ids=["linux-before", "linux-after", "baremetal"])
def test_the_reader_equals_flatc_json_on_the_simulators_files(make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = make()
    decoded = read_etdump(data)
    ours = [tuple(getattr(e, column) for column in EVENT_COLUMNS) for e in decoded.events]
    assert (list(events_frame(decoded).columns) == list(EVENT_COLUMNS) and
            len(events_frame(decoded)) == len(ours))
    assert set(events_frame(decoded, "ns")["time_unit"]) == {"ns"}
    version, blocks, theirs, others = _flatc_rows(data, tmp_path)
    assert (decoded.version, list(decoded.blocks), decoded.other_events) == (
        version,
        blocks,
        others,
    )
    assert ours == theirs
    assert len(ours) >= 3


def test_the_linux_runners_events_are_upstreams() -> None:
    """The Execute block of a traced Ethos-U run: the backend's scopes inside DELEGATE_CALL inside
    Method::execute (written when they end: inner first), Method::execute as long as the iteration
    it times."""
    decoded = read_etdump(_runner_etdump("per-inference", executions=1))
    assert decoded.blocks == ("Default", "Execute")
    execute = [(e.event, e.chain_index, e.instruction_id)
               for e in decoded.events if e.run_block == "Execute"]
    assert execute == [("+EthosUBackend::execute()handles.input.memcpy()", 0, 0),
                       ("+EthosUBackend::execute()NPU", 0, 0), ("EthosUBackend::execute()", 0, 0),
                       ("DELEGATE_CALL", 0, 0), ("Method::execute", -1, 0)]
    load = [e.event for e in decoded.events if e.run_block == "Default"]
    assert load == ["+EthosUBackend::init()processed_data", "+EthosUBackend::init()vela_bin_read()",
                    "Method::init", "Program::load_method"]


def test_the_schema_file_holds_upstreams_slots() -> None:
    s = schema()
    assert s.identifier == b"ED00"
    assert [f.name for f in sorted(s.tables["ProfileEvent"].values(), key=lambda f: f.slot)] == [
        "name", "chain_index", "instruction_id", "delegate_debug_id_int", "delegate_debug_id_str",
        "delegate_debug_metadata", "start_time", "end_time"]
    assert (s.field("RunData", "events").slot == 3 and
            s.field("RunData", "bundled_input_index").default == "-1")


def test_truncated_and_corrupt_files_are_an_etdump_error_never_another_exception() -> None:
    data = _runner_etdump("reuse", executions=1)
    for cut in range(len(data)):  # every truncation
        with pytest.raises(EtdumpError):
            read_etdump(data[:cut])
    bad_id = data[:8] + b"XX00" + data[12:]
    with pytest.raises(EtdumpError, match="identifier"):
        read_etdump(bad_id)
    import random

    rng = random.Random(28)
    for _ in range(400):  # flipped bytes past the prefix: decoded or refused, never a traceback
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            mutated[rng.randrange(12, len(mutated))] = rng.randrange(256)
        try:
            read_etdump(bytes(mutated))
        except EtdumpError:
            pass
