"""busybox's ``sh`` (a nested shell), ``id``, ``cut`` and ``expr``: the applets the differential
check against real busybox ash (tests/qemu/test_shell_differential.py) found missing.

Why they exist although the harness sends none of them: a person at ``fvp-harness shell`` and a
runner's wrapper script use them (``sh -c '...'`` above all), and a simulator that answers ``sh: sh:
not found`` where the real image runs the command hides nothing but itself. Output and messages
follow busybox 1.36.
"""

from __future__ import annotations

import re

from fvp_harness.sim.guest.applets.common import (
    Fail,
    Usage,
    busybox_applet,
    check,
    getopt,
    input_lines,
    read_input,
)
from fvp_harness.sim.guest.io import IO, read_lines
from fvp_harness.sim.guest.session import Builtin, Session

__all__ = ["APPLETS"]


def _sh(sh: Session, argv: list[str], io: IO) -> int:
    """``sh -c CMD [NAME [ARG]...]``, ``sh FILE [ARG]...`` or ``sh`` reading its script from stdin:
    a new shell (the exported variables only, its own ``$?`` and cwd changes that do not come
    back)."""
    args = argv[1:]
    env = sh.environment()
    if args and args[0] == "-c":
        if len(args) < 2:
            io.complain("sh: -c requires an argument\n")
            return 2
        return sh.run_script(args[1].encode(), [args[2] if len(args) > 2 else "sh", *args[3:]], env,
                             io)
    if args and args[0] not in ("-", "-s"):
        data = read_input(sh, args[0], io, "sh")
        if data is None:
            return 2
        return sh.run_script(data, args, env, io)
    text = b"".join(read_lines(io.stdin))
    return sh.run_script(text, ["sh", *args[1:]], env, io)


@busybox_applet("[-gGnru] [USER]")
def _id(sh: Session, argv: list[str], io: IO) -> int:
    opts, operands = getopt(argv[1:], "gGnru")
    if operands and operands[0] != "root":
        raise Fail(f"unknown user {operands[0]}")
    flags = {flag for flag, _ in opts}
    if not flags & {"u", "g", "G"}:
        io.say("uid=0(root) gid=0(root) groups=0(root)\n")
    else:
        io.say("root\n" if "n" in flags else "0\n")
    return 0


def _ranges(spec: str) -> list[tuple[int, int]]:
    """``cut``'s LIST (``1,3-5,7-``) as 1-based inclusive ranges; busybox's messages on a bad
    one."""
    ranges = []
    for item in spec.split(","):
        m = re.fullmatch(r"(\d*)(-?)(\d*)", item)
        if not m or not (m.group(1) or m.group(3)):
            raise Fail("invalid byte or character range" if item else "invalid range")
        start = int(m.group(1) or 1)
        end = int(m.group(3)) if m.group(3) else (start if not m.group(2) else 1 << 30)
        if start == 0:
            raise Fail("fields and positions are numbered from 1")
        ranges.append((start, end))
    return ranges


@busybox_applet("[OPTIONS] [FILE]...")
def _cut(sh: Session, argv: list[str], io: IO) -> int:
    opts, files = getopt(argv[1:], "b:c:d:f:ns")
    given = dict(opts)
    if sum(k in given for k in "bcf") != 1:
        raise Fail("expected a list of bytes, characters, or fields"
                   if not any(k in given for k in "bcf") else "only one list may be specified")
    delim = given.get("d", "\t").encode()
    if len(delim) != 1:
        raise Fail("the delimiter must be a single character")
    kind = "f" if "f" in given else "b"
    ranges = _ranges(given.get("f") or given.get("b") or given.get("c") or "")
    status = 0
    for name in files or ["-"]:
        data = None if name == "-" else read_input(sh, name, io, "cut")
        if name != "-" and data is None:
            status = 1
            continue
        for line in input_lines(sh, io, name, data):
            check(sh)
            body = line[:-1] if line.endswith(b"\n") else line
            if kind == "f":
                if delim not in body:
                    if "s" not in given:
                        io.out(body + b"\n")
                    continue
                pieces = body.split(delim)
                keep = [p for i, p in enumerate(pieces, 1) if any(a <= i <= b for a, b in ranges)]
                io.out(delim.join(keep) + b"\n")
            else:
                io.out(bytes(c for i, c in enumerate(body, 1)
                             if any(a <= i <= b for a, b in ranges)) + b"\n")
    return status


