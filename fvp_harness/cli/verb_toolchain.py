"""``fvp-harness toolchain runner|library``: our executor runner on ExecuTorch's runtime, and its
libraries.

Wiring only: ``fvp_harness.toolchain.runner_build`` does the work. The SDK and CMake come from
``--sdk`` and ``--cmake`` when given, else from the installed toolchain
(``fvp_harness.toolchain.find_toolchain``).

MERGE NOTE (w/runner): this file holds only the runner's sub-verbs; the toolchain helper's verb file
adds the others (install, export) under the same ``toolchain`` verb.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from fvp_harness.errors import ConfigurationError

__all__ = ["ORDER", "register"]

ORDER = 86

ARCHES = ("x86_64", "aarch64")  # the same as toolchain.runner_build.ARCHES (imported late there)


def _sdk_and_cmake(args: argparse.Namespace, arch: str) -> tuple[Path, Path]:
    """``--sdk``/``--cmake`` when given, else the installed toolchain's; CMake last from PATH."""
    from fvp_harness import toolchain  # late: only these sub-verbs need the toolchain

    sdk: Path | None = args.sdk
    cmake: Path | None = getattr(args, "cmake", None)
    find = getattr(toolchain, "find_toolchain", None)
    if sdk is None and find is not None:
        found = find()  # no toolchain installed: its error says how to install one
        sdk, cmake = found.sdk(arch), cmake or found.cmake
    elif cmake is None and find is not None:
        try:
            cmake = find().cmake
        except ConfigurationError:
            cmake = None  # --sdk given without a toolchain: CMake from PATH
    if sdk is None:
        raise ConfigurationError(
            "no ExecuTorch SDK: give --sdk (the executorch wheel's package folder, holding "
            "include/, lib/ and share/)"
        )
    if cmake is None:
        which = shutil.which("cmake")
        if which is None:
            raise ConfigurationError("no cmake: give --cmake or put cmake on PATH")
        cmake = Path(which)
    return sdk, cmake


def _runner(args: argparse.Namespace) -> int:
    from fvp_harness.toolchain import runner_build  # late: only this sub-verb builds

    sdk, cmake = _sdk_and_cmake(args, args.arch)
    output = runner_build.build_runner(
        sdk=sdk,
        cmake=cmake,
        arch=args.arch,
        variant=args.variant,
        traced=args.traced,
        output=args.output,
        work=args.work.expanduser(),
        log=lambda line: print(line, flush=True),
    )
    print(f"runner: {output}")
    return 0


def _library(args: argparse.Namespace) -> int:
    from fvp_harness.toolchain import runner_build  # late: only this sub-verb copies

    sdk, _cmake = _sdk_and_cmake(args, args.arch)
    output = runner_build.copy_library(sdk, args.arch, args.name, args.output)
    print(f"library: {output}")
    return 0


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "toolchain",
        parents=[common],
        help="the real ExecuTorch toolchain: our runner on its runtime",
        description="Build our executor runner against the executorch wheel's C++ SDK "
        "(x86_64 for the host, "
        "aarch64 for the QEMU guest) and copy the SDK's shared libraries a runner needs.",
    )
    verbs = parser.add_subparsers(dest="toolchain_verb", required=True, metavar="runner|library")
    runner = verbs.add_parser(
        "runner",
        parents=[common],
        help="build our executor runner (cached)",
        description="Configure and build the runner with CMake (cached by source, SDK, "
        "architecture, variant and tracing) and copy it to -o.",
    )
    runner.add_argument("--arch", choices=ARCHES, required=True)
    runner.add_argument(
        "--variant",
        choices=("before", "after"),
        required=True,
        help="before: re-create the Method and its planned memory every inference; "
        "after: load once",
    )
    runner.add_argument("--traced", action="store_true", help="write an ETDump to --etdump_path")
    runner.add_argument(
        "-o", "--output", type=Path, required=True, help="where the runner is copied"
    )
    runner.add_argument(
        "--sdk", type=Path, default=None, help="the SDK folder (default: the installed toolchain's)"
    )
    runner.add_argument(
        "--cmake", type=Path, default=None, help="CMake (default: the toolchain's, else PATH's)"
    )
    runner.add_argument(
        "--work",
        type=Path,
        default=Path("~/.cache/fvp-harness/runner-build"),
        help="build folders (default ~/.cache/fvp-harness/runner-build)",
    )
    runner.set_defaults(handler=_runner)
    library = verbs.add_parser(
        "library",
        parents=[common],
        help="copy one of the SDK's runtime libraries",
        description="Copy one shared library of the SDK (e.g. libexecutorch.so) to -o, to "
        "deploy with a runner.",
    )
    library.add_argument(
        "name", help="the library's file name, e.g. libexecutorch_kernels_optimized.so"
    )
    library.add_argument("--arch", choices=ARCHES, required=True)
    library.add_argument("-o", "--output", type=Path, required=True)
    library.add_argument(
        "--sdk", type=Path, default=None, help="the SDK folder (default: the installed toolchain's)"
    )
    library.set_defaults(handler=_library)
