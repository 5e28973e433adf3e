"""head and tail as busybox 1.36 runs them: counts (``-n N``, ``-N``, ``+N``, ``-n -N``, ``-c``,
size suffixes), headers for several files (``-q``/``-v``), standard input, and the messages and
statuses of a missing file, a bad number and a bad option. The two applets share their option
parsing, so each case pins what one of them prints."""

from __future__ import annotations

import pytest

from tests.sim.guest.test_shell_language import Guest, guest  # noqa: F401 (the fixture)

FILES = ("printf '1\\n2\\n3\\n4\\n5\\n6\\n7\\n8\\n9\\n10\\n11\\n12\\n' > /tmp/a; printf "
         "'x\\ny\\nz' > /tmp/b; ")
"""/tmp/a: twelve numbered lines; /tmp/b: three lines, the last without a newline."""

STDIN = b"s1\ns2\ns3\n"
HEAD_USAGE = 'BusyBox v1.36.1 () multi-call binary.\n\nUsage: head [OPTIONS] [FILE]...\n'
TAIL_USAGE = 'BusyBox v1.36.1 () multi-call binary.\n\nUsage: tail [OPTIONS] [FILE]...\n'



def _missing(applet: str, name: str) -> str:
    return f"{applet}: can't open '{name}': No such file or directory\n"


