"""The models' parameter tables: every ``-C name=value`` each simulated FVP accepts.

A real model rejects a parameter it does not know, which is what catches a scenario typo early; so
the simulator keeps an explicit table (name, type, default, description) per platform instead of
accepting anything. Parameters that change behaviour are marked in their description; the others are
accepted and recorded (``GuestContext.params``) so scenarios written for the real model run
unchanged.

Platforms (``PLATFORMS``): ``corstone1000`` (FVP_Corstone-1000-A320, the Linux platform:
``PARAMETERS``) and the bare-metal ``corstone300`` (FVP_Corstone_SSE-300_Ethos-U55) and
``corstone320`` (FVP_Corstone_SSE-320), whose ``Board`` descriptions carry their tables with the
parameter names ExecuTorch's ``backends/arm/scripts/run_fvp.sh`` and
``backends/arm/test/runner_utils.py`` pass (``mps3_board.*``/``ethosu.*``/``cpu0.*`` on
Corstone-300, ``mps4_board.*``/``mps4_board.subsystem.*``/``vis_hdlcd.*`` on Corstone-320).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "BOARDS",
    "MMC_CARDS",
    "NETWORK_DEVICES",
    "PARAMETERS",
    "PLATFORMS",
    "TERMINALS",
    "Board",
    "NetworkDevice",
    "Parameter",
    "ParameterError",
    "Terminal",
    "coerce",
    "format_listing",
    "parameters_of",
    "platform_named",
]


class ParameterError(ValueError):
    """A ``-C`` parameter that the model does not have, or a value of the wrong type."""


@dataclass(frozen=True)
class Parameter:
    """One model parameter: its dotted name, type (``bool``, ``int`` or ``string``), default and
    meaning."""

    name: str
    type: str
    default: str
    description: str
    choices: tuple[str, ...] = ()
    """The only values the model takes (normalised text), when it has such a list (e.g. an NPU's MAC
    counts)."""


@dataclass(frozen=True)
class Terminal:
    """A TelnetTerminal component: its banner name (what the port line says) and its parameter
    prefix."""

    name: str
    prefix: str


TERMINALS: tuple[Terminal, ...] = (
    Terminal("host_terminal_0", "host.host_terminal_0"),
    Terminal("host_terminal_1", "host.host_terminal_1"),
    Terminal("secenc_terminal", "se.secenc_terminal"),
)
"""In the order the real model announces them (and so the order ports are taken from ``start_port``
upwards)."""


@dataclass(frozen=True)
class NetworkDevice:
    """A network interface of the board with its own host bridge: the guest is reachable through
    ``ports`` (``host=guest`` forwards) only while ``enabled`` and ``user_networking`` are both
    true."""

    name: str
    enabled: str
    user_networking: str
    ports: str


NETWORK_DEVICES: tuple[NetworkDevice, ...] = (
    NetworkDevice("smsc_91c111", "board.smsc_91c111.enabled", "board.hostbridge.userNetworking",
                  "board.hostbridge.userNetPorts"),
    NetworkDevice("virtio_net", "board.virtio_net.enabled",
                  "board.virtio_net.hostbridge.userNetworking",
                  "board.virtio_net.hostbridge.userNetPorts"),
)
"""The guest's two network devices (eth0: SMSC LAN91C111, eth1: virtio-net), as meta-arm configures
them."""

MMC_CARDS: tuple[str, ...] = ("board.msd_mmc", "board.msd_mmc_2")
"""The two PL180 MMC card slots (``<slot>.p_mmc_file`` and friends)."""


def _terminal_params(term: Terminal, port: int) -> list[Parameter]:
    p = term.prefix
    return [
        Parameter(f"{p}.start_telnet", "bool", "1",
                  "Start a telnet client on the port. The simulator launches none; it only "
                  "listens."),
        Parameter(f"{p}.mode", "string", "telnet",
                  "Terminal mode: 'telnet' (telnet negotiation, IAC escaping) or 'raw' (bytes as "
                  "they are)."),
        Parameter(f"{p}.start_port", "int", str(port),
                  "First TCP port to listen on; if it is in use, the next port up is tried."),
        Parameter(f"{p}.quiet", "bool", "0",
                  "Do not print the 'Listening for serial connection' line."),
        Parameter(f"{p}.terminal_command", "string", "",
                  "Command to launch a terminal. Accepted and ignored: the simulator launches "
                  "nothing."),
    ]


def _mmc_params(card: str, config: str, shown: str) -> list[Parameter]:
    """One MMC card slot and its PL180 controller configuration (``msd_mmc`` / ``msd_config``)."""
    return [
        Parameter(f"{card}.p_mmc_file", "string", "",
                  "Mass-storage image for this PL180 MMC slot; a file that cannot be opened leaves "
                  "the slot empty, with a warning (meta-arm passes 'invalid.dat' on purpose). "
                  f"{shown}"),
        Parameter(f"{card}.card_type", "string", "SDHC", "MMC card type. Accepted."),
        Parameter(f"{card}.p_fast_access", "bool", "0",
                  "Fast (lazy) access to the image file. Accepted."),
        Parameter(f"{card}.diagnostics", "int", "0",
                  "Diagnostic output level of the card model. Accepted."),
        Parameter(f"{card}.p_max_block_count", "int", "0xFFFF",
                  "Largest block count of one transfer. Accepted."),
        Parameter(f"{card}.support_unpadded_images", "bool", "0",
                  "Accept an image whose size is not a whole number of blocks. Accepted."),
        Parameter(f"{config}.pl180_fifo_depth", "int", "16",
                  "PL180 controller FIFO depth (words). Accepted."),
    ]


def _network_params() -> list[Parameter]:
    smsc, virtio = NETWORK_DEVICES
    forward = ("Port forwards 'host=guest[,host=guest...]' from 127.0.0.1 into the guest (TCP) "
               "while the device and its user-mode networking are enabled; a mapping to guest port "
               "22 reaches the guest sshd.")
    return [
        Parameter(smsc.enabled, "bool", "1",
                  "SMSC LAN91C111 Ethernet (the guest's eth0). On by default in the simulator; "
                  "meta-arm sets it."),
        Parameter(smsc.user_networking, "bool", "0",
                  "User-mode networking for the SMSC Ethernet's host bridge."),
        Parameter(smsc.ports, "string", "", forward),
        Parameter("board.hostbridge.interfaceName", "string", "",
                  "Host TAP interface of the SMSC Ethernet's bridge (bridged networking). "
                  "Accepted; unused."),
        Parameter(virtio.enabled, "bool", "0", "virtio-net Ethernet (the guest's eth1)."),
        Parameter(virtio.user_networking, "bool", "0",
                  "User-mode networking for the virtio-net host bridge."),
        Parameter(virtio.ports, "string", "", forward),
        Parameter("board.virtio_net.hostbridge.interfaceName", "string", "",
                  "Host TAP interface of the virtio-net bridge (bridged networking). Accepted; "
                  "unused."),
        Parameter("board.virtio_net.transport", "string", "legacy",
                  "virtio transport of the device. Accepted."),
    ]


def _build() -> dict[str, Parameter]:
    table: list[Parameter] = []
    for term in TERMINALS:
        table.extend(_terminal_params(term, 5000))
    table += [
        Parameter("host.uart0.out_file", "string", "",
                  "Copy UART0 (host_terminal_0) output to this file; '-' means the model's "
                  "stdout."),
        Parameter("host.uart0.unbuffered_output", "bool", "0",
                  "Flush out_file after every byte. Accepted."),
        Parameter("host.uart1.out_file", "string", "",
                  "Copy UART1 (host_terminal_1) output to this file; '-' means the model's "
                  "stdout."),
        Parameter("host.uart1.unbuffered_output", "bool", "0",
                  "Flush out_file after every byte. Accepted."),
        Parameter("se.uart.out_file", "string", "",
                  "Copy the Secure Enclave UART (secenc_terminal) output to this file; '-' means "
                  "stdout."),
        Parameter("host.ethosu.num_macs", "int", "256",
                  "Ethos-U85 MACs per cycle (128, 256, 512, 1024 or 2048); guest programs see it."),
        Parameter("host.ethosu.extra_args", "string", "",
                  "Extra arguments for the NPU model. Accepted, except "
                  "--fast (-F): refused, the simulator does not model the fast mode's NPU timing."),
        *_network_params(),
        *_mmc_params("board.msd_mmc", "board.msd_config",
                     "The card and its size show in the kernel log."),
        *_mmc_params("board.msd_mmc_2", "board.msd_config_2",
                     "The kernel log does not show this card."),
        Parameter("board.flash0.fname", "string", "",
                  "Flash image (usually given with --data). Accepted."),
        Parameter("board.xnvm_size", "int", "64",
                  "External non-volatile memory size (MiB). Accepted."),
        Parameter("board.se_flash_size", "int", "8192",
                  "Secure Enclave flash size (KiB). Accepted."),
        Parameter("se.trustedBootROMloader.fname", "string", "",
                  "Secure Enclave BL1 ROM image. Accepted."),
        Parameter("se.trustedSRAM_config", "int", "6",
                  "Secure Enclave trusted SRAM configuration. Accepted."),
        Parameter("se.BootROM_config", "int", "3",
                  "Secure Enclave boot ROM configuration. Accepted."),
        Parameter("se.nvm.update_raw_image", "bool", "1",
                  "Write the Secure Enclave's flash changes back into the image file at exit. "
                  "Accepted; the simulator never writes firmware files."),
        Parameter("se.cryptocell.USER_OTP_FILTERING_DISABLE", "bool", "0",
                  "CryptoCell OTP filtering. Accepted."),
        Parameter("se.BootROM.fname", "string", "", "Secure Enclave boot ROM image. Accepted."),
        Parameter("disable_visualisation", "bool", "0",
                  "Disable the LCD/visualisation window. Accepted."),
        Parameter("diagnostics", "int", "0", "Diagnostic output level of the platform. Accepted."),
        Parameter("host.cpu0.semihosting-enable", "bool", "0",
                  "Semihosting on the host CPU. Accepted."),
        Parameter("host.cpu0.CFGEND", "bool", "0", "Big-endian configuration. Accepted."),
        Parameter("host.cpu0.clock_hz", "int", "100000000",
                  "Host CPU clock (simulated): instructions per simulated second, as one per "
                  "tick."),
    ]
    return {p.name: p for p in table}


PARAMETERS: dict[str, Parameter] = _build()


# --- the bare-metal Corstone platforms (Cortex-M + Ethos-U, one application per launch) -----------


@dataclass(frozen=True)
class Board:
    """A bare-metal Corstone FVP: its executable name, parameter prefixes, NPU and parameter table.

    ``cpu`` and ``ethosu`` are the parameter prefixes of the Cortex-M and the Ethos-U (``cpu`` is
    also the ``--stat`` label), ``board`` the MPS3/MPS4 board's (UARTs, telnet terminals,
    visualisation). ``cpu_clock_hz`` turns the application's instructions (one per tick, as an FVP
    issues them) and the NPU's cycles into simulated time; it is the core clock ExecuTorch's default
    Vela system config assumes for the platform (Ethos_U55_High_End_Embedded 500 MHz,
    Ethos_U85_SYS_DRAM_Mid 1 GHz), not a measured FVP clock.
    """

    name: str
    executable: str
    cpu: str
    ethosu: str
    board: str
    npu_family: str
    npu_macs: tuple[int, ...]
    default_macs: int
    cpu_clock_hz: int
    parameters: dict[str, Parameter]
    terminals: tuple[str, ...] = ("telnetterminal0", "telnetterminal1", "telnetterminal2",
                                  "telnetterminal5")

    @property
    def uart0(self) -> str:
        """Prefix of the UART the application's stdout and stderr go to (``<board>.uart0``)."""
        return f"{self.board}.uart0"


