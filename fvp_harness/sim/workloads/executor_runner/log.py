"""Where upstream's executor_runner logs each line (``SITES``), ET_LOG's Linux line format
(``EtLog``) and how the runner prints its outputs (print_evalue.cpp): the facts read from upstream's
sources, in one place.

Shared by every emulated runner (the Linux and VGF ones here, the bare-metal one's ET_LOG in
``baremetal/log.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fvp_harness.sim.guest import programs

__all__ = ["SITES", "EtLog", "OutputTruncated", "format_outputs", "note"]

MAX_LOG_MESSAGE = 255
"""vlogf's buffer is 256 bytes: at most 255 of the message (runtime/platform/log.cpp)."""
SUMMARY_EDGE_ITEMS = 100
"""``evalue_edge_items(100)`` in executor_runner.cpp's summary printing."""
ITEMS_PER_LINE = 10
"""``kItemsPerLine`` of print_evalue.cpp."""

# --- where upstream logs each line ----------------------------------------------------------------

_R, _FDL, _PROG, _METH, _INP = (
    "executor_runner.cpp", "file_data_loader.cpp", "program.cpp", "method.cpp", "inputs.cpp",
)  # fmt: skip
_ETHOS, _CORTEX_A, _VGF = "EthosUBackend.cpp", "EthosUBackend_Cortex_A.cpp", "VGFBackend.cpp"
_PERF = "arm_perf_monitor.cpp"

_COMMON: dict[str, tuple[str, int]] = {
    # unchanged between the two generations
    "input_size_mismatch": (_INP, 178),  # "input size (%zu) and tensor size (%zu) mismatch!"
    # "Wrong number of inputs allocated compared to method  %zu ? %zu"
    "input_count_mismatch": (_INP, 37),
    "npu_timed_out": (_CORTEX_A, 278),  # "Ethos-U inference timed out after %lld ns"
    "cycle_counter": (_CORTEX_A, 296),  # "Ethos-U Linux delegate cycle counter: %llu"
    "driver_failed": (_CORTEX_A, 318),  # "Ethos-U Linux driver invocation failed: %s"
    "vgf_available": (_VGF, 448),  # "Checking VGFBackend is available" (cff6f4dd32)
    "vgf_extensions": (_VGF, 84),  # "VKML Extensions loaded"
    "vgf_init": (_VGF, 460),  # "Entered VGF init"
    "vgf_execute": (_VGF, 556),  # "VGF execute: args=%zu IOs=%zu inputs=%zu outputs=%zu"
    "vgf_copy_input": (_VGF, 629),  # "Copy input IO[%d] -> args[%zu]"
    "vgf_copy_output": (_VGF, 742),  # "Copy output IO[%d] -> args[%zu]"
}

