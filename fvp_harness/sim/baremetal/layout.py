"""The emulated runner build's memory layout: what each part of upstream's ``arm_executor_runner``
puts in flash and RAM, as the sections of the ELF that ``sim baremetal-runner`` writes.

Why a model: the harness reads flash (``runner_text``/``_rodata``/``_data``) and static RAM
(``runner_bss``) from a runner ELF's section headers (``run/memory.py``); the simulator's build has
no compiled code, so its sections are sized from a model of the work, part by part, and respond to
the build's settings (an ETDump build links the event tracer and its buffer, a semihosting build the
file pool, a Dedicated_Sram build the fast scratch, a compiled-in model its ``network_model_sec``).

Where the figures come from: the code and constant sizes below are FITTED estimates, not measured
from a link map: round figures in the range ExecuTorch's Cortex-M size tracking reports for the
runtime core (pytorch/executorch PRs #11399, #12335) and for a runner with the portable
quantize/dequantize kernels, the Ethos-U delegate and its driver, newlib and the board's start-up
code. The static RAM outside the pools (``.data`` + ``.bss``) is fitted to the one published figure:
53,469 bytes of ExecuTorch runtime RAM on a Cortex-M55 (pytorch/executorch#17651, Alif E8,
ExecuTorch 1.1.0). The pools are the build's own sizes, the ones the emulated runner reports
(``runner.py``). Section contents are zero: nothing executes them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DEBUG_BUFFER_BYTES", "FILE_POOL", "METHOD_POOL", "METHOD_POOL_BYTES", "MODEL_SECTION", "PARTS",
    "RUNTIME_STATIC_RAM", "TEMP_POOL_BYTES", "Part", "code_base", "ram_base",
]  # fmt: skip

METHOD_POOL_BYTES = 60 * 1024 * 1024
"""``ET_ARM_BAREMETAL_METHOD_ALLOCATOR_POOL_SIZE`` and the semihosting file pool's default: 60
MiB."""
TEMP_POOL_BYTES = {False: 0x200000, True: 0x4000000}
"""``ET_ARM_BAREMETAL_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE``: 2 MiB, 64 MiB for a Dedicated_Sram memory
mode."""
DEBUG_BUFFER_BYTES = 2 * 1024 * 1024
"""``ET_DEBUG_BUFFER_SIZE`` (2 MiB)."""

# Plausible addresses of the build's sections (DDR at 0x70000000 on both boards; not from a linker
# map).
MODEL_SECTION = 0x70000000
"""``network_model_sec``: where a compiled-in model is linked (room for 16 MiB before the method
pool)."""
METHOD_POOL = 0x71000000
"""``.bss.method_allocator_sec``."""
FILE_POOL = METHOD_POOL + METHOD_POOL_BYTES
"""``.bss.input_file_allocator_sec``: semihosted files, after the method pool."""

RUNTIME_STATIC_RAM = 53_469
"""``.data`` + ``.bss`` outside the pools: ExecuTorch's runtime RAM on a Cortex-M55
(executorch#17651)."""


@dataclass(frozen=True)
class Part:
    """What one part of the build links: code, constants and initialised data, in bytes (fitted)."""

    name: str
    text: int
    rodata: int
    data: int = 0


PARTS: dict[str, Part] = {
    part.name: part
    for part in (
        Part("runtime", 52_000, 5_200, 120),  # program, method, allocators, flatbuffer reader, PAL
        # quantize/dequantize_per_tensor: what the CPU keeps
        Part("portable_kernels", 16_400, 1_100),
        Part("ethosu_delegate", 11_800, 900, 64),  # EthosUBackend + ethos-u-core-driver
        Part("runner", 33_500, 7_300, 1_400),  # arm_executor_runner.cpp, CMSIS start-up, newlib
        Part("semihosting", 1_900, 300),  # the -m/-i/-o command line and file reading
        Part("etdump", 24_600, 2_900, 48),  # ETDumpGen, the flatcc builder, base64 printing
    )
}
"""Every build links the first four; ``semihosting`` and ``etdump`` when the build asks for them."""


def code_base(platform: str) -> int:
    """Where ``.text`` starts: the ITCM's secure alias (the HardFault frames' pc are there too)."""
    return {"corstone300": 0x10000000, "corstone320": 0x11000000}[platform]


def ram_base(platform: str) -> int:
    """Where ``.data`` starts: the DTCM's secure alias (the HardFault frames' sp are there too)."""
    return {"corstone300": 0x30000000, "corstone320": 0x31000000}[platform]
