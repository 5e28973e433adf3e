"""The simulator's shell checked against real busybox ash: one corpus of commands (quoting,
expansions, redirections, applet options and messages, exit statuses) run on both; outputs and
statuses compared.

Why: the simulator's shell is ours, written to behave like the Corstone-1000 image's busybox; only
the real busybox can say where it does not. Every difference is either fixed in the simulator or
listed in ``KNOWN`` with its reason (the ones that do not matter to the harness, which only needs
the commands it sends itself to agree)."""

from __future__ import annotations

import pytest

from fvp_harness.guest import GuestImage
from fvp_harness.profiles import load_profile
from fvp_harness.scenario.model import FvpConfig
from fvp_harness.targets.fvp_target import FvpTarget

pytestmark = [pytest.mark.qemu, pytest.mark.slow, pytest.mark.sim]

CORPUS: list[str] = [
    # quoting and expansions
    "echo 'single $HOME' \"double $((1+2))\" back\\ slash",
    "x=abc; echo ${x} ${#x} ${x:-d} ${y:-dflt} \"$x$x\"",
    "echo $(echo nested $(echo deep))",
    "printf '%s-%d-%x\\n' str 42 255",
    "printf '%5s|%-5s|\\n' ab cd",
    "echo -n no-newline; echo",
    "a=1; [ \"$a\" = 1 ] && echo yes || echo no",
    "test -z '' && echo empty; test -n x && echo nonempty",
    "[ 3 -lt 5 ]; echo $?",
    # redirections and pipes
    "echo out > /tmp/d1; cat /tmp/d1; echo more >> /tmp/d1; wc -l < /tmp/d1",
    "ls /nonexistent-path 2>/dev/null; echo $?",
    "echo to-stderr 1>&2",
    "printf 'c\\nb\\na\\n' | sort | tr a-z A-Z",
    "printf 'l1\\nl2\\nl3\\n' | head -n 2 | tail -n 1",
    "printf 'aa\\nbb\\naa\\n' | grep -c aa",
    "printf 'aa\\nbb\\n' | grep -v aa",
    "cat <<EOF\nhere $((2*3))\nEOF",
    "cat <<'EOF'\nliteral $HOME\nEOF",
    # exit statuses
    "false; echo $?",
    "true; echo $?",
    "nonexistent-command-xyz 2>/dev/null; echo $?",
    "! true; echo $?",
    # applets the harness uses and their messages
    "echo hello | sha256sum",
    "printf abc | base64",
    "printf YWJj | base64 -d; echo",
    "echo hello | gzip -c | gzip -dc",
    "mkdir -p /tmp/dd/e && ls -d /tmp/dd/e && rm -rf /tmp/dd && ls /tmp/dd 2>&1; echo $?",
    "cat /nonexistent 2>&1; echo $?",
    "rm /nonexistent 2>&1; echo $?",
    "basename /a/b/c.txt .txt; dirname /a/b/c.txt",
    "seq 3 2>/dev/null || echo no-seq",
    "uname -s",
    "cd /tmp && pwd",
    "echo $((7 / 2)) $((7 % 2)) $((-3 + 1))",
    # applets the differential check found missing in the simulator, now there (applets/system.py)
    "printf 'x y z\\n' | cut -d' ' -f2",
    "printf 'a:b:c\\nnone\\n' | cut -d: -f1,3; printf 'abcdef\\n' | cut -c2-4",
    "expr 6 \\* 7; expr 7 / 2; expr 3 \\< 10; expr length hello",
    "expr 1 - 1; echo $?",
    "id -u; id",
    "sh -c 'exit 42'; echo $?",
    "export V=1; sh -c 'echo $V'",
    "sh -c 'echo \"$0 $1 $2\"' name one two",
    "W=in; sh -c 'echo \"[$W]\"'",
    # what the harness itself sends (targets/console.py, targets/transfer.py, run/framed.py), with
    # shlex-quoted paths
    "stty -echo; echo $?",
    "dmesg -n 1; echo $?",
    "X='fh-''abc# '; printf '%s|\\n' \"$X\"",
    "mkdir -p '/tmp/a b' && printf %s 'it'\"'\"'s' > '/tmp/a b/q'\"'\"'t' && cat '/tmp/a "
    "b/q'\"'\"'t'; echo; rm -rf '/tmp/a b'",
    "mkdir -p /tmp/fu && rm -rf /tmp/fu/x.b64 /tmp/fu/x && printf %s aGVsbG8K >> /tmp/fu/x.b64 && "
    "base64 -d /tmp/fu/x.b64 > /tmp/fu/x && rm -rf /tmp/fu/x.b64 && sha256sum /tmp/fu/x; rm -rf "
    "/tmp/fu",
    "echo hello | gzip -c | base64 > /tmp/g.b64; base64 -d /tmp/g.b64 | gunzip -c; rm -f "
    "/tmp/g.b64",
    "rm -rf /tmp/fu && mkdir -p /tmp/fu && printf '%s\\n' tok.ready; echo hi > /tmp/fu/o; "
    "printf '\\n%s %s\\n' tok.status $?; cd /tmp/fu && sha256sum *; cd / && rm -rf /tmp/fu",
    "mkdir -p /tmp/empty && cd /tmp/empty && sha256sum * 2>&1; echo $?; cd / && rm -rf /tmp/empty",
    # ash names itself by $0 in its messages: `-sh`, the console's login shell; `sh` inside `sh -c`
    "nonexistent-command-xyz; echo $?",
    "cd /nonexistent-dir; echo $?; sh -c 'nonexistent-command-xyz'; echo $?",
    # compound commands (guest/parse.py, guest/shell.py)
    "set -- a 'b c' d; echo $# \"$2\"; for i in \"$@\"; do echo \"[$i]\"; done",
    "i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; echo $i",
    "(exit 5); echo $?",
    "(cd /tmp; x=1); pwd; echo \"[$x]\"; { y=2; }; echo \"[$y]\"",
    "if false; then echo a; elif true; then echo b; else echo c; fi; if false; then :; fi; echo $?",
    "for i in 1 2 3; do if [ $i = 2 ]; then continue; fi; echo $i; done",
    "for i in 1 2; do for j in a b; do echo $i$j; break 2; done; done; echo after",
    "i=0; until [ $i -ge 2 ]; do i=$((i+1)); echo $i; done | sort -r",
    "while true; do echo x; done | head -n 2",
    "{ echo b; echo a; } | sort; for i in a b; do echo $i; done > /tmp/o; cat /tmp/o; rm /tmp/o",
    "printf 'x\\n' > /tmp/x.sh; chmod +x /tmp/x.sh; echo $?; sync; echo $?; rm -f /tmp/x.sh",
]
"""Commands whose output and exit status should be the same on both shells."""

