"""The model's parameter table: every ``-C name=value`` the simulated FVP_Corstone-1000-A320 accepts.

A real model rejects a parameter it does not know, which is what catches a scenario typo early; so the
simulator keeps an explicit table (name, type, default, description) instead of accepting anything. Parameters
that change behaviour are marked in their description; the others are accepted and recorded
(``GuestContext.params``) so scenarios written for the real model run unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PARAMETERS", "TERMINALS", "Parameter", "ParameterError", "Terminal", "coerce", "format_listing"]


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
        Parameter("board.hostbridge.userNetworking", "bool", "0",
                  "User-mode networking: userNetPorts mappings to guest port 22 reach the guest sshd."),
        Parameter("board.hostbridge.userNetPorts", "string", "",
                  "Port forwards 'host=guest[,host=guest...]' from 127.0.0.1 into the guest (TCP)."),
        Parameter("board.msd_mmc.p_mmc_file", "string", "",
                  "Mass-storage image for the PL180 MMC; must exist; its size shows in the kernel log."),
        Parameter("board.msd_mmc.card_type", "string", "SDHC", "MMC card type. Accepted."),
        Parameter("board.flash0.fname", "string", "", "Flash image (usually given with --data). Accepted."),
        Parameter("se.trustedBootROMloader.fname", "string", "", "Secure Enclave BL1 ROM image. Accepted."),
        Parameter("se.cryptocell.USER_OTP_FILTERING_DISABLE", "bool", "0",
                  "CryptoCell OTP filtering. Accepted."),
        Parameter("se.BootROM.fname", "string", "", "Secure Enclave boot ROM image. Accepted."),
        Parameter("disable_visualisation", "bool", "0", "Disable the LCD/visualisation window. Accepted."),
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
