"""Simulator knobs: settings that a real model does not have (pace, release, noise, injected
faults).

From ``FVP_SIM_<NAME>`` (how the harness passes a scenario's ``fvp.sim``) and ``--sim name=value``
(which win); names are case-insensitive, and names this table does not know reach the workloads
untouched (``fault_*`` names must be known). Each knob and its default: docs/simulator.md, "Knobs"
and "Fault knobs".
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["BOOT_STAGES", "PLATFORM_KNOBS", "KnobError", "Knobs", "parse_knobs"]

PREFIX = "FVP_SIM_"

BOOT_STAGES = ("tfm", "tfa", "optee", "uboot", "kernel", "init", "login")
"""Boot stages in order, the names ``fault_boot_hang`` accepts."""

PLATFORM_KNOBS = frozenset({
    "boot_seconds", "boot_sim_seconds", "speed", "idle_ratio", "release", "ssh_fragment", "tclibc",
    "kernel_noise_rate", "uart_rate", "backlog_bytes",
    "line_max", "first_boot", "seed", "fault_boot_hang", "fault_panic", "fault_console_drop",
    "fault_crash",
    "fault_slow_console", "fault_garbage", "fault_refuse_ssh", "fault_busy_ports",
    "fault_count_matching",
})
"""The knobs of the platforms (the emulated runners read more: ``knob_check.KNOWN_KNOBS``)."""


_RELEASE_ALIASES = {"corstone1000-a320-fvp": "next", "newer": "next", "master": "next",
                    "corstone1000-fvp": "2025.12"}
"""Older spellings of the ``release`` knob (the hostnames it used to be told by)."""


class KnobError(ValueError):
    """A knob with a bad value, or an unknown ``fault_*`` knob."""


def _bool(name: str, text: str) -> bool:
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off", ""):
        return False
    raise KnobError(f"knob {name}: {text!r} is not a boolean (true/false)")


def _float(name: str, text: str, low: float = 0.0, high: float | None = None) -> float:
    try:
        value = float(text)
    except ValueError:
        raise KnobError(f"knob {name}: {text!r} is not a number") from None
    if value < low or (high is not None and value > high):
        raise KnobError(f"knob {name}: {value} is out of range")
    return value


def _int(name: str, text: str, low: int = 0) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise KnobError(f"knob {name}: {text!r} is not an integer") from None
    if value < low:
        raise KnobError(f"knob {name}: {value} must be at least {low}")
    return value


def _boot_or_n(name: str, text: str) -> int | None:
    """``boot`` -> 0 (during boot), N -> N (at the Nth console command), empty -> None (off)."""
    if text.strip() == "":
        return None
    if text.strip().lower() == "boot":
        return 0
    return _int(name, text, 1)


@dataclass
class Knobs:
    """The parsed knobs. ``raw`` keeps every knob as given (lower-case names), for
    ``GuestContext.knobs``."""

    raw: dict[str, str] = field(default_factory=dict)
    boot_seconds: float = 1.5
    boot_sim_seconds: float = 4.0
    speed: float = 0.0
    idle_ratio: float = 1.0
    release: str = "2025.12"
    ssh_fragment: bool = False
    tclibc: str = ""
    kernel_noise_rate: float = 0.0
    uart_rate: float = 0.0
    backlog_bytes: int = 1 << 20
    line_max: int = 4096
    first_boot: bool = False
    seed: int = 0
    fault_boot_hang: str | None = None
    fault_panic: int | None = None
    fault_console_drop: int | None = None
    fault_crash: int | None = None
    fault_count_matching: str | None = None
    fault_slow_console: float = 0.0
    fault_garbage: float = 0.0
    fault_refuse_ssh: bool = False
    fault_busy_ports: int = 0


def parse_knobs(environ: Mapping[str, str] | None = None, options: Iterable[str] = ()) -> Knobs:
    """Collect knobs from ``FVP_SIM_*`` variables and ``--sim name=value`` options (options win) and
    check them."""
    env = os.environ if environ is None else environ
    raw: dict[str, str] = {}
    for key, value in env.items():
        if key.startswith(PREFIX) and len(key) > len(PREFIX):
            raw[key[len(PREFIX):].lower()] = value
    for option in options:
        name, sep, value = option.partition("=")
        if not sep or not name.strip():
            raise KnobError(f"--sim {option!r}: expected NAME=VALUE")
        raw[name.strip().lower()] = value
    for name in raw:
        if name.startswith("fault_") and name not in PLATFORM_KNOBS:
            known = ", ".join(sorted(k for k in PLATFORM_KNOBS if k.startswith("fault_")))
            raise KnobError(f"unknown fault knob {name!r} (known: {known})")

    k = Knobs(raw=raw)
    get = raw.get
    if "boot_seconds" in raw:
        k.boot_seconds = _float("boot_seconds", raw["boot_seconds"])
    if "boot_sim_seconds" in raw:
        k.boot_sim_seconds = _float("boot_sim_seconds", raw["boot_sim_seconds"], 0.01)
    if "speed" in raw:
        k.speed = _float("speed", raw["speed"])
    if "idle_ratio" in raw:
        k.idle_ratio = _float("idle_ratio", raw["idle_ratio"])
    if "release" in raw:
        release = raw["release"].strip().lower()
        k.release = _RELEASE_ALIASES.get(release, release)
    if get("tclibc", "").strip():
        k.tclibc = raw["tclibc"].strip().lower()
    if "ssh_fragment" in raw:
        k.ssh_fragment = _bool("ssh_fragment", raw["ssh_fragment"])
    if "uart_rate" in raw:
        k.uart_rate = _float("uart_rate", raw["uart_rate"])
    if "kernel_noise_rate" in raw:
        k.kernel_noise_rate = _float("kernel_noise_rate", raw["kernel_noise_rate"])
    if "backlog_bytes" in raw:
        k.backlog_bytes = _int("backlog_bytes", raw["backlog_bytes"], 1024)
    if "line_max" in raw:
        k.line_max = _int("line_max", raw["line_max"], 16)
    if "first_boot" in raw:
        k.first_boot = _bool("first_boot", raw["first_boot"])
    if get("seed", "").strip():
        k.seed = _int("seed", raw["seed"])
    else:
        k.seed = random.SystemRandom().randrange(1 << 31)
    hang = get("fault_boot_hang", "").strip().lower()
    if hang:
        if hang not in BOOT_STAGES:
            raise KnobError(f"knob fault_boot_hang: {hang!r} is not a stage "
                            f"({', '.join(BOOT_STAGES)})")
        k.fault_boot_hang = hang
    k.fault_panic = _boot_or_n("fault_panic", get("fault_panic", ""))
    k.fault_crash = _boot_or_n("fault_crash", get("fault_crash", ""))
    if get("fault_console_drop", "").strip():
        k.fault_console_drop = _int("fault_console_drop", raw["fault_console_drop"], 1)
    if get("fault_count_matching", ""):
        k.fault_count_matching = raw["fault_count_matching"]
    if "fault_slow_console" in raw:
        k.fault_slow_console = _float("fault_slow_console", raw["fault_slow_console"])
    if "fault_garbage" in raw:
        k.fault_garbage = _float("fault_garbage", raw["fault_garbage"], 0.0, 1.0)
    if "fault_refuse_ssh" in raw:
        k.fault_refuse_ssh = _bool("fault_refuse_ssh", raw["fault_refuse_ssh"])
    if "fault_busy_ports" in raw:
        k.fault_busy_ports = _int("fault_busy_ports", raw["fault_busy_ports"])
    return k
