"""The guest's everyday busybox applets: head, tail, grep, wc, sort, uniq, tr, tee, xargs, seq, sleep, env, basename,
dirname, touch, hostname, whoami.

Each is ``f(shell, argv, io) -> exit status`` like the builtins (``guest/builtins.py`` merges ``APPLETS`` into
``BUILTINS``) and follows busybox 1.36: its options, its output format, its messages and exit statuses. Input is read
as it arrives (``shell_io.read_lines``), so ``head -n 1`` ends a pipeline's writer as soon as it has its line.
Everything works on bytes, as the real tools do in the C locale.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator

from fvp_harness.sim.guest import programs
from fvp_harness.sim.guest.io import IO, BytesStdin, read_chunks, read_lines
from fvp_harness.sim.guest.session import Session

__all__ = ["APPLETS", "posix_regex"]

BUSYBOX = "BusyBox v1.36.1 () multi-call binary."
_SPACE = b" \t\n\v\f\r"


class _Usage(Exception):
    """Bad options: the message (if any) is printed, then the applet's usage; exit 1 (2 for grep and sort)."""


class _Fail(Exception):
    """An error busybox reports as ``applet: message`` and exits on (the applet's usage exit status)."""


def _check(sh: Session) -> None:
    if sh.interrupted() or sh.machine.stopping.is_set():
        raise programs.ProgramInterrupted


def _getopt(args: list[str], spec: str) -> tuple[list[tuple[str, str]], list[str]]:
    """GNU-style short options (permuted, ``-abc``, ``-nVALUE``, ``-n VALUE``, ``--`` ends them); ``spec`` as
    getopt's (``n:`` takes a value). Raises _Usage."""
    takes = {c for i, c in enumerate(spec) if i + 1 < len(spec) and spec[i + 1] == ":"}
    known = set(spec.replace(":", ""))
    opts: list[tuple[str, str]] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            operands += args[i:]
            break
        if not a.startswith("-") or a == "-":
            operands.append(a)
            continue
        j = 1
        while j < len(a):
            c = a[j]
            if c not in known:
                raise _Usage(f"invalid option -- '{c}'")
            if c in takes:
                value = a[j + 1:]
                if not value:
                    if i >= len(args):
                        raise _Usage(f"option requires an argument -- '{c}'")
                    value = args[i]
                    i += 1
                opts.append((c, value))
                break
            opts.append((c, ""))
            j += 1
    return opts, operands


def _usage(io: IO, name: str, usage: str, message: str = "") -> None:
    if message:
        io.complain(f"{name}: {message}\n")
    io.complain(f"{BUSYBOX}\n\nUsage: {name} {usage}\n")


def _open(sh: Session, name: str, io: IO, applet: str, style: str = "open") -> bytes | None:
    """A file's bytes, or None after busybox's message (``can't open 'X': ...`` or ``X: ...`` for grep)."""
    try:
        return sh.fs.read(name, sh.cwd)
    except OSError as exc:
        reason = exc.strerror or os.strerror(exc.errno or 0)
        io.complain(f"{applet}: can't open '{name}': {reason}\n" if style == "open"
                    else f"{applet}: {name}: {reason}\n")
        return None


def _lines_of(data: bytes) -> list[bytes]:
    """Lines with their ``\\n`` (the last may lack it)."""
    lines = data.split(b"\n")
    last = lines.pop()
    return [line + b"\n" for line in lines] + ([last] if last else [])


def _input_lines(sh: Session, io: IO, name: str, data: bytes | None) -> Iterator[bytes]:
    if name == "-":
        for line in read_lines(io.stdin):
            _check(sh)
            yield line
    else:
        yield from _lines_of(data or b"")


def _number(text: str) -> int:
    m = re.fullmatch(r"(\d+)([bkm]?)", text)
    if not m:
        raise _Fail(f"invalid number '{text}'")
    return int(m.group(1)) * {"": 1, "b": 512, "k": 1024, "m": 1024 * 1024}[m.group(2)]