def _board_params(board: str, cpu: str, ethosu: str, family: str, macs: tuple[int, ...],
                  default_macs: int, extra: list[Parameter]) -> dict[str, Parameter]:
    """The parameters one bare-metal platform takes: its CPU's semihosting, the Ethos-U, the board's
    UARTs and telnet terminals, plus ``extra`` (what only that platform has)."""
    table = [
        Parameter(f"{cpu}.semihosting-enable", "bool", "0",
                  "Semihosting: the application reads and writes host files (relative to "
                  "semihosting-cwd) and its stdout/stderr and exit() go to the model instead of "
                  "the UART."),
        Parameter(f"{cpu}.semihosting-cmd_line", "string", "",
                  "The application's command line (argv), as SYS_GET_CMDLINE returns it; cut after "
                  "256 characters."),
        Parameter(f"{cpu}.semihosting-cwd", "string", "",
                  "Host directory relative semihosting paths start from (default: the model's "
                  "working directory)."),
        Parameter(f"{cpu}.semihosting-heap_base", "int", "0", "Semihosting heap base. Accepted."),
        Parameter(f"{cpu}.semihosting-heap_limit", "int", "0", "Semihosting heap limit. Accepted."),
        Parameter(f"{cpu}.semihosting-stack_base", "int", "0", "Semihosting stack base. Accepted."),
        Parameter(f"{cpu}.semihosting-stack_limit", "int", "0",
                  "Semihosting stack limit. Accepted."),
        Parameter(f"{cpu}.semihosting-Thumb_SVC", "int", "171",
                  "Semihosting BKPT immediate (0xAB). Accepted."),
        Parameter(f"{cpu}.FPU", "bool", "1", "Floating-point unit present. Accepted."),
        Parameter(f"{cpu}.MVE", "int", "2",
                  "M-profile vector extension (0 none, 1 integer, 2 integer+float). " "Accepted."),
        Parameter(f"{ethosu}.num_macs", "int", str(default_macs),
                  f"{family} MACs per cycle (valid values: {', '.join(map(str, macs))}); a model "
                  "compiled for another configuration fails in the Ethos-U driver.",
                  choices=tuple(map(str, macs))),
        Parameter(f"{ethosu}.extra_args", "string", "",
                  "Extra arguments of the NPU model (--pmu-trace FILE). Accepted and without "
                  "effect, except --fast (-F), which the simulator refuses: it does not model the "
                  "fast mode's NPU timing."),
        Parameter(f"{board}.visualisation.disable-visualisation", "bool", "0",
                  "Disable the board's LCD/visualisation window. Accepted (the simulator opens "
                  "none)."),
        Parameter(f"{board}.DISABLE_GATING", "bool", "0",
                  "Disable the board's clock gating. Accepted."),
    ]
    for i, terminal in enumerate(("telnetterminal0", "telnetterminal1", "telnetterminal2",
                                  "telnetterminal5")):
        p = f"{board}.{terminal}"
        table += [
            Parameter(f"{p}.start_telnet", "bool", "1",
                      "Launch a telnet client on the port. The simulator opens no terminal sockets "
                      "and launches nothing; it prints the port line as the model does."),
            Parameter(f"{p}.mode", "string", "telnet",
                      "Terminal mode ('telnet' or 'raw'). Accepted."),
            Parameter(f"{p}.start_port", "int", str(5000 + i),
                      "First TCP port of the terminal (printed only)."),
            Parameter(f"{p}.quiet", "bool", "0",
                      "Do not print the 'Listening for serial connection' line."),
            Parameter(f"{p}.terminal_command", "string", "",
                      "Command that launches a terminal. Accepted."),
        ]
    for uart in ("uart0", "uart1", "uart2"):
        p = f"{board}.{uart}"
        table += [
            Parameter(f"{p}.out_file", "string", "",
                      "Copy the UART's output to this file; '-' means the model's stdout."
                      + (" The application's stdout and stderr are on this UART." if uart == "uart0"
                         else "")),
            Parameter(f"{p}.in_file", "string", "",
                      "Feed this file to the UART's input. Accepted."),
            Parameter(f"{p}.unbuffered_output", "bool", "0",
                      "Flush out_file after every character. Accepted."),
            Parameter(f"{p}.shutdown_on_eot", "bool", "0",
                      "Stop the simulation when the UART sends an EOT character (0x04)."),
            Parameter(f"{p}.shutdown_tag", "string", "",
                      "Stop the simulation when the UART's output contains this text."),
        ]
    table += extra
    return {p.name: p for p in table}