KNOWN: dict[str, str] = {
    "case abc in a*) echo starts-a;; *) echo other;; esac": "the simulator's shell parses no "
    "`case` (a syntax "
    "error naming it, status 2): the harness sends none and a person at `fvp-harness shell` is "
    "told so",
    "f() { echo in-f \"$1\"; return 3; }; f arg; echo $?": "the simulator's shell has no functions "
    "(a syntax "
    "error naming the subshell it takes `f()` for, status 2): the harness defines none",
    "wc -c < /etc/passwd | tr -d ' ' | grep -c .": "the simulator's file system has no /etc/passwd "
    "(the file system "
    "is another part's; the harness never reads it)",
}
"""Commands that differ, and why the difference is kept (the harness does not depend on them).
Measured: see the closing numbers in docs/targets.md ("The differential shell check")."""


def _results(fvp: FvpConfig, profile: str, log_dir: object,
             commands: list[str]) -> list[tuple[int, str]]:
    with FvpTarget(fvp, load_profile(profile), log_dir=log_dir) as target:  # type: ignore[arg-type]
        return [(r.exit_status, r.output)
                for r in (target.run(command, timeout=30) for command in commands)]


NOT_PARSED = ("case abc", "f() {")
"""Listed commands the simulator's shell refuses as a syntax error: ash drops the whole line then,
the framing's start marker with it, so the harness could only time out on them; they run on busybox
only."""


def test_the_simulators_shell_agrees_with_busybox(
    guest: GuestImage, tmp_path_factory: pytest.TempPathFactory
) -> None:
    listed = [command for command in KNOWN if not command.startswith(NOT_PARSED)]
    real = _results(FvpConfig(binary="qemu-system-aarch64",
                              firmware={"kernel": str(guest.kernel), "initrd": str(guest.initrd)}),
                    "qemu-aarch64-virt", tmp_path_factory.mktemp("diff-qemu"), [*CORPUS, *KNOWN])
    ours = _results(FvpConfig(binary="sim", sim={"boot_seconds": 0.5}), "corstone1000-a320",
                    tmp_path_factory.mktemp("diff-sim"), [*CORPUS, *listed])
    differ = {command: (a, b) for command, a, b in zip(CORPUS, real, ours, strict=False) if a != b}
    assert not differ, ("the simulator's shell differs from busybox (busybox, simulator):\n"
                        + "\n".join(
        f"{command!r}: {pair[0]!r} != {pair[1]!r}" for command, pair in differ.items()))
    by_command = dict(zip([*CORPUS, *KNOWN], real, strict=True))
    assert all(by_command[command][0] == 0 for command in KNOWN), (
        "busybox runs every listed command")
    ours_listed = dict(zip(listed, ours[len(CORPUS):], strict=True))
    fixed = [command for command in listed if ours_listed[command] == by_command[command]]
    assert not fixed, f"these no longer differ: move them back to CORPUS: {fixed}"
