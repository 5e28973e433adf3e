"""``doctor`` asks the model its two questions at the same time, says so as each starts and ends,
and fails a binary that never answers within one probe timeout, with the reason (no more two long
silent waits in a row)."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from fvp_harness.cli.main import main
from fvp_harness.profiles import load_profile
from fvp_harness.run.doctor import PROBE_TIMEOUT_S, Check, doctor_exit_code, run_doctor

# never answers --version or --list-params, whatever it is asked
SILENT = "#!/bin/sh\nexec sleep 1000\n"


def _silent_binary(tmp_path: Path) -> Path:
    binary = tmp_path / "FVP_Silent"
    binary.write_text(SILENT)
    binary.chmod(0o755)
    return binary


def test_the_default_probe_timeout_fails_a_silent_binary_within_15_seconds() -> None:
    assert PROBE_TIMEOUT_S + 1.0 <= 15.0


def test_a_silent_binary_fails_in_one_probe_timeout_with_the_reason(
    make_scenario, tmp_path: Path
) -> None:
    binary = _silent_binary(tmp_path)
    events: list[tuple[str, str, float]] = []
    lock = threading.Lock()
    began = time.monotonic()

    def started(name: str, what: str) -> None:
        with lock:
            events.append(("start", name, time.monotonic() - began))

    def ended(check: Check, seconds: float) -> None:
        with lock:
            events.append(("done", check.name, time.monotonic() - began))

    checks = run_doctor(make_scenario(), load_profile("corstone1000-a320"), binary=str(binary),
                        probe_timeout=1.0, on_start=started, on_done=ended)
    by_name = {check.name: check for check in checks}
    version, parameters = by_name["version"], by_name["parameters"]
    assert version.status == "fail" and version.failure_class == "infrastructure"
    assert ("gave no answer within 1 s: the binary is silent" in version.detail and
            "--probe-timeout" in version.fix)
    assert parameters.status == "warn" and "no answer within 1 s" in parameters.detail
    assert doctor_exit_code(checks) in (2, 3)
    # one probe timeout, not two in a row, told by the order of events (a loaded host stretches wall
    # times, not this order): the second probe started before the first gave up, and each gave up
    # only after its timeout
    starts = {name: when for kind, name, when in events if kind == "start"}
    probe_ends = {name: when for kind, name, when in events if kind == "done" and
                  name in ("version", "parameters")}
    assert sorted(starts) == ["parameters", "version"]
    assert max(starts.values()) < min(probe_ends.values()), (
        "both probes started before either ended")
    assert all(probe_ends[name] - starts[name] >= 1.0 for name in starts), (
        "each waited its whole timeout")
    assert {name for kind, name, _ in events if kind == "done"} == set(by_name), (
        "every check is reported as it ends")


def test_the_doctor_verb_prints_each_probe_as_it_starts_and_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = _silent_binary(tmp_path)
    for name in ("bl1.bin", "flash.wic"):
        (tmp_path / name).write_bytes(b"x")
    scenario = tmp_path / "real.yaml"
    scenario.write_text(
        "name: real\n"
        "builds:\n  before: {runner: runner}\n"
        "models:\n  m: {file: m.model}\n"
        f"fvp:\n  binary: {binary}\n  firmware: {{bl1: bl1.bin, flash: flash.wic}}\n"
    )
    for name in ("runner", "m.model"):
        (tmp_path / name).write_bytes(b"x")
    began = time.monotonic()
    code = main(["doctor", str(scenario), "--probe-timeout", "1"])
    took = time.monotonic() - began
    out = capsys.readouterr().out
    assert code == 3, out  # the platform failed: the binary does not answer
    lines = out.splitlines()
    starting = [i for i, line in enumerate(lines) if line.startswith("  ..")]
    finished = [i for i, line in enumerate(lines)
                if line.lstrip().startswith(("FAIL  version", "warn  parameters"))]
    assert len(starting) == 2 and "asking FVP_Silent --version (at most 1 s)" in out
    assert max(starting) < min(finished)
    assert "gave no answer within 1 s" in out and re.search(r"silent .*\(1\.\d s\)", out), out
    assert "some checks failed (exit 3): version" in out
    assert took < 3.0
