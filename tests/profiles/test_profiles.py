"""Platform profiles: the built-ins carry the reference facts; the loader reports problems with
positions."""

from __future__ import annotations

import re

import pytest

from fvp_harness.errors import ConfigurationError
from fvp_harness.profiles import Profile, ProfileNotFound, list_profiles, load_profile
from fvp_harness.sim.knobs import Knobs, parse_knobs
from fvp_harness.targets.console import BootWatch
from fvp_harness.targets.fvp import format_param
from fvp_harness.targets.text import clean_text


def test_builtin_profiles_are_listed():
    assert list_profiles() == ["corstone1000", "corstone1000-a320", "corstone300-u55",
                               "corstone320-u85", "qemu-aarch64-virt"]


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
        ("host_terminal_0: Listening for serial connection on port 5000", "host_terminal_0",
         "5000"),
        ("secenc_terminal: Listening for serial connection on port 5002\r", "secenc_terminal",
         "5002"),
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


def _fails(profile: Profile, line: str, *, booted: bool = False) -> bool:
    """Whether ``BootWatch`` (what the harness runs on every terminal line) takes ``line`` for a
    failure, during the boot or (``booted``) once the shell is ready."""
    watch = BootWatch(profile)
    if booted:
        watch.boot_done()
    watch.on_line("host_terminal_0", line)
    return watch.failure is not None


@pytest.mark.parametrize("name", ["corstone1000", "corstone1000-a320"])
@pytest.mark.parametrize(
    "line, at_boot, after_boot",
    [
        ("[   12.3] Kernel panic - not syncing: VFS", True, True),
        ("Unable to handle kernel NULL pointer dereference", True, True),
        ("Internal error: Oops: 96000005 [#1] SMP", True, True),
        ("[ERR] Image validation failed", True, False),
        ("ERROR:   BL2: Failed to load image id 3", True, False),
        ("ERROR: x", True, False),  # single space: meta-arm's check catches it too
        ("[ERROR] Secure partition failed", True, False),
        ("Bad RAM ERROR:0x1", True, False),
        # a good A320 boot prints it
        ("ERROR:   mmap_add_region_check() failed. error -22", False, False),
        ("psci: failed to boot CPU1 (-95)", False, False),
        ("Err:   serial@1a510000", False, False),  # U-Boot's stderr device, case differs
        # after login a program's own "ERROR:" is its unit's failure, not the platform's
        ("E 00:00:00.1 executorch:runner.cpp:1] ERROR: model", True, False),
        ("ERROR: unknown command line flag 'num_iterations'", True, False),
    ],
)
def test_failure_patterns(name, line, at_boot, after_boot):
    assert _fails(load_profile(name), line) is at_boot
    assert _fails(load_profile(name), line, booted=True) is after_boot


@pytest.mark.parametrize("name", ["corstone1000", "corstone1000-a320"])
def test_meta_arms_boot_check_is_a_boot_failure_pattern(name):
    """meta-arm/lib/oeqa/runtime/cases/fvp_boot.py fails the boot on this on every console (it
    checks once, at the login prompt, so program output after login is not its business)."""
    assert r"(\[ERR\]|\[ERROR\]|ERROR\:)" in load_profile(name).boot_failure_patterns


def _knobs(*options: str) -> Knobs:
    return parse_knobs({}, options)


@pytest.mark.parametrize(
    ("options", "mmc_bytes", "ssh"),
    [
        ((), None, True),
        # the A320 release, first boot, an MMC card
        (("release=next", "first_boot=1"), 64 << 20, True),
        (("release=next",), None, False),  # no network service
        # meta-arm 2026.05: the accel driver, musl, no Dropbear
        (("release=2026.05",), None, False),
    ],
)
def test_the_simulators_boot_text_is_a_good_boot(options, mmc_bytes, ssh):
    """Every line the simulator prints from power-on to the login prompt, on every terminal, passes
    the watch; the one line meta-arm's bare pattern would take is TF-A's benign memory-map notice,
    before the login prompt on the default console, where meta-arm's check never looks."""
    from fvp_harness.sim.corstone1000.boot import boot_steps

    profile = load_profile("corstone1000-a320")
    watch = BootWatch(profile)
    meta_arm = re.compile(r"(\[ERR\]|\[ERROR\]|ERROR\:)")
    flagged = []
    for terminal in profile.terminals:
        text = "".join(step.text + ("\r\n" if step.newline else "")
                       for step in boot_steps(_knobs(*options), mmc_bytes=mmc_bytes, ssh=ssh)
                       if step.terminal == terminal)
        for line in clean_text(text).split("\n"):
            watch.on_line(terminal, line)
            if meta_arm.search(line):
                flagged.append((terminal, line))
    assert watch.failure is None, watch.failure
    assert flagged == [("host_terminal_0", "ERROR:   mmap_add_region_check() failed. error -22")]
    assert {"TF-M", "TF-A BL2", "TF-A BL31", "U-Boot", "Linux", "init"} <= set(watch.stage_times)