def _applet(usage: str, usage_status: int = 1) -> Callable[[Callable[[Session, list[str], IO], int]],
                                                             Callable[[Session, list[str], IO], int]]:
    """Turn _Usage into busybox's usage text and exit status."""

    def wrap(fn: Callable[[Session, list[str], IO], int]) -> Callable[[Session, list[str], IO], int]:
        @functools.wraps(fn)
        def run(sh: Session, argv: list[str], io: IO) -> int:
            try:
                return fn(sh, argv, io)
            except _Usage as exc:
                _usage(io, argv[0], usage, str(exc))
                return usage_status
            except _Fail as exc:
                io.complain(f"{argv[0]}: {exc}\n")
                return usage_status

        return run

    return wrap


# ------------------------------------------------------------------------------------------------------------
# head, tail


def _header(io: IO, name: str, first: bool) -> None:
    label = "standard input" if name == "-" else name
    io.say(("" if first else "\n") + f"==> {label} <==\n")


@_applet("[OPTIONS] [FILE]...")
def _head(sh: Session, argv: list[str], io: IO) -> int:
    args = argv[1:]
    count, negative, by_bytes = 10, False, False
    if args and re.fullmatch(r"-\d+[bkm]?", args[0]):
        count, args = _number(args[0][1:]), args[1:]
    opts, files = _getopt(args, "n:c:qv")
    headers: bool | None = None
    for opt, value in opts:
        if opt in "nc":
            by_bytes = opt == "c"
            negative = value.startswith("-")
            count = _number(value.lstrip("-+"))
        elif opt == "q":
            headers = False
        elif opt == "v":
            headers = True
    files = files or ["-"]
    show = headers if headers is not None else len(files) > 1
    status = 0
    first = True
    for name in files:
        data = None if name == "-" else _open(sh, name, io, "head")
        if name != "-" and data is None:
            status = 1
            continue
        if show:
            _header(io, name, first)
        first = False
        if by_bytes:
            blob = io.stdin.read() if name == "-" else data or b""
            if negative:
                io.out(blob[:-count] if count else blob)
            else:
                io.out(blob[:count])
            continue
        if negative:
            lines = list(_input_lines(sh, io, name, data))
            io.out(b"".join(lines[:-count] if count else lines))
            continue
        if count == 0:
            continue
        for shown, line in enumerate(_input_lines(sh, io, name, data), start=1):
            io.out(line)
            if shown >= count:
                break
    return status


@_applet("[OPTIONS] [FILE]...")
def _tail(sh: Session, argv: list[str], io: IO) -> int:
    args = argv[1:]
    count, from_top, by_bytes = 10, False, False
    if args and re.fullmatch(r"[-+]\d+[bkm]?", args[0]):
        from_top = args[0][0] == "+"
        count, args = _number(args[0][1:]), args[1:]
    opts, files = _getopt(args, "fc:n:qs:vF")
    headers: bool | None = None
    for opt, value in opts:
        if opt in "nc":
            by_bytes = opt == "c"
            from_top = value.startswith("+")
            count = _number(value.lstrip("-+"))
        elif opt == "q":
            headers = False
        elif opt == "v":
            headers = True
    files = files or ["-"]
    show = headers if headers is not None else len(files) > 1
    status = 0
    first = True
    for name in files:
        data = io.stdin.read() if name == "-" else _open(sh, name, io, "tail")
        if data is None:
            status = 1
            continue
        if show:
            _header(io, name, first)
        first = False
        if by_bytes:
            io.out(data[max(count - 1, 0):] if from_top else (data[-count:] if count else b""))
            continue
        lines = _lines_of(data)
        io.out(b"".join(lines[max(count - 1, 0):] if from_top else (lines[-count:] if count else [])))
    return status


# ------------------------------------------------------------------------------------------------------------
# grep


