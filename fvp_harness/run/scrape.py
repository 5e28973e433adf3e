"""Metric parsers: pure functions from console text to numbers.

Why it is shaped so: docs/architecture.md, "Inside `run/`"."""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from fvp_harness.scenario.metrics import (
    BUILTIN_METRICS,
    HARNESS_METRICS,
    MetricPattern,
    check_sample,
    compile_metric_regex,
    plausible_range,
    validate_regex,
)

__all__ = [
    "ETDUMP_FILES",
    "LOG_MESSAGE_LIMIT",
    "PARSERS_VERSION",
    "PER_CALL_METRICS",
    "SUMMED_METRICS",
    "LogLine",
    "MetricLike",
    "ScrapeResult",
    "clean_console_text",
    "find_build_id",
    "find_errors",
    "find_etdump",
    "parse_log_line",
    "prepare_text",
    "printed_outputs",
    "repair_kernel_interleaving",
    "scrape",
]

PARSERS_VERSION = 4
"""Bump when any built-in parser's behaviour changes: every unit's content key changes with it. 2:
bare-metal metrics read the right lines once per run (``bm_npu_cycles`` from the NPU PMU),
``bm_execute_cycles`` added. 3: a bare-metal total must equal its per-inference figure times the
block's ``NPU Inferences`` (old ``%d`` builds printed the low 32 bits of a 64-bit counter: negative,
or wrapped and too small). 4: ``npu_cycles`` and ``cpu_time`` lines are grouped per inference (one
per delegate call: a partly delegated model prints several) and summed; a bare-metal ``nan``/``inf``
per-inference figure, a block after zero inferences, or a total without a per-inference figure gives
no sample (it used to fall back to the run total)."""

LOG_MESSAGE_LIMIT = 255
"""ExecuTorch formats a log message into a 256-byte buffer: a message of this length may have been
cut."""

Per = Literal["inference", "run"]


class MetricLike(Protocol):
    """What ``scrape`` needs of a metric; ``scenario.MetricSpec`` satisfies it (kept structural so
    this module imports nothing of the harness)."""

    @property
    def name(self) -> str: ...
    @property
    def regex(self) -> str | None: ...
    @property
    def unit(self) -> str: ...
    @property
    def scale(self) -> float: ...
    @property
    def per(self) -> Per: ...
    @property
    def required(self) -> bool: ...


@dataclass
class ScrapeResult:
    """What one unit's console text yielded.

    ``samples`` holds every value in the order printed (per-inference metrics one value per
    execution, so the caller drops warmup values from the front; per-run metrics normally one
    value). ``per`` says which is which. ``missing`` names required metrics with no value;
    ``flagged`` keeps raw text of values rejected as garbage (negative or inconsistent counters of
    old builds, values cut by the 255-character limit); ``warnings`` explains each rejection and
    each repair so a report can show it.
    """

    samples: dict[str, list[float]] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    per: dict[str, Per] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    flagged: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    executions: int | None = None
    """N from the last ``Model executed successfully N time(s)`` line (whatever ``specs`` asked
    for), so execute can check that warmup + iterations really ran."""
    calls: dict[str, list[list[float]]] = field(default_factory=dict)
    """Per-call metric (``PER_CALL_METRICS``) -> for each kept sample, in the same order, the value
    of each delegate call of that inference (the partitions, in call order); only metrics some
    inference printed more than once."""
    rejected_at: dict[str, list[int]] = field(default_factory=dict)
    """Metric -> the positions (0-based, in the order printed, counting rejected ones) of the
    samples that were rejected, so the caller drops exactly the warmup executions from the front of
    ``samples``."""

    reasons: dict[str, list[str]] = field(default_factory=dict)
    """Metric -> why each of its flagged values was rejected, in order (``warnings`` has them with
    the raw text)."""

    def _flag(self, metric: str, raw: str, why: str) -> None:
        self.flagged.setdefault(metric, []).append(raw)
        self.reasons.setdefault(metric, []).append(why)
        self.warnings.append(f"{metric}: rejected {raw!r}: {why}")

    @property
    def rejected(self) -> dict[str, int]:
        """Metric -> how many of its samples were rejected (metrics with none left out)."""
        return {name: len(positions) for name, positions in self.rejected_at.items() if positions}

    def printed(self, metric: str) -> int:
        """How many samples of ``metric`` the output held, valid or rejected."""
        return len(self.samples.get(metric, [])) + len(self.rejected_at.get(metric, []))


# --- cleaning -------------------------------------------------------------------------------------

# What may follow an ESC byte: OSC ... BEL (titles, links; ST is handled by splitting at its ESC),
# CSI (colours, cursor moves, erase), DCS/SOS/PM/APC strings, two-byte escapes and charset selection
# (ESC ( B).
_AFTER_ESC = re.compile(
    r"""
    \][^\x07\x1b]*\x07?
    | \[[0-?]*[ -/]*[@-~]
    | [PX^_][^\x1b]*
    | [ -/]*[0-~]
    """,
    re.VERBOSE,
)
_CSI_8BIT = re.compile(r"\x9b[0-?]*[ -/]*[@-~]")
_CONTROL_CHARS = dict.fromkeys([*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)])


