"""Platform profiles: what the harness must know about one kind of FVP, kept as YAML data beside
this module.

A profile says which executables are the model, which -C parameters to pass by default, which
terminals it announces and which one is the Linux console, how to find the ports, how to log in, and
which patterns mean failure. The harness reads only the profile (never hard-coded platform facts),
so a new platform is a new YAML file.

Three kinds (``kind``): ``linux`` platforms boot once per session and run units in a guest shell
(terminals, console, login); ``qemu`` platforms are Linux guests too, but QEMU is launched natively:
``args`` is its command line (``{ssh_port}`` becomes the host port forwarded to the guest's sshd),
firmware inputs are ``option``s such as ``-kernel``, and the one socket console is announced by a
banner with a single (port) group, since QEMU names no terminal; ``baremetal`` platforms
(Corstone-300/320) run one program per model launch: the runner ELF is the application (``-a``), its
UART goes to the model's stdout (``<uart>.out_file=-``), and the launch ends when the program sends
EOT (``shutdown_on_eot``) or the model exits. Only the fields of a profile's kind are required.

Loader: ``load_profile(name_or_path)`` (a built-in name such as ``corstone1000-a320``, or a path to
a YAML file); listing: ``list_profiles()``. Profile files get the same ``file:line:col`` error
messages as scenarios.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from fvp_harness.errors import ConfigurationError
from fvp_harness.located import (
    YamlProblem,
    compose_bytes,
    did_you_mean,
    display_path,
    read_limited,
    reading_settings,
    validation_problems,
)

__all__ = [
    "BootStage",
    "FirmwareInput",
    "Profile",
    "ProfileNotFound",
    "builtin_profile_path",
    "list_profiles",
    "load_profile",
]

ParamValue = str | int | float | bool


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FirmwareInput(_Strict):
    """A file a real model needs from the user (not shipped by anybody but Arm's release), e.g. the
    SE boot ROM.

    Exactly one of ``param`` (becomes ``-C <param>=<path>``) or ``data`` (becomes ``--data
    <data>=<path>@<address>``).
    """

    description: str
    param: str | None = None
    data: str | None = None
    address: str | None = None
    option: str | None = Field(
        None,
        description="A QEMU option the file follows (-kernel, -initrd): becomes `<option> <path>`."
    )
    required: bool = Field(
        True, description="A real model cannot boot without it; validation fails when absent."
    )

    @model_validator(mode="after")
    def _one_way_in(self) -> FirmwareInput:
        if sum(way is not None for way in (self.param, self.data, self.option)) != 1:
            raise ValueError(
                "give exactly one of `param` (-C name=path), `data` (--data name=path@address) or "
                "`option` (QEMU: -kernel path)"
            )
        if self.data is not None and self.address is None:
            raise ValueError("`data` needs an `address` (e.g. 0x68000000)")
        return self


class BootStage(_Strict):
    """A recognisable boot milestone; the last one seen is named when boot times out."""

    name: str
    pattern: str
    terminal: str | None = None  # None: any terminal


_DEFAULT_BANNER = r"([\w-]+): Listening for serial connection on port (\d+)"


class Profile(_Strict):
    """Everything platform-specific the target layer needs: argv defaults, terminals, banners,
    prompts, patterns."""

    name: str
    description: str = ""
    kind: Literal["linux", "qemu", "baremetal"] = Field(
        "linux",
        description="linux: boot once, log in, run units in the guest shell; qemu: the same guest "
                    "session, QEMU "
        "launched with `args` as its command line; baremetal: one model launch per unit with the "
        "runner ELF as the application (-a), its UART on the model's stdout.",
    )
    executables: list[str] = Field(description="Executable names of the real model, tried in order "
                                               "on PATH.")
    params: dict[str, ParamValue] = Field(default_factory=dict,
                                          description="Default -C parameters.")
    args: list[str] = Field(default_factory=list, description="Default extra options.")
    terminals: dict[str, str] = Field(
        default_factory=dict,
        description="Announced terminal name -> its -C parameter prefix "
        "(e.g. host_terminal_0: host.host_terminal_0). Required for linux profiles.",
    )
    console: str = Field("",
                         description="The terminal carrying the Linux console (login, commands); "
                                     "linux only.")
    terminal_mode: Literal["raw", "telnet"] = "raw"
    port_banner: str = Field(
        _DEFAULT_BANNER,
        description="Regex with groups (terminal name, port), searched anywhere in a line."
    )
    login_prompts: list[str] = Field(
        default_factory=list,
        description="Regexes of the getty prompt (several releases); required for linux."
    )
    login_incorrect: str = "Login incorrect"
    user: str = "root"
    password: str | None = None
    shell_prompt: str = Field(
        r"[#$] ?$", description="Regex of a shell prompt at the end of the console buffer."
    )
    failure_patterns: list[str] = Field(
        default_factory=list,
        description="Regexes that fail the instance at once, on any console, for its whole life (a "
                    "kernel panic).",
    )
    boot_failure_patterns: list[str] = Field(
        default_factory=list,
        description="Regexes that fail the boot at once, on any console, until the shell is ready "
                    "(meta-arm's boot "
        "check); afterwards such text is program output, e.g. a runner's own `ERROR: ...`, which "
        "fails its unit.",
    )
    benign_patterns: list[str] = Field(
        default_factory=list, description="Known-harmless lines, never failures."
    )
    boot_stages: list[BootStage] = Field(default_factory=list)
    firmware: dict[str, FirmwareInput] = Field(default_factory=dict)
    ssh_forward_params: list[str] = Field(
        default_factory=lambda: ["board.hostbridge.userNetPorts"],
        description="-C parameters carrying host=guest port forwards (one per network device), in "
                    "the order the "
        "harness tries them for SSH; each gets its own free host port per instance. The single key "
        "`ssh_forward_param` of older profile files is read as a one-item list (null: none).",
    )
    ssh_forward_enabled_by: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Forward parameter -> the boolean -C parameters that switch its network device "
                    "on; when one "
        "of them is false in the launch parameters, that forward is still rewritten but not "
        "connected to.",
    )
    ssh_guest_port: int = 22
    npu_macs_param: str | None = "host.ethosu.num_macs"
    npu_family: str | None = Field(
        None,
        description="The NPU the platform has, as Vela and ExecuTorch spell it (ethos-u55, "
        "ethos-u85); none: the platform has no Ethos-U, and an Ethos-U-delegated program is "
        "refused before anything boots.",
    )
    architecture: Literal["aarch64", "arm"] | None = Field(
        None,
        description="The CPU the runner executes on, as its ELF header names it: aarch64 (64-bit "
        "Arm, the Cortex-A of Linux platforms) or arm (32-bit Arm, the Cortex-M of bare-metal "
        "platforms). A runner ELF for another machine is refused before anything boots; none: not "
        "checked. No part of a unit's content key.",
    )
    npu_macs: list[int] = Field(
        default_factory=list,
        description="The MAC configurations the NPU can be set to (values of npu_macs_param); "
                    "empty: not checked.",
    )
    # -- bare-metal platforms (kind: baremetal) ----------------------------------------------------
    sim_platform: str | None = Field(
        None,
        description="What the embedded simulator plays for this profile (its --platform option)."
    )
    uart: str | None = Field(
        None,
        description="-C prefix of the UART the program prints on (e.g. mps4_board.uart0); its "
                    "out_file must be `-` "
        "(the model's stdout, where the harness reads the program) and shutdown_on_eot ends the "
        "launch at EOT.",
    )
    semihosting: str | None = Field(
        None,
        description="-C prefix of the CPU's semihosting parameters (e.g. "
                    "mps4_board.subsystem.cpu0, or cpu0): "
        "<prefix>.semihosting-enable, -stack_base, -heap_limit, -cwd and -cmd_line.",
    )
    cmd_line_limit: int = Field(
        256, gt=0,
        description="Longest semihosting command line (upstream's runner_utils refuses longer "
                    "ones: the "
        "model truncates them)."
    )
    data_address: str | None = Field(
        None,
        description="Where `data_address: true` places the model file (--data FILE@ADDRESS): the "
                    "runner built with "
        "ET_MODEL_PTE_ADDR reads it there.",
    )
    timelimit: float | None = Field(
        None, gt=0,
        description="--timelimit seconds for every launch (scenario fvp.timelimit overrides it)."
    )
    timelimit_patterns: list[str] = Field(
        default_factory=list,
        description="Regexes of the model's own stop at --timelimit (a TimeLimitExceeded "
                    "infrastructure failure).",
    )
    error_patterns: list[str] = Field(
        default_factory=list,
        description="Regexes of lines a failing program prints (upstream's scripts grep them): the "
                    "unit fails as a "
        "test failure. failure_patterns (a hard fault) fail the launch as infrastructure instead.",
    )
    start_failure_patterns: list[str] = Field(
        default_factory=list,
        description="Regexes of the model refusing to start (a licence check): FvpStartError.",
    )
    program_pattern: str | None = Field(
        None,
        description="Regex of a line the program prints (an ExecuTorch log line): a model that "
                    "exits with an error "
        "before the first one failed to start (FvpStartError); after it, it died while the program "
        "ran (FvpDied).",
    )
    boot_timeout: float = 600.0
    stop_signal: Literal["SIGINT", "SIGTERM"] = Field(
        "SIGINT",
        description="The polite stop: SIGINT (the model prints --stat and exits, as on Ctrl-C; "
                    "then SIGTERM, then "
        "SIGKILL) or SIGTERM (meta-arm's stop, lib/fvp/runner.py:112-121: SIGTERM, stop_timeout, "
        "SIGKILL).",
    )
    stop_timeout: float = Field(
        10.0,
        gt=0,
        description="Seconds to wait after the polite stop signal before SIGTERM (SIGKILL when the "
                    "stop signal is "
        "SIGTERM) of the group.",
    )
    version_pattern: str = Field(
        r"Fast Models \[([^\]]+)\]",
        description="Regex over `--version` output; group 1 is the version recorded.",
    )
    params_option: str | None = Field(
        "--list-params",
        description="The option that lists the model's parameters (doctor checks every -C against "
                    "it); null: the "
        "program has none (QEMU).",
    )

    @model_validator(mode="before")
    @classmethod
    def _legacy_ssh_forward_param(cls, data: object) -> object:
        """``ssh_forward_param: NAME`` (older profiles) is ``ssh_forward_params: [NAME]``; null is
        ``[]``."""
        if isinstance(data, dict) and "ssh_forward_param" in data:
            data = dict(data)
            legacy = data.pop("ssh_forward_param")
            if "ssh_forward_params" in data:
                raise ValueError("give ssh_forward_params (a list) or the older ssh_forward_param, "
                                 "not both")
            data["ssh_forward_params"] = [] if legacy is None else [legacy]
        return data

    @property
    def ssh_forward_param(self) -> str | None:
        """The first forward parameter (what older code and profiles called the one forward), or
        None."""
        return self.ssh_forward_params[0] if self.ssh_forward_params else None

    def ssh_forward_live(self, name: str, params: dict[str, str]) -> bool:
        """False when ``params`` (the launch's -C values as text) switch off the device of forward
        ``name``."""
        return not any(params.get(switch, "").strip().lower() in _OFF
                       for switch in self.ssh_forward_enabled_by.get(name, []))

    @field_validator("port_banner")
    @classmethod
    def _banner_has_groups(cls, value: str) -> str:
        if _compile(value).groups < 1:
            raise ValueError("port_banner needs two groups, (terminal name) and (port), or (port) "
                             "alone when the platform has one terminal")
        return value

    @field_validator("login_prompts", "failure_patterns", "boot_failure_patterns",
                     "benign_patterns",
                     "timelimit_patterns", "error_patterns", "start_failure_patterns")
    @classmethod
    def _regexes_compile(cls, value: list[str]) -> list[str]:
        for pattern in value:
            _compile(pattern)
        return value

    @field_validator("program_pattern")
    @classmethod
    def _program_pattern_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            _compile(value)
        return value

    @property
    def qemu(self) -> bool:
        """True for a QEMU platform (``args`` is QEMU's command line; no -C parameters, no
        --stat)."""
        return self.kind == "qemu"

    @property
    def baremetal(self) -> bool:
        """True for a bare-metal platform (one model launch per unit)."""
        return self.kind == "baremetal"

    @model_validator(mode="after")
    def _what_the_kind_needs(self) -> Profile:
        if self.baremetal:
            if not self.uart:
                raise ValueError("a baremetal profile needs `uart` (the -C prefix of the UART the "
                                 "program prints on)")
            out_file = str(self.params.get(f"{self.uart}.out_file", "")).strip("'\"")
            if out_file != "-":
                raise ValueError(f"a baremetal profile must set params {self.uart}.out_file: '-' "
                                 "(the harness reads the program on the model's stdout)")
            if self.data_address is not None:
                _address(self.data_address)
            return self
        if not self.terminals or not self.login_prompts:
            raise ValueError(f"a {self.kind} profile needs `terminals`, `console` and "
                             "`login_prompts`")
        if _compile(self.port_banner).groups < 2 and len(self.terminals) != 1:
            raise ValueError("a port_banner with one group (the port) needs exactly one terminal")
        if self.qemu:
            if self.params or self.ssh_forward_params:
                raise ValueError("a qemu profile has no -C `params` or `ssh_forward_params`: its "
                                 "`args` are QEMU's command line, with {ssh_port} where the ssh "
                                 "forward's host port goes")
            if any(spec.option is None for spec in self.firmware.values()):
                raise ValueError("a qemu profile's firmware inputs are QEMU options (`option: "
                                 "-kernel`)")
        return self._console_is_a_terminal()

    def _console_is_a_terminal(self) -> Profile:
        if self.console not in self.terminals:
            raise ValueError(
                f"console {self.console!r} is not one of the terminals "
                f"({', '.join(self.terminals)})"
            )
        for stage in self.boot_stages:
            _compile(stage.pattern)
            if stage.terminal is not None and stage.terminal not in self.terminals:
                raise ValueError(f"boot stage {stage.name!r} names unknown terminal "
                                 f"{stage.terminal!r}")
        if len(set(self.ssh_forward_params)) != len(self.ssh_forward_params):
            raise ValueError("ssh_forward_params names a parameter twice")
        stray = sorted(set(self.ssh_forward_enabled_by) - set(self.ssh_forward_params))
        if stray:
            raise ValueError(f"ssh_forward_enabled_by names {', '.join(stray)}, which is not in "
                             "ssh_forward_params")
        return self

    def firmware_args(self, files: dict[str, str]) -> list[str]:
        """Command-line options that hand the given firmware files (name -> path) to the model, in
        profile order."""
        argv: list[str] = []
        for name, spec in self.firmware.items():
            if name not in files:
                continue
            if spec.param is not None:
                argv += ["-C", f"{spec.param}={files[name]}"]
            elif spec.option is not None:
                argv += [spec.option, files[name]]
            else:
                argv += ["--data", f"{spec.data}={files[name]}@{spec.address}"]
        return argv


_OFF = {"0", "false"}
"""How a switched-off boolean -C value reads (``format_param`` writes booleans as
``true``/``false``)."""


_ADDRESS = re.compile(r"^0[xX][0-9a-fA-F]+$")


def _address(text: str) -> str:
    """A memory address as the model's ``--data FILE@ADDRESS`` takes it: hexadecimal with ``0x``."""
    if not _ADDRESS.match(text):
        raise ValueError(f"address {text!r} is not hexadecimal like 0x70000000")
    return text


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"invalid regex {pattern!r}: {exc}") from exc


class ProfileNotFound(ConfigurationError):
    """No built-in profile has that name and no file exists at that path."""


_SUFFIXES = (".yaml", ".yml")


def list_profiles() -> list[str]:
    """Names of the built-in profiles, sorted."""
    folder = resources.files(__name__)
    return sorted(
        entry.name.rsplit(".", 1)[0] for entry in folder.iterdir() if entry.name.endswith(_SUFFIXES)
    )


def builtin_profile_path(name: str) -> Path | None:
    """Path of the built-in profile file ``name``, or None."""
    for suffix in _SUFFIXES:
        candidate = Path(str(resources.files(__name__).joinpath(name + suffix)))
        try:
            if candidate.is_file():
                return candidate
        # a name the file system cannot hold (too long, NUL) names no built-in profile
        except OSError:
            return None
    return None


def _looks_like_path(text: str) -> bool:
    return "/" in text or "\\" in text or text.endswith(_SUFFIXES)


def load_profile(name_or_path: str | Path, *, base_dir: Path | None = None) -> Profile:
    """Load a built-in profile by name, or a profile file by path (relative to ``base_dir`` or the
    working folder).

    Raises ``ProfileNotFound`` (with a did-you-mean) or ``ConfigurationError`` listing
    ``file:line:col`` problems.
    """
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or _looks_like_path(text):
        path = Path(text).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        try:
            found_file = path.is_file()
        except OSError as exc:  # ENAMETOOLONG and the like: no such file, said as such
            raise ProfileNotFound(f"profile file not found: {display_path(path)} "
                                  f"({exc.strerror})") from exc
        if not found_file:
            raise ProfileNotFound(f"profile file not found: {display_path(path)}")
    else:
        found = builtin_profile_path(text)
        if found is None:
            names = list_profiles()
            raise ProfileNotFound(
                f"unknown platform profile {text!r}{did_you_mean(text, names)} "
                f"(built-in: {', '.join(names)}; or give a path to a profile YAML file)"
            )
        path = found
    return _read_profile(path)


_VALIDATED: dict[tuple[bytes, tuple[bool, int, int]], Profile] = {}
"""Profiles validated in this process, by the file's bytes and how YAML is read
(``reading_settings``): every scenario load reads its profile, and composing and validating it was
most of a load. The bytes are read on every call, so an edit is seen at once, whatever the file's
stat says. A profile pulls in no other file (no ``extends``, no includes) and its fields never
depend on where the file lies (only error messages name it, and errors are not kept), so the same
bytes under another name are the same profile. Only good profiles; each caller gets a deep copy."""

_VALIDATED_KEPT = 32


def _read_profile(path: Path) -> Profile:
    """The profile in ``path``: validated once per content, a copy of its own for every caller."""
    try:
        data = read_limited(path)
    except YamlProblem as exc:
        raise ConfigurationError(f"profile {display_path(path)} is not valid YAML:\n{exc}") from exc
    except OSError as exc:
        raise ProfileNotFound(f"cannot read profile {display_path(path)}: {exc.strerror}") from exc
    key = (data, reading_settings())
    known = _VALIDATED.get(key)
    if known is None:
        known = _validate(data, path)
        # list(): safe under threads
        for oldest in list(_VALIDATED)[: max(0, len(_VALIDATED) + 1 - _VALIDATED_KEPT)]:
            _VALIDATED.pop(oldest, None)
        _VALIDATED[key] = known  # never handed out itself: callers get copies
    # nothing validated again; no caller can change another's profile
    return known.model_copy(deep=True)


def _validate(data: bytes, path: Path) -> Profile:
    """``data`` (read from ``path``) composed and validated; problems are ``ConfigurationError``s
    naming ``file:line:col`` and the field."""
    try:
        root = compose_bytes(data, path)
    except YamlProblem as exc:
        raise ConfigurationError(f"profile {display_path(path)} is not valid YAML:\n{exc}") from exc
    try:
        return Profile.model_validate(root.plain())
    except ValidationError as exc:
        problems = [f"{where}: {message}"
                    for where, message in validation_problems(exc, root, Profile)]
        raise ConfigurationError(
            f"profile {display_path(path)} has problems:\n" + "\n".join(problems)
        ) from exc