_U55_MACS = (32, 64, 128, 256)
_U85_MACS = (128, 256, 512, 1024, 2048)

BOARDS: dict[str, Board] = {
    "corstone300": Board(
        "corstone300", "FVP_Corstone_SSE-300_Ethos-U55", "cpu0", "ethosu", "mps3_board",
        "ethos-u55", _U55_MACS, 128, 500_000_000,
        _board_params("mps3_board", "cpu0", "ethosu", "Ethos-U55", _U55_MACS, 128, [
            Parameter("cpu0.CFGITCMSZ", "int", "9", "ITCM size configuration. Accepted."),
            Parameter("cpu0.CFGDTCMSZ", "int", "10", "DTCM size configuration. Accepted."),
        ]),
    ),
    "corstone320": Board(
        "corstone320", "FVP_Corstone_SSE-320", "mps4_board.subsystem.cpu0",
        "mps4_board.subsystem.ethosu", "mps4_board", "ethos-u85", _U85_MACS, 256, 1_000_000_000,
        _board_params("mps4_board", "mps4_board.subsystem.cpu0", "mps4_board.subsystem.ethosu",
                      "Ethos-U85", _U85_MACS, 256, [
            Parameter("vis_hdlcd.disable_visualisation", "bool", "0",
                      "Disable the HDLCD visualisation window. Accepted (the simulator opens "
                      "none)."),
        ]),
    ),
}
"""The bare-metal platforms by name."""

