"""The real ExecuTorch toolchain: torch, ExecuTorch and the Arm flow in a venv, plus an aarch64 SDK.

Why a venv of its own: ``executorch`` needs torch (1.5 GB) and its Arm flow pins numpy 2.1.3 and an
older Vela than the harness uses, so it must stay apart from the harness's environment.
``fvp-harness toolchain build`` makes it under a cache folder (default
``~/.cache/fvp-harness/executorch``, ``$FVP_HARNESS_TOOLCHAIN`` to move it):

- ``venv/``: made with the running interpreter's ``-m venv``; ``torch==2.13.0`` first
  (``executorch`` does not declare torch, and only that exact pin takes the CPU build: a range may
  pull a CUDA build of several GB), then ``executorch==1.5.1``, the Arm flow's pins and PyPI's
  ``cmake`` (the SDK's imported targets need CMake 3.28);
- ``sdk/aarch64/executorch/{include,lib,share}``: the aarch64 wheel's C++ SDK, for cross builds
  (the x86_64 one is the installed package itself);
- ``install.log``: pip's output; ``toolchain.json``: the stamp (pins, versions found, seconds per
  step, sizes), written last and atomically, so a killed build is never taken as current and a
  changed pin rebuilds.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fvp_harness.errors import ConfigurationError
from fvp_harness.files import atomic_write
from fvp_harness.toolchain import process

__all__ = [
    "ARM_PINS",
    "CMAKE_PIN",
    "ENV_VAR",
    "EXECUTORCH_PIN",
    "STAMP",
    "TORCH_PIN",
    "Toolchain",
    "ToolchainError",
    "build_toolchain",
    "default_toolchain_dir",
    "find_toolchain",
    "read_stamp",
]

ENV_VAR = "FVP_HARNESS_TOOLCHAIN"
TORCH_PIN = "torch==2.13.0"
EXECUTORCH_PIN = "executorch==1.5.1"
ARM_PINS = ("ethos-u-vela==5.1.0", "tosa-tools==2026.5.0", "ml_dtypes==0.5.1")
CMAKE_PIN = "cmake>=3.28"
STAMP = "toolchain.json"
RECIPE = 1
"""Bumped when what the build makes changes (not a pin: pins are compared themselves), so old
folders rebuild."""

NEEDED_BYTES = 2_500_000_000
"""Free space a build needs (venv 1.6 GB, pip's unpacking, the aarch64 wheel and its SDK)."""
PIP_TIMEOUT_S = 1800.0
SHORT_TIMEOUT_S = 300.0
SDK_PARTS = ("include", "lib", "share")
AARCH64_PLATFORM = "manylinux_2_28_aarch64"
REPORTED = ("torch", "executorch", "ethos-u-vela", "tosa-tools", "ml_dtypes", "numpy", "cmake")

Log = Callable[[str], None]


class ToolchainError(ConfigurationError):
    """The toolchain is missing, incomplete or cannot be built here; the message says what to run or
    install."""


@dataclass(frozen=True)
class Toolchain:
    """A built toolchain: its folder, the venv's python and cmake, and the C++ SDK of each
    architecture."""

    folder: Path
    python: Path
    cmake: Path

    def sdk(self, arch: str) -> Path:
        """The ``executorch`` package folder holding ``include/``, ``lib/`` and ``share/cmake`` for
        ``arch``."""
        if arch == "x86_64":
            found = sorted((self.folder / "venv" / "lib").glob("python3*/site-packages/executorch"))
            if not found:
                raise ToolchainError(
                    f"{self.folder}: the venv holds no executorch package; run "
                    "`fvp-harness toolchain build --force`"
                )
            return found[-1]
        if arch == "aarch64":
            return self.folder / "sdk" / "aarch64" / "executorch"
        raise ToolchainError(
            f"no ExecuTorch SDK for architecture {arch!r} (known: x86_64, aarch64)"
        )


def default_toolchain_dir() -> Path:
    """``$FVP_HARNESS_TOOLCHAIN``, else ``~/.cache/fvp-harness/executorch`` (outside any
    checkout)."""
    named = os.environ.get(ENV_VAR)
    return (
        Path(named).expanduser() if named else Path.home() / ".cache" / "fvp-harness" / "executorch"
    )


def _pins() -> dict[str, Any]:
    return {
        "recipe": RECIPE,
        "torch": TORCH_PIN,
        "executorch": EXECUTORCH_PIN,
        "arm": list(ARM_PINS),
        "cmake": CMAKE_PIN,
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
    }


def _toolchain(base: Path) -> Toolchain:
    return Toolchain(
        folder=base, python=base / "venv" / "bin" / "python", cmake=base / "venv" / "bin" / "cmake"
    )


def read_stamp(base: Path) -> dict[str, Any] | None:
    try:
        stamp = json.loads((base / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) else None


def _missing(chain: Toolchain) -> list[str]:
    """The pieces a complete toolchain has that this folder lacks."""
    pieces = [
        chain.python,
        chain.cmake,
        chain.sdk("aarch64") / "lib" / "libexecutorch.so",
        chain.sdk("aarch64") / "share" / "cmake",
    ]
    missing = [str(path) for path in pieces if not path.exists()]
    try:
        chain.sdk("x86_64")
    except ToolchainError:
        missing.append(
            str(chain.folder / "venv" / "lib" / "python3*" / "site-packages" / "executorch")
        )
    return missing


def find_toolchain(folder: Path | None = None) -> Toolchain:
    """The built, current toolchain in ``folder`` (default ``default_toolchain_dir()``), or
    ``ToolchainError`` saying to run ``fvp-harness toolchain build``."""
    base = (folder or default_toolchain_dir()).expanduser()
    build = "fvp-harness toolchain build" + (f" --dir {base}" if folder else "")
    stamp = read_stamp(base)
    if stamp is None:
        raise ToolchainError(
            f"no ExecuTorch toolchain in {base} (no {STAMP}): run `{build}` "
            f"(about 4 min and 2 GB; ${ENV_VAR} moves the folder)"
        )
    if stamp.get("pins") != _pins():
        raise ToolchainError(
            f"the ExecuTorch toolchain in {base} was built with other pins "
            f"({stamp.get('pins')}; wanted {_pins()}): run `{build}` to rebuild it"
        )
    chain = _toolchain(base)
    missing = _missing(chain)
    if missing:
        raise ToolchainError(
            f"the ExecuTorch toolchain in {base} is incomplete (missing {', '.join(missing)}): "
            f"run `{build} --force`"
        )
    return chain


def _size(path: Path) -> int:
    """Bytes of every regular file under ``path`` (symlinks not followed)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                info = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if not os.path.islink(os.path.join(root, name)):
                total += info.st_size
    return total


def _check_prerequisites(base: Path) -> None:
    missing = [name for name in ("venv", "ensurepip") if importlib.util.find_spec(name) is None]
    if missing:
        raise ToolchainError(
            f"{sys.executable} has no {' and no '.join(missing)} module, which the toolchain's "
            "venv is made with: install it (Debian/Ubuntu: `apt-get install python3-venv`, "
            f"or python{sys.version_info[0]}.{sys.version_info[1]}-venv) and run again"
        )
    probe = base
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if free < NEEDED_BYTES:
        raise ToolchainError(
            f"not enough free disk for the ExecuTorch toolchain in {base}: {free / 1e9:.1f} GB "
            f"free on {probe}'s file system, {NEEDED_BYTES / 1e9:.1f} GB needed (free some, or "
            f"set ${ENV_VAR} / --dir to a folder on a larger disk)"
        )


class _Steps:
    """Runs the build's commands (list argv, a timeout each), appends their output to
    ``install.log`` and times each step."""

    def __init__(self, log_path: Path, log: Log) -> None:
        self.log_path = log_path
        self.log = log
        self.seconds: dict[str, float] = {}

    def run(
        self, step: str, argv: Sequence[str], *, timeout: float = PIP_TIMEOUT_S, quiet: bool = False
    ) -> str:
        if not quiet:
            self.log(f"{step}: {' '.join(argv[1:] if argv[1:2] != ['-m'] else argv[2:])}")
        began = time.monotonic()
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV")
        }
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        with self.log_path.open("a", encoding="utf-8") as out:
            out.write(f"\n=== {step}: {' '.join(argv)}\n")
            out.flush()
            try:
                proc = process.run_whole(argv, timeout=timeout, env=env, merge_output=True)
            except FileNotFoundError as exc:
                raise ToolchainError(f"{step}: {argv[0]} not found") from exc
            except subprocess.TimeoutExpired as exc:
                text = (
                    exc.output
                    if isinstance(exc.output, str)
                    else (exc.output or b"").decode(errors="replace")
                )
                out.write(text)
                raise ToolchainError(
                    f"{step} took longer than {timeout:.0f} s (pip's output: {self.log_path})"
                ) from exc
            out.write(proc.stdout)
        self.seconds[step] = round(time.monotonic() - began, 1)
        if proc.returncode != 0:
            tail = "\n".join(
                line
                for line in proc.stdout.splitlines()
                if not line.startswith("WARNING: Location")
            )[-1500:].strip()
            raise ToolchainError(
                f"{step} failed (exit {proc.returncode}); the last lines:\n{tail}\n"
                f"(the whole output: {self.log_path})"
            )
        return proc.stdout


def _unpack_sdk(wheel: Path, arch_dir: Path) -> None:
    """Only ``executorch/{include,lib,share}`` of a wheel, into ``arch_dir/executorch`` (made fresh:
    unpacked beside it, then renamed into place)."""
    staging = arch_dir.with_name(arch_dir.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    prefixes = tuple(f"executorch/{part}/" for part in SDK_PARTS)
    with zipfile.ZipFile(wheel) as archive:
        members = [name for name in archive.namelist() if name.startswith(prefixes)]
        if not any(name.startswith("executorch/lib/") for name in members):
            raise ToolchainError(
                f"{wheel.name} holds no executorch/lib/: not the ExecuTorch C++ SDK"
            )
        for name in members:
            archive.extract(name, staging)
    shutil.rmtree(arch_dir, ignore_errors=True)
    staging.rename(arch_dir)


def _versions(python: Path, steps: _Steps) -> dict[str, str]:
    script = (
        "import importlib.metadata as m, json\nfound = {}\n"
        f"for name in {list(REPORTED)!r}:\n"
        "    try:\n        found[name] = m.version(name)\n"
        "    except m.PackageNotFoundError:\n        found[name] = ''\nprint(json.dumps(found))\n"
    )
    text = steps.run("versions", [str(python), "-c", script], timeout=SHORT_TIMEOUT_S, quiet=True)
    versions: dict[str, str] = json.loads(text.strip().splitlines()[-1])
    return versions


def build_toolchain(
    folder: Path | None = None, *, force: bool = False, log: Log = lambda _line: None
) -> Toolchain:
    """Build (or find) the toolchain in ``folder``; idempotent: a current one is returned as it is
    ("already current"). A folder without a current stamp (a changed pin, a killed build, ``force``)
    is rebuilt from an empty venv. Raises ``ToolchainError`` naming what is missing (venv module,
    disk, a failed pip step)."""
    base = (folder or default_toolchain_dir()).expanduser().absolute()
    if not force:
        try:
            chain = find_toolchain(base)
        except ToolchainError:
            pass
        else:
            stamp = read_stamp(base) or {}
            version = stamp.get("versions", {}).get("executorch", "?")
            log(f"already current: {base} (ExecuTorch {version}, built {stamp.get('built', '?')})")
            return chain
    _check_prerequisites(base)
    began = time.monotonic()
    base.mkdir(parents=True, exist_ok=True)
    (base / STAMP).unlink(missing_ok=True)  # from here on the folder is not current until the end
    log_path = base / "install.log"
    log_path.write_text(f"fvp-harness toolchain build into {base}\n", encoding="utf-8")
    steps = _Steps(log_path, log)
    chain = _toolchain(base)
    venv = base / "venv"
    shutil.rmtree(venv, ignore_errors=True)
    steps.run("venv", [sys.executable, "-m", "venv", str(venv)], timeout=SHORT_TIMEOUT_S)
    pip = [str(chain.python), "-m", "pip", "install", "--progress-bar", "off"]
    steps.run("torch", [*pip, TORCH_PIN])
    steps.run("executorch", [*pip, EXECUTORCH_PIN])
    steps.run("arm flow and cmake", [*pip, *ARM_PINS, CMAKE_PIN])
    downloads = base / "downloads"
    shutil.rmtree(downloads, ignore_errors=True)
    steps.run(
        "aarch64 wheel",
        [
            str(chain.python),
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--platform",
            AARCH64_PLATFORM,
            "--python-version",
            f"{sys.version_info[0]}.{sys.version_info[1]}",
            "--progress-bar",
            "off",
            "-d",
            str(downloads),
            EXECUTORCH_PIN,
        ],
    )
    wheels = sorted(downloads.glob("executorch-*.whl"))
    if not wheels:
        raise ToolchainError(
            f"pip download left no executorch wheel in {downloads} (see {log_path})"
        )
    unpack_began = time.monotonic()
    _unpack_sdk(wheels[-1], base / "sdk" / "aarch64")
    steps.seconds["aarch64 sdk unpack"] = round(time.monotonic() - unpack_began, 1)
    wheel_bytes = wheels[-1].stat().st_size
    shutil.rmtree(downloads, ignore_errors=True)
    versions = _versions(chain.python, steps)
    missing = _missing(chain)
    if missing:
        raise ToolchainError(
            f"the build finished but {', '.join(missing)} is missing (see {log_path})"
        )
    sizes = {"venv": _size(venv), "sdk_aarch64": _size(base / "sdk"), "aarch64_wheel": wheel_bytes}
    total = round(time.monotonic() - began, 1)
    stamp = {
        "pins": _pins(),
        "versions": versions,
        "seconds": {**steps.seconds, "total": total},
        "bytes": sizes,
        "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": str(chain.python),
        "sdk": {"x86_64": str(chain.sdk("x86_64")), "aarch64": str(chain.sdk("aarch64"))},
    }
    atomic_write(base / STAMP, json.dumps(stamp, indent=2) + "\n")
    found = ", ".join(f"{name} {version}" for name, version in versions.items() if version)
    log(
        f"built in {total:.0f} s: venv {sizes['venv'] / 1e9:.2f} GB, "
        f"aarch64 SDK {sizes['sdk_aarch64'] / 1e6:.0f} MB; {found}"
    )
    return chain
