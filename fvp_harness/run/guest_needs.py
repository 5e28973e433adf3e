"""What the runners need of the booted guest, checked after boot and before any unit: one round
trip, one answer.

Why it is shaped so: docs/architecture.md, "Inside `run/`"."""

from __future__ import annotations

import json
import posixpath
import re
import shlex
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from fvp_harness.errors import ConfigurationError
from fvp_harness.profiles import Profile
from fvp_harness.scenario.executable import SIM_RUNNER_MAGIC
from fvp_harness.scenario.model import Scenario

__all__ = [
    "ACCEL_DEVICE",
    "DEFAULT_NPU_DEVICE",
    "LOADERS",
    "SSH_SERVERS",
    "RunnerNeeds",
    "check_answer",
    "check_guest",
    "deploy_kib",
    "free_kib",
    "needs_command",
    "not_found_problem",
    "runner_needs",
]

LOADERS: dict[str, str] = {
    "glibc": "/lib/ld-linux-aarch64.so.1",
    "musl": "/lib/ld-musl-aarch64.so.1",
}
"""The aarch64 dynamic loader each C library's programs name (ELF ``PT_INTERP``)."""
ACCEL_DEVICE = "/dev/accel/accel0"
"""The in-kernel DRM accel driver's node (``CONFIG_DRM_ACCEL_ARM_ETHOSU``), looked for to say what
the image has."""
SSH_SERVERS = ("/usr/sbin/dropbear", "/usr/sbin/sshd")
"""Where an image's ssh server lives (Dropbear on meta-arm's images, OpenSSH elsewhere)."""
# sim.networks.magic.RUNNER_LIBCS, by the header's flags code
_SIM_LIBCS = ("glibc", "musl", "static")
DEFAULT_NPU_DEVICE = "/dev/ethosu0"
"""The node ExecuTorch's Ethos-U Linux delegate opens unless its ``ethosu.device`` compile spec says
otherwise (``LinuxDriverOptions::device_path``, EthosUBackend_Cortex_A.cpp:44); also
sim.networks.modelfile's default."""
_PT_INTERP = 3
_HEAD = 64 * 1024


@dataclass(frozen=True)
class RunnerNeeds:
    """What one build's runner needs of the guest. ``libc`` None: not a program that names one (a
    script)."""

    build: str
    libc: str | None = None
    loader: str | None = None
    npu_device: str | None = None


def _elf_interpreter(head: bytes) -> str | bool | None:
    """The ``PT_INTERP`` of an ELF file's first bytes: the path, None for none (static), False when
    unreadable."""
    if len(head) < 52 or head[4] not in (1, 2) or head[5] not in (1, 2):
        return False
    end = "<" if head[5] == 1 else ">"
    if head[4] == 2:  # ELF64
        if len(head) < 64:
            return False
        phoff, = struct.unpack_from(end + "Q", head, 0x20)
        phentsize, phnum = struct.unpack_from(end + "HH", head, 0x36)
        fields = end + "II Q Q Q Q"  # p_type p_flags p_offset p_vaddr p_paddr p_filesz
        offset_at, size_at = 2, 5
    else:
        phoff, = struct.unpack_from(end + "I", head, 0x1C)
        phentsize, phnum = struct.unpack_from(end + "HH", head, 0x2A)
        fields = end + "I I I I I"  # p_type p_offset p_vaddr p_paddr p_filesz
        offset_at, size_at = 1, 4
    for i in range(phnum):
        at = phoff + i * phentsize
        if at + struct.calcsize(fields) > len(head):
            return False
        header = struct.unpack_from(fields.replace(" ", ""), head, at)
        if header[0] == _PT_INTERP:
            start, size = header[offset_at], header[size_at]
            if start + size > len(head):
                return False
            return head[start:start + size].split(b"\0", 1)[0].decode("latin-1")
    return None


