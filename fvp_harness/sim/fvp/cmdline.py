"""The model's command line, shaped like a Fast Models FVP's so the harness builds the same argv for
both.

Accepted: ``-C/--parameter NAME=VALUE`` (repeatable), ``-f/--config-file FILE`` (``NAME=VALUE``
lines, ``#`` comments), ``--data [INSTANCE=]FILE@ADDRESS``, ``-a/--application [INSTANCE=]FILE``,
``--stat``, ``--timelimit N`` (host seconds), ``--simlimit N`` (simulated seconds), ``--version``,
``-h/--help``, ``-l/--list-params``, ``-q/--quiet``, plus the simulator's own ``--sim NAME=VALUE``
knobs and ``--platform NAME``. An unknown parameter or option ends the model with a message and exit
status 1 before anything starts, which is what makes a scenario typo visible.

Which model is played (``Options.platform``): ``--platform corstone1000|corstone300|corstone320``
(or a real executable name), else the name the program was started under (``platform_for_program``:
a symlink or copy named ``FVP_Corstone_SSE-320`` plays the Corstone-320), else the
Corstone-1000-A320. Each platform has its own parameter table (``params.parameters_of``). On the
bare-metal platforms a ``-C`` value in one pair of matching quotes loses them (``-C
mps3_board.uart0.out_file='-'`` from an argv list, as ``backends/arm/test/runner_utils.py`` passes
it, means ``-``), as the real models read it; the Corstone-1000's values are taken as given,
unchanged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from fvp_harness.sim.fvp.params import (
    BOARDS,
    PLATFORMS,
    ParameterError,
    coerce,
    parameters_of,
    platform_named,
)

__all__ = [
    "MODEL_NAME",
    "USAGE",
    "CmdlineError",
    "Options",
    "parse_args",
    "platform_for_program",
    "usage",
    "version_banner",
]

MODEL_NAME = "FVP_Corstone-1000-A320"
FAST_MODELS_VERSION = "11.30.27"


class CmdlineError(ValueError):
    """A command line the model refuses; the message is what it prints."""


USAGE = f"""\
Usage: {MODEL_NAME} [OPTION]...
A simulated Corstone-1000 A320 FVP (fvp-harness sim). Options are those of a Fast Models FVP:

  -C, --parameter NAME=VALUE   set a model parameter (repeatable); see --list-params
  -f, --config-file FILE       read NAME=VALUE parameter lines from FILE
      --data [INST=]FILE@ADDR  load FILE into memory at ADDR (accepted, checked to exist)
  -a, --application [INST=]FILE  load an application (accepted, checked to exist)
      --stat                   print statistics when the simulation ends
      --timelimit N            stop after N seconds of host time
      --simlimit N             stop after N seconds of simulated time
  -l, --list-params            list every parameter with its default and exit
  -q, --quiet                  accepted (the simulator prints little anyway)
      --version                print the version banner and exit
  -h, --help                   print this help and exit
      --sim NAME=VALUE         simulator knob (also FVP_SIM_NAME=VALUE in the environment);
                               see docs/simulator.md
"""


@dataclass
class Options:
    """A parsed command line. ``params`` holds every parameter (defaults filled in) as normalised
    strings."""

    params: dict[str, str] = field(default_factory=dict)
    given: dict[str, str] = field(default_factory=dict)
    data: list[str] = field(default_factory=list)
    applications: list[str] = field(default_factory=list)
    stat: bool = False
    timelimit: float | None = None
    simlimit: float | None = None
    sim: list[str] = field(default_factory=list)
    action: str = "run"  # run | help | version | list-params
    quiet: bool = False
    # the parent at start-up, for the parent-death watch
    parent_pid: int = field(default_factory=os.getppid)
    platform: str = "corstone1000"  # a params.PLATFORMS name

    @property
    def model_name(self) -> str:
        """The real model's executable name (what ``--stat`` and ``--version`` call it)."""
        return PLATFORMS[self.platform]


def platform_for_program(argv0: str) -> str | None:
    """The platform a program name plays (``FVP_Corstone_SSE-320`` -> ``corstone320``), or None."""
    return platform_named(os.path.basename(argv0)) if argv0 else None