_POSIX_CLASSES = {
    "alpha": "a-zA-Z", "digit": "0-9", "alnum": "0-9a-zA-Z", "upper": "A-Z", "lower": "a-z",
    "space": " \\t\\n\\r\\f\\v", "blank": " \\t", "xdigit": "0-9A-Fa-f", "cntrl": "\\x00-\\x1f\\x7f",
    "print": " -~", "graph": "!-~", "punct": "!-/:-@\\[-`{-~",
}


def _posix_bracket(pat: str, i: int) -> tuple[str, int]:
    """A POSIX bracket expression at ``pat[i] == '['`` as a Python class (``]`` first is literal, backslash is
    literal, ``[:class:]``); raises ValueError when unclosed."""
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
    """A POSIX basic (``grep``) or extended (``grep -E``) regular expression, with GNU's extensions (``\\+``
    ``\\?`` ``\\|`` in basic, ``\\<`` ``\\>`` ``\\b`` ``\\w`` ``\\s``), as a Python regex. Raises ValueError
    for what regcomp refuses."""
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
                    raise ValueError("Invalid preceding regular expression" if start else "Unmatched \\{")
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


@_applet("[-HhnlLoqvsrRiwFE] [-m N] [-A|B|C N] { PATTERN | -e PATTERN... } [FILE]...", usage_status=2)
def _grep(sh: Session, argv: list[str], io: IO) -> int:
    opts, operands = _getopt(argv[1:], "lnqvscFiHhe:LowxEm:A:B:C:")
    flags = {opt for opt, _ in opts}
    patterns = [value for opt, value in opts if opt == "e"]
    numbers: dict[str, int] = {}
    for opt, value in opts:
        if opt in "mABC":
            if not value.isdigit():
                raise _Fail(f"invalid number '{value}'")
            numbers[opt] = int(value)
    max_count = numbers.get("m")
    after_n = numbers.get("A", numbers.get("C", 0))
    before_n = numbers.get("B", numbers.get("C", 0))
    if flags & set("cqlL"):
        flags.discard("n")
        after_n = before_n = 0
    if not patterns:
        if not operands:
            raise _Usage()
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
            raise _Fail(f"bad regex '{pat}': {exc}") from None
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
        for number, raw in enumerate(_input_lines(sh, io, name, data), start=1):
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


# ------------------------------------------------------------------------------------------------------------
# wc, sort, uniq


def _wc_counts(chunks: Iterator[bytes]) -> list[int]:
    """[lines, words, chars, bytes, longest line] as busybox counts them (words end at C-locale spaces; other
    non-printable bytes neither start nor end a word)."""
    lines = words = chars = size = longest = 0
    in_word = False
    pos = 0
    for chunk in chunks:
        size += len(chunk)
        chars += sum(1 for b in chunk if b & 0xC0 != 0x80)
        for b in chunk:
            if 0x20 <= b < 0x7F:
                pos += 1
                if b != 0x20:
                    in_word = True
                    continue
            elif 9 <= b <= 13:
                if b == 9:
                    pos = (pos | 7) + 1
                else:
                    longest = max(longest, pos)
                    if b == 10:
                        lines += 1
                    if b != 11:
                        pos = 0
            else:
                continue
            words += in_word
            in_word = False
    longest = max(longest, pos)
    words += in_word
    return [lines, words, chars, size, longest]


