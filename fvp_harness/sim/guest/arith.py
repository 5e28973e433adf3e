"""``$(( ))``: the shell's integer arithmetic, with C's operators and precedence as busybox ash
evaluates them.

Numbers are decimal, ``0x`` hex or ``0`` octal; a name reads a variable (unset or empty is 0; a
value is itself evaluated as an expression); ``=`` ``+=`` ... and ``++``/``--`` assign. Division
truncates towards zero and the remainder takes the dividend's sign, as in C; results wrap to 64
bits. ``&&`` ``||`` and ``?:`` evaluate only the side they need.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["ArithError", "evaluate"]


class ArithError(Exception):
    """What ash reports after ``sh: ``: ``arithmetic syntax error``, ``divide by zero``."""


_TOKEN = re.compile(
    r"\s*(?:(0[xX][0-9a-fA-F]+|\d+)|([A-Za-z_][A-Za-z0-9_]*)|"
    r"(<<=|>>=|\*\*|\+\+|--|<=|>=|==|!=|&&|\|\||<<|>>|\+=|-=|\*=|/=|%=|&=|\^=|\|=|[-+*/%<>=!~&^|?:(),]))"
)
_BINARY = {
    "||": 4, "&&": 5, "|": 6, "^": 7, "&": 8, "==": 9, "!=": 9, "<": 10, "<=": 10, ">": 10,
    ">=": 10, "<<": 11, ">>": 11, "+": 12, "-": 12, "*": 13, "/": 13, "%": 13, "**": 14,
}
_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "^=", "|="}


def _wrap(value: int) -> int:
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def _number(text: str) -> int:
    if text[:2] in ("0x", "0X"):
        return int(text, 16)
    if len(text) > 1 and text.startswith("0"):
        try:
            return int(text, 8)
        except ValueError:
            raise ArithError("arithmetic syntax error") from None
    return int(text)


def _apply(op: str, a: int, b: int) -> int:
    if op == "**":
        if b < 0:
            raise ArithError("exponent less than 0")
        return _wrap(pow(a, b, 1 << 64))
    if op in ("/", "%"):
        if b == 0:
            raise ArithError("divide by zero")
        quotient = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return quotient if op == "/" else a - quotient * b
    result = {
        "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "<<": lambda: a << (b & 63),
        ">>": lambda: a >> (b & 63), "<": lambda: int(a < b), "<=": lambda: int(a <= b),
        ">": lambda: int(a > b),
        ">=": lambda: int(a >= b), "==": lambda: int(a == b), "!=": lambda: int(a != b),
        "&": lambda: a & b, "^": lambda: a ^ b, "|": lambda: a | b,
    }[op]()
    return _wrap(result)


class _Evaluator:
    def __init__(self, text: str, get: Callable[[str], str | None],
                 set_: Callable[[str, str], None], depth: int) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ArithError("arithmetic syntax error")
            pos = m.end()
            kind = "num" if m.group(1) else "name" if m.group(2) else "op"
            self.tokens.append((kind, m.group(m.lastindex or 0)))
        self.i = 0
        self.get, self.set, self.depth = get, set_, depth

    def peek(self) -> str:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else ""

    def kind(self) -> str:
        return self.tokens[self.i][0] if self.i < len(self.tokens) else "end"

    def take(self) -> str:
        token = self.peek()
        self.i += 1
        return token

    def expect(self, token: str) -> None:
        if self.kind() != "op" or self.take() != token:
            raise ArithError("arithmetic syntax error")

    def value_of(self, name: str) -> int:
        text = (self.get(name) or "").strip()
        if not text:
            return 0
        if self.depth > 20:
            raise ArithError("arithmetic syntax error")
        return evaluate(text, self.get, self.set, self.depth + 1)

    def run(self) -> int:
        if not self.tokens:
            return 0
        value = self.comma(True)
        if self.i != len(self.tokens):
            raise ArithError("arithmetic syntax error")
        return value

    def comma(self, active: bool) -> int:
        value = self.assign(active)
        while self.kind() == "op" and self.peek() == ",":
            self.take()
            value = self.assign(active)
        return value

    def assign(self, active: bool) -> int:
        if (self.kind() == "name" and self.i + 1 < len(self.tokens) and
            self.tokens[self.i + 1][1] in _ASSIGN
                and self.tokens[self.i + 1][0] == "op"):
            name = self.take()
            op = self.take()
            right = self.assign(active)
            if not active:
                return right
            value = right if op == "=" else _apply(op[:-1], self.value_of(name), right)
            self.set(name, str(value))
            return value
        return self.ternary(active)

    def ternary(self, active: bool) -> int:
        cond = self.binary(4, active)
        if self.kind() == "op" and self.peek() == "?":
            self.take()
            yes = self.assign(active and cond != 0)
            self.expect(":")
            no = self.assign(active and cond == 0)
            return yes if cond else no
        return cond

    def binary(self, level: int, active: bool) -> int:
        left = self.unary(active)
        while self.kind() == "op" and self.peek() in _BINARY and _BINARY[self.peek()] >= level:
            op = self.take()
            prec = _BINARY[op]
            if op == "||":
                right = self.binary(prec + 1, active and left == 0)
                left = int(left != 0 or right != 0)
            elif op == "&&":
                right = self.binary(prec + 1, active and left != 0)
                left = int(left != 0 and right != 0)
            else:
                # ** groups to the right
                right = self.binary(prec if op == "**" else prec + 1, active)
                left = _apply(op, left, right) if active else 0
        return left

    def unary(self, active: bool) -> int:
        if self.kind() == "op" and self.peek() in ("+", "-", "!", "~"):
            op = self.take()
            value = self.unary(active)
            return {"+": value, "-": _wrap(-value), "!": int(value == 0), "~": ~value}[op]
        if self.kind() == "op" and self.peek() in ("++", "--"):
            op = self.take()
            if self.kind() != "name":
                raise ArithError("arithmetic syntax error")
            name = self.take()
            value = _wrap(self.value_of(name) + (1 if op == "++" else -1))
            if active:
                self.set(name, str(value))
            return value
        return self.primary(active)

    def primary(self, active: bool) -> int:
        kind = self.kind()
        if kind == "num":
            return _number(self.take())
        if kind == "name":
            name = self.take()
            value = self.value_of(name)
            if self.kind() == "op" and self.peek() in ("++", "--"):
                op = self.take()
                if active:
                    self.set(name, str(_wrap(value + (1 if op == "++" else -1))))
            return value
        if kind == "op" and self.peek() == "(":
            self.take()
            value = self.comma(active)
            self.expect(")")
            return value
        raise ArithError("arithmetic syntax error")


def evaluate(text: str, get: Callable[[str], str | None], set_: Callable[[str, str], None],
             depth: int = 0) -> int:
    """The value of an arithmetic expression; variables are read with ``get`` and assigned with
    ``set_``."""
    return _Evaluator(text, get, set_, depth).run()
