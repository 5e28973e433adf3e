"""The harness against a guest shell whose prompt really changes: the simulator honours ``PS1``/``PS2`` as busybox ash
does, so the prompt handling of ``targets/console.py`` (and of ``fvp-harness shell``) is exercised for real."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from fvp_harness.run.instances import open_target
from fvp_harness.targets.fvp_target import FvpTarget
from tests.helpers import eventually

pytestmark = [pytest.mark.slow, pytest.mark.sim]

HEREDOC_PIPELINE = (
    "cat <<'EOF' | tr a-z A-Z > /tmp/prompt-test.txt\n"
    "hello $HOME\n"
    "\tworld\n"
    "EOF\n"
    "cat /tmp/prompt-test.txt; grep -c O /tmp/prompt-test.txt | tee /tmp/prompt-count"
)


def test_the_guest_shows_the_prompt_the_harness_set(booted: FvpTarget) -> None:
    console = booted.console
    assert console is not None
    assert re.fullmatch(r"fh-[0-9a-f]{8}# ", console.ps1)
    assert console.prompt_seen == console.ps1  # checked by prepare_shell on the live guest
    assert booted.run("true").ok
    log = console.log_path
    # the log shows the login shell's own prompt first, then the harness's after every command
    assert eventually(lambda: console.ps1 in log.read_text(), timeout=10)
    assert "root@corstone1000-fvp:~# " in log.read_text()
    assert booted.run("printf '%s' \"$PS2\"").output == console.ps2


def test_pipe_redirection_and_heredoc_give_exact_output_and_status(booted: FvpTarget) -> None:
    result = booted.run(HEREDOC_PIPELINE)
    assert (result.exit_status, result.output) == (0, "HELLO $HOME\n\tWORLD\n2\n")
    assert booted.run("cat /tmp/prompt-count").output == "2\n"
    # $? is the last stage's status
    assert booted.run("printf 'a\\nb\\n' | grep -q z").exit_status == 1
    assert booted.run("false | true").exit_status == 0
    # an expanding here-document, then a command that fails: its status is the command's
    result = booted.run("cat <<EOF\n$HOME ${USER}\nEOF\nfalse")
    assert (result.exit_status, result.output) == (1, "/root root\n")
    # output that does not end in a newline, after several lines
    assert booted.run("printf 'x\\n' > /tmp/p1\nprintf '%s' \"$(cat /tmp/p1)\"").output == "x"
    assert booted.run("dmesg | tail -n 2 | wc -l").output == "2\n"
    result = booted.run("ls /nope 2>&1 | head -n 1; nosuchcmd 2>/dev/null")
    assert (result.exit_status, result.output) == (127, "ls: /nope: No such file or directory\n")


def test_framing_survives_kernel_noise_with_a_real_prompt(tmp_path: Path, make_scenario) -> None:
    scenario = make_scenario(sim={"kernel_noise_rate": 200})
    with open_target(scenario, log_dir=tmp_path / "logs", quiet_kernel=False) as target:
        console = target.console
        assert console is not None and console.prompt_seen == console.ps1
        for _ in range(10):
            result = target.run(HEREDOC_PIPELINE)
            assert (result.exit_status, result.output) == (0, "HELLO $HOME\n\tWORLD\n2\n")
            result = target.run("printf '%s\\n' alpha beta | sort -r; false")
            assert (result.exit_status, result.output) == (1, "beta\nalpha\n")
        assert console.kernel_lines_removed > 0


def test_shell_verb_shows_the_prompt_the_user_sets(tmp_path: Path) -> None:
    """``fvp-harness shell`` hands the console over: ``PS1`` changes the prompt, pipes work."""
    import pexpect

    path = tmp_path / "smoke.yaml"
    (tmp_path / "runner").write_bytes(b"x")
    (tmp_path / "model.pte").write_bytes(b"x")
    path.write_text("name: smoke\nbuilds:\n  before: {runner: runner}\nmodels:\n  m: {file: model.pte}\n"
                    "fvp:\n  binary: sim\n  sim: {boot_seconds: 0.4}\n")
    child = pexpect.spawn(
        os.sys.executable, ["-m", "fvp_harness", "shell", str(path), "--log-dir", str(tmp_path / "logs")],
        cwd=str(tmp_path), env={**os.environ}, encoding="utf-8", codec_errors="replace", timeout=30,
    )
    try:
        child.expect("Ctrl-] leaves")
        child.sendline("export PS1='x> '")
        child.sendline("dmesg | tail -n 2")
        # two kernel lines, then the new prompt
        child.expect(r"dmesg \| tail -n 2\r+\n(\[\s*\d+\.\d+\] [^\r\n]*\r+\n){2}x> ")
        child.sendline("echo $? | tr 0 Z")
        child.expect(r"\r\nZ\r+\nx> ")
        child.send("\x1d")
        child.expect("stopping the model")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
