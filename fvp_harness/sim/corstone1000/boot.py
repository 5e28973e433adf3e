"""The boot: what each terminal shows from power-on to the login prompt, in stages.

Text follows the public logs of the Corstone-1000 stack (see shared/reference/fvp-corstone1000.md):
TF-M on ``secenc_terminal`` (ANSI colour, CRLF), TF-A BL2/BL31 and U-Boot with its autoboot
countdown on ``host_terminal_0``, OP-TEE and TF-A runtime on ``host_terminal_1``, then the Linux
kernel log (with ``[ t.tttttt]`` timestamps from the simulated clock, and the benign noise real logs
carry, including TF-A's ``ERROR:   mmap_add_region_check() failed``), busybox init, the getty banner
and the login prompt. Versions, the kernel command line, the NPU's driver and whether Dropbear
starts come from the release's row (``releases.py``); the rest of the text is the same for every
release.

Stages are named (``tfm``, ``tfa``, ``optee``, ``uboot``, ``kernel``, ``init``, ``login``) so a
fault can hang the boot in one of them. ``boot_seconds`` of wall time and ``boot_sim_seconds`` of
simulated time are spread over the steps by weight.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from fvp_harness.sim.corstone1000.releases import Release, image_of
from fvp_harness.sim.knobs import Knobs

__all__ = ["KERNEL_NOISE", "BootStep", "boot_steps", "getty_banner", "kernel_line", "panic_text",
           "play"]

CONSOLE = "host_terminal_0"
UART1 = "host_terminal_1"
SECENC = "secenc_terminal"

KERNEL_NOISE = (
    "psci: failed to boot CPU1 (-95)",
    "ARM FF-A: Notification setup failed -95, not enabled",
    "random: crng reseeded on system resumption",
    "hrtimer: interrupt took 1127350 ns",
    "mmc0: Timeout waiting for hardware interrupt.",
    "ethosu 1a050000.ethosu: Message: Power request",
    "audit: type=1006 audit(1.0:2): pid=1 uid=0 old-auid=4294967295 auid=0 tty=(none) res=1",
)
"""Benign messages the kernel may print at any time (the noise knob draws from these)."""


@dataclass(frozen=True)
class BootStep:
    """One line (or fragment) on one terminal. ``kernel`` lines get a timestamp prefix when
    played."""

    terminal: str
    stage: str
    text: str
    weight: float = 1.0
    kernel: bool = False
    newline: bool = True
    early: bool = False


def kernel_line(seconds: float, message: str) -> str:
    """A kernel log line as printk shows it: ``[    1.234567] message``."""
    return f"[{seconds:12.6f}] {message}"


def _tfm(knobs: Knobs, rel: Release) -> list[BootStep]:
    lines = [
        "[INF] Starting TF-M BL1_1",
        "[INF] Jumping to BL1_2",
        "[INF] Starting TF-M BL1_2",
        "[INF] Attempting to boot image 0",
        "[INF] BL2 image validated successfully",
        "[INF] Jumping to BL2",
        "[INF] Starting bootloader",
        "[INF] PSA Crypto init done, sig_type: EC-P256",
        "[INF] Bootloader chainload address offset: 0x0",
        "[INF] Jumping to the first image slot",
        f"\x1b[1;34mBooting TF-M v{rel.tfm}\x1b[0m",
        "[Sec Thread] Secure image initializing!",
        "TF-M isolation level is: 0x00000001",
    ]
    if knobs.first_boot:
        provisioning = [
            "[INF] Starting TF-M BL1_1",
            "[INF] Beginning provisioning",
            "[INF] Waiting for provisioning bundle",
            "[INF] Running provisioning bundle",
            "[INF] Provisioning complete, rebooting",
        ]
        lines = provisioning + lines
    return [BootStep(SECENC, "tfm", line) for line in lines]


def _tfa(rel: Release) -> list[BootStep]:
    lines = [
        "NOTICE:  Booting Trusted Firmware",
        f"NOTICE:  BL2: v{rel.tfa}(debug):v{rel.tfa}",
        "NOTICE:  BL2: Built : 00:00:00, Jan  1 2025",
        "INFO:    BL2: Doing platform setup",
        "INFO:    BL2: Loading image id 3",
        "INFO:    Loading image id=3 at address 0x2002000",
        "INFO:    Image id=3 loaded: 0x2002000 - 0x2010000",
        "ERROR:   mmap_add_region_check() failed. error -22",
        "INFO:    BL2: Loading image id 4",
        "INFO:    Loading image id=4 at address 0x2100000",
        "INFO:    BL2: Loading image id 5",
        "INFO:    Loading image id=5 at address 0x2300000",
        "NOTICE:  BL2: Booting BL31",
        "INFO:    Entry point address = 0x2002000",
        "INFO:    SPSR = 0x3cd",
        f"NOTICE:  BL31: v{rel.tfa}(debug):v{rel.tfa}",
        "NOTICE:  BL31: Built : 00:00:00, Jan  1 2025",
        "INFO:    GICv3 without legacy support detected.",
        "INFO:    BL31: Initializing runtime services",
        "INFO:    BL31: Initializing BL32",
        "INFO:    BL31: Preparing for EL3 exit to normal world",
        "INFO:    Entry point address = 0x2300000",
        "INFO:    SPSR = 0x3c9",
    ]
    return [BootStep(CONSOLE, "tfa", line) for line in lines]


def _optee(rel: Release) -> list[BootStep]:
    lines = [
        "I/TC: ",
        f"I/TC: OP-TEE version: {rel.optee} (gcc version {rel.gcc} (GCC)) {_build_date(rel)} "
        "aarch64", "I/TC: WARNING: This OP-TEE configuration might be insecure!",
        "I/TC: WARNING: Please check https://optee.readthedocs.io/en/latest/architecture/porting_guidelines.html",
        "I/TC: Primary CPU initializing",
        "D/TC:0 0 boot_init_primary_late:1471 Executing at offset 0 with virtual load address "
        "0x2300000", "D/TC:0 0 call_preinitcalls:21 level 2 mobj_mapped_shm_init()",
        "I/TC: Trusted Application SMC handler: FF-A",
        "D/TC:0 0 spmc_init:2012 OP-TEE is a logical partition",
        "I/TC: Primary CPU switching to normal world boot",
        "INFO:    BL31: Initializing runtime services (SP manifest ok)",
    ]
    return [BootStep(UART1, "optee", line) for line in lines]


def _uboot(knobs: Knobs, rel: Release) -> list[BootStep]:
    steps = [BootStep(CONSOLE, "uboot", line) for line in (
        "",
        "",
        f"U-Boot {rel.uboot} ({_uboot_date(rel)} - 00:00:00 +0000)",
        "",
        "DRAM:  2 GiB",
        "Core:  29 devices, 15 uclasses, devicetree: separate",
        "Flash: 32 MiB",
        "MMC:   mmc@40300000: 0",
        "Loading Environment from nowhere... OK",
        "In:    serial@1a510000",
        "Out:   serial@1a510000",
        "Err:   serial@1a510000",
        "Net:   No ethernet found.",
    )]
    steps.append(BootStep(CONSOLE, "uboot", "Hit any key to stop autoboot:  3 ", weight=3,
                          newline=False))
    for n in (2, 1, 0):
        steps.append(BootStep(CONSOLE, "uboot", f"\b\b\b {n} ", weight=3, newline=False))
    steps.append(BootStep(CONSOLE, "uboot", ""))
    steps += [BootStep(CONSOLE, "uboot", line) for line in (
        "Loading kernel from 0x083EE000 to memory ... ",
        "Loading kernel from 0x08500000 to memory ... ",
        "## Flattened Device Tree blob at 80400000",
        "   Booting using the fdt blob at 0x80400000",
        "Working FDT set to 80400000",
        "   Loading Device Tree to 00000000fdf25000, end 00000000fdf2c3c5 ... OK",
        "Working FDT set to fdf25000",
        "",
        "Starting kernel ...",
        "",
    )]
    return steps


def _kernel(knobs: Knobs, rel: Release, mmc_bytes: int | None, num_macs: int) -> list[BootStep]:
    msgs = [
        "Booting Linux on physical CPU 0x0000000000 [0x410fd8f0]",
        f"Linux version {rel.linux} (oe-user@oe-host) ({_triplet(rel)}-gcc (GCC) {rel.gcc}, "
        f"GNU ld (GNU Binutils) {rel.binutils}) {rel.linux_build}",
        "KASLR disabled due to lack of seed",
        "Machine model: ARM Corstone1000-A320 FVP (Fixed Virtual Platform)",
        "efi: UEFI not found.",
        "Reserved memory: created DMA memory pool at 0x0000000082000000, size 16 MiB",
        "Zone ranges:",
        "  DMA      [mem 0x0000000080000000-0x00000000ffffffff]",
        "psci: probing for conduit method from DT.",
        "psci: PSCIv1.1 detected in firmware.",
        f"Kernel command line: {rel.kernel_cmdline}",
        "Memory: 1934720K/2097152K available (11328K kernel code, 1552K rwdata, 3728K rodata, "
        "2112K init)", "rcu: Preemptible hierarchical RCU implementation.",
        "arch_timer: cp15 timer(s) running at 100.00MHz (phys).",
        "Calibrating delay loop (skipped), value calculated using timer frequency.. "
        "200.00 BogoMIPS (lpj=400000)",
        "smp: Bringing up secondary CPUs ...",
        "psci: failed to boot CPU1 (-95)",
        "CPU1: failed to boot: -95",
        "smp: Brought up 1 node, 1 CPU",
        "ARM FF-A: Driver version 1.1",
        "ARM FF-A: Firmware version 1.1 found",
        "ARM FF-A: Notification setup failed -95, not enabled",
        "optee: initialized driver",
        "Serial: AMBA PL011 UART driver",
        "1a510000.serial: ttyAMA0 at MMIO 0x1a510000 (irq = 13, base_baud = 0) is a PL011 rev3",
        "printk: legacy console [ttyAMA0] enabled",
        "mmci-pl18x 40300000.mmci: mmc0: PL180 manf 41 rev0 at 0x40300000 irq 21,0 (pio)",
    ]
    if mmc_bytes is not None:
        blocks = mmc_bytes // 512
        msgs += [
            "mmc0: new SD card at address 4567",
            f"mmcblk0: mmc0:4567 FVP   {mmc_bytes / (1 << 20):.1f} MiB",
            f"mmcblk0: p1 ({blocks} sectors)",
        ]
    # the in-tree accel/ethosu driver: a DRM accel minor, no /dev/ethosu0
    if rel.npu_driver == "drm-accel":
        device = _device_name(rel.npu_dt_node)
        msgs += [
            f"ethosu {device}: Ethos-U85 NPU, {num_macs} MACs",
            f"[drm] Initialized ethosu 1.0.0 for {device} on minor 0",
        ]
    else:
        msgs += [
            "ethosu: loading out-of-tree module taints kernel.",
            f"ethosu 1a050000.ethosu: Ethos-U85 NPU, {num_macs} MACs, /dev/ethosu0",
        ]
    msgs += [
        "clk: Disabling unused clocks",
        "Freeing unused kernel memory: 2112K",
        "Run /init as init process",
    ]
    # printk shows 0.000000 until the timer is up (the first lines, up to the command line)
    early = 11
    return [BootStep(CONSOLE, "kernel", m, kernel=True, early=i < early)
            for i, m in enumerate(msgs)]


def _init(knobs: Knobs, rel: Release, ssh: bool) -> list[BootStep]:
    lines = [
        "Starting mdev... done.",
        "Starting syslogd/klogd: done",
        "Configuring network interfaces... done.",
    ]
    if ssh:
        lines.append("Starting Dropbear SSH server: dropbear.")
    if rel.npu_driver == "ethos-u":  # meta-ethos's init script; the in-tree driver has none
        lines.append("Starting ethos-u services: done.")
    return [BootStep(CONSOLE, "init", line) for line in lines]


def getty_banner(rel: Release) -> str:
    """The line the getty prints above the login prompt."""
    return f"Poky (Yocto Project Reference Distro) {rel.poky} {rel.hostname} ttyAMA0"


def _login(rel: Release) -> list[BootStep]:
    return [
        BootStep(CONSOLE, "login", ""),
        BootStep(CONSOLE, "login", getty_banner(rel)),
        BootStep(CONSOLE, "login", ""),
    ]


def boot_steps(knobs: Knobs, *, mmc_bytes: int | None = None, num_macs: int = 256, ssh: bool = True
               ) -> list[BootStep]:
    """Every step from power-on to the getty banner; the login prompt itself is the shell's.
    ``ssh``: a network device is up and the image has Dropbear."""
    rel = image_of(knobs)
    return (_tfm(knobs, rel) + _tfa(rel) + _optee(rel) + _uboot(knobs, rel)
            + _kernel(knobs, rel, mmc_bytes, num_macs) + _init(knobs, rel, ssh) + _login(rel))


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _build_date(rel: Release) -> str:
    """``#1 Wed Jan  1 00:00:00 UTC 2025``: the kernel's build stamp without its SMP flags (OP-TEE
    prints it so)."""
    words = rel.linux_build.split()  # #1 SMP PREEMPT Wed Jan  1 00:00:00 UTC 2025
    return f"{words[0]} {words[3]} {words[4]} {int(words[5]):>2} {' '.join(words[6:])}"


def _uboot_date(rel: Release) -> str:
    """``Jan 01 2025``: U-Boot's build date, from the kernel's build stamp."""
    words = rel.linux_build.split()
    return f"{words[4]} {int(words[5]):02d} {words[-1]}"


def _triplet(rel: Release) -> str:
    """The cross compiler's name: Poky's ``aarch64-poky-linux`` (``-musl`` on a musl image)."""
    return "aarch64-poky-linux-musl" if rel.libc == "musl" else "aarch64-poky-linux"


def _device_name(dt_node: str) -> str:
    """Linux's platform-device name of a device-tree node: ``ethosu@1A050000`` ->
    ``1a050000.ethosu``."""
    name, _, address = dt_node.partition("@")
    return f"{int(address, 16):x}.{name}"


def panic_text(rel: Release) -> tuple[str, ...]:
    """What the kernel prints when init dies (the panic fault)."""
    return (
        "Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b",
        f"CPU: 0 UID: 0 PID: 1 Comm: init Not tainted {rel.linux} #1",
        *PANIC_TEXT[2:],
    )


PANIC_TEXT = (
    "Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b",
    "CPU: 0 UID: 0 PID: 1 Comm: init Not tainted 6.12.20-yocto-standard #1",
    "Hardware name: ARM Corstone1000-A320 FVP (Fixed Virtual Platform) (DT)",
    "Call trace:",
    " dump_backtrace+0x98/0xf0",
    " show_stack+0x18/0x24",
    " dump_stack_lvl+0x60/0x80",
    " panic+0x168/0x360",
    " do_exit+0x82c/0x924",
    "---[ end Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b ]---",
)


async def play(
    steps: list[BootStep],
    *,
    write: Callable[[str, str], None],
    advance: Callable[[float], None],
    kernel_now: Callable[[], float],
    wall_seconds: float,
    sim_seconds: float,
    on_stage: Callable[[str], Awaitable[bool]],
    record_kernel: Callable[[str], None],
) -> bool:
    """Play the steps: sleep and spend simulated time by weight, write each line to its terminal.
    Each line is due at its share of ``wall_seconds`` from the start, so the boot lasts
    ``wall_seconds`` however late a busy host wakes the loop (relative sleeps added every wake-up's
    delay: 1.8 s for 1.5).

    ``on_stage(name)`` is awaited when a stage starts; returning False stops the boot there (hang,
    panic or crash faults decide that). Returns True when every step was played. Lines end with
    CRLF, as a tty sends them.
    """
    total = sum(s.weight for s in steps) or 1.0
    stage = None
    loop = asyncio.get_running_loop()
    began = loop.time()
    played = 0.0  # the weight of the steps written so far, and of this one
    for step in steps:
        if step.stage != stage:
            stage = step.stage
            if not await on_stage(stage):
                return False
        share = step.weight / total
        played += step.weight
        # against the boot's start: writing lines and waking late do not add up
        if wall_seconds > 0:
            await asyncio.sleep(max(0.0, began + wall_seconds * played / total - loop.time()))
        advance(sim_seconds * share)
        text = step.text
        if step.kernel:
            text = kernel_line(0.0 if step.early else kernel_now(), text)
            record_kernel(text)
        write(step.terminal, text + ("\r\n" if step.newline else ""))
    return True
