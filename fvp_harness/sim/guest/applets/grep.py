"""busybox's grep, with POSIX basic and extended regular expressions turned into Python's
(``posix_regex``)."""

from __future__ import annotations

import os
import re
from collections import deque

from fvp_harness.sim.guest.applets.common import (
    Fail,
    Usage,
    busybox_applet,
    getopt,
    input_lines,
)
from fvp_harness.sim.guest.io import IO
from fvp_harness.sim.guest.session import Builtin, Session

__all__ = ["APPLETS", "posix_regex"]

# --------------------------------------------------------------------------------------------------
# grep


_POSIX_CLASSES = {
    "alpha": "a-zA-Z", "digit": "0-9", "alnum": "0-9a-zA-Z", "upper": "A-Z", "lower": "a-z",
    "space": " \\t\\n\\r\\f\\v", "blank": " \\t", "xdigit": "0-9A-Fa-f",
    "cntrl": "\\x00-\\x1f\\x7f", "print": " -~", "graph": "!-~", "punct": "!-/:-@\\[-`{-~",
}


def _posix_bracket(pat: str, i: int) -> tuple[str, int]:
    """A POSIX bracket expression at ``pat[i] == '['`` as a Python class (``]`` first is literal,
    backslash is literal, ``[:class:]``); raises ValueError when unclosed."""
    j = i + 1
    negate = j < len(pat) and pat[j] == "^"
    if negate:
        j += 1
    items: list[str] = []
    first = True
    while j < len(pat):
        c = pat[j]
        if c == "]" and not first:
            return ("[^" if negate else "[") + "".join(items) + "]", j + 1
        first = False
        if c == "[" and j + 1 < len(pat) and pat[j + 1] in ":.=":
            kind = pat[j + 1]
            end = pat.find(kind + "]", j + 2)
            if end >= 0:
                name = pat[j + 2:end]
                if kind == ":":
                    if name not in _POSIX_CLASSES:
                        raise ValueError("Invalid character class name")
                    items.append(_POSIX_CLASSES[name])
                else:
                    items.extend(re.escape(ch) for ch in name)
                j = end + 2
                continue
        if j + 2 < len(pat) and pat[j + 1] == "-" and pat[j + 2] != "]":
            low, high = c, pat[j + 2]
            if low > high:
                raise ValueError("Invalid range end")
            items.append(f"{re.escape(low)}-{re.escape(high)}")
            j += 3
            continue
        items.append("\\-" if c == "-" else re.escape(c))
        j += 1
    raise ValueError("Unmatched [, [^, [:, [., or [=")


def posix_regex(pattern: str, extended: bool) -> str:
    """A POSIX basic (``grep``) or extended (``grep -E``) regular expression, with GNU's extensions
    (``\\+`` ``\\?`` ``\\|`` in basic, ``\\<`` ``\\>`` ``\\b`` ``\\w`` ``\\s``), as a Python regex.
    Raises ValueError for what regcomp refuses."""
    out: list[str] = []
    i, n = 0, len(pattern)
    start = True  # where a repetition operator is literal and ^ is an anchor (basic)
    depth = 0
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                raise ValueError("Trailing backslash")
            d = pattern[i + 1]
            i += 2
            if not extended and d == "(":
                out.append("(")
                depth += 1
                start = True
                continue
            if not extended and d == ")":
                if not depth:
                    raise ValueError("Unmatched ) or \\)")
                depth -= 1
                out.append(")")
                start = False
                continue
            if not extended and d == "|":
                out.append("|")
                start = True
                continue
            if not extended and d == "{":
                m = re.match(r"(\d*)(,?)(\d*)\\\}", pattern[i:])
                if not m or start:
                    raise ValueError("Invalid preceding regular expression" if start
                                     else "Unmatched \\{")
                low, comma, high = m.groups()
                out.append("{" + (low or "0") + comma + high + "}")
                i += m.end()
                continue
            if not extended and d in "+?":
                out.append(re.escape(d) if start else d)
                continue
            if d.isdigit() and d != "0":
                out.append("\\" + d)
            elif d in "<>":
                out.append("\\b")
            elif d in "bBwWsS":
                out.append("\\" + d)
            elif d == "`":
                out.append("\\A")
            elif d == "'":
                out.append("\\Z")
            else:
                out.append(re.escape(d))
            start = False
            continue
        if c == "[":
            cls, i = _posix_bracket(pattern, i)
            out.append(cls)
            start = False
            continue
        if c == "*":
            out.append("\\*" if start else "*")
            i += 1
            continue
        if c == "^":
            out.append("^" if extended or start else "\\^")
            i += 1
            continue
        if c == "$":
            rest = pattern[i + 1:]
            anchor = extended or not rest or rest.startswith("\\)") or rest.startswith("\\|")
            out.append("$" if anchor else "\\$")
            i += 1
            start = False
            continue
        if extended and c in "(|":
            out.append(c)
            depth += c == "("
            start = True
            i += 1
            continue
        if extended and c == ")":
            if not depth:
                out.append("\\)")
            else:
                depth -= 1
                out.append(")")
            start = False
            i += 1
            continue
        if extended and c in "+?":
            out.append(re.escape(c) if start else c)
            i += 1
            continue
        if extended and c == "{":
            m = re.match(r"\{(\d*)(,?)(\d*)\}", pattern[i:])
            if m and not start and (m.group(1) or m.group(3)):
                low, comma, high = m.groups()
                out.append("{" + (low or "0") + comma + high + "}")
                i += m.end()
                continue
            out.append("\\{")
            i += 1
            start = False
            continue
        out.append("." if c == "." else re.escape(c))
        start = False
        i += 1
    if depth:
        raise ValueError("Unmatched ( or \\(")
    return "".join(out)


