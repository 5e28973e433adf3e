"""Build our executor runner (``runner/``) against the executorch wheel's C++ SDK, for x86_64 or
aarch64.

Why a module of its own: the runner is C++ built with CMake, and a build must be cached (the same
source, SDK, architecture and variant give the same binary without recompiling), cross-compiled for
the QEMU guest with Debian's ``aarch64-linux-gnu-g++``, and fail with the log file's path, not a
wall of compiler output. Every step is a list argv with a deadline; its output goes to a log file in
the build folder.

The aarch64 runner names no library folder (no rpath): the harness deploys each file
content-addressed, so the libraries are found through ``LD_LIBRARY_PATH``. A host (x86_64) runner
records the SDK's ``lib`` folder as rpath: a built artifact, never committed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

from fvp_harness.errors import ConfigurationError, InfrastructureError

__all__ = [
    "ARCHES",
    "RUNNER_LIBRARIES",
    "SOURCE_DIR",
    "VARIANTS",
    "RunnerBuildError",
    "build_runner",
    "copy_library",
    "copy_runtime_libraries",
    "elf_machine",
    "elf_needed",
    "runtime_libraries",
]

Log = Callable[[str], None]

SOURCE_DIR = Path(__file__).resolve().parent / "runner"
"""The runner's C++ source, CMakeLists.txt and the aarch64 toolchain file (package data)."""

ARCHES = ("x86_64", "aarch64")
VARIANTS = ("before", "after")
CROSS_COMPILER = "aarch64-linux-gnu-g++"
CROSS_PACKAGE = "g++-aarch64-linux-gnu"
CONFIGURE_TIMEOUT_S = 300.0
COMPILE_TIMEOUT_S = 900.0

RUNNER_LIBRARIES = (
    "libexecutorch.so",
    "libexecutorch_kernels_optimized.so",
    "libexecutorch_backend_xnnpack.so",
)
"""What every runner links (the traced one adds ``libexecutorch_etdump.so``); their own NEEDED
entries (``libexecutorch_threadpool.so``) are added by ``runtime_libraries``."""

