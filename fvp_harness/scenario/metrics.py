"""The metric names a scenario may use without a regex, and the rules every custom metric regex must
follow.

They belong to the scenario language: ``validate`` checks a scenario's ``metrics:`` against them
before anything runs, and the JSON schema offers them to editors. ``run.scrape`` implements one
parser per name (it asserts that its parsers and this catalogue list the same names).

Custom metric regexes come from the user and run over console text the user does not control, so
they run on RE2 (``google-re2``), a linear-time engine: no pattern can backtrack catastrophically
(``(a+)+$`` against a line of ``a``s takes microseconds, not forever). The price is RE2's syntax: no
backreferences (``\\1``, ``(?P=name)``), no lookarounds (``(?=``, ``(?!``, ``(?<=``, ``(?<!``), no
atomic groups or possessive quantifiers, ``\\z`` instead of ``\\Z``, and ``\\d``, ``\\w``, ``\\s``
match ASCII only. ``compile_metric_regex`` is the one way a metric regex is compiled (validation and
scraping alike); the built-in parsers in ``run.scrape`` are the harness's own and stay on Python's
``re``.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Iterator
from typing import Any, Literal, Protocol

try:
    import re2  # type: ignore[import-untyped]
except ImportError as exc:  # pragma: no cover - a dependency; say which package provides the module
    raise ImportError("fvp-harness runs scenario metric regexes on RE2: install the google-re2 "
                      "package (pip install google-re2)") from exc

__all__ = [
    "BUILTIN_METRICS",
    "COUNTER_LIMIT",
    "HARNESS_METRICS",
    "MAX_SECONDS_PER_INFERENCE",
    "MAX_SECONDS_PER_RUN",
    "MEMORY_METRICS",
    "MetricMatch",
    "MetricPattern",
    "check_sample",
    "compile_metric_regex",
    "plausible_range",
    "validate_regex",
]

BUILTIN_METRICS: dict[str, str] = {
    "cpu_time": ("EthosUBackend::execute() CPU time per inference, ms (documented default shape; "
                 "ms or us accepted)"),
    "npu_cycles": "Ethos-U Linux delegate cycle counter per inference, cycles",
    "iteration_time": "executor_runner 'Iteration i of n: X ms' per inference, ms",
    "run_time": "executor_runner 'Model executed successfully N time(s) in X ms' per run, ms",
    "load_time": "executor_runner 'Model loaded in X ms' per run, ms",
    "bm_npu_cycles": "bare-metal perf block 'ethosu_pmu_cycle_cntr' (NPU cycles), per-inference "
                     "figure, once per run",
    "bm_execute_cycles": "bare-metal perf block 'ethos-u : cycle_cnt' (CPU cycles inside "
                         "EthosUBackend::execute), "
    "per-inference figure, once per run",
    "bm_cpu_cycles": "bare-metal perf block 'Inference runtime' (CPU cycles of the inference "
                     "loop), per-inference "
    "figure, once per run",
    "mlia_npu_active": "MLIA <metrics> block 'NPU ACTIVE' cycles per run",
    # memory, bytes, once per run: the bare-metal runner's log_mem_status lines
    # (arm_executor_runner.cpp)
    "method_allocator_used": "bare-metal 'method_allocator_used: U / P' U, bytes per run",
    "method_allocator_pool": "bare-metal 'method_allocator_used: U / P' P (the pool's size), "
    "bytes per run",
    "method_allocator_planned": "bare-metal 'method_allocator_planned: N bytes', bytes per run",
    "method_allocator_loaded": "bare-metal 'method_allocator_loaded: N bytes', bytes per run",
    "method_allocator_input": "bare-metal 'method_allocator_input: N bytes', bytes per run",
    "method_allocator_executor": "bare-metal 'method_allocator_executor: N bytes', bytes per run",
    "temp_allocator": "bare-metal 'temp_allocator: N' (the temp pool's size), bytes per run",
    "pte_program_size": "bare-metal 'model_pte_program_size: N bytes.', bytes per run",
    "pte_loaded_size": "bare-metal 'model_pte_loaded_size: N bytes.', bytes per run",
    "etdump_buffer_used": "bare-metal 'ETDump_outputs_buffer: U / P' U, bytes per run",
    "planned_memory": "the runner's 'Setting up ... planned buffer ..., size N.' lines summed "
    "(Linux and bare metal), bytes per run",
    "peak_rss": "the runner's peak resident set: wait4's ru_maxrss, which the guest's `time -f %M` "
    "prints (the unit's line runs the command under it), bytes per run",
    # flash, bytes, once per run: computed on the host from the artifacts the unit ran
    # (HARNESS_METRICS)
    "runner_text": "the runner ELF's executable sections (SHF_EXECINSTR, allocated), bytes",
    "runner_rodata": "the runner ELF's read-only data (allocated, not writable, not executable), "
    "bytes",
    "runner_data": "the runner ELF's initialised writable data (allocated, writable, with "
    "contents), bytes",
    "runner_bss": "the runner ELF's zero-initialised sections (SHT_NOBITS, allocated), bytes",
    "runner_flash": "runner_text + runner_rodata + runner_data (what the image stores), bytes",
    "model_bytes": "the model file's size, bytes",
    "program_planned": "the planned buffers a real .pte declares for its forward method, summed "
    "(MethodMeta's memory plan, read on the host), bytes",
}
"""Built-in metric name -> what it reads and in which unit (``docs/results-format.md`` has the line
shapes)."""

HARNESS_METRICS: frozenset[str] = frozenset(
    {"runner_text", "runner_rodata", "runner_data", "runner_bss", "runner_flash", "model_bytes",
     "peak_rss", "program_planned"})
"""Built-in metrics the harness measures itself, not scraped from the runner's text: flash from the
unit's runner and model files on the host (``run.memory``), ``peak_rss`` from the guest's ``time``
around the runner (``run.framed``); one value per record."""

MEMORY_METRICS: frozenset[str] = frozenset(
    name for name, what in BUILTIN_METRICS.items() if what.endswith(("bytes per run", "bytes")))
"""The built-in metrics in bytes: sizes, compared exactly when every run measured the same
(``report.changes``, ``report.primary``)."""


class MetricMatch(Protocol):
    """What scraping uses of one match (RE2's match objects, like ``re.Match``, positions in
    characters)."""

    def group(self, index: int = 0, /) -> Any: ...
    def end(self, index: int = 0, /) -> int: ...


class MetricPattern(Protocol):
    """A compiled metric regex (an RE2 pattern)."""

    @property
    def groups(self) -> int: ...
    def finditer(self, text: str | bytes) -> Iterator[MetricMatch]: ...


_OPTIONS = re2.Options()
# RE2 would print every rejected pattern to stderr; the reason is in the exception
_OPTIONS.log_errors = False

_UNSUPPORTED = (
    (("(?=", "(?!", "(?<=", "(?<!"), "lookarounds ((?=, (?!, (?<=, (?<!) are not supported"),
    (("(?P=", "\\1", "\\2", "\\3", "\\4", "\\5", "\\6", "\\7", "\\8", "\\9", "\\g<", "\\k<"),
     "backreferences (\\1, (?P=name)) are not supported"),
    (("(?>",), "atomic groups (?>...) are not supported"),
    (("++", "*+", "?+", "}+"), "possessive quantifiers (a++, a*+) are not supported"),
    (("(?(",), "conditional groups (?(1)...) are not supported"),
    (("\\Z",),
     "\\Z is not supported (write \\z for the end of the text, or $ for the end of a line)"),
)


def _why(regex: str, exc: Exception) -> str:
    detail = exc.args[0] if exc.args else exc
    text = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)
    # the prefix compile_metric_regex adds is not the user's
    text = text.replace("(?m)" + regex, regex)
    for needles, reason in _UNSUPPORTED:
        if any(needle in regex for needle in needles):
            return (f"invalid regex {regex!r}: {reason}; metric regexes run on RE2, a linear-time "
                    f"engine that cannot hang on any output (RE2 says: {text})")
    return f"invalid regex {regex!r}: {text} (metric regexes use RE2 syntax)"


@functools.lru_cache(maxsize=256)
def compile_metric_regex(regex: str) -> MetricPattern:
    """A metric regex compiled on RE2 with ``^`` and ``$`` at line ends (what Python's
    ``re.MULTILINE`` does). Raises ``ValueError`` saying why a pattern is refused (RE2 syntax error,
    backreference, lookaround, ...)."""
    try:
        return re2.compile("(?m)" + regex, _OPTIONS)
    except re2.error as exc:
        raise ValueError(_why(regex, exc)) from None


def validate_regex(regex: str) -> str | None:
    """The problem with a scenario metric regex (does not compile on RE2, not exactly one group), or
    None if fine."""
    try:
        compiled = compile_metric_regex(regex)
    except ValueError as exc:
        return str(exc)
    if compiled.groups != 1:
        return (f"the regex has {compiled.groups} groups; expected exactly one, capturing the "
                "number (use (?:...) for other groups)")
    return None


# --- what a sample may be -------------------------------------------------------------------------
# One rule for scraping (a printed value is refused) and analysis (a stored value of an older
# version is left out).

MAX_SECONDS_PER_INFERENCE = 3600.0
"""A time per inference beyond an hour is garbage (no unit runs that long: the default unit timeout
is 600 s)."""

MAX_SECONDS_PER_RUN = 86400.0
"""A time per run (``run_time``, ``load_time``, ``per: run`` metrics in a time unit) beyond a day is
garbage."""

COUNTER_LIMIT = 2**63
"""Counters (cycles and other counts) are non-negative and below 2**63: larger ones are a 64-bit
value printed with ``%d`` or a wrapped subtraction."""

_SECONDS_PER = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0,
                "secs": 1.0, "second": 1.0, "seconds": 1.0, "min": 60.0, "minutes": 60.0}
_COUNTER_WORDS = ("cycle", "count", "instruction", "event", "byte", "inference")


def plausible_range(unit: str, per: Literal["inference", "run"]) -> tuple[float, float]:
    """The closed range of plausible values in ``unit`` (finite bounds: infinities and NaN fall
    outside)."""
    seconds = _SECONDS_PER.get(unit.strip().lower())
    if seconds is not None:
        limit = MAX_SECONDS_PER_INFERENCE if per == "inference" else MAX_SECONDS_PER_RUN
        return 0.0, limit / seconds
    if any(word in unit.lower() for word in _COUNTER_WORDS):
        return 0.0, math.nextafter(float(COUNTER_LIMIT), 0.0)
    return -sys.float_info.max, sys.float_info.max


def check_sample(value: float, unit: str, per: Literal["inference", "run"]) -> str | None:
    """Why a sample (already scaled, in ``unit``) cannot be a measurement, or None when it is
    plausible.

    Every unit: a finite number. Times (``ns``, ``us``, ``ms``, ``s``, ``min``): not negative, at
    most ``MAX_SECONDS_PER_INFERENCE`` per inference (``MAX_SECONDS_PER_RUN`` per run). Counters (a
    unit naming cycles, counts, instructions, events, bytes): not negative, below ``COUNTER_LIMIT``.
    Other units (or none): any finite value (a custom metric may be a difference, which can be
    negative)."""
    if not math.isfinite(value):
        return "not a finite number"
    key = unit.strip().lower()
    seconds = _SECONDS_PER.get(key)
    if seconds is not None:
        if value < 0:
            return "negative time"
        limit = MAX_SECONDS_PER_INFERENCE if per == "inference" else MAX_SECONDS_PER_RUN
        if value * seconds > limit:
            return f"implausible time ({value:g} {unit} is more than {limit / 3600:g} h per {per})"
        return None
    if any(word in key for word in _COUNTER_WORDS):
        if value < 0:
            return "negative counter"
        if value >= COUNTER_LIMIT:
            return ("counter out of range (>= 2**63: a 64-bit value printed with %d, or a wrapped "
                    "subtraction)")
    return None
