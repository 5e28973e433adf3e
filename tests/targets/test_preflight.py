"""``run``'s preflight is ``doctor``'s checklist: a binary that answers and refuses fails it
(configuration, the model's words whole); a silent one is left to the boot, whose retries are for
what may pass on a second try."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fvp_harness.errors import ConfigurationError
from fvp_harness.profiles import load_profile
from fvp_harness.run.doctor import doctor_exit_code, preflight, run_doctor

WORDS = ("ERROR: License checkout failed for feature FM_Corstone-1000-A320: no server at "
         "27000@lic.example (-15,10)")


def _binary(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "FVP_Corstone-1000-A320"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_a_refused_list_params_fails_the_checklist_with_the_whole_message(
    make_scenario, tmp_path: Path
) -> None:
    binary = _binary(tmp_path, f'echo "{WORDS}" >&2\nexit 1\n')
    checks = {
        check.name: check
        for check in run_doctor(
            make_scenario(), load_profile("corstone1000-a320"), binary=str(binary), probe_timeout=10
        )
    }
    for name in ("version", "parameters"):
        assert checks[name].status == "fail" and checks[name].failure_class == "configuration"
        assert WORDS in checks[name].detail and "exit status 1" in checks[name].detail
    assert doctor_exit_code(list(checks.values())) == 2


def test_preflight_raises_a_configuration_error_naming_every_failed_check(
    make_scenario, tmp_path: Path
) -> None:
    binary = _binary(tmp_path, f'case "$*" in *--list-params*) echo "{WORDS}" >&2; exit 3;; esac\n'
                               'echo "Fast Models [11.30.27 (simulated)]"\n')
    with pytest.raises(ConfigurationError) as caught:
        preflight(make_scenario(), load_profile("corstone1000-a320"), binary=str(binary),
                  probe_timeout=10)
    text = str(caught.value)
    assert f"parameters: `--list-params` failed (exit status 3): {WORDS}" in text
    assert "nothing was booted" in text and "version:" not in text, (
        "the version answered: not a failure")


def test_a_silent_binary_is_left_to_the_boot(make_scenario, tmp_path: Path) -> None:
    binary = _binary(tmp_path, "exec sleep 1000\n")
    firmware = {name: tmp_path / f"{name}.bin" for name in ("bl1", "flash")}
    for path in firmware.values():
        path.write_bytes(b"\0" * 64)
    scenario = make_scenario()
    scenario = scenario.model_copy(update={"fvp": scenario.fvp.model_copy(update={"firmware": {
        name: str(path) for name, path in firmware.items()}})})
    runner = tmp_path / "runner.sh"  # a script: /bin/true is an x86-64 ELF, not the platform's CPU
    runner.write_text("#!/bin/sh\n")
    before = scenario.builds["before"].model_copy(update={"runner": str(runner)})
    scenario = scenario.model_copy(update={"builds": {"before": before}})
    checks = preflight(scenario, load_profile("corstone1000-a320"), binary=str(binary),
                       probe_timeout=0.5)
    version = next(check for check in checks if check.name == "version")
    assert version.status == "fail" and version.failure_class == "infrastructure"


def test_scenarios_checked_side_by_side_ask_the_model_once(make_scenario, tmp_path: Path) -> None:
    """``make`` runs its scenarios' preflights four at a time: alike settings wait for one
    checklist, not four."""
    calls = tmp_path / "calls"
    binary = _binary(tmp_path,
                     f'echo "$1" >> "{calls}"\nsleep 0.5\necho "Fast Models [11.30.27 '
                     '(simulated)]"\n')
    scenario, profile = make_scenario(), load_profile("corstone1000-a320")

    def check(_: int) -> str:
        try:
            preflight(scenario, profile, binary=str(binary), probe_timeout=10)
        # it lists no parameters: the checklist fails, alike for every scenario
        except ConfigurationError as exc:
            return str(exc)
        return "passed"

    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(check, range(4)))
    assert sorted(calls.read_text().split()) == ["--list-params", "--version"]
    assert len(set(outcomes)) == 1