@_applet("[-cmlwL] [FILE]...")
def _wc(sh: Session, argv: list[str], io: IO) -> int:
    opts, files = _getopt(argv[1:], "lwmcL")
    order = "lwmcL"
    wanted = [order.index(o) for o in order if any(opt == o for opt, _ in opts)] or [0, 1, 3]
    status = 0
    totals = [0] * 5
    names = files or ["-"]
    narrow = len(names) <= 1 and len(wanted) == 1
    for name in names:
        if name == "-":
            counts = _wc_counts(read_chunks(io.stdin))
        else:
            data = _open(sh, name, io, "wc")
            if data is None:
                status = 1
                continue
            counts = _wc_counts(iter([data]))
        for k in range(4):
            totals[k] += counts[k]
        totals[4] = max(totals[4], counts[4])
        cells = [str(counts[k]) if narrow and n == 0 else f"{counts[k]:9d}" for n, k in enumerate(wanted)]
        io.say(" ".join(cells) + ("" if not files else f" {name}") + "\n")
    if len(names) > 1:
        io.say(" ".join(f"{totals[k]:9d}" for k in wanted) + " total\n")
    return status


_NUMBER = re.compile(rb"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")


def _atof(text: bytes) -> float:
    m = _NUMBER.match(text)
    return float(m.group(1)) if m else 0.0


def _sort_key(line: bytes, start: int, end: int, sep: bytes | None) -> bytes:
    """Fields ``start``..``end`` (1-based; 0 = to the end) of a line, split as busybox sort does."""
    def field_start(number: int) -> int:
        pos = 0
        for _ in range(number - 1):
            if sep is not None:
                nxt = line.find(sep, pos)
                pos = len(line) if nxt < 0 else nxt + 1
            else:
                while pos < len(line) and line[pos] in _SPACE:
                    pos += 1
                while pos < len(line) and line[pos] not in _SPACE:
                    pos += 1
        return pos

    begin = field_start(start)
    if not end:
        return line[begin:]
    stop = field_start(end + 1)
    if sep is not None and stop > 0 and stop <= len(line) and line[stop - 1:stop] == sep:
        stop -= 1
    return line[begin:stop]


@_applet("[-nrufbs] [-k START[,END]] [-t CHAR] [-o FILE] [FILE]...", usage_status=2)
def _sort(sh: Session, argv: list[str], io: IO) -> int:
    opts, files = _getopt(argv[1:], "nrufbscgMzk:t:o:")
    flags = "".join(o for o, _ in opts if o in "nrufbsg")
    sep = None
    keys: list[tuple[int, int, str]] = []
    output = None
    for opt, value in opts:
        if opt == "t":
            if len(value) != 1:
                raise _Fail("bad -t parameter")
            sep = value.encode()
        elif opt == "o":
            output = value
        elif opt == "k":
            m = re.fullmatch(r"(\d+)(?:\.\d+)?([bdfginrMs]*)(?:,(\d+)(?:\.\d+)?([bdfginrMs]*))?", value)
            if not m or m.group(1) == "0":
                raise _Fail(f"bad field specification '{value}'")
            keys.append((int(m.group(1)), int(m.group(3) or 0), (m.group(2) or "") + (m.group(4) or "")))
    lines: list[bytes] = []
    for name in files or ["-"]:
        data = io.stdin.read() if name == "-" else _open(sh, name, io, "sort")
        if data is None:
            return 2
        lines += [line.rstrip(b"\n") for line in _lines_of(data)]

    def compare(a: bytes, b: bytes, tie_break: bool = True) -> int:
        result = 0
        used = flags
        for start, end, key_flags in keys or [(1, 0, "")]:
            used = key_flags or flags
            x = _sort_key(a, start, end, sep) if keys else a
            y = _sort_key(b, start, end, sep) if keys else b
            if "b" in used:
                x, y = x.lstrip(_SPACE), y.lstrip(_SPACE)
            if "f" in used:
                x, y = x.upper(), y.upper()
            if "n" in used or "g" in used:
                fx, fy = _atof(x), _atof(y)
                result = (fx > fy) - (fx < fy)
            else:
                result = (x > y) - (x < y)
            if result:
                break
        if not result and tie_break and "s" not in flags and "u" not in flags:
            used = flags
            result = (a > b) - (a < b)
        return -result if "r" in used else result

    lines.sort(key=functools.cmp_to_key(compare))
    if "u" in flags:
        kept: list[bytes] = []
        for line in lines:
            if not kept or compare(kept[-1], line, tie_break=False) != 0:
                kept.append(line)
        lines = kept
    text = b"".join(line + b"\n" for line in lines)
    if output is not None:
        try:
            sh.fs.write(output, text, sh.cwd)
        except OSError as exc:
            io.complain(f"sort: can't open '{output}': {exc.strerror}\n")
            return 2
        return 0
    io.out(text)
    return 0