PLATFORMS: dict[str, str] = {
    "corstone1000": "FVP_Corstone-1000-A320",
    **{name: board.executable for name, board in BOARDS.items()},
}
"""Every platform the simulator plays: name -> the real model's executable name."""


def parameters_of(platform: str) -> dict[str, Parameter]:
    """The parameter table of a platform (``PLATFORMS`` name)."""
    board = BOARDS.get(platform)
    return PARAMETERS if board is None else board.parameters


def platform_named(text: str) -> str | None:
    """The platform a name stands for: a ``PLATFORMS`` name (any case) or a real executable name
    (exactly, the way a stand-in executable or a symlink is named); None when it is neither."""
    if text.lower() in PLATFORMS:
        return text.lower()
    for name, executable in PLATFORMS.items():
        if text == executable:
            return name
    return None

_TRUE = {"1", "true", "TRUE", "True"}
_FALSE = {"0", "false", "FALSE", "False"}


def coerce(name: str, value: str, table: Mapping[str, Parameter] | None = None) -> str:
    """Check ``value`` against the parameter's type (and choices) in ``table`` (default: the
    Corstone-1000's) and return its normalised text (bools become '1'/'0').

    Raises ParameterError for an unknown name or a value of the wrong type, with the message the
    model prints.
    """
    param = (PARAMETERS if table is None else table).get(name)
    if param is None:
        raise ParameterError(f'Error: Parameter "{name}" not found in the model (see '
                             '--list-params).')
    if param.type == "bool":
        if value in _TRUE:
            return "1"
        if value in _FALSE:
            return "0"
        raise ParameterError(f'Error: Parameter "{name}": "{value}" is not a valid bool '
                             '(true/false, 1/0).')
    if param.type == "int":
        try:
            text = str(int(value, 0))
        except ValueError:
            raise ParameterError(f'Error: Parameter "{name}": "{value}" is not a valid '
                                 'int.') from None
        if param.choices and text not in param.choices:
            raise ParameterError(
                f'Error: Parameter "{name}": {text} is not a valid value (valid values: '
                f'{", ".join(param.choices)}).'
            )
        return text
    return value


def format_listing(table: Mapping[str, Parameter] | None = None) -> str:
    """The ``--list-params`` text of ``table`` (default: the Corstone-1000's): ``name=default  #
    (type, init-time) default = '...' : description`` per line, the shape real models print, so it
    can be parsed the same way."""
    params = PARAMETERS if table is None else table
    width = max(len(f"{p.name}={p.default}") for p in params.values()) + 2
    lines = []
    for p in params.values():
        head = f"{p.name}={p.default}".ljust(width)
        lines.append(f"{head}# ({p.type:<6}, init-time) default = '{p.default}' : {p.description}")
    return "\n".join(lines) + "\n"
