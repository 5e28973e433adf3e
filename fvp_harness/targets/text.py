"""Turning raw terminal bytes into text that regexes can match: decode, drop ANSI codes, CRLF -> LF,
drop kernel noise.

All of it is incremental because terminal data arrives in arbitrary chunks: an escape sequence, a
multi-byte UTF-8 character or a CR LF pair can be split between two reads, and a kernel message can
land in the middle of a shell line. The classes keep the unfinished tail until the next chunk
instead of guessing.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Sequence

__all__ = ["KERNEL_LINE", "KernelNoiseFilter", "TextCleaner", "clean_text", "held_back", "mask",
           "strip_ansi"]

MASK = "***"

# CSI (ESC [ params final: colours, cursor moves, and the terminal queries busybox ash sends after
# each prompt until `stty -echo`, ESC [6n, and their replies), OSC (ESC ] ... BEL or ESC \), ESC +
# intermediates + final (ESC ( B), and two-byte escapes (ESC 7/8 save/restore cursor, ESC =, ESC c,
# ESC M, ...).
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[ -/]+[0-~]|[0-~])")
# An escape sequence not finished at the end of a chunk: keep it for the next one.
_ANSI_PARTIAL = re.compile(r"\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*(?:\x1b)?|[ -/]+)?\Z")
# Control characters that carry no text (keep \n and \t; \r is handled separately).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]")

KERNEL_LINE = r"\[\s*\d+\.\d+\] "
"""A printk line as the console shows it: ``[   12.345678] text``. Searched anywhere in a line
(mid-line noise)."""


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences (colour, cursor moves) from complete text."""
    return _ANSI.sub("", text)


def mask(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every occurrence of each of ``secrets`` (longest first, as ``run.instances``
    passes them) replaced by ``***``: what logs show of a scenario's secret environment values."""
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, MASK)
    return text


def held_back(text: str, secrets: Sequence[str]) -> int:
    """How many characters at the end of unfinished ``text`` could be the start of a secret (the
    longest proper prefix of one that ``text`` ends with): a log writing text piecemeal keeps them
    until more arrives, so no secret is ever split over two log writes (and so escapes ``mask``)."""
    longest = 0
    for secret in secrets:
        for size in range(min(len(secret) - 1, len(text)), longest, -1):
            if text.endswith(secret[:size]):
                longest = size
                break
    return longest


def clean_text(text: str) -> str:
    """Complete text -> matching form: no ANSI codes, LF line ends, no stray control characters."""
    text = strip_ansi(text).replace("\r\n", "\n").replace("\r", "")
    return _CONTROL.sub("", text)


class TextCleaner:
    """Incremental ``bytes -> clean str``: UTF-8 with replacement, ANSI stripped, CR LF and lone CR
    handled.

    A lone CR (a progress line redrawing itself, or a telnet CR NUL) is dropped rather than turned
    into a line break, so a redraw does not multiply lines; CR LF becomes LF.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""

    def feed(self, data: bytes) -> str:
        text = self._pending + self._decoder.decode(data)
        self._pending = ""
        partial = _ANSI_PARTIAL.search(text)
        if partial is not None:
            self._pending = text[partial.start():]
            text = text[: partial.start()]
        if text.endswith("\r"):
            self._pending = "\r" + self._pending
            text = text[:-1]
        return clean_text(text)

    def flush(self) -> str:
        """Whatever is held back, cleaned (at end of stream)."""
        text = self._pending + self._decoder.decode(b"", final=True)
        self._pending = ""
        return clean_text(text)


class KernelNoiseFilter:
    """Removes kernel console messages from shell output, including ones that land in the middle of
    a line.

    A printk message starts at a ``[ seconds.micro] `` stamp and ends at the next LF, wherever the
    shell's own output was when it arrived: ``abc[  3.2] random: crng init done\\ndef\\n`` is
    ``abcdef\\n`` once the noise is removed. The filter works line by line on a stream and keeps the
    unfinished last line (``pending``) so a prompt or a marker can be matched before its LF arrives.

    The price: a command whose own output has such stamps (``dmesg``) loses those lines; pass
    ``pattern=None`` to keep everything.
    """

    def __init__(self, pattern: str | None = KERNEL_LINE) -> None:
        self._pattern = re.compile(pattern) if pattern else None
        self.pending = ""
        self.removed: list[str] = []

    def feed(self, text: str) -> list[str]:
        """Add clean text; return the complete lines (each ending with LF) with noise removed."""
        lines: list[str] = []
        buffer = self.pending + text
        carry = ""
        pos = 0
        while True:
            end = buffer.find("\n", pos)
            if end < 0:
                break
            line = carry + buffer[pos : end + 1]
            pos = end + 1
            carry = ""
            match = self._pattern.search(line) if self._pattern is not None else None
            if match is not None:
                self.removed.append(line[match.start() :].rstrip("\n"))
                # The interrupted shell line continues after the noise: carry its start over.
                carry = line[: match.start()]
                continue
            lines.append(line)
        self.pending = carry + buffer[pos:]
        return lines

    def visible_tail(self) -> str:
        """The unfinished last line without any kernel stamp that started in it (for prompt
        matching)."""
        if self._pattern is None:
            return self.pending
        match = self._pattern.search(self.pending)
        return self.pending[: match.start()] if match else self.pending