@pytest.mark.parametrize(("line", "expected"), [
    ('head /tmp/a', ('1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n', '', 0)),
    ('head -n 3 /tmp/a', ('1\n2\n3\n', '', 0)),
    ('head -3 /tmp/a', ('1\n2\n3\n', '', 0)),
    ('head -n -3 /tmp/a', ('1\n2\n3\n4\n5\n6\n7\n8\n9\n', '', 0)),
    ('head -n +3 /tmp/a', ('1\n2\n3\n', '', 0)),
    ('head -n 0 /tmp/a', ('', '', 0)),
    ('head -n -0 /tmp/a', ('1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n', '', 0)),
    ('head -c 5 /tmp/a', ('1\n2\n3', '', 0)),
    ('head -c -5 /tmp/a', ('1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n1', '', 0)),
    ('head -c -0 /tmp/a', ('1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n', '', 0)),
    ('head -c 0 /tmp/a', ('', '', 0)),
    ('head -c 1k /tmp/a', ('1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n', '', 0)),
    ('head -n 1b /tmp/a', ('1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n', '', 0)),
    ('head -2 -n 4 /tmp/a', ('1\n2\n3\n4\n', '', 0)),
    ('head -n 4 -2 /tmp/a', ('', "head: invalid option -- '2'\n" + HEAD_USAGE, 1)),
    ('head /tmp/a /tmp/b',
     ('==> /tmp/a <==\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n\n==> /tmp/b <==\nx\ny\nz', '', 0)),
    ('head -n 2 /tmp/a /tmp/b', ('==> /tmp/a <==\n1\n2\n\n==> /tmp/b <==\nx\ny\n', '', 0)),
    ('head -q -n 2 /tmp/a /tmp/b', ('1\n2\nx\ny\n', '', 0)),
    ('head -vq -n 2 /tmp/a /tmp/b', ('1\n2\nx\ny\n', '', 0)),
    ('head -qv -n 2 /tmp/a /tmp/b', ('==> /tmp/a <==\n1\n2\n\n==> /tmp/b <==\nx\ny\n', '', 0)),
    ('head -n 2 /tmp/a /nonexist /tmp/b',
     ('==> /tmp/a <==\n1\n2\n\n==> /tmp/b <==\nx\ny\n', _missing("head", "/nonexist"), 1)),
    ('head /nonexist', ('', _missing("head", "/nonexist"), 1)),
    ('head -n 2', ('s1\ns2\n', '', 0)),
    ('head -n 2 -', ('s1\ns2\n', '', 0)),
    ('head -n -1 -', ('s1\ns2\n', '', 0)),
    ('head -c 4 -', ('s1\ns', '', 0)),
    ('head -c -4 -', ('s1\ns2', '', 0)),
    ('head -n 1 - /tmp/b', ('==> standard input <==\ns1\n\n==> /tmp/b <==\nx\n', '', 0)),
    ('head -x /tmp/a', ('', "head: invalid option -- 'x'\n" + HEAD_USAGE, 1)),
    ('head -n', ('', "head: option requires an argument -- 'n'\n" + HEAD_USAGE, 1)),
    ('head -n abc /tmp/a', ('', "head: invalid number 'abc'\n", 1)),
    ('head -n 3x /tmp/a', ('', "head: invalid number '3x'\n", 1)),
    ('head -5z /tmp/a', ('', "head: invalid option -- '5'\n" + HEAD_USAGE, 1)),
    ('head -n -- /tmp/a', ('', "head: invalid number ''\n", 1)),
    ('head -- -n /tmp/a',
     ('==> /tmp/a <==\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n', _missing("head", "-n"), 1)),
    ('head -n --3 /tmp/a', ('1\n2\n3\n4\n5\n6\n7\n8\n9\n', '', 0)),
    ("head -n '' /tmp/a", ('', "head: invalid number ''\n", 1)),
    ('head -f /tmp/a', ('', "head: invalid option -- 'f'\n" + HEAD_USAGE, 1)),
    ('head /tmp', ('', "head: can't open '/tmp': Is a directory\n", 1)),
    ('tail /tmp/a', ('3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n', '', 0)),
    ('tail -n 3 /tmp/a', ('10\n11\n12\n', '', 0)),
    ('tail -3 /tmp/a', ('10\n11\n12\n', '', 0)),
    ('tail +3 /tmp/a', ('3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n', '', 0)),
    ('tail -n +3 /tmp/a', ('3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n', '', 0)),
    ('tail -n -3 /tmp/a', ('10\n11\n12\n', '', 0)),
    ('tail -n 0 /tmp/a', ('', '', 0)),
    ('tail -n +0 /tmp/a', ('1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n', '', 0)),
    ('tail -n +1 /tmp/a', ('1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n', '', 0)),
    ('tail -c 5 /tmp/a', ('1\n12\n', '', 0)),
    ('tail -c +5 /tmp/a', ('3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n', '', 0)),
    ('tail -c +0 /tmp/a', ('1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n', '', 0)),
    ('tail -c 1k /tmp/a', ('1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n', '', 0)),
    ('tail -c -3 /tmp/a', ('12\n', '', 0)),
    ('tail -2 -n 4 /tmp/a', ('9\n10\n11\n12\n', '', 0)),
    ('tail -n 4 -2 /tmp/a', ('', "tail: invalid option -- '2'\n" + TAIL_USAGE, 1)),
    ('tail /tmp/a /tmp/b',
     ('==> /tmp/a <==\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n\n==> /tmp/b <==\nx\ny\nz', '', 0)),
    ('tail -n 2 /tmp/a /tmp/b', ('==> /tmp/a <==\n11\n12\n\n==> /tmp/b <==\ny\nz', '', 0)),
    ('tail -q -n 2 /tmp/a /tmp/b', ('11\n12\ny\nz', '', 0)),
    ('tail -v -n 2 /tmp/a', ('==> /tmp/a <==\n11\n12\n', '', 0)),
    ('tail -n 2 /tmp/a /nonexist /tmp/b',
     ('==> /tmp/a <==\n11\n12\n\n==> /tmp/b <==\ny\nz', _missing("tail", "/nonexist"), 1)),
    ('tail -n 2 -', ('s2\ns3\n', '', 0)),
    ('tail -n +2 -', ('s2\ns3\n', '', 0)),
    ('tail -c 4 -', ('\ns3\n', '', 0)),
    ('tail -c +4 -', ('s2\ns3\n', '', 0)),
    ('tail -n 1 - /tmp/b', ('==> standard input <==\ns3\n\n==> /tmp/b <==\nz', '', 0)),
    ('tail -x /tmp/a', ('', "tail: invalid option -- 'x'\n" + TAIL_USAGE, 1)),
    ('tail -n', ('', "tail: option requires an argument -- 'n'\n" + TAIL_USAGE, 1)),
    ('tail -s', ('', "tail: option requires an argument -- 's'\n" + TAIL_USAGE, 1)),
    ('tail -s 1 -n 2 /tmp/a', ('11\n12\n', '', 0)),
    ('tail -f -n 1 /tmp/a', ('12\n', '', 0)),
    ('tail -F -n 1 /tmp/a', ('12\n', '', 0)),
    ('tail -n abc /tmp/a', ('', "tail: invalid number 'abc'\n", 1)),
    ('tail +5z /tmp/a',
     ('==> /tmp/a <==\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n', _missing("tail", "+5z"), 1)),
    ('tail -5k /tmp/a', ('1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n', '', 0)),
    ('tail -n ++2 /tmp/a', ('2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n', '', 0)),
    ('tail -- -n /tmp/a',
     ('==> /tmp/a <==\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n', _missing("tail", "-n"), 1)),
    ('tail /tmp', ('', "tail: can't open '/tmp': Is a directory\n", 1)),
    ('tail -n 1 /tmp/b', ('z', '', 0)),
    ('tail -c 2 /tmp/b', ('\nz', '', 0)),
])
def test_head_and_tail(guest: Guest, line: str, expected: tuple[str, str, int]) -> None:  # noqa: F811
    assert guest.run(FILES + line, stdin=STDIN) == expected