@busybox_applet("[-HhnlLoqvsrRiwFE] [-m N] [-A|B|C N] { PATTERN | -e PATTERN... } [FILE]...",
                usage_status=2)
def _grep(sh: Session, argv: list[str], io: IO) -> int:
    opts, operands = getopt(argv[1:], "lnqvscFiHhe:LowxEm:A:B:C:")
    flags = {opt for opt, _ in opts}
    patterns = [value for opt, value in opts if opt == "e"]
    numbers: dict[str, int] = {}
    for opt, value in opts:
        if opt in "mABC":
            if not value.isdigit():
                raise Fail(f"invalid number '{value}'")
            numbers[opt] = int(value)
    max_count = numbers.get("m")
    after_n = numbers.get("A", numbers.get("C", 0))
    before_n = numbers.get("B", numbers.get("C", 0))
    if flags & set("cqlL"):
        flags.discard("n")
        after_n = before_n = 0
    if not patterns:
        if not operands:
            raise Usage()
        patterns = [operands.pop(0)]
    patterns = [p for pat in patterns for p in pat.split("\n")]
    regexes = []
    for pat in patterns:
        try:
            text = re.escape(pat) if "F" in flags else posix_regex(pat, "E" in flags)
            if "w" in flags:
                text = f"(?<![0-9A-Za-z_])(?:{text})(?![0-9A-Za-z_])"
            regexes.append(re.compile(text, re.IGNORECASE if "i" in flags else 0))
        except (ValueError, re.error) as exc:
            raise Fail(f"bad regex '{pat}': {exc}") from None
    files = operands or ["-"]
    prefix_names = ("H" in flags or len(files) > 1) and "h" not in flags
    invert = "v" in flags
    matched = False
    errors = False

    def matches(line: str) -> list[re.Match[str]] | bool:
        if "x" in flags:
            return any(rx.fullmatch(line) for rx in regexes)
        if "o" in flags:
            found = [m for rx in regexes for m in rx.finditer(line) if m.group(0)]
            return sorted(found, key=lambda m: m.start()) or False
        return any(rx.search(line) for rx in regexes)

    shown = [0]  # the number of the line shown last (for the "--" between context groups)

    def show(label: str, number: int, body: bytes, mark: str) -> None:
        if (before_n or after_n) and shown[0] and number != shown[0] + 1:
            io.say("--\n")
        shown[0] = number
        head = (label + mark if prefix_names else "") + (f"{number}{mark}" if "n" in flags else "")
        io.out(head.encode("utf-8", "surrogateescape") + body + b"\n")

    for name in files:
        label = "(standard input)" if name == "-" else name
        data = None
        if name != "-":
            try:
                data = sh.fs.read(name, sh.cwd)
            except OSError as exc:
                if "s" not in flags:
                    io.complain(f"grep: {name}: {exc.strerror or os.strerror(exc.errno or 0)}\n")
                errors = True
                continue
        count = 0
        before: deque[tuple[int, bytes]] = deque(maxlen=before_n or None)
        after_left = 0
        shown[0] = 0
        for number, raw in enumerate(input_lines(sh, io, name, data), start=1):
            body = raw[:-1] if raw.endswith(b"\n") else raw
            found = matches(body.decode("utf-8", "surrogateescape"))
            if bool(found) == invert:
                if after_left:
                    show(label, number, body, "-")
                    after_left -= 1
                elif before_n:
                    before.append((number, body))
                continue
            count += 1
            matched = True
            if "q" in flags:
                return 0
            if "l" in flags or "L" in flags:
                break
            if "c" not in flags:
                for context in before:
                    show(label, *context, "-")
                before.clear()
                if "o" in flags and not invert and isinstance(found, list):
                    for m in found:
                        show(label, number, m.group(0).encode("utf-8", "surrogateescape"), ":")
                else:
                    show(label, number, body, ":")
                after_left = after_n
            if max_count is not None and count >= max_count:
                break
        if "c" in flags:
            io.say((f"{label}:" if prefix_names else "") + f"{count}\n")
        if ("l" in flags and count) or ("L" in flags and not count):
            io.say(label + "\n")
    if errors:
        return 2
    return 0 if matched else 1

APPLETS: dict[str, Builtin] = {
    "grep": _grep,
}
"""This module's applets, by name."""