@_applet("[-cdui] [-f,s,w N] [INPUT [OUTPUT]]")
def _uniq(sh: Session, argv: list[str], io: IO) -> int:
    opts, files = _getopt(argv[1:], "cduif:s:w:z")
    flags = {o for o, _ in opts}
    data = None
    name = files[0] if files else "-"
    if name != "-":
        data = _open(sh, name, io, "uniq")
        if data is None:
            return 1

    def key(line: bytes) -> bytes:
        body = line.rstrip(b"\n")
        return body.lower() if "i" in flags else body

    def emit(line: bytes, dups: int) -> None:
        if ("d" in flags and dups == 0) or ("u" in flags and dups > 0):
            return
        io.out((f"{dups + 1:7d} ".encode() if "c" in flags else b"") + line.rstrip(b"\n") + b"\n")

    previous: bytes | None = None
    dups = 0
    for line in _input_lines(sh, io, name, data):
        if previous is not None and key(line) == key(previous):
            dups += 1
            continue
        if previous is not None:
            emit(previous, dups)
        previous, dups = line, 0
    if previous is not None:
        emit(previous, dups)
    return 0


# ------------------------------------------------------------------------------------------------------------
# tr, tee


_TR_ESCAPES = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11, "\\": 92}
_TR_CLASSES: dict[str, Callable[[int], bool]] = {
    "alpha": lambda b: chr(b).isascii() and chr(b).isalpha(), "digit": lambda b: 48 <= b <= 57,
    "alnum": lambda b: chr(b).isascii() and chr(b).isalnum(), "upper": lambda b: 65 <= b <= 90,
    "lower": lambda b: 97 <= b <= 122, "space": lambda b: b in _SPACE, "blank": lambda b: b in (9, 32),
    "punct": lambda b: 33 <= b <= 126 and not chr(b).isalnum(), "cntrl": lambda b: b < 32 or b == 127,
    "print": lambda b: 32 <= b <= 126, "graph": lambda b: 33 <= b <= 126,
    "xdigit": lambda b: chr(b) in "0123456789abcdefABCDEF",
}


def _tr_set(text: str) -> list[int]:
    """A tr set as byte values: escapes, ``a-z`` ranges, ``[:class:]``, ``[=c=]``."""
    raw = text.encode("utf-8", "surrogateescape")
    items: list[int] = []
    i = 0
    while i < len(raw):
        if raw[i:i + 2] == b"[:":
            end = raw.find(b":]", i + 2)
            name = raw[i + 2:end].decode() if end > 0 else ""
            if name in _TR_CLASSES:
                items += [b for b in range(256) if _TR_CLASSES[name](b)]
                i = end + 2
                continue
        if raw[i:i + 2] == b"[=" and raw[i + 3:i + 5] == b"=]":
            items.append(raw[i + 2])
            i += 5
            continue
        value, i = _tr_char(raw, i)
        if raw[i:i + 1] == b"-" and i + 1 < len(raw):
            high, nxt = _tr_char(raw, i + 1)
            if high >= value:
                items += range(value, high + 1)
                i = nxt
                continue
        items.append(value)
    return items


def _tr_char(raw: bytes, i: int) -> tuple[int, int]:
    if raw[i] == 0x5C and i + 1 < len(raw):  # backslash
        m = re.match(rb"[0-7]{1,3}", raw[i + 1:])
        if m:
            return int(m.group(0), 8) & 0xFF, i + 1 + m.end()
        letter = chr(raw[i + 1])
        return _TR_ESCAPES.get(letter, raw[i + 1]), i + 2
    return raw[i], i + 1


