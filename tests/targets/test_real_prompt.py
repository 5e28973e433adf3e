"""The harness against a guest shell whose prompt really changes: the simulator honours
``PS1``/``PS2`` as busybox ash does, so the prompt handling of ``targets/console.py`` (and of
``fvp-harness shell``) is exercised for real. The prompt, here-document and noise tests the QEMU
guest shares are in tests/targets/test_session.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.sim]


def test_shell_verb_shows_the_prompt_the_user_sets(tmp_path: Path) -> None:
    """``fvp-harness shell`` hands the console over: ``PS1`` changes the prompt, pipes work."""
    import pexpect

    path = tmp_path / "smoke.yaml"
    (tmp_path / "runner").write_bytes(b"x")
    (tmp_path / "model.pte").write_bytes(b"x")
    path.write_text("name: smoke\nbuilds:\n  before: {runner: runner}\nmodels:\n  m: {file: "
                    "model.pte}\nfvp:\n  binary: sim\n  sim: {boot_seconds: 0.4}\n")
    child = pexpect.spawn(
        os.sys.executable,
        ["-m", "fvp_harness", "shell", str(path), "--log-dir", str(tmp_path / "logs")],
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
