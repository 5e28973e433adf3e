"""The targets layer's seams: which target has which ability (checked on the Protocols, as deploy
and execute check them), and ``FakeTarget`` behaving like the guest contract it stands in for."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from fvp_harness.errors import ConsoleLost, DeployError
from fvp_harness.profiles import load_profile
from fvp_harness.run.deploy import Deployer, content_path
from fvp_harness.run.unit_command import render_unit_command
from fvp_harness.scenario import FvpConfig
from fvp_harness.targets import (
    CommandResult,
    CopiesOverSsh,
    FakeTarget,
    FvpSettings,
    FvpTarget,
    HostTarget,
    NamesPhases,
    SharesHostFiles,
    StreamsCommands,
    Target,
)
from fvp_harness.targets.transfer import upload_console


def test_each_target_has_the_abilities_it_claims(tmp_path: Path) -> None:
    fvp = FvpTarget(FvpConfig(), load_profile("corstone1000-a320"), log_dir=tmp_path / "fvp")
    host = HostTarget(log_dir=tmp_path / "host")
    fake = FakeTarget()
    for target in (fvp, host, fake):
        assert isinstance(target, Target) and isinstance(target, NamesPhases)
    assert isinstance(fvp, StreamsCommands) and isinstance(fvp, CopiesOverSsh)
    assert not isinstance(fvp, SharesHostFiles)
    with host:
        assert isinstance(host, SharesHostFiles) and not isinstance(host, StreamsCommands)
    assert not any(isinstance(fake, ability)
                   for ability in (StreamsCommands, CopiesOverSsh, SharesHostFiles))


def test_the_scenario_fvp_section_is_what_targets_read() -> None:
    # type-checked structurally by mypy
    settings: FvpSettings = FvpConfig(binary="sim", params={"a.b": 1})
    assert settings.timeouts.boot > 0 and settings.params == {"a.b": 1}


def test_fake_runs_the_guest_contract() -> None:
    fake = FakeTarget()
    assert fake.run("mkdir -p /w/u && cd /w/u && printf %s abc > f && ls").output == "f\n"
    assert fake.run("cat /w/u/f; echo done").output == "abcdone\n"
    digest = hashlib.sha256(b"abc").hexdigest()
    assert fake.run("cd /w/u && sha256sum f").output == f"{digest}  f\n"
    assert fake.run("false && echo no || echo yes").output == "yes\n"
    assert fake.run("printf '%s=%s;' a 1 b 2").output == "a=1;b=2;"
    assert fake.run("printf '%s%%' 50").output == "50%"
    assert fake.run("rm -rf /w && ls /w").exit_status == 1
    missing = fake.run("/guest/nothing --x")
    assert missing.exit_status == 127 and "not found" in missing.output
    assert fake.commands[-1] == "/guest/nothing --x" and fake.phases[-1] == "command"


def test_fake_programs_see_their_arguments_environment_and_folder() -> None:
    fake = FakeTarget()
    seen = []

    def runner(call):  # a runner that writes an output file and prints a line
        seen.append((call.argv, call.env, call.cwd, call.phase))
        call.write("out.bin", b"\x00\xff")
        return CommandResult(" ".join(call.argv), 0, "Iteration 1 of 1: 2.5 ms\n", duration_s=0.25)

    fake.program("/guest/*/executor_runner", runner)
    result = fake.run_in_phase("mkdir -p /u && cd /u && A=1 /guest/abc/executor_runner "
                               "--model_path=m", 5.0, "unit")
    assert result.output == "Iteration 1 of 1: 2.5 ms\n"
    assert seen == [(["/guest/abc/executor_runner", "--model_path=m"], {"A": "1"}, "/u", "unit")]
    assert fake.get("/u/out.bin") == b"\x00\xff" and fake.transfers == [("get", "/u/out.bin")]
    alone = fake.run("/guest/abc/executor_runner")
    assert alone.duration_s == 0.25, "a line that is one program keeps the program's result"


def test_fake_programs_can_play_platform_failures() -> None:
    fake = FakeTarget()

    def lost(call):
        raise ConsoleLost("the console went away (fake)")

    fake.program("/guest/runner", lost)
    with pytest.raises(ConsoleLost):
        fake.run("/guest/runner")


def test_a_closed_fake_refuses_commands() -> None:
    fake = FakeTarget()
    with fake:
        fake.run("true")
    with pytest.raises(AssertionError, match="not open"):
        fake.run("true")


def test_deploy_puts_every_byte_over_the_console_of_a_fake(tmp_path: Path) -> None:
    data = bytes(range(256)) * 41 + b"tail"
    local = tmp_path / "model.pte"
    local.write_bytes(data)
    fake = FakeTarget()
    deployer = Deployer(fake, method="console", guest_dir="/g", chunk_chars=1000)
    placed = deployer.deploy(local, executable=True)
    digest = hashlib.sha256(data).hexdigest()
    assert (placed.guest_path == content_path("/g", digest, "model.pte") and
            placed.method == "console")
    assert fake.get(placed.guest_path) == data and fake.modes[placed.guest_path] == 0o755
    again = deployer.deploy(local)
    assert again.skipped, "each artifact at most once per instance"
    fresh = Deployer(fake, method="console", guest_dir="/g").deploy(local)
    assert fresh.skipped and fresh.method == "console", "already in the guest with the right hash"
    assert (fake.phases and set(fake.phases)
            == {"deploy"}), "every guest step of a deploy runs in the deploy phase " \
        "(its timeout is fvp.timeouts.deploy, and a timeout message names that)"


def test_a_damaged_transfer_is_a_deploy_error(tmp_path: Path) -> None:
    local = tmp_path / "runner"
    local.write_bytes(b"runner bytes")
    fake = FakeTarget()
    original = fake._cmd_base64  # a guest whose base64 -d flips the last byte

    def corrupt(args: list[str], cwd: str) -> tuple[int, bytes]:
        status, data = original(args, cwd)
        return status, data[:-1] + b"!"

    fake._cmd_base64 = corrupt  # type: ignore[method-assign]
    with pytest.raises(DeployError, match="arrived damaged by console"):
        upload_console(fake, local, "/g/runner")


def test_unit_commands_render_for_any_target(tmp_path: Path) -> None:
    """The rendered command is plain shell: a fake runs it like a guest would."""
    from fvp_harness.run.plan import Unit
    from fvp_harness.scenario.model import Scenario

    scenario = Scenario.model_validate({
        "name": "s", "builds": {"a": {"runner": "r"}}, "models": {"m": {"file": "m.pte"}},
        "run": {"command": "{runner} --model_path={model} --output_file={output}"},
    })
    unit = Unit("r0-a-m", "a", "m", 0, 0, 0, "k", {})
    rendered = render_unit_command(scenario, unit, runner="/g/r", model="/g/m.pte", inputs=[],
                                   guest_root="/w")
    fake = FakeTarget()
    fake.program("/g/r", lambda call: call.write(call.argv[2].split("=", 1)[1], b"o") or "ok\n")
    fake.run(f"mkdir -p {rendered.unit_dir}")
    assert fake.run(rendered.command).output == "ok\n"
    assert fake.run(f"ls {rendered.unit_dir}").output == "out\n"


def test_deploying_several_files_asks_for_presence_and_modes_once(tmp_path: Path) -> None:
    """``deploy_all``: one ``sha256sum`` for every file's presence and one ``chmod`` for every
    runner, whatever the number of files (two round trips per file before); a file already there is
    not sent again."""
    files = []
    for name, executable in (("runner-a", True), ("runner-b", True), ("m.pte", False),
                             ("m.in", False)):
        (tmp_path / name).write_bytes(name.encode() * 50)
        files.append((tmp_path / name, executable))
    fake = FakeTarget()
    # runner-a is already there
    first = Deployer(fake, method="console", guest_dir="/g").deploy_all(files[:1])
    before = len(fake.commands)
    placed = Deployer(fake, method="console", guest_dir="/g").deploy_all(files)
    commands = fake.commands[before:]
    assert sum(command.startswith("sha256sum ") and command.count(" /g/") == 4
               for command in commands) == 1, \
        "one presence check for all four files"
    assert sum(command.startswith("sha256sum ") for command in commands) == 1 + 3, \
        "plus the own check of each of the three uploads (runner-a was there already)"
    assert [command for command in commands if command.startswith("chmod")] == [
        "chmod 755 "
        + " ".join(sorted(placed[local].guest_path for local, executable in files if executable))]
    assert (placed[files[0][0]].skipped and
            placed[files[0][0]].guest_path == first[files[0][0]].guest_path)
    for local, executable in files:
        assert fake.get(placed[local].guest_path) == local.read_bytes()
        assert (fake.modes.get(placed[local].guest_path) == 0o755) == executable or not executable
    single = Deployer(fake, method="console", guest_dir="/g")
    assert not any(command.startswith("chmod")
                   for command in fake.commands[before:] if "runner-a" in command
                   and "runner-b" not in command), "runners are made executable together"
    assert single.deploy_all([]) == {}
