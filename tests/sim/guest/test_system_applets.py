"""The applets the differential check against real busybox found missing (``sh``, ``id``, ``cut``,
``expr``): their output, messages and statuses as busybox 1.36 gives them (the differential corpus,
tests/qemu/test_shell_differential.py, runs the same kinds of command on the real guest)."""

from __future__ import annotations

import pytest

from tests.sim.guest.test_shell_language import Guest, guest  # noqa: F401 (the fixture)


@pytest.mark.parametrize(("line", "expected"), [
    ("sh -c 'exit 42'; echo $?", ("42\n", "", 0)),
    ("export V=1; W=2; sh -c 'echo \"$V[$W]\"'", ("1[]\n", "", 0)),
    ("sh -c 'echo \"$0 $1 $2\"' name one two", ("name one two\n", "", 0)),
    ("sh -c 'cd /tmp; x=1'; pwd; echo \"[$x]\"", ("/root\n[]\n", "", 0)),
    ("printf 'echo from-stdin\\n' | sh", ("from-stdin\n", "", 0)),
    ("sh /no/such/script",
     ("", "sh: can't open '/no/such/script': No such file or directory\n", 2)),
    ("sh -c", ("", "sh: -c requires an argument\n", 2)),
    ("id -u; id -un; id", ("0\nroot\nuid=0(root) gid=0(root) groups=0(root)\n", "", 0)),
    ("printf 'x y z\\n' | cut -d' ' -f2", ("y\n", "", 0)),
    ("printf 'a:b:c\\nnone\\n' | cut -d: -f1,3", ("a:c\nnone\n", "", 0)),
    ("printf 'a:b\\nnone\\n' | cut -s -d: -f2-", ("b\n", "", 0)),
    ("printf 'abcdef\\n' | cut -c2-4", ("bcd\n", "", 0)),
    ("expr 6 \\* 7; expr 7 / 2; expr 7 % 3; expr 3 \\< 10; expr length hello",
     ("42\n3\n1\n1\n5\n", "", 0)),
    ("expr 1 - 1", ("0\n", "", 1)),
    ("expr abc = abc \\& 2 \\> 1", ("1\n", "", 0)),
    ("expr hello : 'he\\(l*\\)'; expr hello : 'h.*'", ("ll\n5\n", "", 0)),
    ("expr 1 / 0", ("", "expr: division by zero\n", 2)),
    ("expr a + 1", ("", "expr: non-numeric argument\n", 2)),
])
def test_applet(guest: Guest, line: str, expected: tuple[str, str, int]) -> None:  # noqa: F811
    assert guest.run(line) == expected