_MACHINES = {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64"}


class RunnerBuildError(InfrastructureError):
    """CMake or the compiler failed or outlived its deadline; the message names the log file."""


@contextlib.contextmanager
def _elf(path: Path) -> Iterator[ELFFile]:
    """``path`` opened with pyelftools (the library run/memory.py reads sections with); a file that
    is no 64-bit little-endian ELF is a ``ConfigurationError``."""
    with path.open("rb") as handle:
        head = handle.read(6)
        if len(head) < 6 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            raise ConfigurationError(f"{path}: not a 64-bit little-endian ELF file")
        handle.seek(0)
        try:
            yield ELFFile(handle)
        except ELFError as exc:
            raise ConfigurationError(f"{path}: unreadable ELF file ({exc})") from exc


def elf_machine(path: Path) -> str:
    """``x86_64`` or ``aarch64`` from the ELF header's ``e_machine`` (other machines: its name)."""
    with _elf(path) as elf:
        machine = elf["e_machine"]
    return _MACHINES.get(machine, f"machine {machine}")


def elf_needed(path: Path) -> list[str]:
    """The ``DT_NEEDED`` names of a 64-bit little-endian ELF file, read here so no binutils are
    needed."""
    with _elf(path) as elf:
        return [
            str(tag.needed)  # type: ignore[attr-defined]  # pyelftools sets it per DT_NEEDED
            for section in elf.iter_sections()
            if isinstance(section, DynamicSection)
            for tag in section.iter_tags("DT_NEEDED")
        ]


def _check_sdk(sdk: Path, arch: str) -> Path:
    """The SDK's lib folder after checking the SDK is one and is built for ``arch``."""
    config = sdk / "share" / "cmake" / "executorch-config.cmake"
    runtime = sdk / "lib" / "libexecutorch.so"
    for needed in (sdk / "include" / "executorch", config, runtime):
        if not needed.exists():
            raise ConfigurationError(
                f"{sdk}: not an ExecuTorch SDK (the executorch wheel's package folder): "
                f"{needed} is missing"
            )
    found = elf_machine(runtime)
    if found != arch:
        raise ConfigurationError(
            f"{runtime} is built for {found}, not {arch}: give the {arch} wheel's SDK"
        )
    return sdk / "lib"


def runtime_libraries(sdk: Path, names: Iterable[str]) -> list[str]:
    """``names`` and every SDK library they need in turn (``NEEDED``), in a stable order."""
    lib = sdk / "lib"
    order: list[str] = []
    pending = list(names)
    while pending:
        name = pending.pop(0)
        if name in order:
            continue
        if not (lib / name).is_file():
            if name.startswith("libexecutorch"):
                raise ConfigurationError(f"{lib}: {name} is missing from the SDK")
            continue  # a system library (libc, libstdc++, ...)
        order.append(name)
        pending.extend(elf_needed(lib / name))
    return order


def copy_runtime_libraries(
    sdk: Path, arch: str, dest_dir: Path, names: Sequence[str] = RUNNER_LIBRARIES
) -> list[Path]:
    """Copy ``names`` and what they need of the SDK's libraries into ``dest_dir`` (to deploy beside
    a runner)."""
    lib = _check_sdk(sdk, arch)
    dest_dir.mkdir(parents=True, exist_ok=True)
    copied = []
    for name in runtime_libraries(sdk, names):
        copied.append(_copy_atomic(lib / name, dest_dir / name))
    return copied


def copy_library(sdk: Path, arch: str, name: str, output: Path) -> Path:
    """Copy the one SDK library ``name`` to ``output`` (a scenario's build step for a deployed
    library)."""
    lib = _check_sdk(sdk, arch)
    available = sorted(path.name for path in lib.glob("*.so"))
    if name not in available:
        raise ConfigurationError(f"{lib}: no library {name!r}; the SDK has {', '.join(available)}")
    return _copy_atomic(lib / name, output)


def _copy_atomic(source: Path, target: Path) -> Path:
    """Copy through a temporary file in the target's folder: a reader never sees half a file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(fd)
    try:
        shutil.copyfile(source, temporary)
        os.chmod(temporary, 0o755)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def _source_hash(source: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(source.iterdir()):
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _toolchain_file(arch: str, source: Path) -> Path | None:
    """The CMake toolchain file for building ``arch`` on this host (None: the host's own
    compiler)."""
    if platform.machine() in (arch, "arm64" if arch == "aarch64" else arch):
        return None
    if arch != "aarch64":
        raise ConfigurationError(f"cannot build an {arch} runner on a {platform.machine()} host")
    if shutil.which(CROSS_COMPILER) is None:
        raise ConfigurationError(
            f"{CROSS_COMPILER} not found: the aarch64 runner is cross-compiled with Debian's "
            f"cross compiler (apt-get install {CROSS_PACKAGE})"
        )
    own = source / "aarch64-linux-gnu.cmake"
    return own if own.is_file() else SOURCE_DIR / "aarch64-linux-gnu.cmake"


def _run(argv: Sequence[str], *, log_file: Path, timeout: float, what: str) -> float:
    """Run one build step, its output into ``log_file``; seconds taken. Errors name the log file."""
    began = time.monotonic()
    with log_file.open("w") as out:
        out.write("$ " + " ".join(argv) + "\n")
        out.flush()
        try:
            proc = subprocess.run(
                list(argv),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                timeout=timeout,
                start_new_session=True,
                check=False,
            )
        except FileNotFoundError as exc:
            raise ConfigurationError(f"{argv[0]} not found ({what})") from exc
        except subprocess.TimeoutExpired as exc:
            raise RunnerBuildError(
                f"{what} took longer than {timeout:.0f} s; its output: {log_file}"
            ) from exc
    if proc.returncode != 0:
        tail = log_file.read_text(errors="replace").strip().splitlines()[-15:]
        raise RunnerBuildError(
            f"{what} failed (exit {proc.returncode}); its output: {log_file}\n" + "\n".join(tail)
        )
    return time.monotonic() - began


def build_runner(
    *,
    sdk: Path,
    cmake: Path,
    arch: str,
    variant: str,
    traced: bool,
    output: Path,
    work: Path,
    source: Path = SOURCE_DIR,
    log: Log = lambda _line: None,
) -> Path:
    """Configure and build the runner (once per source, SDK, arch, variant and tracing) and copy it
    to ``output``. ``source``: a folder with ``executor_runner.cpp`` and ``CMakeLists.txt`` (the
    package's own by default; a commit's checkout when bisecting a change to the runner).

    Raises ``ConfigurationError`` for a wrong argument, SDK or missing compiler,
    ``RunnerBuildError`` when CMake or the compiler fails (the message names the log file)."""
    if arch not in ARCHES:
        raise ConfigurationError(f"--arch {arch!r}: one of {', '.join(ARCHES)}")
    if variant not in VARIANTS:
        raise ConfigurationError(f"--variant {variant!r}: one of {', '.join(VARIANTS)}")
    sdk = sdk.resolve()
    source = source.resolve()
    if not (source / "CMakeLists.txt").is_file():
        raise ConfigurationError(f"{source}: no CMakeLists.txt (the runner's source folder)")
    lib = _check_sdk(sdk, arch)
    toolchain_file = _toolchain_file(arch, source)
    key_text = "\0".join([_source_hash(source), arch, variant, str(traced), str(sdk), str(cmake)])
    key = hashlib.sha256(key_text.encode()).hexdigest()[:16]
    build = work / f"runner-{arch}-{variant}{'-traced' if traced else ''}-{key}"
    binary = build / "executor_runner"
    build.mkdir(parents=True, exist_ok=True)
    with _locked(build / ".lock"):
        _build_once(build, binary, source, sdk, cmake, arch, variant, traced, toolchain_file, log)
        _copy_atomic(binary, output)
    needed = runtime_libraries(sdk, (name for name in elf_needed(output) if (lib / name).is_file()))
    log(f"{output}: {output.stat().st_size} bytes; it needs {', '.join(needed)} from {lib}")
    return output


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One build per build folder at a time (two callers asking for the same runner): the second
    waits, at most as long as a build may take, then finds the first one's binary."""
    deadline = time.monotonic() + CONFIGURE_TIMEOUT_S + COMPILE_TIMEOUT_S
    with path.open("a") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise RunnerBuildError(
                        f"waited {CONFIGURE_TIMEOUT_S + COMPILE_TIMEOUT_S:.0f} s for another build "
                        f"of {path.parent} to finish"
                    ) from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build_once(
    build: Path,
    binary: Path,
    source: Path,
    sdk: Path,
    cmake: Path,
    arch: str,
    variant: str,
    traced: bool,
    toolchain_file: Path | None,
    log: Log,
) -> None:
    """Configure and compile in ``build`` unless a finished build is there (its ``built`` stamp)."""
    if binary.is_file() and (build / "built").is_file():
        log(f"runner up to date: {binary}")
    else:
        (build / "built").unlink(missing_ok=True)
        argv = [
            str(cmake),
            "-S",
            str(source),
            "-B",
            str(build),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-Dexecutorch_DIR={sdk / 'share' / 'cmake'}",
            f"-DFVP_RUNNER_VARIANT={variant}",
            f"-DFVP_RUNNER_TRACED={'ON' if traced else 'OFF'}",
            f"-DFVP_RUNNER_RPATH={'ON' if arch == 'x86_64' else 'OFF'}",
        ]
        if toolchain_file is not None:
            argv.append(f"-DCMAKE_TOOLCHAIN_FILE={toolchain_file}")
        configured = _run(
            argv,
            log_file=build / "configure.log",
            timeout=CONFIGURE_TIMEOUT_S,
            what=f"configuring the {arch} runner",
        )
        compiled = _run(
            [str(cmake), "--build", str(build), "--target", "executor_runner"],
            log_file=build / "build.log",
            timeout=COMPILE_TIMEOUT_S,
            what=f"compiling the {arch} runner",
        )
        if elf_machine(binary) != arch:
            raise RunnerBuildError(
                f"{binary} is built for {elf_machine(binary)}, not {arch}; see {build}"
            )
        (build / "built").write_text(f"configure {configured:.2f} s\ncompile {compiled:.2f} s\n")
        log(
            f"runner built for {arch} ({variant}{', traced' if traced else ''}): "
            f"configured in {configured:.1f} s, "
            f"compiled in {compiled:.1f} s ({build})"
        )