def runner_needs(build: str, path: Path | str, default_npu_device: str | None) -> RunnerNeeds:
    """What the runner file at ``path`` (on this host) needs: its C library and loader, and the NPU
    node it opens (``default_npu_device``, the profile's, for an ELF; None: the platform has no NPU
    to check)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD)
    # not built yet (doctor --boot), or the deploy will say why it cannot be read: a stock runner
    except OSError:
        return RunnerNeeds(build, npu_device=default_npu_device)
    if head.startswith(SIM_RUNNER_MAGIC) and len(head) >= 16:
        code = int.from_bytes(head[10:12], "little") & 0x3
        libc = _SIM_LIBCS[code] if code < len(_SIM_LIBCS) else None
        length = int.from_bytes(head[12:16], "little")
        try:
            info = json.loads(head[16:16 + length])
            device = str(info.get("npu_device", DEFAULT_NPU_DEVICE))
        except (ValueError, AttributeError):
            device = DEFAULT_NPU_DEVICE
        return RunnerNeeds(build, libc, LOADERS.get(libc or ""),
                           device if default_npu_device else None)
    if head.startswith(b"\x7fELF"):
        interp = _elf_interpreter(head)
        if interp is False:
            return RunnerNeeds(build, npu_device=default_npu_device)
        if interp is None:
            return RunnerNeeds(build, "static", None, default_npu_device)
        name = posixpath.basename(str(interp))
        libc = "musl" if "musl" in name else "glibc" if name.startswith("ld-linux") else name
        return RunnerNeeds(build, libc, str(interp), default_npu_device)
    return RunnerNeeds(build)


def _probed(needs: Iterable[RunnerNeeds], ssh: bool) -> list[str]:
    paths: list[str] = []
    for need in needs:
        if need.npu_device:
            paths += [need.npu_device, ACCEL_DEVICE]
        if need.loader:
            paths += [need.loader, *LOADERS.values()]
    if ssh:
        paths += SSH_SERVERS
    return list(dict.fromkeys(paths))


def needs_command(needs: Iterable[RunnerNeeds], *, ssh: bool,
                  space_dir: str | None = None) -> str | None:
    """The one guest command that answers every question (None: nothing to ask). Prints the paths
    that exist, one a line, then (``space_dir``) ``df -kP``'s table of the file system that folder
    is on; the status means nothing."""
    paths = _probed(needs, ssh)
    if not paths and space_dir is None:
        return None
    parts = (["ls -1d " + " ".join(shlex.quote(path) for path in paths) + " 2>/dev/null"] if paths
             else [])
    if space_dir is not None:
        parts.append(f"df -kP {shlex.quote(space_dir)} 2>/dev/null")
    return "; ".join([*parts, "true"])


def free_kib(output: str) -> int | None:
    """The ``Available`` KiB of the first row of a ``df -kP`` table in ``output`` (None: no table,
    e.g. no df)."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Filesystem") and i + 1 < len(lines):
            fields = lines[i + 1].split()
            if len(fields) >= 6 and fields[-3].isdigit():
                return int(fields[-3])
    return None


