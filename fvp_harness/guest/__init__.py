"""The QEMU guest (``qemu-aarch64-virt``): a kernel and an initramfs built from Debian's arm64
packages alone.

Why this exists: the session layer (login, framed commands, transfers) has otherwise only met our
own simulator; a real kernel, real busybox and real dropbear show what it cannot. ``fvp-harness
guest build`` makes the two files the profile needs (``Image`` and ``initrd.gz``) under a cache
folder (default ``~/.cache/fvp-harness/guest``, ``$FVP_HARNESS_GUEST`` to move it); a second call
finds them and does nothing.

What it does, and why that way:

- the packages come through a **private apt state** (``-o APT::Architecture=arm64 -o
  Dir::State::Lists=... -o Dir::State::status=... -o Dir::Cache=...``) with the system's
  ``sources``: the host's dpkg architectures, lists and caches are never touched, and no ``dpkg
  --add-architecture`` is needed;
- packages are unpacked with ``dpkg-deb -x`` (nothing is installed); the rootfs is what the guest
  needs of them: ``busybox-static`` (init, getty, login, ash, sha256sum, gzip, base64),
  ``dropbear-bin`` and its libraries, ``openssh-sftp-server`` (scp in OpenSSH 9 speaks SFTP), and
  the kernel's virtio modules with their dependencies (read from ``modules.dep``), loaded by
  ``/init`` in dependency order;
- the guest looks like a Corstone-1000 image from its console: getty on ``ttyAMA0`` logs ``root`` in
  without a password (``/etc/passwd`` holds ``x`` and ``/etc/shadow`` the empty password: busybox
  cannot look up uid 0 otherwise), busybox ash is the shell, dropbear ``-R`` (host keys made on
  demand) ``-B`` (blank password) listens on port 22 behind QEMU's user network;
- the output names carry a content key (package versions and this module's recipe version), written
  last, so an interrupted build is redone and a changed recipe rebuilds.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import lzma
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fvp_harness.errors import ConfigurationError, InfrastructureError

__all__ = [
    "GUEST_ENV",
    "GuestBuildError",
    "GuestImage",
    "apt_options",
    "build_guest",
    "default_guest_dir",
    "guest_image",
]

GUEST_ENV = "FVP_HARNESS_GUEST"
"""Environment variable naming the guest's cache folder (the profile and scenarios read it too)."""

RECIPE = "2"
"""Bumped whenever what goes into the image changes, so cached images are rebuilt."""

PACKAGES = ["busybox-static", "dropbear-bin", "libc6", "libcrypt1", "libtomcrypt1", "libtommath1",
            "libgmp10", "zlib1g", "openssh-sftp-server", "libstdc++6", "libgcc-s1"]
"""Debian packages the rootfs is made of (the kernel is found through ``linux-image-arm64``).
``libstdc++6`` and ``libgcc-s1``: ExecuTorch's runtime libraries (the aarch64 wheel's ``.so`` files)
and our runner built on them need ``libstdc++.so.6`` and ``libgcc_s.so.1`` beside glibc (recipe
2)."""

MODULES = ["virtio_mmio", "virtio_net", "virtio_rng"]
"""Kernel modules the guest loads (with what ``modules.dep`` says they need): the network and
entropy devices. Whatever of them the kernel has built in is simply not found and skipped."""

HOSTNAME = "corstone1000-qemu"
APT_TIMEOUT_S = 900.0
"""The longest an apt step may take (a slow mirror); the package set is about 64 MB."""

Log = Callable[[str], None]


class GuestBuildError(InfrastructureError):
    """The guest could not be built (apt, dpkg-deb or a package failed)."""


@dataclass(frozen=True)
class GuestImage:
    """The built guest: the kernel image and the initramfs QEMU boots."""

    kernel: Path
    initrd: Path


def default_guest_dir() -> Path:
    """``$FVP_HARNESS_GUEST``, else ``~/.cache/fvp-harness/guest`` (outside any checkout: never
    committed)."""
    named = os.environ.get(GUEST_ENV)
    return Path(named).expanduser() if named else Path.home() / ".cache" / "fvp-harness" / "guest"