def usage(platform: str = "corstone1000") -> str:
    """The ``--help`` text of a platform."""
    if platform == "corstone1000":
        return USAGE
    name = PLATFORMS[platform]
    return f"""\
Usage: {name} [OPTION]...
A simulated {name} (fvp-harness sim): a bare-metal Cortex-M with an Ethos-U that runs one emulated
arm_executor_runner (fvp-harness sim baremetal-runner). Options are those of a Fast Models FVP:

  -C, --parameter NAME=VALUE      set a model parameter (repeatable); see --list-params
  -f, --config-file FILE          read NAME=VALUE parameter lines from FILE
  -a, --application [INST=]FILE   the application to run (an emulated arm_executor_runner)
  --data [INST=]FILE@ADDR         load FILE into memory at ADDR \
(e.g. a model for an ET_MODEL_PTE_ADDR build)
  --stat                          print statistics when the simulation ends
  --timelimit N                   stop after N seconds of host time
  --simlimit N                    stop after N seconds of simulated time
  -l, --list-params               list every parameter with its default and exit
  -q, --quiet                     accepted
  --version                       print the version banner and exit
  -h, --help                      print this help and exit
  --platform NAME                 the platform to play (corstone1000, corstone300, corstone320)
  --sim NAME=VALUE                simulator knob (also FVP_SIM_NAME=VALUE); see docs/simulator.md
"""


def version_banner(model_name: str = MODEL_NAME, fast_models: str | None = None) -> str:
    """The ``--version`` text: a Fast Models style banner that says plainly it is a simulation.
    ``fast_models``: the Fast Models version of the image's release (default
    ``FAST_MODELS_VERSION``)."""
    try:
        from importlib.metadata import version

        ours = version("fvp-harness")
    except Exception:  # not installed as a distribution (e.g. run from a source tree)
        ours = "unknown"
    return (
        f"Fast Models [{fast_models or FAST_MODELS_VERSION} (simulated by fvp-harness sim)]\n"
        f"{model_name} simulator from fvp-harness {ours}; not an Arm product.\n"
    )


def _value(argv: list[str], i: int, opt: str) -> tuple[str, int]:
    """The value of option ``argv[i]``: either attached (``--opt=v``, ``-Cv``) or the next word."""
    word = argv[i]
    if word.startswith("--") and "=" in word:
        return word.split("=", 1)[1], i + 1
    if not word.startswith("--") and len(word) > 2:
        return word[2:], i + 1
    if i + 1 >= len(argv):
        raise CmdlineError(f"Error: option {opt} needs a value.\n{USAGE}")
    return argv[i + 1], i + 2


def _unquote(value: str) -> str:
    """One pair of matching quotes around a value is dropped (an argv list passing ``'-'``
    literally)."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _set_param(opts: Options, text: str) -> None:
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep:
        raise CmdlineError(f'Error: parameter "{text}" has no value (expected NAME=VALUE).')
    value = value.strip()
    if opts.platform in BOARDS:
        value = _unquote(value)
    try:
        opts.params[name] = coerce(name, value, parameters_of(opts.platform))
    except ParameterError as exc:
        raise CmdlineError(str(exc)) from None
    opts.given[name] = opts.params[name]


def _file_arg(text: str, opt: str, with_address: bool) -> None:
    path = text.split("=", 1)[1] if "=" in text else text
    if with_address:
        path, at, _addr = path.rpartition("@")
        if not at:
            raise CmdlineError(f"Error: {opt} {text}: expected [INSTANCE=]FILE@ADDRESS.")
    if not os.path.isfile(path):
        raise CmdlineError(f"Error: {opt}: cannot open file '{path}'.")


def _number(text: str, opt: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise CmdlineError(f"Error: {opt} expects a number of seconds, got '{text}'.") from None
    if value <= 0:
        raise CmdlineError(f"Error: {opt} must be positive.")
    return value


def _platform_option(argv: list[str], platform: str) -> str:
    """The ``--platform`` given anywhere on the command line (the last one wins), else
    ``platform``."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--platform" or word.startswith("--platform="):
            value, i = _value(argv, i, "--platform")
            found = platform_named(value)
            if found is None:
                raise CmdlineError(f"Error: --platform {value}: not a simulated platform "
                                   f"(known: {', '.join(PLATFORMS)}, or an executable name).")
            platform = found
        elif word in ("-C", "--parameter", "-f", "--config-file", "--data", "-a", "--application",
                      "--timelimit", "--simlimit", "--sim"):
            i += 2  # an option's separate value is never taken for --platform
        else:
            i += 1
    return platform


