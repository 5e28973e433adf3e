"""The memory metrics read from a runner's text: the bare-metal runner's ``log_mem_status`` lines
exactly as arm_executor_runner.cpp prints them (its format strings at cff6f4dd, lines 953-1049), and
the planned-buffer lines of both runners, summed per run."""

from __future__ import annotations

import pytest

from fvp_harness.run.scrape import scrape
from fvp_harness.scenario.metrics import HARNESS_METRICS, MEMORY_METRICS
from fvp_harness.scenario.model import MetricSpec

_P = "I [executorch:arm_executor_runner.cpp:{line} log_mem_status()] "


def _mem_status(
    *, used: int = 3136, pool: int = 62914560, addr: bool = False, etdump: bool = True
) -> str:
    """The block as the format strings print it (``%lu``; two spaces before ``free`` on the method
    line only)."""
    note = " (pte size unknown when not baked into elf)" if addr else ""
    lines = [
        (960, f"model_pte_program_size:     92720 bytes.{note}"),
        (964, f"model_pte_loaded_size:      92720 bytes.{note}"),
        (
            994,
            f"method_allocator_used:     {used} / {pool}  free: {pool - used} "
            f"( used: {100 * used // pool} % ) ",
        ),
        (1000, "method_allocator_planned:  3088 bytes"),
        (1019, "method_allocator_loaded:   32 bytes"),
        (1023, "method_allocator_input:    16 bytes"),
        (1027, "method_allocator_executor: 0 bytes"),
        (1033, "temp_allocator:            2097152"),
    ]
    if etdump:
        lines.append(
            (1042, "ETDump_outputs_buffer:     640 / 2097152 free: 2096512 ( used: 0 % ) ")
        )
    return "".join(_P.format(line=line) + text + "\n" for line, text in lines)


def _specs(*names: str) -> list[MetricSpec]:
    return [MetricSpec(name=name) for name in names]


ALLOCATOR = (
    "method_allocator_used",
    "method_allocator_pool",
    "method_allocator_planned",
    "method_allocator_loaded",
    "method_allocator_input",
    "method_allocator_executor",
    "temp_allocator",
    "pte_program_size",
    "pte_loaded_size",
    "etdump_buffer_used",
)


def test_every_allocator_line_read_once_per_run_in_bytes() -> None:
    result = scrape(_mem_status(), _specs(*ALLOCATOR))
    assert result.samples == {
        "method_allocator_used": [3136.0],
        "method_allocator_pool": [62914560.0],
        "method_allocator_planned": [3088.0],
        "method_allocator_loaded": [32.0],
        "method_allocator_input": [16.0],
        "method_allocator_executor": [0.0],
        "temp_allocator": [2097152.0],
        "pte_program_size": [92720.0],
        "pte_loaded_size": [92720.0],
        "etdump_buffer_used": [640.0],
    }
    assert set(result.units.values()) == {"bytes"} and set(result.per.values()) == {"run"}
    assert not result.warnings and set(ALLOCATOR) <= MEMORY_METRICS


def test_an_address_build_does_not_know_the_program_size() -> None:
    """ET_MODEL_PTE_ADDR: the runner says its size is unknown; the number is no sample, and the
    record says why."""
    result = scrape(
        _mem_status(addr=True),
        _specs("pte_program_size", "pte_loaded_size", "method_allocator_used"),
    )
    assert result.samples["pte_program_size"] == [] and result.samples["pte_loaded_size"] == []
    assert "pte size unknown" in result.reasons["pte_program_size"][0]
    assert result.samples["method_allocator_used"] == [3136.0]


def test_inconsistent_pool_line_is_refused() -> None:
    text = _mem_status().replace("free: 62911424", "free: 5")
    result = scrape(text, _specs("method_allocator_used", "method_allocator_pool"))
    assert result.samples == {"method_allocator_used": [], "method_allocator_pool": []}
    assert "used + free" in result.reasons["method_allocator_used"][0]


def test_a_line_cut_at_the_log_limit_gives_no_sample() -> None:
    """ExecuTorch cuts a message at 255 bytes: a value that ends the cut line may have lost
    digits."""
    prefix = _P.format(line=1000)
    message = (
        "method_allocator_planned:"
        + " " * (255 - len("method_allocator_planned:") - len("3088"))
        + "3088"
    )
    assert len(message) == 255
    result = scrape(prefix + message + "\n", _specs("method_allocator_planned"))
    assert result.samples["method_allocator_planned"] == []
    assert "255-character" in result.warnings[0]


_LINUX = "I 00:00:00.000100 executorch:executor_runner.cpp:{}] Setting up "
_BARE = "I [executorch:arm_executor_runner.cpp:740 runner_init()] Setting up planned buffer "


@pytest.mark.parametrize(
    "lines",
    [
        # Linux executor_runner.cpp:558 and :578 (cff6f4dd), and the older generation's line
        [
            _LINUX.format(556) + "CPU planned buffer 0, size 3088.",
            _LINUX.format(556) + "CPU planned buffer 1, size 912.",
            _LINUX.format(578) + "device planned buffer 2, size 96, device_type 1.",
        ],
        [
            _LINUX.format(412) + "planned buffer 0, size 4000.",
            _LINUX.format(412) + "planned buffer 1, size 96.",
        ],
        # arm_executor_runner.cpp:740
        [_BARE + "with mem_id=1, size 3000.", _BARE + "with mem_id=2, size 1096."],
    ],
)
def test_planned_memory_sums_every_planned_buffer(lines: list[str]) -> None:
    result = scrape("\n".join(lines) + "\n", _specs("planned_memory"))
    assert result.samples["planned_memory"] == [4096.0]
    assert result.units["planned_memory"] == "bytes"


def test_harness_metrics_are_not_scraped() -> None:
    """Flash and peak_rss come from the harness (run.memory, run.framed), never from what a runner
    prints."""
    text = "runner_text: 5\nmodel_bytes: 7\n"
    result = scrape(text, _specs(*sorted(HARNESS_METRICS)))
    assert result.samples == {} and not result.missing
