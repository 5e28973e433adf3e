"""What a command sees of the shell that runs it (``Session``) and of the machine under the guest
(``GuestMachine``): two protocols.

Why protocols: the shell (``shell.py``) calls the builtins, the applets and the guest context, so
they cannot import it back; they are typed against ``Session``, which ``shell.Shell`` satisfies. The
guest runs on whichever platform composes it: the shell is typed against ``GuestMachine``, which the
Corstone-1000's ``Machine`` satisfies, so the guest never imports a platform.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from fvp_harness.sim.clock import SimClock
from fvp_harness.sim.guest.fs import GuestFS
from fvp_harness.sim.guest.io import IO
from fvp_harness.sim.knobs import Knobs

__all__ = ["SHELL_RSS_KIB", "Builtin", "ChildUsage", "GuestMachine", "Session"]

SHELL_RSS_KIB = 5184
"""The peak resident set of a busybox process that runs a small command and exits (``sh -c``, an
applet a command forks), KiB: what ``time -f %M sh -c 'true; exit $?'`` prints on the QEMU guest's
busybox 1.35 (static, arm64; 5184 and 5200 KiB in two boots; tests/qemu/test_memory.py checks it
stays within 25 %)."""


@dataclass
class ChildUsage:
    """What ``wait4`` tells a process of the children it reaped: the largest peak resident set among
    them and their own reaped children (``ru_maxrss``, KiB). A shell keeps one; ``time`` one per
    command it runs."""

    maxrss_kib: int = 0

    def reaped(self, kib: int) -> None:
        """A child ended whose peak (with its own children's) was ``kib``."""
        self.maxrss_kib = max(self.maxrss_kib, kib)



class GuestMachine(Protocol):
    """The machine state the guest shares with its platform: files, clock, parameters, kernel log,
    stop."""

    console_loglevel: int  # ``dmesg -n``: kernel messages below it reach the console

    @property
    def fs(self) -> GuestFS: ...

    @property
    def clock(self) -> SimClock: ...

    @property
    def params(self) -> Mapping[str, str]:
        """Every -C parameter of the model, as given."""

    @property
    def knobs(self) -> Knobs: ...

    @property
    def hostname(self) -> str: ...

    @property
    def npu_macs(self) -> int: ...

    @property
    def stopping(self) -> threading.Event:
        """Set when the model is stopping."""

    @property
    def halted(self) -> threading.Event:
        """Set after a kernel panic: nothing responds."""

    @property
    def console_write(self) -> Callable[[bytes], None]:
        """Write to the serial console (``poweroff``'s last lines)."""

    @property
    def request_stop(self) -> Callable[[str], None]:
        """Stop the model for a reason (``poweroff``)."""

    def printk(self, message: str, level: int = 4, inject: bool = False) -> None: ...

    def uname(self) -> dict[str, str]: ...

    def read_kernel_log(self, clear: bool = False) -> list[str]:
        """The kernel log's lines (``dmesg``); ``clear`` empties it (``dmesg -c``)."""


class Session(Protocol):
    """One shell session as its commands see it: cwd, variables, options, ``$?``, and how to run
    more."""

    OPTIONS: str
    # $0, and how the shell names itself in its messages: ``-sh`` for a login shell, as ash does
    argv0: str
    cwd: str
    status: int
    args: list[str]
    vars: dict[str, str]
    exported: set[str]
    options: set[str]
    children: ChildUsage  # the processes this shell waited for (a ``time`` applet swaps in its own)

    @property
    def machine(self) -> GuestMachine: ...

    @property
    def fs(self) -> GuestFS: ...

    @property
    def interrupted(self) -> Callable[[], bool]:
        """True after Ctrl-C on the console or when the ssh channel closed."""

    def subshell(self) -> Session: ...

    def environment(self) -> dict[str, str]: ...

    def find_command(self, name: str,
                     env: dict[str, str] | None = None) -> Builtin | str | None: ...

    def execute(self, argv: list[str], env: dict[str, str], io: IO) -> int: ...

    def source(self, text: str, io: IO) -> int: ...

    def run_script(self, text: bytes, argv: list[str], env: dict[str, str], io: IO) -> int:
        """Run ``text`` in a new shell (``argv[0]`` is its ``$0``, the rest ``$1``...; ``env`` its
        variables): a script file, or ``sh -c``."""


Builtin = Callable[[Session, list[str], IO], int]
"""A builtin or applet: ``f(session, argv, io) -> exit status``."""