def _strip_escapes(text: str) -> str:
    """Remove escape sequences. Splitting at ESC and matching only the start of each piece is
    several times faster than a regex scanning the whole text (escapes are rare, text is long)."""
    if "\x1b" in text:
        pieces = text.split("\x1b")
        out = [pieces[0]]
        for piece in pieces[1:]:
            m = _AFTER_ESC.match(piece)
            out.append(piece[m.end() :] if m is not None else piece)
        text = "".join(out)
    if "\x9b" in text:
        text = _CSI_8BIT.sub("", text)
    return text


def clean_console_text(raw: str) -> str:
    """CRLF and lone CR become LF; ANSI CSI/OSC/escape sequences and other control bytes (EOT, NUL,
    BEL, ...) go, keeping ``\\n`` and ``\\t``. Idempotent, so cleaning text a target already cleaned
    is harmless."""
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    return _strip_escapes(text).translate(_CONTROL_CHARS)


# A kernel printk line on the console: "[   12.345678] message", optionally with a caller id "[
# T1]".
_KERNEL_STAMP = r"\[\s*\d+\.\d{6}\](?:\[\s*[TC]\d+\])?"
# A stamp that starts mid-line (the literal "[" first, then the look-behind, so the engine scans
# fast), its message up to the line end, and any whole kernel lines right after it (one burst).
_MIDLINE_KERNEL = re.compile(
    r"\[(?<=[^\n]\[)\s*\d+\.\d{6}\](?:\[\s*[TC]\d+\])? "
    rf"[^\n]*(?:\n|\Z)(?:{_KERNEL_STAMP}[^\n]*(?:\n|\Z))*"
)


def repair_kernel_interleaving(text: str) -> tuple[str, int]:
    """Undo kernel messages that cut a runner line in two; return the text and how many repairs were
    made.

    The console is shared: when the kernel prints while the runner is half-way through a line, the
    screen shows ``...Ethos-U Linux del[   12.345678] random: crng init done`` then ``egate cycle
    counter: 85092`` on the next line. Strategy: a kernel stamp ``[ ddd.dddddd] `` that starts
    *mid-line* (after other characters) marks a fragment that runs to the end of that line; the
    fragment, its line break and any whole kernel lines right after it (a burst) are removed, which
    joins the runner's prefix with its continuation. Several fragments in one runner line are all
    removed. The fragments are noise to every parser; the unit's log file keeps them. Kernel lines
    that start a line are left alone (no parser matches them). Not repaired: a kernel line that
    starts at a line start while the runner line above it was unfinished (nothing in the text tells
    that apart from two complete lines).
    """
    if "] " not in text:
        return text, 0
    return _MIDLINE_KERNEL.subn("", text)


def prepare_text(raw: str) -> tuple[str, list[str]]:
    """``clean_console_text`` then ``repair_kernel_interleaving``; returns the text and repair
    warnings."""
    text, repairs = repair_kernel_interleaving(clean_console_text(raw))
    warnings = [f"rejoined {repairs} runner line(s) cut by kernel messages"] if repairs else []
    return text, warnings


# --- ExecuTorch log lines -------------------------------------------------------------------------


@dataclass(frozen=True)
class LogLine:
    """One ExecuTorch log line: level letter, seconds since start (Linux prefix only), source file
    and line, function (newest bare-metal prefix only), and the message."""

    level: str
    file: str
    line: int
    message: str
    time_s: float | None = None
    function: str | None = None

    @property
    def maybe_cut(self) -> bool:
        """True when the message reached ExecuTorch's length limit, so its end may be missing."""
        return len(self.message) >= LOG_MESSAGE_LIMIT


_LOG_PREFIXES = (
    # Linux: "I 00:00:00.123456 executorch:executor_runner.cpp:791] msg"
    re.compile(
        r"(?P<level>[DIEWFC]) (?P<h>\d+):(?P<m>\d\d):(?P<s>\d\d)\.(?P<us>\d+) "
        r"executorch:(?P<file>[^:\s\]]+):(?P<line>\d+)\] ?(?P<msg>.*)"
    ),
    # bare metal, newer: "I [executorch:arm_executor_runner.cpp:412 main()] msg"; 2024-2025: no
    # function
    re.compile(
        r"(?P<level>[DIEWFC]) \[executorch:(?P<file>[^:\s\]]+):(?P<line>\d+)"
        r"(?: (?P<func>[^\]]*?)\(\))?\] ?(?P<msg>.*)"
    ),
    # bare metal, older: "I executorch:arm_executor_runner.cpp:412] msg"
    re.compile(r"(?P<level>[DIEWFC]) executorch:(?P<file>[^:\s\]]+):(?P<line>\d+)\] ?(?P<msg>.*)"),
)


def parse_log_line(line: str) -> LogLine | None:
    """Parse one (clean) line in any of ExecuTorch's log prefixes; ``None`` for any other line."""
    for pattern in _LOG_PREFIXES:
        m = pattern.match(line)
        if m is None:
            continue
        groups = m.groupdict()
        time_s = None
        if groups.get("h") is not None:
            time_s = int(groups["h"]) * 3600 + int(groups["m"]) * 60 + int(groups["s"]) + int(
                groups["us"]) / 1e6
        return LogLine(
            level=groups["level"],
            file=groups["file"],
            line=int(groups["line"]),
            message=groups["msg"],
            time_s=time_s,
            function=groups.get("func"),
        )
    return None