class _Expr:
    """busybox ``expr``: a recursive-descent evaluator over the argument list (``|`` ``&``,
    comparisons, ``+ -``, ``* / %``, ``:`` regex match, ``length``, parentheses)."""

    def __init__(self, args: list[str]) -> None:
        self.args = args
        self.i = 0

    def peek(self) -> str | None:
        return self.args[self.i] if self.i < len(self.args) else None

    def take(self) -> str:
        if self.i >= len(self.args):
            raise Fail("syntax error")
        self.i += 1
        return self.args[self.i - 1]

    @staticmethod
    def number(value: str | int) -> int:
        if isinstance(value, int):
            return value
        if not re.fullmatch(r"-?\d+", value):
            raise Fail("non-numeric argument")
        return int(value)

    @staticmethod
    def true(value: str | int) -> bool:
        return value not in (0, "", "0")

    def parse_or(self) -> str | int:
        left = self.parse_and()
        while self.peek() == "|":
            self.take()
            right = self.parse_and()
            left = left if self.true(left) else (right if self.true(right) else 0)
        return left

    def parse_and(self) -> str | int:
        left = self.parse_cmp()
        while self.peek() == "&":
            self.take()
            right = self.parse_cmp()
            left = left if self.true(left) and self.true(right) else 0
        return left

    def parse_cmp(self) -> str | int:
        left = self.parse_add()
        while self.peek() in ("=", ">", ">=", "<", "<=", "!="):
            op = self.take()
            right = self.parse_add()
            try:
                a, b = self.number(left), self.number(right)
                pair: tuple[int, int] | tuple[str, str] = (a, b)
            except Fail:
                pair = (str(left), str(right))
            x, y = pair
            left = int({"=": x == y, "!=": x != y, ">": x > y, ">=": x >= y,  # type: ignore[operator]
                        "<": x < y, "<=": x <= y}[op])  # type: ignore[operator]
        return left

    def parse_add(self) -> str | int:
        left = self.parse_mul()
        while self.peek() in ("+", "-"):
            op = self.take()
            right = self.parse_mul()
            left = (self.number(left) + self.number(right) if op == "+"
                    else self.number(left) - self.number(right))
        return left

    def parse_mul(self) -> str | int:
        left = self.parse_match()
        while self.peek() in ("*", "/", "%"):
            op = self.take()
            a, b = self.number(left), self.number(self.parse_match())
            if op != "*" and b == 0:
                raise Fail("division by zero")
            left = a * b if op == "*" else (int(a / b) if op == "/" else a - b * int(a / b))
        return left

    def parse_match(self) -> str | int:
        left = self.primary()
        while self.peek() == ":":
            self.take()
            pattern = str(self.primary())
            m = re.match(pattern.replace(r"\(", "(").replace(r"\)", ")"), str(left))
            left = _match_value(m)
        return left

    def primary(self) -> str | int:
        token = self.take()
        if token == "(":
            value = self.parse_or()
            if self.take() != ")":
                raise Fail("syntax error")
            return value
        if token == "length" and self.peek() is not None:
            return len(self.take())
        return token


def _match_value(m: re.Match[str] | None) -> str | int:
    """``expr STRING : REGEX``: with a ``\\( \\)`` group the text it matched, else the length of the
    match (0: none)."""
    if m is None:
        return 0
    return (m.group(1) or "") if m.groups() else len(m.group(0))


@busybox_applet("EXPRESSION", usage_status=2)
def _expr(sh: Session, argv: list[str], io: IO) -> int:
    if len(argv) < 2:
        raise Usage
    parser = _Expr(argv[1:])
    value = parser.parse_or()
    if parser.peek() is not None:
        raise Fail("syntax error")
    io.say(f"{value}\n")
    return 0 if parser.true(value) else 1


APPLETS: dict[str, Builtin] = {"sh": _sh, "id": _id, "cut": _cut, "expr": _expr}
"""The applets of this module, by name."""