def deploy_kib(sizes: Iterable[int]) -> int:
    """KiB the deploy needs in the guest at its peak: every file, plus the largest one's base64
    staging copy (the console deploy writes ``<file>.b64`` and decodes it next to it)."""
    sizes = list(sizes)
    if not sizes:
        return 0
    return -(-(sum(sizes) + max(sizes) * 4 // 3) // 1024)


def _image_libc(present: set[str]) -> str | None:
    have = [libc for libc, loader in LOADERS.items() if loader in present]
    return have[0] if len(have) == 1 else None


def _libc_fix(present: set[str]) -> str:
    image = _image_libc(present)
    if image == "musl":
        return ("this is a musl image (meta-arm's A320 firmware-only image, TCLIBC = \"musl\"): "
                "build the runner for aarch64-linux-musl (upstream links it with "
                "-static-libstdc++) or statically")
    if image is not None:
        return f"this is a {image} image: build the runner against {image}, or statically"
    return "this image has neither the glibc nor the musl loader: link the runner statically"


def _builds(names: list[str]) -> str:
    return ", ".join(f"builds.{name}" for name in names)


def check_answer(needs: Iterable[RunnerNeeds], output: str, *, ssh: bool,
                 ssh_why: str = "deploy.method is ssh",
                 need_kib: int = 0, space_dir: str = "") -> list[str]:
    """The problems the guest's answer to ``needs_command`` shows, each naming its fix (empty: all
    there). Builds that lack the same thing share one problem."""
    present = {line.strip() for line in output.splitlines() if line.strip().startswith("/")}
    devices: dict[str, list[str]] = {}
    loaders: dict[tuple[str, str], list[str]] = {}
    for need in needs:
        if need.npu_device and need.npu_device not in present:
            devices.setdefault(need.npu_device, []).append(need.build)
        if need.loader and need.loader not in present:
            loaders.setdefault((str(need.libc), need.loader), []).append(need.build)
    problems: list[str] = []
    for device, builds in devices.items():
        text = (f"{_builds(builds)}: the runner opens {device}, the NPU node of the ethos-u driver "
                "stack that ExecuTorch's Ethos-U delegate uses (EthosUBackend_Cortex_A.cpp:44), "
                "and this image has none")
        if ACCEL_DEVICE in present:
            text += (f": this image has the in-kernel accel driver at {ACCEL_DEVICE} (linux-yocto "
                     "6.19, CONFIG_DRM_ACCEL_ARM_ETHOSU, meta-arm 2026.05 and later), which "
                     "ExecuTorch's delegate cannot use; every unit would abort at its first "
                     "execute (Aborted, exit 134)")
        problems.append(text + ". Fix: boot an image with the ethos-u kernel driver and "
                               "/dev/ethosu0 (meta-arm "
                        "CORSTONE1000-2025.12 with meta-ethos; the simulator: "
                        "fvp.sim.release=2025.12), or use runners built for the node this image "
                        "has")
    for (libc, loader), builds in loaders.items():
        problems.append(
            f"{_builds(builds)}: the runner is linked against {libc} and needs the dynamic loader "
            f"{loader}, which this image does not have, so the guest shell would answer 'not "
            f"found' for a file that exists (exit 127). Fix: {_libc_fix(present)}")
    free = free_kib(output) if need_kib else None
    if free is not None and free < need_kib:
        problems.append(
            f"the deploy needs about {need_kib} KiB in {space_dir} and the guest has {free} KiB "
            "free there. Fix: set deploy.guest_dir to a folder on a larger file system (an MMC "
            "image's, say), or deploy fewer or smaller files")
    if ssh and not any(server in present for server in SSH_SERVERS):
        problems.append(
            f"{ssh_why}, but this image has no ssh server ({', '.join(SSH_SERVERS)}): meta-arm's "
            "A320 image removes Dropbear (kas/corstone1000-firmware-only.yml: \"will not fit\"). "
            "Fix: build the image with kas/corstone1000-ssh.yml and an MMC image (the simulator: "
            "fvp.sim.ssh_fragment=true), or set deploy.method: console")
    return problems


_NOT_FOUND = re.compile(r"^(?:-?sh|ash|bash): (?P<path>\S+): not found\s*$", re.MULTILINE)


def not_found_problem(output: str, exit_status: int | None, runners: Mapping[str, str],
                      needs: Mapping[str, RunnerNeeds]) -> str | None:
    """A unit whose shell said ``not found`` (127) for a runner the harness deployed and hashed in
    the guest: the file exists, so its interpreter does not; the explanation (a configuration
    error), or None when the output is no such thing. ``runners``: build -> the runner's guest
    path."""
    if exit_status != 127:
        return None
    for match in _NOT_FOUND.finditer(output):
        said = match["path"]
        for build, guest in runners.items():
            if said == guest or posixpath.basename(said) == posixpath.basename(guest):
                need = needs.get(build) or RunnerNeeds(build)
                what = (f"it is linked against {need.libc} and needs {need.loader}" if need.loader
                        else
                        "its interpreter (dynamic loader or #! line) is missing from the image")
                return (f"builds.{build}: the guest shell says '{said}: not found' for the runner "
                        f"it holds: {what}. Fix: build the runner for this image's C library (a "
                        "musl image: aarch64-linux-musl), or link it statically")
    return None


def check_guest(ask: Callable[[str], str], scenario: Scenario, profile: Profile,
                builds: Iterable[str], files: Iterable[Path] = ()) -> dict[str, RunnerNeeds]:
    """After boot, before the deploy: ask the guest once (``ask(command) -> output``) whether it has
    what the ``builds``' runners need and room for the deploy of ``files`` (this host's), and raise
    ``ConfigurationError`` naming every problem and its fix. Returns each build's
    needs (``not_found_problem`` explains a unit's ``not found`` with them). Only a Linux FVP guest
    is asked: a host target, a QEMU guest (no NPU, no simulator runner) and bare metal have nothing
    of this to check."""
    if scenario.target != "fvp" or profile.kind != "linux":
        return {}
    npu = DEFAULT_NPU_DEVICE if profile.npu_macs_param else None
    needs = {build: runner_needs(build, scenario.builds[build].runner, npu)
             for build in dict.fromkeys(builds)}
    ssh = scenario.deploy.method == "ssh"
    sizes = [path.stat().st_size for path in files if path.is_file()]
    need = deploy_kib(sizes) if scenario.deploy.method != "preloaded" else 0
    space_dir = posixpath.dirname(scenario.deploy.guest_dir.rstrip("/")) or "/"
    command = needs_command(needs.values(), ssh=ssh, space_dir=space_dir if need else None)
    if command is None:
        return needs
    problems = check_answer(needs.values(), ask(command), ssh=ssh, need_kib=need,
                            space_dir=space_dir)
    if problems:
        raise ConfigurationError("the booted image cannot run this scenario's runners: "
                                 + "; ".join(problems))
    return needs