def guest_image(folder: Path | None = None) -> GuestImage:
    """Where the profile expects the guest (``Image`` and ``initrd.gz`` in the cache folder); they
    may not exist."""
    base = folder or default_guest_dir()
    return GuestImage(kernel=base / "Image", initrd=base / "initrd.gz")


def _run(argv: Sequence[str], *, cwd: Path | None = None, timeout: float = APT_TIMEOUT_S) -> str:
    """Run a build tool in its own process group; its output in the error when it fails or outlives
    ``timeout``."""
    try:
        proc = subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, errors="replace",
                              timeout=timeout, stdin=subprocess.DEVNULL, start_new_session=True,
                              check=False)
    except FileNotFoundError as exc:
        raise ConfigurationError(f"{argv[0]} not found: the guest is built with Debian's apt and "
                                 "dpkg-deb (run on Debian or Ubuntu)") from exc
    except subprocess.TimeoutExpired as exc:
        raise GuestBuildError(f"{' '.join(argv[:3])} ... took longer than {timeout:.0f} s") from exc
    if proc.returncode != 0:
        raise GuestBuildError(f"{' '.join(argv)} failed (exit {proc.returncode}):\n"
                              f"{(proc.stderr or proc.stdout).strip()[-2000:]}")
    return proc.stdout


def apt_options(state: Path) -> list[str]:
    """The options of a private arm64 apt state under ``state`` (the system's lists, status and
    caches untouched)."""
    return ["-o", "APT::Architecture=arm64", "-o", "APT::Architectures::=arm64",
            "-o", f"Dir::State::Lists={state / 'lists'}", "-o",
            f"Dir::State::status={state / 'status'}",
            "-o", f"Dir::Cache={state / 'cache'}", "-o", "APT::Sandbox::User=root",
            "-o", "Debug::NoLocking=1", "-q"]


def _check_tools() -> None:
    missing = [tool for tool in ("apt-get", "apt-cache", "dpkg-deb") if shutil.which(tool) is None]
    if missing:
        raise ConfigurationError(f"building the guest needs {', '.join(missing)} (Debian's apt and "
                                 "dpkg); run `fvp-harness guest build` on Debian or Ubuntu")
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        raise ConfigurationError("building the guest needs root: apt-get update writes its "
                                 "(private) lists as root; run `sudo fvp-harness guest build` (the "
                                 "system's apt state is not touched)")


def _field(control: str, name: str) -> str:
    for line in control.splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    return ""


def _kernel_package(state: Path) -> str:
    """The versioned ``linux-image-X-arm64`` the metapackage ``linux-image-arm64`` depends on
    now."""
    shown = _run(["apt-cache", *apt_options(state), "show", "linux-image-arm64"])
    depends = _field(shown.split("\n\n")[0], "Depends")
    for item in depends.split(","):
        name = item.strip().split(" ")[0]
        if name.startswith("linux-image-") and name.endswith("-arm64"):
            return name
    raise GuestBuildError(f"linux-image-arm64 names no kernel package (Depends: {depends!r})")


def _download(state: Path, debs: Path, names: Sequence[str]) -> list[Path]:
    debs.mkdir(parents=True, exist_ok=True)
    _run(["apt-get", *apt_options(state), "download", *names], cwd=debs)
    found = []
    for name in names:
        matches = sorted(debs.glob(f"{name}_*_arm64.deb")) or sorted(debs.glob(f"{name}_*_all.deb"))
        if not matches:
            raise GuestBuildError(f"apt-get download left no {name}_*.deb in {debs}")
        found.append(matches[-1])
    return found


def _init_script(modules: Sequence[str]) -> str:
    loads = "\n".join(f"insmod /lib/modules/{name} 2>/dev/null || true" for name in modules)
    return ("#!/bin/busybox sh\n"
            "# The guest's first process: applet links, file systems, modules, network, sshd, "
            "then busybox init (getty).\n"
            "/bin/busybox --install -s\n"
            "mount -t proc proc /proc\n"
            "mount -t sysfs sysfs /sys\n"
            "mount -t devtmpfs devtmpfs /dev 2>/dev/null\n"
            "mkdir -p /dev/pts /tmp /run /var/log /root /etc/dropbear\n"
            "mount -t devpts devpts /dev/pts\n"
            f"{loads}\n"
            f"hostname {HOSTNAME}\n"
            "ip link set lo up\n"
            "ip link set eth0 up 2>/dev/null && ip addr add 10.0.2.15/24 dev eth0 "
            "&& ip route add default via 10.0.2.2\n"
            "dropbear -R -B -p 22 2>/dev/null\n"
            "exec /sbin/init\n")


