"""Platform profiles: what the harness must know about one kind of FVP, kept as YAML data beside this module.

A profile says which executables are the model, which -C parameters to pass by default, which terminals it announces
and which one is the Linux console, how to find the ports, how to log in, and which patterns mean failure. The
harness reads only the profile (never hard-coded platform facts), so a new platform is a new YAML file.

(Loader: ``load_profile(name_or_path)``; listing: ``list_profiles()``.)
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["BootStage", "FirmwareInput", "Profile"]

ParamValue = str | int | float | bool


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FirmwareInput(_Strict):
    """A file a real model needs from the user (not shipped by anybody but Arm's release), e.g. the SE boot ROM.

    Exactly one of ``param`` (becomes ``-C <param>=<path>``) or ``data`` (becomes ``--data <data>=<path>@<address>``).
    """

    description: str
    param: str | None = None
    data: str | None = None
    address: str | None = None


class BootStage(_Strict):
    """A recognisable boot milestone; the last one seen is named when boot times out."""

    name: str
    pattern: str
    terminal: str | None = None  # None: any terminal


class Profile(_Strict):
    name: str
    description: str = ""
    executables: list[str] = Field(description="Executable names of the real model, tried in order on PATH.")
    params: dict[str, ParamValue] = Field(default_factory=dict, description="Default -C parameters.")
    args: list[str] = Field(default_factory=list, description="Default extra options.")
    terminals: dict[str, str] = Field(
        description="Announced terminal name -> its -C parameter prefix (e.g. host_terminal_0: host.host_terminal_0)."
    )
    console: str = Field(description="The terminal carrying the Linux console (login, commands).")
    terminal_mode: Literal["raw", "telnet"] = "raw"
    port_banner: str = Field(description="Regex with groups (terminal name, port), searched anywhere in a line.")
    login_prompts: list[str] = Field(description="Regexes of the getty prompt (several releases).")
    login_incorrect: str = "Login incorrect"
    user: str = "root"
    password: str | None = None
    shell_prompt: str = Field(r"[#$] ?$", description="Regex of a shell prompt at the end of the console buffer.")
    failure_patterns: list[str] = Field(default_factory=list, description="Regexes that fail the boot at once.")
    benign_patterns: list[str] = Field(default_factory=list, description="Known-harmless lines, never failures.")
    boot_stages: list[BootStage] = Field(default_factory=list)
    firmware: dict[str, FirmwareInput] = Field(default_factory=dict)
    ssh_forward_param: str | None = Field(
        "board.hostbridge.userNetPorts", description="-C parameter carrying host=guest port forwards."
    )
    ssh_guest_port: int = 22
    npu_macs_param: str | None = "host.ethosu.num_macs"
    boot_timeout: float = 600.0
    stop_signal: Literal["SIGINT", "SIGTERM"] = "SIGINT"