@_applet("[-cds] STRING1 [STRING2]")
def _tr(sh: Session, argv: list[str], io: IO) -> int:
    args = argv[1:]
    flags = ""
    while args and re.fullmatch(r"-[cCds]+", args[0]):
        flags += args.pop(0)[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not 1 <= len(args) <= 2:
        raise _Usage()
    set1 = _tr_set(args[0])
    if "c" in flags or "C" in flags:
        members = set(set1)
        set1 = [b for b in range(256) if b not in members]
    set2: list[int] = []
    if len(args) == 2:
        if not args[1]:
            raise _Fail("STRING2 cannot be empty")
        set2 = _tr_set(args[1])
    table = list(range(256))
    if set2:
        last = set2[-1]
        for k, b in enumerate(set1):
            table[b] = set2[k] if k < len(set2) else last
    delete = "d" in flags
    squeeze = "s" in flags
    in1 = [False] * 256
    for b in set1:
        in1[b] = True
    in2 = [False] * 256
    for b in set2:
        in2[b] = True
    last_out = -1
    for chunk in read_chunks(io.stdin):
        _check(sh)
        out = bytearray()
        for c in chunk:
            if delete and in1[c]:
                continue
            coded = table[c]
            if squeeze and last_out == coded and (in1[c] or in2[coded]):
                continue
            out.append(coded)
            last_out = coded
        io.out(bytes(out))
    return 0


@_applet("[-ai] [FILE]...")
def _tee(sh: Session, argv: list[str], io: IO) -> int:
    opts, files = _getopt(argv[1:], "ia")
    append = any(o == "a" for o, _ in opts)
    status = 0
    handles = []
    for name in files:
        if name == "-":
            continue
        try:
            handles.append(sh.fs.open_write(name, sh.cwd, append=append))
        except OSError as exc:
            io.complain(f"tee: can't open '{name}': {exc.strerror or os.strerror(exc.errno or 0)}\n")
            status = 1
    try:
        for chunk in read_chunks(io.stdin):
            for fh in handles:
                fh.write(chunk)
                fh.flush()
            io.out(chunk)
    finally:
        for fh in handles:
            fh.close()
    return status


# ------------------------------------------------------------------------------------------------------------
# xargs, env


_QUOTE_NAMES = {'"': "double", "'": "single"}


def _xargs_items(data: bytes) -> list[str]:
    """Arguments from xargs' input: blanks separate them; quotes and backslash as busybox reads them."""
    text = data.decode("utf-8", "surrogateescape")
    items: list[str] = []
    cur: list[str] = []
    have = False
    quote = ""
    i = 0
    while i < len(text):
        c = text[i]
        i += 1
        if quote:
            if c == quote:
                quote = ""
            elif c == "\n":
                raise _Fail(f"unmatched {_QUOTE_NAMES[quote]} quote")
            else:
                cur.append(c)
            continue
        if c in "'\"":
            quote, have = c, True
        elif c == "\\" and i < len(text):
            cur.append(text[i])
            i += 1
            have = True
        elif c in " \t\n\v\f\r":
            if have or cur:
                items.append("".join(cur))
            cur, have = [], False
        else:
            cur.append(c)
    if quote:
        raise _Fail(f"unmatched {_QUOTE_NAMES[quote]} quote")
    if have or cur:
        items.append("".join(cur))
    return items


@_applet("[OPTIONS] [PROG ARGS]")
def _xargs(sh: Session, argv: list[str], io: IO) -> int:
    args = argv[1:]
    flags = ""
    per_call = None
    # options stop at the command (xargs does not permute)
    while args and args[0].startswith("-") and args[0] != "-":
        arg = args.pop(0)
        if arg == "--":
            break
        j = 1
        while j < len(arg):
            c = arg[j]
            if c in "ns":
                value = arg[j + 1:] or (args.pop(0) if args else "")
                if not value:
                    raise _Usage(f"option requires an argument -- '{c}'")
                if not value.isdigit() or int(value) < 1:
                    raise _Fail(f"invalid number '{value}'")
                if c == "n":
                    per_call = int(value)
                break
            if c not in "rt0":
                raise _Usage(f"invalid option -- '{c}'")
            flags += c
            j += 1
    no_empty = "r" in flags
    trace = "t" in flags
    command = args or ["echo"]
    data = io.stdin.read()
    if "0" in flags:
        items = data.decode("utf-8", "surrogateescape").split("\0")
        if items and items[-1] == "":
            items.pop()
    else:
        items = _xargs_items(data)
    batches = [items[k:k + per_call] for k in range(0, len(items), per_call)] if per_call else [items]
    if not items:
        if no_empty:
            return 0
        batches = [[]]
    exitcode = 0
    for batch in batches:
        _check(sh)
        call = [*command, *batch]
        if trace:
            io.complain(" ".join(call) + "\n")
        sub = sh.subshell()
        found = sub.find_command(call[0], sub.environment())
        if found is None or (isinstance(found, str) and not _exists(sub, found)):
            io.complain(f"xargs: {call[0]}: No such file or directory\n")
            return 127
        status = sub.execute(call, sub.environment(), IO(io.out, io.err, BytesStdin(), None, None))
        if status == 255:
            io.complain(f"xargs: {call[0]}: exited with status 255; aborting\n")
            return 124
        if status in (126, 127):
            return status
        if status > 128:
            io.complain(f"xargs: '{call[0]}' terminated by signal {status - 128}\n")
            return 125
        if status:
            exitcode = 123
    return exitcode


def _exists(sh: Session, path: str) -> bool:
    try:
        return sh.fs.host_path(path, sh.cwd).exists()
    except OSError:
        return False


@_applet("[-i] [-u NAME] [NAME=VALUE]... [PROG ARGS]")
def _env(sh: Session, argv: list[str], io: IO) -> int:
    args = argv[1:]
    env = sh.environment()
    while args and args[0].startswith("-") and args[0] != "-":
        flag = args.pop(0)
        if flag in ("-i", "--ignore-environment"):
            env = {}
        elif flag == "-u" and args:
            env.pop(args.pop(0), None)
        elif flag == "--":
            break
        else:
            raise _Usage(f"invalid option -- '{flag[1:2]}'")
    if args[:1] == ["-"]:
        env = {}
        args = args[1:]
    while args and re.fullmatch(r"[^=]+=.*", args[0], re.DOTALL):
        name, _, value = args.pop(0).partition("=")
        env[name] = value
    if not args:
        io.say("".join(f"{k}={v}\n" for k, v in env.items()))
        return 0
    sub = sh.subshell()
    sub.vars = dict(env)
    sub.exported = set(env)
    found = sub.find_command(args[0], env)
    if found is None:
        io.complain(f"env: can't execute '{args[0]}': No such file or directory\n")
        return 127
    return sub.execute(args, env, io)


# ------------------------------------------------------------------------------------------------------------
# small ones


@_applet("[-w] [-s SEP] [FIRST [INC]] LAST")
def _seq(sh: Session, argv: list[str], io: IO) -> int:
    args = argv[1:]
    sep, width = "\n", False
    while args and (args[0] in ("-w", "-s") or (args[0].startswith("-s") and len(args[0]) > 2)):
        flag = args.pop(0)
        if flag == "-w":
            width = True
        elif flag == "-s":
            if not args:
                raise _Usage("option requires an argument -- 's'")
            sep = args.pop(0)
        else:
            sep = flag[2:]
    if not 1 <= len(args) <= 3:
        raise _Usage()
    try:
        nums = [float(a) for a in args]
    except ValueError:
        bad = next(a for a in args if not re.fullmatch(r"[-+]?\d*\.?\d+(e[-+]?\d+)?", a))
        raise _Fail(f"invalid number '{bad}'") from None
    first, step, last = (1.0, 1.0, nums[0]) if len(nums) == 1 else (
        (nums[0], 1.0, nums[1]) if len(nums) == 2 else (nums[0], nums[1], nums[2]))
    decimals = max((len(a.split(".")[1]) if "." in a else 0) for a in args)
    values = []
    k = 0
    while step and (first + k * step <= last if step > 0 else first + k * step >= last):
        values.append(f"{first + k * step:.{decimals}f}")
        k += 1
        if k % 1000 == 0:
            _check(sh)
    if width and values:
        wide = max(len(v) for v in values)
        values = [v.zfill(wide) if not v.startswith("-") else "-" + v[1:].zfill(wide - 1) for v in values]
    if values:
        io.say(sep.join(values) + "\n")
    return 0


def _duration(text: str) -> float:
    m = re.fullmatch(r"(\d*\.?\d+)([smhd]?)", text)
    if not m:
        raise _Fail(f"invalid number '{text}'")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


@_applet("[N]...")
def _sleep(sh: Session, argv: list[str], io: IO) -> int:
    if len(argv) < 2:
        raise _Usage()
    seconds = sum(_duration(a) for a in argv[1:])
    done = threading.Event()
    deadline = time.monotonic() + seconds
    while not done.is_set():
        _check(sh)
        left = deadline - time.monotonic()
        if left <= 0:
            break
        done.wait(min(left, 0.1))
    return 0


@_applet("FILE [SUFFIX]")
def _basename(sh: Session, argv: list[str], io: IO) -> int:
    if not 2 <= len(argv) <= 3:
        raise _Usage()
    path = argv[1].rstrip("/") or ("/" if argv[1] else "")
    base = posixpath.basename(path) if path != "/" else "/"
    if len(argv) == 3 and base.endswith(argv[2]) and base != argv[2]:
        base = base[:-len(argv[2])]
    io.say(base + "\n")
    return 0


@_applet("FILENAME")
def _dirname(sh: Session, argv: list[str], io: IO) -> int:
    if len(argv) != 2:
        raise _Usage()
    path = argv[1].rstrip("/")
    if not path:
        io.say(("/" if argv[1] else ".") + "\n")
        return 0
    head = path.rpartition("/")[0].rstrip("/") if "/" in path else "."
    io.say((head or "/") + "\n")
    return 0


@_applet("[-c] FILE...")
def _touch(sh: Session, argv: list[str], io: IO) -> int:
    opts, files = _getopt(argv[1:], "cham")
    if not files:
        raise _Usage()
    status = 0
    for name in files:
        try:
            host = sh.fs.host_path(name, sh.cwd)
            if host.exists():
                os.utime(host)
            elif not any(o == "c" for o, _ in opts):
                sh.fs.write(name, b"", sh.cwd)
        except OSError as exc:
            io.complain(f"touch: {name}: {exc.strerror or os.strerror(exc.errno or 0)}\n")
            status = 1
    return status


def _hostname(sh: Session, argv: list[str], io: IO) -> int:
    io.say(sh.machine.hostname + "\n")
    return 0


def _whoami(sh: Session, argv: list[str], io: IO) -> int:
    io.say("root\n")
    return 0


APPLETS: dict[str, Callable[[Session, list[str], IO], int]] = {
    "head": _head,
    "tail": _tail,
    "grep": _grep,
    "wc": _wc,
    "sort": _sort,
    "uniq": _uniq,
    "tr": _tr,
    "tee": _tee,
    "xargs": _xargs,
    "env": _env,
    "seq": _seq,
    "sleep": _sleep,
    "basename": _basename,
    "dirname": _dirname,
    "touch": _touch,
    "hostname": _hostname,
    "whoami": _whoami,
}
"""The busybox applets the simulated guest has beyond the builtins, by name."""
