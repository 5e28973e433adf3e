"""The model's parameter table: every ``-C name=value`` the simulated FVP_Corstone-1000-A320 accepts.

A real model rejects a parameter it does not know, which is what catches a scenario typo early; so the
simulator keeps an explicit table (name, type, default, description) instead of accepting anything. Parameters
that change behaviour are marked in their description; the others are accepted and recorded
(``GuestContext.params``) so scenarios written for the real model run unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "MMC_CARDS",
    "NETWORK_DEVICES",
    "PARAMETERS",
    "TERMINALS",
    "NetworkDevice",
    "Parameter",
    "ParameterError",
    "Terminal",
    "coerce",
    "format_listing",
]


class ParameterError(ValueError):
    """A ``-C`` parameter that the model does not have, or a value of the wrong type."""


@dataclass(frozen=True)
class Parameter:
    """One model parameter: its dotted name, type (``bool``, ``int`` or ``string``), default and meaning."""

    name: str
    type: str
    default: str
    description: str


@dataclass(frozen=True)
class Terminal:
    """A TelnetTerminal component: its banner name (what the port line says) and its parameter prefix."""

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
    """A network interface of the board with its own host bridge: the guest is reachable through ``ports``
    (``host=guest`` forwards) only while ``enabled`` and ``user_networking`` are both true."""

    name: str
    enabled: str
    user_networking: str
    ports: str


NETWORK_DEVICES: tuple[NetworkDevice, ...] = (
    NetworkDevice("smsc_91c111", "board.smsc_91c111.enabled", "board.hostbridge.userNetworking",
                  "board.hostbridge.userNetPorts"),
    NetworkDevice("virtio_net", "board.virtio_net.enabled", "board.virtio_net.hostbridge.userNetworking",
                  "board.virtio_net.hostbridge.userNetPorts"),
)
"""The guest's two network devices (eth0: SMSC LAN91C111, eth1: virtio-net), as meta-arm configures them."""

MMC_CARDS: tuple[str, ...] = ("board.msd_mmc", "board.msd_mmc_2")
"""The two PL180 MMC card slots (``<slot>.p_mmc_file`` and friends)."""


def _terminal_params(term: Terminal, port: int) -> list[Parameter]:
    p = term.prefix
    return [
        Parameter(f"{p}.start_telnet", "bool", "1",
                  "Start a telnet client on the port. The simulator launches none; it only listens."),
        Parameter(f"{p}.mode", "string", "telnet",
                  "Terminal mode: 'telnet' (telnet negotiation, IAC escaping) or 'raw' (bytes as they are)."),
        Parameter(f"{p}.start_port", "int", str(port),
                  "First TCP port to listen on; if it is in use, the next port up is tried."),
        Parameter(f"{p}.quiet", "bool", "0", "Do not print the 'Listening for serial connection' line."),
        Parameter(f"{p}.terminal_command", "string", "",
                  "Command to launch a terminal. Accepted and ignored: the simulator launches nothing."),
    ]


def _mmc_params(card: str, config: str, shown: str) -> list[Parameter]:
    """One MMC card slot and its PL180 controller configuration (``msd_mmc`` / ``msd_config``)."""
    return [
        Parameter(f"{card}.p_mmc_file", "string", "",
                  "Mass-storage image for this PL180 MMC slot; a file that cannot be opened leaves the slot "
                  f"empty, with a warning (meta-arm passes 'invalid.dat' on purpose). {shown}"),
        Parameter(f"{card}.card_type", "string", "SDHC", "MMC card type. Accepted."),
        Parameter(f"{card}.p_fast_access", "bool", "0", "Fast (lazy) access to the image file. Accepted."),
        Parameter(f"{card}.diagnostics", "int", "0", "Diagnostic output level of the card model. Accepted."),
        Parameter(f"{card}.p_max_block_count", "int", "0xFFFF", "Largest block count of one transfer. Accepted."),
        Parameter(f"{card}.support_unpadded_images", "bool", "0",
                  "Accept an image whose size is not a whole number of blocks. Accepted."),
        Parameter(f"{config}.pl180_fifo_depth", "int", "16", "PL180 controller FIFO depth (words). Accepted."),
    ]


def _network_params() -> list[Parameter]:
    smsc, virtio = NETWORK_DEVICES
    forward = ("Port forwards 'host=guest[,host=guest...]' from 127.0.0.1 into the guest (TCP) while the "
               "device and its user-mode networking are enabled; a mapping to guest port 22 reaches the "
               "guest sshd.")
    return [
        Parameter(smsc.enabled, "bool", "1",
                  "SMSC LAN91C111 Ethernet (the guest's eth0). On by default in the simulator; meta-arm sets it."),
        Parameter(smsc.user_networking, "bool", "0", "User-mode networking for the SMSC Ethernet's host bridge."),
        Parameter(smsc.ports, "string", "", forward),
        Parameter("board.hostbridge.interfaceName", "string", "",
                  "Host TAP interface of the SMSC Ethernet's bridge (bridged networking). Accepted; unused."),
        Parameter(virtio.enabled, "bool", "0", "virtio-net Ethernet (the guest's eth1)."),
        Parameter(virtio.user_networking, "bool", "0", "User-mode networking for the virtio-net host bridge."),
        Parameter(virtio.ports, "string", "", forward),
        Parameter("board.virtio_net.hostbridge.interfaceName", "string", "",
                  "Host TAP interface of the virtio-net bridge (bridged networking). Accepted; unused."),
        Parameter("board.virtio_net.transport", "string", "legacy", "virtio transport of the device. Accepted."),
    ]