def _line_at(text: str, pos: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return start, len(text) if end < 0 else end


def _cut_by_limit(text: str, match_end: int) -> bool:
    """Was the value ending at ``match_end`` possibly cut by the 255-character limit?

    True when the match ends exactly where its log line ends and that line's message is at the
    limit.
    """
    start, end = _line_at(text, max(match_end - 1, 0))
    # a cut line is longer than its message
    if match_end != end or end - start <= LOG_MESSAGE_LIMIT:
        return False
    parsed = parse_log_line(text[start:end])
    return parsed is not None and parsed.maybe_cut


# --- built-in parsers -----------------------------------------------------------------------------

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_INT = r"[-+]?\d+"
_PER_INFERENCE = rf"(?:\s*\(({_NUM}|[-+]?nan|[-+]?inf) per inference\))?"
"""The perf block's ``(%.2f per inference)``: a number, or glibc/newlib's ``nan``/``inf`` after zero
inferences."""


@dataclass(frozen=True)
class _Builtin:
    pattern: re.Pattern[str]
    needle: str  # a literal that must occur in the text for the pattern to match (cheap pre-filter)
    unit: str
    per: Per
    convert: Callable[[re.Match[str], ScrapeResult, str], float | None]


def _plain(group: int = 1) -> Callable[[re.Match[str], ScrapeResult, str], float | None]:
    def convert(m: re.Match[str], result: ScrapeResult, metric: str) -> float | None:
        return _to_float(m.group(group), result, metric)

    return convert


def _to_float(raw: str, result: ScrapeResult, metric: str) -> float | None:
    try:
        value = float(raw)  # the common case, fast; float() also accepts "1_000"
    except ValueError:
        try:
            value = float(raw.replace(",", ""))  # "85,092" from a scenario regex
        except ValueError:
            result._flag(metric, raw, "not a number")
            return None
    if not math.isfinite(value):
        result._flag(metric, raw, "not a finite number")
        return None
    return value


def _cpu_time(m: re.Match[str], result: ScrapeResult, metric: str) -> float | None:
    value = _to_float(m.group(1), result, metric)
    if value is None:
        return None
    if value < 0:
        result._flag(metric, m.group(0), "negative time")
        return None
    unit = m.group(2)
    return value / 1000.0 if unit in ("us", "µs", "μs") else value


def _counter(m: re.Match[str], result: ScrapeResult, metric: str) -> float | None:
    """A hardware counter: non-negative, below 2**63; anything else is an old build's %d of a 64-bit
    value."""
    value = _to_float(m.group(1), result, metric)
    if value is None:
        return None
    if value < 0 or value >= 2**63:
        result._flag(metric, m.group(0),
                     "counter out of range (old builds printed 64-bit values with %d)")
        return None
    return value


def _perf_block(m: re.Match[str], result: ScrapeResult, metric: str) -> float | None:
    """Bare-metal perf monitor (``StopMeasurements``, arm_perf_monitor.cpp): the per-inference
    value, checked against the total it was derived from. Upstream prints ``total`` with ``PRIu64``
    and ``(double)total / n`` with ``%.2f``, where ``n`` is the block's ``NPU Inferences : n``;
    builds before upstream #21911 (2026-08) printed the total with ``%d``, i.e. the counter's low 32
    bits as a signed int (the double after it still reads right): such a total is negative, or,
    wrapped, not ``n`` times the per-inference figure. Either is flagged, never kept.

    No sample from a failed measurement: when the first inference fails the runner still calls
    ``StopMeasurements(0)`` (arm_executor_runner.cpp:1344) and C's division prints ``nan`` (0/0) or
    ``inf`` (arm_perf_monitor.cpp:151-222); a block whose ``NPU Inferences`` is 0 measured nothing;
    and a total printed without a per-inference figure is a run total, not a per-inference value
    (unless the block ran exactly one inference). Each is flagged with why, never kept."""
    count_line = _inferences_line(m.string, m.start())
    if count_line == 0:
        result._flag(metric, m.group(0),
                     "the perf block follows zero inferences (StopMeasurements(0), "
                     "arm_executor_runner.cpp:1344): no inference completed, so nothing was "
                     "measured")
        return None
    if m.group(2) is not None and m.group(2).lstrip("+-").lower() in ("nan", "inf"):
        result._flag(metric, m.group(0), f"'{m.group(2)} per inference': no inference completed "
                     "(StopMeasurements(0), arm_executor_runner.cpp:1344), so the block has no "
                     "per-inference figure")
        return None
    if m.group(2) is None and count_line != 1:
        result._flag(metric, m.group(0),
                     "a run total without a per-inference figure is not a per-inference " "sample")
        return None
    total = _to_float(m.group(1), result, metric)
    per_inference = _to_float(m.group(2), result, metric) if m.group(2) is not None else total
    if total is None or per_inference is None:
        return None
    if total < 0 or per_inference < 0 or total >= 2**63:
        result._flag(metric, m.group(0),
                     "negative or out-of-range counter (old builds printed 64-bit values with %d)")
        return None
    if per_inference > total * (1 + 1e-6) + 1:
        result._flag(metric, m.group(0), "per-inference value exceeds the total (garbage counter)")
        return None
    count = _inferences_before(m.string, m.start())
    if m.group(2) is not None and count and abs(total - per_inference * count) > 0.005 * count + 1:
        result._flag(metric, m.group(0),
                     f"the total is not {count} (NPU Inferences) times the per-inference "
                     "figure: a 64-bit counter printed with %d by an old build (wrapped)")
        return None
    return per_inference


def _inferences_before(text: str, position: int) -> int | None:
    """``n`` of the ``NPU Inferences : n`` line that opens the perf block holding ``position``
    (None: none, or 0)."""
    count = _inferences_line(text, position)
    return count if count else None


def _inferences_line(text: str, position: int) -> int | None:
    """``n`` of the ``NPU Inferences : n`` line before ``position``, 0 included (None: no such
    line)."""
    start = text.rfind("NPU Inferences", 0, position)
    if start < 0:
        return None
    found = _NPU_INFERENCES.match(text, start)
    return int(found.group(1)) if found is not None else None


def _mlia(m: re.Match[str], result: ScrapeResult, metric: str) -> float | None:
    payload = re.sub(r"\s+", "", m.group(1))
    try:
        data = json.loads(base64.b64decode(payload, validate=True))
    # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
    except (binascii.Error, ValueError) as exc:
        result._flag(metric, payload[:60],
                     f"undecodable <metrics> block ({exc.__class__.__name__})")
        return None
    groups = data if isinstance(data, list) else [data]
    for group in groups:
        samples = group.get("samples", []) if isinstance(group, dict) else []
        for sample in samples:
            if isinstance(sample, dict) and sample.get("name") == "NPU ACTIVE":
                values = sample.get("value")
                values = values if isinstance(values, list) else [values]
                if (values and isinstance(values[0], (int, float)) and
                    not isinstance(values[0], bool)):
                    return float(values[0])
                result._flag(metric, repr(values)[:60], "NPU ACTIVE value is not a number")
                return None
    result._flag(metric, payload[:60], "no 'NPU ACTIVE' sample in the <metrics> block")
    return None


def _size(group: int = 1) -> Callable[[re.Match[str], ScrapeResult, str], float | None]:
    """A byte count printed with ``%lu`` (log_mem_status, the planned-buffer lines): a
    non-negative integer."""
    def convert(m: re.Match[str], result: ScrapeResult, metric: str) -> float | None:
        value = _to_float(m.group(group), result, metric)
        if value is not None and (value < 0 or value != int(value)):
            result._flag(metric, m.group(0), "a byte count is a non-negative integer")
            return None
        return value

    return convert


def _pool_share(group: int) -> Callable[[re.Match[str], ScrapeResult, str], float | None]:
    """``NAME: U / P free: F ( used: N % )``: U (group 1) or P (group 2), refused when U exceeds P
    or U + F is not P (a line of another allocator's numbers, or garbage)."""
    size = _size(group)

    def convert(m: re.Match[str], result: ScrapeResult, metric: str) -> float | None:
        used, pool = int(m.group(1)), int(m.group(2))
        free = m.group(3)
        if used > pool or (free is not None and used + int(free) != pool):
            result._flag(metric, m.group(0), "used + free is not the pool's size")
            return None
        return size(m, result, metric)

    return convert


def _pte_size(m: re.Match[str], result: ScrapeResult, metric: str) -> float | None:
    """``model_pte_*_size``; an ``ET_MODEL_PTE_ADDR`` build appends ``(pte size unknown when not
    baked into elf)``: its number is not the program's size, so no sample."""
    if m.group(2):
        result._flag(metric, m.group(0), "the runner does not know the program's size "
                     "(ET_MODEL_PTE_ADDR build: 'pte size unknown when not baked into elf')")
        return None
    return _size()(m, result, metric)


def _pool_line(label: str, group: int) -> _Builtin:
    """``<label> %lu / %lu free: %lu ( used: %lu %% )`` of log_mem_status: used (1) or the pool
    (2)."""
    return _Builtin(re.compile(label + _POOL_LINE), label, "bytes", "run", _pool_share(group))


def _bytes_line(label: str) -> _Builtin:
    """``<label> %lu bytes`` of log_mem_status."""
    return _Builtin(re.compile(rf"{label}\s*(\d+)(?: bytes)?"), label, "bytes", "run", _size())


_POOL_LINE = r"\s*(\d+) / (\d+)\s+free:\s*(\d+)"
"""``%lu / %lu free: %lu`` of log_mem_status (``method_allocator_used`` has two spaces before
``free``)."""


BUILTINS: dict[str, _Builtin] = {
    "cpu_time": _Builtin(
        re.compile(rf"EthosUBackend::execute\(\) CPU time:\s*({_NUM})\s*(ms|us|µs|μs)\b"),
        "CPU time:",
        "ms",
        "inference",
        _cpu_time,
    ),
    "npu_cycles": _Builtin(
        re.compile(rf"Ethos-U Linux delegate cycle counter:\s*({_INT})\b"),
        "cycle counter:",
        "cycles",
        "inference",
        _counter,
    ),
    "iteration_time": _Builtin(
        re.compile(rf"Iteration \d+ of \d+:\s*({_NUM})\s*ms\b"), "Iteration ", "ms", "inference",
        _plain()
    ),
    "run_time": _Builtin(
        re.compile(rf"Model executed successfully (\d+) time\(s\) in ({_NUM}) ms"),
        "Model executed successfully",
        "ms",
        "run",
        _plain(2),
    ),
    "load_time": _Builtin(re.compile(rf"Model loaded in ({_NUM}) ms"), "Model loaded in", "ms",
                          "run", _plain()),
    # The bare-metal perf block (arm_perf_monitor.cpp StopMeasurements) is printed once per run,
    # after the inference loop: a total and "(%.2f per inference)". Each metric is one value per
    # run, the per-inference one. NPU cycles: the Ethos-U PMU cycle counter ("% " PRIu64: a space
    # before it)
    "bm_npu_cycles": _Builtin(
        re.compile(rf"ethosu_pmu_cycle_cntr\s*:\s*({_INT}){_PER_INFERENCE}"),
        "ethosu_pmu_cycle_cntr",
        "cycles",
        "run",
        _perf_block,
    ),
    # CPU cycles spent inside EthosUBackend::execute (not NPU cycles)
    "bm_execute_cycles": _Builtin(
        re.compile(rf"ethos-u\s*:\s*cycle_cnt\s*:\s*({_INT})\s*cycles{_PER_INFERENCE}"),
        "cycle_cnt",
        "CPU cycles",
        "run",
        _perf_block,
    ),
    "bm_cpu_cycles": _Builtin(  # CPU cycles of the whole method->execute() loop
        re.compile(rf"Inference runtime:\s*({_INT})\s*CPU cycles total{_PER_INFERENCE}"),
        "Inference runtime:",
        "CPU cycles",
        "run",
        _perf_block,
    ),
    "mlia_npu_active": _Builtin(
        re.compile(r"<metrics>([A-Za-z0-9+/=\s]*?)</metrics>"), "<metrics>", "cycles", "run", _mlia
    ),
    # log_mem_status (arm_executor_runner.cpp:953-1049), printed once after the method loaded; a
    # unit word is optional so a message cut at 255 bytes right after its number is matched, and
    # refused as cut
    "method_allocator_used": _pool_line("method_allocator_used:", 1),
    "method_allocator_pool": _pool_line("method_allocator_used:", 2),
    "method_allocator_planned": _bytes_line("method_allocator_planned:"),
    "method_allocator_loaded": _bytes_line("method_allocator_loaded:"),
    "method_allocator_input": _bytes_line("method_allocator_input:"),
    "method_allocator_executor": _bytes_line("method_allocator_executor:"),
    "temp_allocator": _Builtin(
        re.compile(r"(?<!_)temp_allocator:\s*(\d+)\b"), "temp_allocator:", "bytes", "run", _size()),
    "pte_program_size": _Builtin(
        re.compile(r"model_pte_program_size:\s*(\d+)(?: bytes\.( \(pte size unknown[^\n]*)?)?"),
        "model_pte_program_size:", "bytes", "run", _pte_size),
    "pte_loaded_size": _Builtin(
        re.compile(r"model_pte_loaded_size:\s*(\d+)(?: bytes\.( \(pte size unknown[^\n]*)?)?"),
        "model_pte_loaded_size:", "bytes", "run", _pte_size),
    "etdump_buffer_used": _pool_line("ETDump_outputs_buffer:", 1),
    # one line per planned buffer (executor_runner.cpp:558/578, arm_executor_runner.cpp:740): summed
    # per run
    "planned_memory": _Builtin(
        re.compile(r"Setting up (?:CPU |device )?planned buffer (?:with mem_id=)?\d+, "
                   r"size (\d+)[.,]"),
        "planned buffer", "bytes", "run", _size()),
}
SUMMED_METRICS = frozenset({"planned_memory"})
"""Per-run metrics printed once per item (a program's planned buffers): the run's sample is their
sum."""
# the contract and the implementation agree
assert set(BUILTINS) | HARNESS_METRICS == set(BUILTIN_METRICS)


# --- checking samples -----------------------------------------------------------------------------

@dataclass
class _Samples:
    """One metric's samples while scraping: the valid ones, and the positions of the rejected
    ones."""

    result: ScrapeResult
    metric: str
    unit: str
    per: Per
    values: list[float] = field(default_factory=list)
    rejected: list[int] = field(default_factory=list)

    def reject(self, raw: str, why: str | None = None, position: int = 0) -> None:
        """A printed sample that is not kept (``why`` None: the converter flagged it already;
        ``position`` unused here: ``_CallLines`` takes the same calls)."""
        if why is not None:
            self.result._flag(self.metric, raw, why)
        self.rejected.append(len(self.values) + len(self.rejected))

    def __post_init__(self) -> None:
        self._low, self._high = plausible_range(self.unit, self.per)

    def offer(self, value: float | None, raw: str, position: int = 0) -> None:
        """A printed sample: kept when it converted (None: it did not) and ``check_sample`` finds it
        plausible."""
        if value is None:
            self.reject(raw)
        elif self._low <= value <= self._high:  # the common case, one comparison (NaN fails it)
            self.values.append(value)
        else:
            self.reject(raw, check_sample(value, self.unit, self.per) or "implausible value")


# --- scraping -------------------------------------------------------------------------------------


def scrape(text: str, specs: Sequence[MetricLike], *, prepared: bool = False) -> ScrapeResult:
    """Scrape every metric in ``specs`` from one unit's console text.

    A spec with a ``regex`` uses it (one capture group, multiplied by ``scale``; run on RE2, linear
    time), even when its name is a built-in: that is how a scenario replaces the default CPU-time
    shape. A spec without one must name a built-in. Every sample is checked (``check_sample``, in
    the metric's unit): a rejected one is flagged with a warning and its position kept in
    ``rejected_at``. Raises ``ValueError`` for an unknown built-in name or a bad regex (the scenario
    validator reports these earlier, with file and line). ``prepared=True`` skips cleaning when the
    caller already ran ``prepare_text``.
    """
    if prepared:
        warnings: list[str] = []
    else:
        text, warnings = prepare_text(text)
    result = ScrapeResult(warnings=list(warnings))
    # Only a line longer than the message limit can hold a cut message; most logs have none, and
    # then the per-match check is skipped (it is most of the per-value cost).
    check_cut = max(map(len, text.split("\n")), default=0) > LOG_MESSAGE_LIMIT
    # Output that stops mid-line (the runner died while printing) may have cut the last number
    # short.
    open_end = len(text) if text and not text.endswith("\n") else -1
    # the text as bytes for RE2 when it is ASCII (b"" when not), made once
    ascii_text: bytes | None = None
    executions = _executions(text)
    # where each "Iteration i of n" line starts, found once when needed
    iteration_starts: list[int] | None = None
    for spec in specs:
        if not spec.regex and spec.name in HARNESS_METRICS:
            continue  # measured by the harness (run.memory), not printed
        builtin = None if spec.regex else BUILTINS.get(spec.name)
        if spec.regex:
            problem = validate_regex(spec.regex)
            if problem is not None:
                raise ValueError(f"metric {spec.name}: {problem}")
            pattern: MetricPattern = compile_metric_regex(spec.regex)
            per: Per = spec.per
            unit = spec.unit
        elif builtin is None:
            known = ", ".join(sorted(BUILTINS))
            raise ValueError(f"metric {spec.name!r} has no regex and is not a built-in ({known})")
        else:
            per = builtin.per
            unit = spec.unit or builtin.unit
        kept = _Samples(result, spec.name, unit, per)
        grouped = per == "inference" and spec.name in PER_CALL_METRICS
        sink: _Samples | _CallLines = _CallLines() if grouped else kept
        if spec.regex:
            if ascii_text is None:
                ascii_text = text.encode("ascii") if text.isascii() else b""
            for whole, captured, end in _user_matches(pattern, text, ascii_text):
                if check_cut and _cut_by_limit(text, end):
                    sink.reject(whole, "value may be cut by the 255-character log limit", end)
                elif end == open_end:
                    sink.reject(whole, "output ends in the middle of this value", end)
                else:
                    value = _to_float(captured, result, spec.name)
                    sink.offer(None if value is None else value * spec.scale, whole, end)
        elif builtin is not None and builtin.needle in text:
            for m in builtin.pattern.finditer(text):
                if check_cut and _cut_by_limit(text, m.end()):
                    sink.reject(m.group(0), "value may be cut by the 255-character log limit",
                                m.end())
                elif m.end(1) == open_end:
                    sink.reject(m.group(0), "output ends in the middle of this value", m.end())
                else:
                    value = builtin.convert(m, result, spec.name)
                    sink.offer(None if value is None else value * spec.scale, m.group(0), m.end())
        if isinstance(sink, _CallLines) and sink.lines:
            if iteration_starts is None:
                iteration_starts = _iteration_starts(text)
            calls = _group_calls(sink.lines, iteration_starts, executions, kept, result, spec.name)
            if calls is not None:
                result.calls[spec.name] = calls
        values, rejected = kept.values, kept.rejected
        if builtin is not None and spec.name in SUMMED_METRICS and values:
            if rejected:  # a sum without one of its parts is no measurement
                result.warnings.append(
                    f"{spec.name}: {len(rejected)} of its lines rejected: no sum")
                rejected = [*rejected, *range(len(rejected), len(rejected) + len(values))]
                values = []
            else:
                values = [math.fsum(values)]
        result.samples[spec.name] = values
        if rejected:
            result.rejected_at[spec.name] = rejected
        result.units[spec.name] = unit
        result.per[spec.name] = per
        if per == "run" and len(values) > 1 and len(set(values)) > 1:
            result.warnings.append(f"{spec.name}: measured once per run but found {len(values)} "
                                   "different values")
        if spec.required and not values:
            result.missing.append(spec.name)
    result.executions = executions
    return result


def _executions(text: str) -> int | None:
    """N of the last ``Model executed successfully N time(s)`` line, else of the last bare-metal
    ``NPU Inferences`` line (None: neither)."""
    executions = None
    run_line = BUILTINS["run_time"]
    if run_line.needle in text:
        for m in run_line.pattern.finditer(text):
            executions = int(m.group(1))
    # bare metal: the perf block's inference count
    if executions is None and "NPU Inferences" in text:
        for m in _NPU_INFERENCES.finditer(text):
            executions = int(m.group(1))
    return executions


# --- lines printed once per delegate call ---------------------------------------------------------

PER_CALL_METRICS = frozenset({"npu_cycles", "cpu_time"})
"""Metrics whose line is printed once per delegate call, not once per inference: the Linux
delegate's cycle counter (EthosUBackend_Cortex_A.cpp:294-299, inside ``execute()``) and the CPU-time
report of ``execute()``. A program split into K Ethos-U partitions prints K of each per inference.
Their lines are grouped per inference (the ``Iteration i of n`` lines, printed after each
``method->execute()``, bound the groups; executor_runner.cpp:779) and the sample is the group's sum;
the values of each call are kept in ``ScrapeResult.calls``. A scenario regex under one of these
names is grouped the same way."""

_ITERATION_LINE = re.compile(r"Iteration \d+ of \d+:")


def _iteration_starts(text: str) -> list[int]:
    if "Iteration " not in text:
        return []
    return [m.start() for m in _ITERATION_LINE.finditer(text)]


@dataclass
class _CallLines:
    """A per-call metric's lines while scraping, before they are grouped per inference: (position,
    value or None, raw text, why it was rejected or None when the converter flagged it already)."""

    lines: list[tuple[int, float | None, str, str | None]] = field(default_factory=list)

    def offer(self, value: float | None, raw: str, position: int = 0) -> None:
        self.lines.append((position, value, raw, None))

    def reject(self, raw: str, why: str | None = None, position: int = 0) -> None:
        self.lines.append((position, None, raw, why))


def _one_per_iteration(lines: Sequence[tuple[int, float | None, str, str | None]],
                       iteration_starts: Sequence[int]) -> bool:
    """True when every ``Iteration`` line has exactly one of ``lines`` before it and after the
    previous one (so grouping would change nothing: checked without building groups, which matters
    for logs of tens of MB)."""
    if len(lines) != len(iteration_starts) or not lines:
        return False
    previous = -1
    for (position, *_), start in zip(lines, iteration_starts, strict=True):
        if not previous < position <= start:
            return False
        previous = start
    return True


def _group_calls(lines: list[tuple[int, float | None, str, str | None]],
                 iteration_starts: Sequence[int],
                 executions: int | None, kept: _Samples, result: ScrapeResult, metric: str
                 ) -> list[list[float]] | None:
    """Offer one sample per inference (the sum of its calls) to ``kept``; return the kept
    inferences' call values when some inference made more than one call (None: one call each,
    nothing more to keep).

    Groups: the lines before each ``Iteration`` line and after the previous one. Lines after the
    last one belong to an ``execute()`` that never completed: no sample, a warning. Without
    ``Iteration`` lines (executor_runner.cpp before 2026-04-10), ``executions`` N and a line count
    of K x N give groups of K consecutive lines; else each line is one inference, as before
    partitions were known. A group with a rejected line, or with another number of calls than most
    groups have, gives no sample (a partial sum is no measurement)."""
    # the common case (fully delegated): each line is a sample
    if _one_per_iteration(lines, iteration_starts):
        for _, value, raw, why in lines:
            if value is None:
                kept.reject(raw, why)
            else:
                kept.offer(value, raw)
        return None
    groups: list[list[tuple[int, float | None, str, str | None]]] = []
    if iteration_starts:
        bounds = iter(iteration_starts)
        bound = next(bounds, None)
        current: list[tuple[int, float | None, str, str | None]] = []
        late = 0
        for line in lines:
            while bound is not None and line[0] > bound:
                groups.append(current)
                current = []
                bound = next(bounds, None)
            if bound is None:
                late += 1
            else:
                current.append(line)
        if bound is not None:
            groups.append(current)
            groups.extend([] for _ in bounds)
        if late:
            result.warnings.append(f"{metric}: {late} delegate call(s) after the last completed "
                                   "iteration (its execute() never finished): no sample from them")
        while groups and not groups[-1]:
            # iterations after the last delegate line: the metric is not printed (counter off)
            groups.pop()
    elif executions and len(lines) > executions and len(lines) % executions == 0:
        k = len(lines) // executions
        groups = [lines[i:i + k] for i in range(0, len(lines), k)]
    else:
        groups = [[line] for line in lines]
    sizes = [len(group) for group in groups]
    usual = max(set(sizes), key=sizes.count) if sizes else 0
    calls: list[list[float]] = []
    for number, group in enumerate(groups, start=1):
        bad = [line for line in group if line[1] is None]
        if bad:
            for _, _, raw, why in bad:
                if why is not None:
                    result._flag(metric, raw, why)
            kept.reject(bad[0][2])
            continue
        if len(group) != usual:
            raw = group[0][2] if group else f"iteration {number}"
            kept.reject(raw,
                        f"iteration {number} made {len(group)} delegate call(s), the others "
                        f"{usual}: a partial or extra measurement is no sample")
            continue
        values = [float(line[1]) for line in group if line[1] is not None]
        before = len(kept.values)
        kept.offer(math.fsum(values), " + ".join(line[2] for line in group))
        if len(kept.values) > before:
            calls.append(values)
    return calls if usual > 1 else None


_NPU_INFERENCES = re.compile(r"NPU Inferences\s*:\s*(\d+)")


def _user_matches(pattern: MetricPattern, text: str,
                  ascii_text: bytes) -> Iterator[tuple[str, str, int]]:
    """(whole match, captured text, end of the capture in characters) of a scenario regex; matches
    whose group did not take part are skipped. ASCII text is matched as bytes (``ascii_text``):
    RE2's binding then skips mapping byte offsets back to characters, about twice as fast (offsets
    are the same)."""
    if ascii_text:
        for m in pattern.finditer(ascii_text):
            captured = m.group(1)
            if captured is not None:
                yield m.group(0).decode("ascii"), captured.decode("ascii"), m.end(1)
        return
    for m in pattern.finditer(text):
        captured = m.group(1)
        if captured is not None:
            yield m.group(0), captured, m.end(1)


def find_build_id(text: str, expected: str) -> str | None:
    """Return the first (clean) line that contains ``expected``, or None: the proof of which build
    ran.

    The text is cleaned and kernel-repaired first, so colour codes or a kernel message inside the
    identity line do not hide it. An empty ``expected`` never matches (a build without an id cannot
    be proven).
    """
    if not expected:
        return None
    prepared, _ = prepare_text(text)
    pos = prepared.find(expected)
    if pos < 0:
        return None
    start, end = _line_at(prepared, pos)
    return prepared[start:end].strip()


_ERROR_TEXTS = (
    "Ethos-U inference timed out",
    "Ethos-U inference failed",
    "Ethos-U Linux driver invocation failed",
    "CALL_DELEGATE execute failed",
    # bare metal: what upstream's scripts grep for (backends/arm/scripts/run_fvp.sh,
    # test/runner_utils.py)
    "Hard fault",
    "Assertion",
    "[critical]",
    "Info: Simulation is stopping. Reason: CPU time has been exceeded.",
)


def find_errors(text: str) -> list[str]:
    """Lines that explain a runner failure, in order: ExecuTorch log lines at level E or F (any
    prefix), the Ethos-U delegate's error messages, and the bare-metal failure lines upstream's FVP
    scripts look for (a hard fault, a failed assertion, a ``[critical]`` log, the FVP stopping
    because the CPU time limit was reached). Execute puts them into a failed record's ``failure``
    text."""
    prepared, _ = prepare_text(text)
    found: list[str] = []
    for line in prepared.split("\n"):
        parsed = parse_log_line(line)
        if (parsed is not None and parsed.level in "EF") or any(e in line for e in _ERROR_TEXTS):
            found.append(line.strip())
    return found


_PRINTED_OUTPUT = re.compile(r"^Output\[\d+\](?:\[\d+\])?: .*$", re.MULTILINE)


def printed_outputs(text: str) -> list[str]:
    """The output tensors a bare-metal runner printed (``ET_LOG_DUMP_OUTPUT``,
    arm_executor_runner.cpp print_outputs: ``Output[%d][%d]: (char) %d`` per element, ``Output[%d]:
    Not Tensor``), in order: without semihosting they are the run's only outputs."""
    prepared, _ = prepare_text(text)
    return [line.rstrip() for line in _PRINTED_OUTPUT.findall(prepared)]


ETDUMP_FILES = ("etdump.bin", "debug_buffer.bin")
"""The files a SEMIHOSTING arm_executor_runner writes its ETDump to, in its semihosting folder
(arm_executor_runner.cpp write_etdump; without semihosting it prints them, ``find_etdump``)."""

_ETDUMP_BLOCK = re.compile(r"^#\[RUN THIS\][ \t]*\n(.*?)^#\[END\]", re.MULTILINE | re.DOTALL)
_ETDUMP_FILE = re.compile(r'^echo "([A-Za-z0-9+/=\s]*)" \| base64 -d ?> ?([\w.-]+)[ \t]*$',
                          re.MULTILINE)


def find_etdump(text: str) -> tuple[dict[str, bytes], list[str]]:
    """The files a bare-metal runner printed between ``#[RUN THIS]`` and ``#[END]``
    (arm_executor_runner.cpp: ``echo "<base64>" | base64 -d >etdump.bin``, and ``debug_buffer.bin``
    when outputs are dumped), decoded; and a warning per block or file that could not be read. Later
    blocks replace earlier files of the same name."""
    prepared, _ = prepare_text(text)
    files: dict[str, bytes] = {}
    warnings: list[str] = []
    if "#[RUN THIS]" not in prepared:
        return files, warnings
    blocks = list(_ETDUMP_BLOCK.finditer(prepared))
    if not blocks:
        warnings.append("an ETDump block starts with #[RUN THIS] but never ends with #[END] "
                        "(output cut?)")
    for block in blocks:
        for m in _ETDUMP_FILE.finditer(block.group(1)):
            payload = re.sub(r"\s+", "", m.group(1))
            try:
                files[m.group(2)] = base64.b64decode(payload, validate=True)
            except (binascii.Error, ValueError) as exc:
                warnings.append(f"{m.group(2)}: the base64 in the ETDump block does not decode "
                                f"({exc})")
    return files, warnings