def test_the_simulators_panic_text_fails():
    from fvp_harness.sim.corstone1000.boot import PANIC_TEXT

    assert _fails(load_profile("corstone1000-a320"), PANIC_TEXT[0])


def test_ssh_is_forwarded_on_both_network_devices():
    profile = load_profile("corstone1000-a320")
    assert (profile.ssh_forward_params
            == ["board.hostbridge.userNetPorts", "board.virtio_net.hostbridge.userNetPorts"])
    # the older single name still reads
    assert profile.ssh_forward_param == "board.hostbridge.userNetPorts"
    for name in profile.ssh_forward_params:
        # meta-arm's forward; the target layer rewrites the host side
        assert profile.params[name] == "2222=22"
    assert profile.params["board.smsc_91c111.enabled"] is True
    assert profile.params["board.virtio_net.enabled"] is True
    assert profile.params["board.virtio_net.hostbridge.userNetworking"] is True
    launch = {name: format_param(value) for name, value in profile.params.items()}
    assert all(profile.ssh_forward_live(name, launch) for name in profile.ssh_forward_params)
    launch["board.smsc_91c111.enabled"] = "false"
    assert not profile.ssh_forward_live("board.hostbridge.userNetPorts", launch)
    assert profile.ssh_forward_live("board.virtio_net.hostbridge.userNetPorts", launch)


META_ARM_CONF = {
    # meta-arm-bsp/conf/machine/corstone1000-fvp.conf (master 2026-07-14, lines 33-79), values that
    # are not paths
    "board.xnvm_size": "64",
    "se.trustedSRAM_config": "6",
    "se.BootROM_config": "3",
    "board.smsc_91c111.enabled": "true",  # the conf says 1
    "board.hostbridge.userNetworking": "true",
    "board.se_flash_size": "8192",
    "disable_visualisation": "true",
    "se.nvm.update_raw_image": "0",
    "se.cryptocell.USER_OTP_FILTERING_DISABLE": "1",
    "board.msd_mmc.card_type": "SDHC",
    "board.msd_mmc.p_fast_access": "0",
    "board.msd_mmc.diagnostics": "0",
    "board.msd_mmc.p_max_block_count": "0xFFFF",
    "board.msd_config.pl180_fifo_depth": "16",
    "board.msd_mmc.support_unpadded_images": "true",
    "board.msd_mmc_2.card_type": "SDHC",
    "board.msd_mmc_2.p_fast_access": "0",
    "board.msd_mmc_2.diagnostics": "0",
    "board.msd_mmc_2.p_max_block_count": "0xFFFF",
    "board.msd_config_2.pl180_fifo_depth": "16",
    "board.msd_mmc_2.support_unpadded_images": "true",
    "board.virtio_net.enabled": "true",  # the conf says 1
    "board.virtio_net.hostbridge.userNetworking": "true",
    "board.virtio_net.transport": "legacy",
}


@pytest.mark.parametrize("name", ["corstone1000", "corstone1000-a320"])
def test_profiles_pass_what_meta_arm_passes(name):
    """Left out on purpose: diagnostics (verbosity), the TAP interface names (unused with user-mode
    networking), the forwards (rewritten per instance) and the paths (firmware inputs)."""
    params = {key: format_param(value) for key, value in load_profile(name).params.items()}
    assert {key: params.get(key) for key in META_ARM_CONF} == META_ARM_CONF
    assert "diagnostics" not in params and "board.hostbridge.interfaceName" not in params


def test_legacy_single_ssh_forward_key_is_read(write, repo):
    text = (repo / "fvp_harness/profiles/corstone1000-a320.yaml").read_text()
    head, _, _ = text.partition("ssh_forward_params:")
    tail = text.split("ssh_guest_port:", 1)[1]
    legacy = write("legacy.yaml",
                   head + "ssh_forward_param: board.hostbridge.userNetPorts\nssh_guest_port:"
                   + tail)
    assert load_profile(legacy).ssh_forward_params == ["board.hostbridge.userNetPorts"]
    none = write("none.yaml", head + "ssh_forward_param: null\nssh_guest_port:" + tail)
    assert (load_profile(none).ssh_forward_params == [] and
            load_profile(none).ssh_forward_param is None)
    both = write("both.yaml",
                 text.replace("ssh_guest_port:", "ssh_forward_param: x\nssh_guest_port:"))
    with pytest.raises(ConfigurationError, match="not both"):
        load_profile(both)
    stray = write("stray.yaml",
                  text.replace("ssh_forward_enabled_by:\n",
                               "ssh_forward_enabled_by:\n  a.b: [c]\n"))
    with pytest.raises(ConfigurationError, match=r"a\.b, which is not in ssh_forward_params"):
        load_profile(stray)


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
        port_banner: '\\S+: Listening'
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
    with pytest.raises(ConfigurationError,
                       match="console 'host_terminal_9' is not one of the terminals"):
        load_profile(write("p.yaml", text))