SITES: dict[str, dict[str, tuple[str, int]]] = {
    # pytorch/executorch cff6f4dd32 (2026-08-22)
    "current": {
        **_COMMON,
        "build_id": (_R, 306),  # ours: inserted after gflags::ParseCommandLineFlags
        "extra_args": (_R, 312),
        "print_output_mode": (_R, 324),
        "loading_inputs": (_R, 393),
        "input_open_failed": (_R, 156),
        "load_inputs_check": (_R, 405),
        "loading_ptd": (_R, 416),
        "ptd_loader_check": (_R, 419),
        "ptd_loaded": (_R, 425),
        "loader_check": (_R, 461),
        "parse_failed": (_R, 473),
        "model_loaded": (_R, 476),
        "using_method": (_R, 486),
        "method_meta_check": (_R, 490),
        "planned_buffer": (_R, 556),
        "load_method_check": (_R, 617),
        "model_loaded_in": (_R, 624),
        "prepare_inputs_check": (_R, 751),
        "execute_check": (_R, 773),
        "iteration": (_R, 779),
        "executed": (_R, 789),
        "outputs": (_R, 798),
        "writing_output": (_R, 809),
        "output_open_check": (_R, 811),
        "etdump_open_failed": (_R, 253),  # a build with ET_EVENT_TRACER_ENABLED (tracer.py)
        "etdump_written": (_R, 261),
        "etdump_check": (_R, 871),
        "open_failed": (_FDL, 110),
        "load_out_of_range": (_FDL, 155),
        "read_failed": (_FDL, 258),
        "no_method": (_PROG, 67),
        "file_too_small": (_PROG, 114),
        "program_identifier": (_PROG, 168),
        "init_failed": (_METH, 128),
        "backend_not_registered": (_METH, 85),  # also ExecuTorch 1.5.1's (measured: the wheel)
        "call_delegate_failed": (_METH, 1528),
        "delegate_data": (_ETHOS, 101),
        # ours: the CPU-time report of #22596 (closed unmerged) lived in
        # examples/arm/executor_runner/ arm_perf_monitor.cpp; its text and lines are not public:
        # shown at EthosUBackend_execute_end()'s body (arm_perf_monitor.cpp:124 at cff6f4dd32), the
        # hook that ends every EthosUBackend::execute()
        "cpu_time": (_PERF, 124),
    },
    # pytorch/executorch 5e8a0df301 (2026-04-10, before "Model loaded in" and "Iteration")
    "old": {
        **_COMMON,
        "build_id": (_R, 187),  # ours
        "extra_args": (_R, 193),
        "loading_inputs": (_R, 254),
        "input_open_failed": (_R, 270),
        "loading_ptd": (_R, 293),
        "ptd_loader_check": (_R, 296),
        "ptd_loaded": (_R, 302),
        "loader_check": (_R, 338),
        "parse_failed": (_R, 349),
        "model_loaded": (_R, 352),
        "using_method": (_R, 361),
        "method_meta_check": (_R, 365),
        "planned_buffer": (_R, 412),
        "load_method_check": (_R, 435),
        "method_loaded": (_R, 440),
        "prepare_inputs_check": (_R, 471),
        "execute_check": (_R, 485),
        "executed": (_R, 493),
        "outputs": (_R, 502),
        "writing_output": (_R, 513),
        "open_failed": (_FDL, 104),
        "load_out_of_range": (_FDL, 149),
        "read_failed": (_FDL, 252),
        "no_method": (_PROG, 58),
        "file_too_small": (_PROG, 105),
        "program_identifier": (_PROG, 159),
        "init_failed": (_METH, 110),
        "backend_not_registered": (_METH, 70),
        "call_delegate_failed": (_METH, 1467),
        "delegate_data": (_ETHOS, 81),
        "cpu_time": (_PERF, 124),  # ours, as above
    },
}
"""(file, line) of every line the emulation prints, per log generation (``ours`` marks lines
upstream lacks)."""


class OutputTruncated(Exception):
    """The injected ``truncate`` fault cut a line: the program stops there, status 0."""


# --- ET_LOG ---------------------------------------------------------------------------------------


def _valid_utf8_prefix(data: bytes) -> int:
    """log.cpp's rule: look only at the last character; cut it off when it is incomplete or
    malformed."""
    i = len(data)
    while i > 0 and data[i - 1] & 0xC0 == 0x80:
        i -= 1
    if i == 0:
        return 0
    lead = data[i - 1]
    need = 0
    for mask, value, length in ((0x80, 0x00, 1), (0xE0, 0xC0, 2), (0xF0, 0xE0, 3), (0xF8, 0xF0, 4)):
        if lead & mask == value:
            need = length
            break
    if not need:
        return i - 1
    return len(data) if len(data) - (i - 1) == need else i - 1


