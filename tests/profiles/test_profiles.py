"""Platform profiles: the built-ins carry the reference facts; the loader reports problems with positions."""

from __future__ import annotations

import re

import pytest

from fvp_harness.errors import ConfigurationError
from fvp_harness.profiles import ProfileNotFound, list_profiles, load_profile


def test_builtin_profiles_are_listed():
    assert list_profiles() == ["corstone1000", "corstone1000-a320"]


@pytest.mark.parametrize("name", ["corstone1000", "corstone1000-a320"])
def test_builtin_profiles_load_and_cover_their_terminals(name):
    profile = load_profile(name)
    assert profile.name == name
    assert profile.console == "host_terminal_0"
    for terminal, prefix in profile.terminals.items():
        assert profile.params[f"{prefix}.start_telnet"] == 0
        assert profile.params[f"{prefix}.mode"] == "raw"
        assert prefix.endswith(terminal)
    assert profile.params["board.hostbridge.userNetworking"] is True
    assert profile.params["disable_visualisation"] is True
    assert profile.user == "root" and profile.password is None
    assert [stage.name for stage in profile.boot_stages] == [
        "TF-M",
        "TF-A BL2",
        "TF-A BL31",
        "U-Boot",
        "Linux",
        "init",
        "login",
    ]


def test_a320_facts():
    profile = load_profile("corstone1000-a320")
    assert profile.executables == ["FVP_Corstone-1000-A320"]
    assert profile.terminals == {
        "host_terminal_0": "host.host_terminal_0",
        "host_terminal_1": "host.host_terminal_1",
        "secenc_terminal": "se.secenc_terminal",
    }
    assert profile.params["host.ethosu.num_macs"] == 256
    assert profile.npu_macs_param == "host.ethosu.num_macs"
    assert profile.firmware_args({"bl1": "/fw/bl1.bin", "flash": "/fw/flash.wic"}) == [
        "-C",
        "se.trustedBootROMloader.fname=/fw/bl1.bin",
        "--data",
        "board.flash0=/fw/flash.wic@0x68000000",
    ]
    assert {name for name, spec in profile.firmware.items() if spec.required} == {"bl1", "flash"}


def test_a35_adds_the_external_system_terminal():
    profile = load_profile("corstone1000")
    assert profile.executables == ["FVP_Corstone-1000"]
    assert profile.terminals["extsys_terminal"] == "extsys0.extsys_terminal"
    assert "host.ethosu.num_macs" not in profile.params


@pytest.mark.parametrize(
    "line, name, port",
    [
        ("host_terminal_0: Listening for serial connection on port 5000", "host_terminal_0", "5000"),
        ("secenc_terminal: Listening for serial connection on port 5002\r", "secenc_terminal", "5002"),
        (
            "Info: FVP_Corstone_1000.host_terminal_1: Listening for serial connection on port 5101",
            "host_terminal_1",
            "5101",
        ),
    ],
)
def test_port_banner_is_searched_not_anchored(line, name, port):
    match = re.search(load_profile("corstone1000-a320").port_banner, line)
    assert match is not None and match.groups() == (name, port)


@pytest.mark.parametrize(
    "text",
    ["corstone1000-fvp login: ", "\r\ncorstone1000-a320-fvp login:"],
)
def test_login_prompts_of_both_releases(text):
    prompts = load_profile("corstone1000-a320").login_prompts
    assert any(re.search(pattern, text) for pattern in prompts)


@pytest.mark.parametrize(
    "line, failure",
    [
        ("[   12.3] Kernel panic - not syncing: VFS", True),
        ("Unable to handle kernel NULL pointer dereference", True),
        ("Internal error: Oops: 96000005 [#1] SMP", True),
        ("[ERR] Image validation failed", True),
        ("ERROR:   BL2: Failed to load image id 3", True),
        ("psci: failed to boot CPU1 (-95)", False),
        ("I 00:00:00.1 executorch:runner.cpp:1] no ERROR: here", False),
    ],
)
def test_failure_patterns(line, failure):
    profile = load_profile("corstone1000-a320")
    assert any(re.search(pattern, line) for pattern in profile.failure_patterns) is failure


def test_benign_patterns_match_known_noise():
    profile = load_profile("corstone1000-a320")
    for line in (
        "psci: failed to boot CPU1 (-95)",
        "ARM FF-A: Notification setup failed -95, not enabled",
        "mmap_add_region_check() failed. error -22",
    ):
        assert any(re.search(pattern, line) for pattern in profile.benign_patterns), line


def test_unknown_name_suggests(tmp_path):
    with pytest.raises(ProfileNotFound, match="did you mean 'corstone1000-a320'"):
        load_profile("corstone1000-a32")
    with pytest.raises(ProfileNotFound, match="profile file not found"):
        load_profile(tmp_path / "none.yaml")


def test_profile_file_problems_have_positions(write):
    path = write(
        "p.yaml",
        """
        name: p
        executables: [FVP]
        terminals: {t0: host.t0}
        console: t1
        port_banner: '(\\S+): Listening'
        login_prompts: ['login:']
        firmwre: {}
        """,
    )
    with pytest.raises(ConfigurationError) as info:
        load_profile(path)
    text = str(info.value)
    assert ":5:14: port_banner: port_banner needs two groups" in text
    assert ":7:1: firmwre: unknown key 'firmwre'; did you mean 'firmware'?" in text


def test_profile_console_must_be_a_terminal(write, repo):
    text = (
        (repo / "fvp_harness/profiles/corstone1000-a320.yaml")
        .read_text()
        .replace("console: host_terminal_0", "console: host_terminal_9")
    )
    with pytest.raises(ConfigurationError, match="console 'host_terminal_9' is not one of the terminals"):
        load_profile(write("p.yaml", text))
