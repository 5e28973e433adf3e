"""The simulated machine's shared state: what the shells, the boot, the sshd and guest programs all
see.

One ``Machine`` per model instance. It holds the guest filesystem, the simulated clock, the model
parameters and knobs, the kernel's log, and the two ways out (a polite stop and a crash). The event
loop and the shell threads use it concurrently, so everything that changes is guarded or atomic.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from fvp_harness.sim.clock import SimClock
from fvp_harness.sim.corstone1000.boot import kernel_line
from fvp_harness.sim.corstone1000.releases import Release, image_of
from fvp_harness.sim.guest.fs import GuestFS
from fvp_harness.sim.knobs import Knobs

__all__ = ["Machine"]


@dataclass
class Machine:
    """Shared state of one simulated model instance (satisfies ``guest.session.GuestMachine``)."""

    fs: GuestFS
    clock: SimClock
    params: dict[str, str]
    knobs: Knobs
    console_write: Callable[[bytes], None] = lambda data: None
    console_inject: Callable[[bytes], None] = lambda data: None
    request_stop: Callable[[str], None] = lambda reason: None
    crash: Callable[[], None] = lambda: None
    drop_console: Callable[[], None] = lambda: None
    stopping: threading.Event = field(default_factory=threading.Event)
    kernel_log: list[str] = field(default_factory=list)
    console_loglevel: int = 7
    kernel_t0: float = 0.0
    # after a kernel panic: nothing responds
    halted: threading.Event = field(default_factory=threading.Event)
    # login prompt reached; sshd answers
    booted: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def release(self) -> Release:
        """The image that booted (the release knob's row of ``releases.py``)."""
        return image_of(self.knobs)

    @property
    def hostname(self) -> str:
        """The guest's hostname (the release's)."""
        return self.release.hostname

    @property
    def npu_macs(self) -> int:
        """``host.ethosu.num_macs``."""
        return int(self.params.get("host.ethosu.num_macs", "256"))

    def kernel_time(self) -> float:
        """Seconds since the kernel started, as printk timestamps show them."""
        return max(0.0, self.clock.now() - self.kernel_t0)

    def printk(self, message: str, level: int = 4, inject: bool = False) -> None:
        """Log a kernel message and, if its level is below the console loglevel (``dmesg -n``), show
        it on the console: appended to the output stream, or with ``inject`` at a random point of it
        (mid-line)."""
        line = kernel_line(self.kernel_time(), message)
        with self._lock:
            self.kernel_log.append(line)
            del self.kernel_log[:-2000]
            show = level < self.console_loglevel
        if show:
            data = (line + "\r\n").encode()
            (self.console_inject if inject else self.console_write)(data)

    def read_kernel_log(self, clear: bool = False) -> list[str]:
        """The kernel log's lines (``dmesg``); ``clear`` empties it (``dmesg -c``)."""
        with self._lock:
            lines = list(self.kernel_log)
            if clear:
                self.kernel_log.clear()
        return lines

    def uname(self) -> dict[str, str]:
        """``uname`` fields."""
        return {
            "s": "Linux",
            "n": self.hostname,
            "r": self.release.linux,
            "v": self.release.linux_build,
            "m": "aarch64",
            "o": "GNU/Linux",
        }
