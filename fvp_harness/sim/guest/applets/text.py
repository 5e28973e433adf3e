"""busybox's text applets: head, tail, wc, sort, uniq, tr, tee."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterator
from typing import TypeVar

from fvp_harness.sim.guest.applets.common import (
    SPACE,
    Fail,
    Usage,
    busybox_applet,
    check,
    getopt,
    input_lines,
    lines_of,
    number,
    read_input,
)
from fvp_harness.sim.guest.io import IO, read_chunks
from fvp_harness.sim.guest.session import Builtin, Session

__all__ = ["APPLETS"]

# --------------------------------------------------------------------------------------------------
# head, tail

_Stdin = TypeVar("_Stdin", bytes, bytes | None)
"""What head's and tail's file walk gives a part for standard input: tail's whole bytes, or None for
head."""


def _header(io: IO, name: str, first: bool) -> None:
    label = "standard input" if name == "-" else name
    io.say(("" if first else "\n") + f"==> {label} <==\n")


def _count_options(args: list[str], spec: str,
                   plus: bool) -> tuple[int, str, bool, list[str], bool]:
    """head's and tail's common options, parsed once because busybox parses them alike: an optional
    first argument ``-N`` (or ``+N`` with ``plus``: tail), then ``-n N`` / ``-c N`` (the last one
    wins, ``-c`` counting bytes) and ``-q`` / ``-v`` (the last one wins; without either, headers
    show for several files). Returns (count, the count's sign: ``-``, ``+`` or ``""``, by bytes,
    files, show headers); the leading ``-`` of ``-N`` is the option's, not a sign. ``spec`` is the
    applet's getopt string, so each keeps the options it alone accepts (tail's -f, -s, -F). Raises
    Usage or Fail as the applet would."""
    count, sign, by_bytes = 10, "", False
    if args and re.fullmatch(r"[-+]\d+[bkm]?" if plus else r"-\d+[bkm]?", args[0]):
        sign = "+" if args[0][0] == "+" else ""
        count, args = number(args[0][1:]), args[1:]
    opts, files = getopt(args, spec)
    headers: bool | None = None
    for opt, value in opts:
        if opt in "nc":
            by_bytes = opt == "c"
            sign = value[0] if value[:1] in ("-", "+") else ""
            count = number(value.lstrip("-+"))
        elif opt == "q":
            headers = False
        elif opt == "v":
            headers = True
    files = files or ["-"]
    return count, sign, by_bytes, files, headers if headers is not None else len(files) > 1


def _each_file(sh: Session, io: IO, applet: str, files: list[str], show: bool,
               stdin: Callable[[], _Stdin], part: Callable[[str, bytes | _Stdin], None]) -> int:
    """head's and tail's walk over their files, shared because busybox walks them alike: a file that
    cannot be read gets its message and makes the status 1; every other one gets its ``==> name
    <==`` header (when ``show``) and then ``part(name, its bytes)``. ``-`` is standard input, which
    ``stdin()`` reads before the header: tail reads it whole, head passes None and streams it in
    ``part``."""
    status = 0
    first = True
    for name in files:
        data: bytes | _Stdin
        if name == "-":
            data = stdin()
        else:
            read = read_input(sh, name, io, applet)
            if read is None:
                status = 1
                continue
            data = read
        if show:
            _header(io, name, first)
        first = False
        part(name, data)
    return status


@busybox_applet("[OPTIONS] [FILE]...")
def _head(sh: Session, argv: list[str], io: IO) -> int:
    count, sign, by_bytes, files, show = _count_options(argv[1:], "n:c:qv", plus=False)
    negative = sign == "-"

    def head_of(name: str, data: bytes | None) -> None:
        if by_bytes:
            blob = io.stdin.read() if name == "-" else data or b""
            if negative:
                io.out(blob[:-count] if count else blob)
            else:
                io.out(blob[:count])
            return
        if negative:
            lines = list(input_lines(sh, io, name, data))
            io.out(b"".join(lines[:-count] if count else lines))
            return
        if count == 0:
            return
        for shown, line in enumerate(input_lines(sh, io, name, data), start=1):
            io.out(line)
            if shown >= count:
                break

    return _each_file(sh, io, "head", files, show, lambda: None, head_of)


@busybox_applet("[OPTIONS] [FILE]...")
def _tail(sh: Session, argv: list[str], io: IO) -> int:
    count, sign, by_bytes, files, show = _count_options(argv[1:], "fc:n:qs:vF", plus=True)
    from_top = sign == "+"

    def tail_of(name: str, data: bytes) -> None:
        if by_bytes:
            io.out(data[max(count - 1, 0):] if from_top else (data[-count:] if count else b""))
            return
        lines = lines_of(data)
        io.out(b"".join(lines[max(count - 1, 0):] if from_top
                        else (lines[-count:] if count else [])))

    return _each_file(sh, io, "tail", files, show, io.stdin.read, tail_of)


# --------------------------------------------------------------------------------------------------
# wc, sort, uniq


def _wc_counts(chunks: Iterator[bytes]) -> list[int]:
    """[lines, words, chars, bytes, longest line] as busybox counts them (words end at C-locale
    spaces; other non-printable bytes neither start nor end a word)."""
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


@busybox_applet("[-cmlwL] [FILE]...")
def _wc(sh: Session, argv: list[str], io: IO) -> int:
    opts, files = getopt(argv[1:], "lwmcL")
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
            data = read_input(sh, name, io, "wc")
            if data is None:
                status = 1
                continue
            counts = _wc_counts(iter([data]))
        for k in range(4):
            totals[k] += counts[k]
        totals[4] = max(totals[4], counts[4])
        cells = [str(counts[k]) if narrow and n == 0 else f"{counts[k]:9d}"
                 for n, k in enumerate(wanted)]
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
                while pos < len(line) and line[pos] in SPACE:
                    pos += 1
                while pos < len(line) and line[pos] not in SPACE:
                    pos += 1
        return pos

    begin = field_start(start)
    if not end:
        return line[begin:]
    stop = field_start(end + 1)
    if sep is not None and stop > 0 and stop <= len(line) and line[stop - 1:stop] == sep:
        stop -= 1
    return line[begin:stop]


@busybox_applet("[-nrufbs] [-k START[,END]] [-t CHAR] [-o FILE] [FILE]...", usage_status=2)
def _sort(sh: Session, argv: list[str], io: IO) -> int:
    opts, files = getopt(argv[1:], "nrufbscgMzk:t:o:")
    flags = "".join(o for o, _ in opts if o in "nrufbsg")
    sep = None
    keys: list[tuple[int, int, str]] = []
    output = None
    for opt, value in opts:
        if opt == "t":
            if len(value) != 1:
                raise Fail("bad -t parameter")
            sep = value.encode()
        elif opt == "o":
            output = value
        elif opt == "k":
            m = re.fullmatch(r"(\d+)(?:\.\d+)?([bdfginrMs]*)(?:,(\d+)(?:\.\d+)?([bdfginrMs]*))?",
                             value)
            if not m or m.group(1) == "0":
                raise Fail(f"bad field specification '{value}'")
            keys.append((int(m.group(1)), int(m.group(3) or 0),
                         (m.group(2) or "") + (m.group(4) or "")))
    lines: list[bytes] = []
    for name in files or ["-"]:
        data = io.stdin.read() if name == "-" else read_input(sh, name, io, "sort")
        if data is None:
            return 2
        lines += [line.rstrip(b"\n") for line in lines_of(data)]

    def compare(a: bytes, b: bytes, tie_break: bool = True) -> int:
        result = 0
        used = flags
        for start, end, key_flags in keys or [(1, 0, "")]:
            used = key_flags or flags
            x = _sort_key(a, start, end, sep) if keys else a
            y = _sort_key(b, start, end, sep) if keys else b
            if "b" in used:
                x, y = x.lstrip(SPACE), y.lstrip(SPACE)
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


@busybox_applet("[-cdui] [-f,s,w N] [INPUT [OUTPUT]]")
def _uniq(sh: Session, argv: list[str], io: IO) -> int:
    opts, files = getopt(argv[1:], "cduif:s:w:z")
    flags = {o for o, _ in opts}
    data = None
    name = files[0] if files else "-"
    if name != "-":
        data = read_input(sh, name, io, "uniq")
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
    for line in input_lines(sh, io, name, data):
        if previous is not None and key(line) == key(previous):
            dups += 1
            continue
        if previous is not None:
            emit(previous, dups)
        previous, dups = line, 0
    if previous is not None:
        emit(previous, dups)
    return 0


# --------------------------------------------------------------------------------------------------
# tr, tee


_TR_ESCAPES = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11, "\\": 92}
_TR_CLASSES: dict[str, Callable[[int], bool]] = {
    "alpha": lambda b: chr(b).isascii() and chr(b).isalpha(), "digit": lambda b: 48 <= b <= 57,
    "alnum": lambda b: chr(b).isascii() and chr(b).isalnum(), "upper": lambda b: 65 <= b <= 90,
    "lower": lambda b: 97 <= b <= 122, "space": lambda b: b in SPACE,
    "blank": lambda b: b in (9, 32),
    "punct": lambda b: 33 <= b <= 126 and not chr(b).isalnum(),
    "cntrl": lambda b: b < 32 or b == 127,
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


@busybox_applet("[-cds] STRING1 [STRING2]")
def _tr(sh: Session, argv: list[str], io: IO) -> int:
    args = argv[1:]
    flags = ""
    while args and re.fullmatch(r"-[cCds]+", args[0]):
        flags += args.pop(0)[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not 1 <= len(args) <= 2:
        raise Usage()
    set1 = _tr_set(args[0])
    if "c" in flags or "C" in flags:
        members = set(set1)
        set1 = [b for b in range(256) if b not in members]
    set2: list[int] = []
    if len(args) == 2:
        if not args[1]:
            raise Fail("STRING2 cannot be empty")
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
        check(sh)
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


@busybox_applet("[-ai] [FILE]...")
def _tee(sh: Session, argv: list[str], io: IO) -> int:
    opts, files = getopt(argv[1:], "ia")
    append = any(o == "a" for o, _ in opts)
    status = 0
    handles = []
    for name in files:
        if name == "-":
            continue
        try:
            handles.append(sh.fs.open_write(name, sh.cwd, append=append))
        except OSError as exc:
            io.complain(f"tee: can't open '{name}': "
                        f"{exc.strerror or os.strerror(exc.errno or 0)}\n")
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

APPLETS: dict[str, Builtin] = {
    "head": _head,
    "tail": _tail,
    "wc": _wc,
    "sort": _sort,
    "uniq": _uniq,
    "tr": _tr,
    "tee": _tee,
}
"""This module's applets, by name."""