FAST_MODE_FLAGS = ("--fast", "-F")
"""The NPU model's fast mode (``ethosu.extra_args``; backends/arm/test/runner_utils.py:606,640
passes it)."""


def _refuse_fast_mode(opts: Options) -> None:
    """Refuse the NPU's fast mode rather than ignore it: the real model runs the NPU without its
    timing adapters then (run_fvp.sh:241 filters the lines it prints about them), so its NPU cycles
    change, and the simulator has no model of that change. Silently accepting it would print cycle
    counts the real model would not."""
    for name, value in opts.params.items():
        if (name.endswith("ethosu.extra_args") and
            any(word in FAST_MODE_FLAGS for word in value.split())):
            raise CmdlineError(
                f'Error: Parameter "{name}": {value.strip()!r}: the simulator does not model the '
                'NPU\'s fast mode '
                "(the real model then runs without its timing adapters and its NPU cycles change); "
                "drop --fast to measure NPU cycles (fvp-harness sim)."
            )


def parse_args(argv: list[str], platform: str = "corstone1000") -> Options:
    """Parse a model command line (without the program name) for ``platform`` (a ``--platform``
    option wins). Raises CmdlineError with the model's message."""
    platform = _platform_option(argv, platform)
    table = parameters_of(platform)
    opts = Options(params={p.name: p.default for p in table.values()}, platform=platform)
    # normalise the defaults the same way given values are normalised
    opts.params = {name: coerce(name, value, table) for name, value in opts.params.items()}
    i = 0
    while i < len(argv):
        word = argv[i]
        head = word.split("=", 1)[0] if word.startswith("--") else word[:2]
        if head in ("-C", "--parameter"):
            value, i = _value(argv, i, head)
            _set_param(opts, value)
        elif head in ("-f", "--config-file"):
            value, i = _value(argv, i, head)
            try:
                with open(value, encoding="utf-8") as fh:
                    lines = fh.read().splitlines()
            except OSError as exc:
                raise CmdlineError(f"Error: cannot read config file '{value}': "
                                   f"{exc.strerror}.") from None
            for line in lines:
                line = line.split("#", 1)[0].strip()
                if line:
                    _set_param(opts, line)
        elif head == "--data":
            value, i = _value(argv, i, head)
            _file_arg(value, head, with_address=True)
            opts.data.append(value)
        elif head in ("-a", "--application"):
            value, i = _value(argv, i, head)
            _file_arg(value, head, with_address=False)
            opts.applications.append(value)
        elif head == "--timelimit":
            value, i = _value(argv, i, head)
            opts.timelimit = _number(value, head)
        elif head == "--simlimit":
            value, i = _value(argv, i, head)
            opts.simlimit = _number(value, head)
        elif head == "--sim":
            value, i = _value(argv, i, head)
            opts.sim.append(value)
        elif head == "--platform":
            _, i = _value(argv, i, head)  # read by _platform_option
        elif word == "--stat":
            opts.stat = True
            i += 1
        elif word in ("-q", "--quiet"):
            opts.quiet = True
            i += 1
        elif word in ("-h", "--help"):
            opts.action = "help"
            i += 1
        elif word == "--version":
            opts.action = "version"
            i += 1
        elif word in ("-l", "--list-params"):
            opts.action = "list-params"
            i += 1
        else:
            raise CmdlineError(f"Error: unrecognised option '{word}'.\n{usage(platform)}")
    _refuse_fast_mode(opts)
    if platform != "corstone1000":
        return opts
    # Firmware the real model cannot start without. A missing MMC image is not an error: the slot
    # stays empty (meta-arm's A320 config passes board.msd_mmc.p_mmc_file=invalid.dat to boot
    # without a card).
    for name in ("se.trustedBootROMloader.fname", "board.flash0.fname"):
        path = opts.params[name]
        if opts.action == "run" and path and not os.path.isfile(path):
            raise CmdlineError(f"Error: {name}: cannot open file '{path}'.")
    for term in ("host.host_terminal_0", "host.host_terminal_1", "se.secenc_terminal"):
        mode = opts.params[f"{term}.mode"]
        if mode not in ("telnet", "raw"):
            raise CmdlineError(f'Error: Parameter "{term}.mode": "{mode}" is not telnet or raw.')
        port = int(opts.params[f"{term}.start_port"])
        if not 0 < port < 65536:
            raise CmdlineError(f'Error: Parameter "{term}.start_port": {port} is not a TCP port.')
    return opts