_FILES = {
    "etc/passwd": "root:x:0:0:root:/root:/bin/sh\n",
    "etc/shadow": "root::19000:0:99999:7:::\n",
    "etc/group": "root:x:0:\n",
    "etc/shells": "/bin/sh\n/bin/ash\n",
    "etc/inittab": "ttyAMA0::respawn:/sbin/getty -L 0 ttyAMA0 vt100\n::ctrlaltdel:/sbin/reboot\n",
    "etc/profile": "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
                   "export HOME=/root\n",
    "etc/hostname": HOSTNAME + "\n",
    "etc/issue": "Corstone-1000 look-alike (QEMU virt, Debian packages) \\n \\l\n\n",
}


def _module_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if path.name.endswith(".xz"):
        return lzma.decompress(data)
    if path.name.endswith(".zst"):
        raise GuestBuildError(f"{path.name}: zstd-compressed modules are not supported (busybox "
                              "insmod)")
    return data


def _module_name(path: Path) -> str:
    return path.name.split(".ko")[0].replace("-", "_")


def _module_order(modroot: Path, wanted: Sequence[str]) -> list[tuple[str, bytes]]:
    """(file name, bytes) of the ``wanted`` modules and their dependencies, dependencies first.

    A package's kernel carries no ``modules.dep`` (``depmod`` makes it at install time), so each
    module's own ``depends=`` entry of its ``.modinfo`` is read instead."""
    files = {_module_name(path): path for path in modroot.rglob("*.ko*")}
    order: dict[str, bytes] = {}

    def visit(name: str) -> None:
        if name in order or name not in files:
            return
        data = _module_bytes(files[name])
        match = re.search(rb"\0depends=([^\0]*)\0", data)
        for dep in (match.group(1).decode().split(",") if match and match.group(1) else []):
            visit(dep.replace("-", "_"))
        order[name] = data

    for name in wanted:
        visit(name)
    return [(name + ".ko", data) for name, data in order.items()]


def _cpio(root: Path) -> bytes:
    """A newc cpio archive of ``root`` (what the kernel unpacks as initramfs), made here so no cpio
    tool is needed."""
    out = io.BytesIO()
    inode = 1

    def entry(name: str, mode: int, data: bytes, mtime: int = 0) -> None:
        nonlocal inode
        header = ("070701" + "".join(f"{value:08x}" for value in (
            inode, mode, 0, 0, 1, mtime, len(data), 0, 0, 0, 0, len(name) + 1, 0))).encode()
        inode += 1
        out.write(header + name.encode() + b"\0")
        out.write(b"\0" * (-(len(header) + len(name) + 1) % 4))
        out.write(data)
        out.write(b"\0" * (-len(data) % 4))

    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            entry(name, info.st_mode, os.readlink(path).encode())
        elif stat.S_ISDIR(info.st_mode):
            entry(name, info.st_mode, b"")
        elif stat.S_ISREG(info.st_mode):
            entry(name, info.st_mode, path.read_bytes())
    entry("TRAILER!!!", 0, b"")
    return out.getvalue()


