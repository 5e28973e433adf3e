"""The guest shell's compound commands, as busybox ash runs them: subshells, groups, if/elif/else,
while/until, for with break/continue N, redirections and pipes on a whole compound command (the
differential check compares the same shapes with the real busybox on QEMU)."""

from __future__ import annotations

import pytest

from tests.sim.guest.test_shell_language import Guest, guest  # noqa: F401 (the fixture)


@pytest.mark.parametrize(("line", "expected"), [
    ("(exit 5); echo $?", ("5\n", "", 0)),
    ("(cd /tmp; x=1); pwd; echo \"[$x]\"", ("/root\n[]\n", "", 0)),
    ("{ x=1; cd /tmp; }; pwd; echo \"[$x]\"", ("/tmp\n[1]\n", "", 0)),
    ("{ echo b; echo a; } | sort", ("a\nb\n", "", 0)),
    ("{ echo a; echo b; } | head -n 1", ("a\n", "", 0)),
    ("if false; then echo a; elif true; then echo b; else echo c; fi", ("b\n", "", 0)),
    ("if false; then echo a; fi; echo $?", ("0\n", "", 0)),
    ("if true; then false; fi; echo $?", ("1\n", "", 0)),
    ("i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; echo $i", ("3\n", "", 0)),
    ("i=0; until [ $i -ge 2 ]; do i=$((i+1)); echo $i; done", ("1\n2\n", "", 0)),
    ("set -- a 'b c' d; for i in \"$@\"; do echo \"[$i]\"; done", ("[a]\n[b c]\n[d]\n", "", 0)),
    ("set -- x y; for i; do echo $i; done", ("x\ny\n", "", 0)),
    ("for i in 1 2 3; do if [ $i = 2 ]; then continue; fi; echo $i; done", ("1\n3\n", "", 0)),
    ("for i in 1 2; do for j in a b; do echo $i$j; break 2; done; done; echo after",
     ("1a\nafter\n", "", 0)),
    ("for i in a b; do echo $i; done > /tmp/o; cat /tmp/o", ("a\nb\n", "", 0)),
    ("while true; do echo x; done | head -n 2", ("x\nx\n", "", 0)),
    ("for f in /no/*.none; do echo \"$f\"; done", ("/no/*.none\n", "", 0)),
    ("for i in 1\ndo\necho $i\ndone", ("1\n", "", 0)),
    ("break; echo $?", ("0\n", "", 0)),
    ("for i in 1; do break 0; done", ("", "-sh: break: Illegal number: 0\n", 2)),
])
def test_compound(guest: Guest, line: str, expected: tuple[str, str, int]) -> None:  # noqa: F811
    assert guest.run(line) == expected
