"""The guest's everyday busybox applets: head, tail, grep, wc, sort, uniq, tr, tee, xargs, seq,
sleep, env, basename, dirname, touch, hostname, whoami, sh, id, cut, expr, time.

Each is ``f(shell, argv, io) -> exit status`` like the builtins (``guest/builtins.py`` merges
``APPLETS`` into ``BUILTINS``) and follows busybox 1.36: its options, its output format, its
messages and exit statuses. Input is read as it arrives (``guest/io.py``'s ``read_lines``), so
``head -n 1`` ends a pipeline's writer as soon as it has its line. Everything works on bytes, as the
real tools do in the C locale.

One module per kind: ``common.py`` (options, usage texts, input), ``text.py``, ``grep.py``,
``commands.py``, ``system.py``, ``gzip.py``, ``timing.py``.
"""

from __future__ import annotations

from fvp_harness.sim.guest.applets import commands, grep, system, text, timing
from fvp_harness.sim.guest.applets.grep import posix_regex
from fvp_harness.sim.guest.session import Builtin

__all__ = ["APPLETS", "posix_regex"]

_ALL: dict[str, Builtin] = {**text.APPLETS, **grep.APPLETS, **commands.APPLETS, **system.APPLETS,
                            **timing.APPLETS}
APPLETS: dict[str, Builtin] = {name: _ALL[name] for name in (
    "head",
    "tail",
    "grep",
    "wc",
    "sort",
    "uniq",
    "tr",
    "tee",
    "xargs",
    "env",
    "seq",
    "sleep",
    "basename",
    "dirname",
    "touch",
    "hostname",
    "whoami",
    "df",
    "sh",
    "id",
    "cut",
    "expr",
    "time",
)}
"""The busybox applets the simulated guest has beyond the builtins, by name."""
