"""Terminal queries never reach parsed output: busybox ash asks for the cursor position (``ESC
[6n``) after each prompt until ``stty -echo``, and a guest program may send any other query or mode
change. The harness answers none of them and must not let their bytes into a command's output,
however the console's reads split them."""

from __future__ import annotations

import pytest

from fvp_harness.targets.text import KernelNoiseFilter, TextCleaner

QUERIES = [
    b"\x1b[6n",  # DSR: cursor position (ash, after each prompt)
    b"\x1b[5n",  # DSR: status
    b"\x1b[c",  # DA: primary device attributes
    b"\x1b[>c",  # DA2: secondary
    b"\x1b[?1049h",  # private mode set (alternate screen)
    b"\x1b[24;80R",  # a cursor position reply, echoed back
    b"\x1b]10;?\x07",  # OSC: foreground colour query, BEL-terminated
    b"\x1b]11;?\x1b\\",  # OSC: background colour query, ST-terminated
    b"\x1bZ",  # DECID
    b"\x1b7",  # DECSC save cursor
    b"\x1b8",  # DECRC restore cursor
    b"\x1b=",  # DECKPAM
    b"\x1b(B",  # designate G0 as ASCII
    b"\x1bc",  # RIS
]


def _feed_in_pieces(data: bytes, cut: int) -> str:
    cleaner = TextCleaner()
    return cleaner.feed(data[:cut]) + cleaner.feed(data[cut:]) + cleaner.flush()


@pytest.mark.parametrize("query", QUERIES,
                         ids=[q.decode("latin-1").encode("unicode_escape").decode()
                              for q in QUERIES])
def test_a_query_split_anywhere_leaves_only_the_text(query: bytes) -> None:
    data = b"fh-1234abcd# " + query + b"output line\r\n" + query + b"end"
    for cut in range(len(data) + 1):
        assert _feed_in_pieces(data, cut) == "fh-1234abcd# output line\nend", cut


def test_every_query_at_once_byte_by_byte() -> None:
    cleaner = TextCleaner()
    data = b"a" + b"".join(QUERIES) + b"b\r\n"
    text = "".join(cleaner.feed(data[i:i + 1]) for i in range(len(data))) + cleaner.flush()
    assert text == "ab\n"


def test_a_prompt_followed_by_the_cursor_query_is_still_the_prompt() -> None:
    """What the console's prompt matching sees: the line after the filters ends with the prompt
    itself."""
    cleaner, noise = TextCleaner(), KernelNoiseFilter()
    lines = noise.feed(cleaner.feed(b"x\r\nroot@corstone1000-fvp:~# \x1b[6n"))
    assert lines == ["x\n"] and noise.pending == "root@corstone1000-fvp:~# "