class EtLog:
    """ET_LOG on Linux: ``%c %02u:%02u:%02u.%06lu executorch:%s:%zu] %s`` to stderr, time since
    program start (truncated to microseconds); the message cut to 255 bytes and back to a valid
    UTF-8 prefix as vlogf does. Shared by every emulated runner."""

    def __init__(self, ctx: programs.GuestContext) -> None:
        self.ctx = ctx
        self.start = ctx.now()
        self.truncate_next = False

    def prefix(self, level: str, source: str, line: int) -> str:
        # ns ticks, then "timestamp /= 1000"
        micros = max(0, round((self.ctx.now() - self.start) * 1e9)) // 1000
        seconds, us = divmod(micros, 1_000_000)
        minutes, ss = divmod(seconds, 60)
        hh, mm = divmod(minutes, 60)
        return f"{level} {hh:02d}:{mm:02d}:{ss:02d}.{us:06d} executorch:{source}:{line}] "

    @staticmethod
    def cut(message: str) -> str:
        data = message.encode("utf-8", "surrogateescape")[:MAX_LOG_MESSAGE]
        return data[: _valid_utf8_prefix(data)].decode("utf-8", "surrogateescape")

    def line(self, level: str, source: str, line: int, message: str) -> str:
        return self.prefix(level, source, line) + self.cut(message) + "\n"

    def __call__(self, level: str, source: str, line: int, message: str) -> None:
        text = self.line(level, source, line, message)
        if self.truncate_next:
            self.ctx.stderr(text[: len(text) // 2])
            raise OutputTruncated
        self.ctx.stderr(text)

    def at(self, level: str, site: tuple[str, int], message: str) -> None:
        """Log ``message`` at an upstream location (``SITES``)."""
        self(level, site[0], site[1], message)


def note(ctx: programs.GuestContext, message: str) -> None:
    """A line of ours that upstream cannot print (no ET_LOG prefix, so no parser takes it for
    upstream's)."""
    ctx.stderr(f"fvp-sim: {message}\n")


# --- printing outputs (extension/evalue_util/print_evalue.cpp, executor_runner.cpp) ---------------


def _scalar_list(items: Sequence[str], edge: int | None) -> str:
    """print_scalar_list: ``edge`` first and last items (None: all), wrapped 10 per line when more
    than 10 are shown, with a trailing ``, `` on every wrapped item."""
    n = len(items)
    wrapping = (n if edge is None else min(n, 2 * edge)) > ITEMS_PER_LINE
    parts = ["["]
    printed = 0
    i = 0
    while i < n:
        if wrapping and printed % ITEMS_PER_LINE == 0:
            parts.append("\n  ")
        parts.append(items[i])
        if wrapping or i < n - 1:
            parts.append(", ")
        printed += 1
        if edge is not None and i + 1 == edge and i + edge + 1 < n:
            if wrapping:
                parts.append("\n  ...,")
                printed = ITEMS_PER_LINE - edge % ITEMS_PER_LINE
                if printed % ITEMS_PER_LINE:
                    parts.append("\n  ")
            else:
                parts.append("..., ")
            i = n - edge - 1
        i += 1
    if wrapping:
        parts.append("\n")
    parts.append("]")
    return "".join(parts)


def format_outputs(outputs: Sequence[tuple[np.ndarray, Sequence[int]]], mode: str) -> str:
    """What executor_runner prints on stdout for int8 output tensors ``(values, sizes)`` in
    ``mode``."""
    if mode == "all":
        return "".join(
            f"Output[{i}][{j}]: (char) {int(v)}\n" for i, (values, _) in enumerate(outputs)
            for j, v in enumerate(values.reshape(-1))
        )  # fmt: skip
    if mode != "summary":
        return ""
    text = []
    for i, (values, sizes) in enumerate(outputs):
        tensor = (
            f"tensor(sizes={_scalar_list([str(s) for s in sizes], None)}, "
            f"{_scalar_list([str(int(v)) for v in values.reshape(-1)], SUMMARY_EDGE_ITEMS)})"
        )
        text.append(f"OutputX {i}: {tensor}\n")
    return "".join(text)