def _assemble(extracted: Path, kernel_root: Path, root: Path) -> tuple[bytes, list[str]]:
    """The rootfs under ``root`` from the unpacked packages; returns (kernel image bytes, module
    load order)."""
    for sub in ("lib", "usr/lib", "usr/sbin", "usr/bin", "bin", "sbin"):
        source = extracted / sub
        if source.is_dir():
            shutil.copytree(source, root / sub, symlinks=True, dirs_exist_ok=True)
    for heavy in ("usr/lib/aarch64-linux-gnu/gconv", "usr/lib/aarch64-linux-gnu/audit"):
        shutil.rmtree(root / heavy, ignore_errors=True)
    for folder in ("proc", "sys", "dev", "tmp", "root", "etc", "bin", "sbin", "usr/bin", "usr/sbin",
                   "run", "var/log", "lib/modules"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    busybox = root / "bin" / "busybox"
    if not busybox.exists():
        raise GuestBuildError("busybox-static left no /bin/busybox")
    for name, text in _FILES.items():
        (root / name).write_text(text)
    (root / "etc/shadow").chmod(0o600)
    sftp = root / "usr/lib/openssh/sftp-server"
    if sftp.exists() and not (root / "usr/lib/sftp-server").exists():
        (root / "usr/lib/sftp-server").symlink_to("openssh/sftp-server")
    modroots = (sorted((kernel_root / "lib/modules").iterdir())
                if (kernel_root / "lib/modules").is_dir() else [])
    if not modroots:
        modroots = sorted((kernel_root / "usr/lib/modules").iterdir())
    modroot = modroots[-1]
    loaded: list[str] = []
    for name, data in _module_order(modroot, MODULES):
        (root / "lib/modules" / name).write_bytes(data)
        loaded.append(name)
    init = root / "init"
    init.write_text(_init_script(loaded))
    init.chmod(0o755)
    images = sorted((kernel_root / "boot").glob("vmlinuz-*"))
    if not images:
        raise GuestBuildError("the kernel package holds no /boot/vmlinuz-*")
    kernel = images[-1].read_bytes()
    if kernel[:2] == b"\x1f\x8b":  # Debian's arm64 vmlinuz is a gzip of the Image
        kernel = gzip.decompress(kernel)
    return kernel, loaded


def build_guest(folder: Path | None = None, *, force: bool = False,
                log: Log = lambda _line: None) -> GuestImage:
    """Build (or find) the guest in ``folder``; idempotent: a built, current image is returned as it
    is.

    Raises ``ConfigurationError`` (no apt/dpkg-deb, not root) or ``GuestBuildError`` (apt or a
    package failed).
    """
    base = (folder or default_guest_dir()).expanduser()
    image = guest_image(base)
    stamp = base / "recipe"
    if not force and image.kernel.is_file() and image.initrd.is_file() and stamp.is_file() \
            and stamp.read_text().split("\n")[0] == f"recipe {RECIPE}":
        log(f"guest up to date in {base} ({' '.join(stamp.read_text().splitlines()[1:2])})")
        return image
    _check_tools()
    began = time.monotonic()
    base.mkdir(parents=True, exist_ok=True)
    state = base / "apt"
    for sub in ("lists/partial", "cache/archives/partial"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    (state / "status").touch()
    log("apt-get update (private arm64 state; the system's apt state is not touched)")
    _run(["apt-get", *apt_options(state), "update"])
    kernel_pkg = _kernel_package(state)
    shutil.rmtree(base / "debs", ignore_errors=True)  # older builds kept their packages here
    with tempfile.TemporaryDirectory(prefix="guest-", dir=base) as scratch:
        log(f"apt-get download {kernel_pkg} {' '.join(PACKAGES)}")
        debs = _download(state, Path(scratch) / "debs", [kernel_pkg, *PACKAGES])
        extracted, kernel_root, root = (Path(scratch) / name for name in ("pkgs", "kernel", "root"))
        for deb in debs:
            target = kernel_root if deb.name.startswith(kernel_pkg + "_") else extracted
            _run(["dpkg-deb", "-x", str(deb), str(target)])
        root.mkdir()
        kernel, modules = _assemble(extracted, kernel_root, root)
        initrd = gzip.compress(_cpio(root), compresslevel=6, mtime=0)
    stamp.unlink(missing_ok=True)
    image.kernel.write_bytes(kernel)
    image.initrd.write_bytes(initrd)
    key = hashlib.sha256(b"".join(sorted(deb.name.encode() for deb in debs))).hexdigest()[:12]
    stamp.write_text(f"recipe {RECIPE}\n{kernel_pkg} packages {key}\nmodules {' '.join(modules)}\n")
    log(f"guest built in {time.monotonic() - began:.0f} s: {image.kernel} ({len(kernel) // 1024} "
        f"KiB), {image.initrd} ({len(initrd) // 1024} KiB), modules {', '.join(modules) or 'none'}")
    return image