def _build() -> dict[str, Parameter]:
    table: list[Parameter] = []
    for term in TERMINALS:
        table.extend(_terminal_params(term, 5000))
    table += [
        Parameter("host.uart0.out_file", "string", "",
                  "Copy UART0 (host_terminal_0) output to this file; '-' means the model's stdout."),
        Parameter("host.uart0.unbuffered_output", "bool", "0", "Flush out_file after every byte. Accepted."),
        Parameter("host.uart1.out_file", "string", "",
                  "Copy UART1 (host_terminal_1) output to this file; '-' means the model's stdout."),
        Parameter("host.uart1.unbuffered_output", "bool", "0", "Flush out_file after every byte. Accepted."),
        Parameter("se.uart.out_file", "string", "",
                  "Copy the Secure Enclave UART (secenc_terminal) output to this file; '-' means stdout."),
        Parameter("host.ethosu.num_macs", "int", "256",
                  "Ethos-U85 MACs per cycle (128, 256, 512, 1024 or 2048); guest programs see it."),
        Parameter("host.ethosu.extra_args", "string", "", "Extra arguments for the NPU model. Accepted."),
        *_network_params(),
        *_mmc_params("board.msd_mmc", "board.msd_config", "The card and its size show in the kernel log."),
        *_mmc_params("board.msd_mmc_2", "board.msd_config_2", "The kernel log does not show this card."),
        Parameter("board.flash0.fname", "string", "", "Flash image (usually given with --data). Accepted."),
        Parameter("board.xnvm_size", "int", "64", "External non-volatile memory size (MiB). Accepted."),
        Parameter("board.se_flash_size", "int", "8192", "Secure Enclave flash size (KiB). Accepted."),
        Parameter("se.trustedBootROMloader.fname", "string", "", "Secure Enclave BL1 ROM image. Accepted."),
        Parameter("se.trustedSRAM_config", "int", "6", "Secure Enclave trusted SRAM configuration. Accepted."),
        Parameter("se.BootROM_config", "int", "3", "Secure Enclave boot ROM configuration. Accepted."),
        Parameter("se.nvm.update_raw_image", "bool", "1",
                  "Write the Secure Enclave's flash changes back into the image file at exit. Accepted; the "
                  "simulator never writes firmware files."),
        Parameter("se.cryptocell.USER_OTP_FILTERING_DISABLE", "bool", "0",
                  "CryptoCell OTP filtering. Accepted."),
        Parameter("se.BootROM.fname", "string", "", "Secure Enclave boot ROM image. Accepted."),
        Parameter("disable_visualisation", "bool", "0", "Disable the LCD/visualisation window. Accepted."),
        Parameter("diagnostics", "int", "0", "Diagnostic output level of the platform. Accepted."),
        Parameter("host.cpu0.semihosting-enable", "bool", "0", "Semihosting on the host CPU. Accepted."),
        Parameter("host.cpu0.CFGEND", "bool", "0", "Big-endian configuration. Accepted."),
        Parameter("host.cpu0.clock_hz", "int", "100000000",
                  "Host CPU clock (simulated): instructions per simulated second, as one per tick."),
    ]
    return {p.name: p for p in table}


PARAMETERS: dict[str, Parameter] = _build()

_TRUE = {"1", "true", "TRUE", "True"}
_FALSE = {"0", "false", "FALSE", "False"}


def coerce(name: str, value: str) -> str:
    """Check ``value`` against the parameter's type and return its normalised text (bools become '1'/'0').

    Raises ParameterError for an unknown name or a value of the wrong type, with the message the model prints.
    """
    param = PARAMETERS.get(name)
    if param is None:
        raise ParameterError(f'Error: Parameter "{name}" not found in the model (see --list-params).')
    if param.type == "bool":
        if value in _TRUE:
            return "1"
        if value in _FALSE:
            return "0"
        raise ParameterError(f'Error: Parameter "{name}": "{value}" is not a valid bool (true/false, 1/0).')
    if param.type == "int":
        try:
            return str(int(value, 0))
        except ValueError:
            raise ParameterError(f'Error: Parameter "{name}": "{value}" is not a valid int.') from None
    return value


def format_listing() -> str:
    """The ``--list-params`` text: ``name=default  # (type, init-time) default = '...' : description`` per
    line, the shape real models print, so it can be parsed the same way."""
    width = max(len(f"{p.name}={p.default}") for p in PARAMETERS.values()) + 2
    lines = []
    for p in PARAMETERS.values():
        head = f"{p.name}={p.default}".ljust(width)
        lines.append(f"{head}# ({p.type:<6}, init-time) default = '{p.default}' : {p.description}")
    return "\n".join(lines) + "\n"
