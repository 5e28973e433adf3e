"""``fvp-harness toolchain build|export|runner|library``: the real ExecuTorch toolchain, programs of
our networks, our runner on its runtime and the libraries that runner needs.

Wiring only: ``fvp_harness.toolchain`` builds and finds the toolchain; ``toolchain export`` runs
``fvp_harness/toolchain/export.py`` in the toolchain's python (torch is not in the harness's
environment); ``toolchain.runner_build`` builds the runner. The SDK and CMake come from ``--sdk``
and ``--cmake`` when given, else from the installed toolchain.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import time
from pathlib import Path

from fvp_harness.errors import ConfigurationError

__all__ = ["ORDER", "register"]

ORDER = 86

ARCHES = ("x86_64", "aarch64")  # the same as toolchain.runner_build.ARCHES (imported late there)


def _build(args: argparse.Namespace) -> int:
    from fvp_harness import toolchain  # late: only this verb needs the builder

    began = time.monotonic()
    chain = toolchain.build_toolchain(
        args.dir, force=args.force, log=lambda line: print(line, flush=True)
    )
    stamp = toolchain.read_stamp(chain.folder) or {}
    sizes, seconds = stamp.get("bytes", {}), stamp.get("seconds", {})
    print(f"python: {chain.python}\ncmake: {chain.cmake}")
    print(f"sdk x86_64: {chain.sdk('x86_64')}\nsdk aarch64: {chain.sdk('aarch64')}")
    print(
        f"size: venv {sizes.get('venv', 0) / 1e9:.2f} GB, "
        f"aarch64 SDK {sizes.get('sdk_aarch64', 0) / 1e6:.0f} MB"
    )
    print(f"time: {time.monotonic() - began:.0f} s (the build took {seconds.get('total', '?')} s)")
    return 0


def _export(args: argparse.Namespace) -> int:
    from fvp_harness.toolchain import exporting  # late: only this verb runs the exporter

    if args.input_only and (args.input_out or args.vela_report):
        raise ConfigurationError(
            "--input-only writes only the input (to -o); drop --input-out/--vela-report"
        )
    summary = exporting.run_export(
        args.network,
        kind=args.kind,
        output=args.output,
        input_out=args.input_out,
        input_only=args.input_only,
        vela_report=args.vela_report,
        folder=args.dir,
        seed=args.seed,
    )
    if args.input_only:
        shape = summary["input"]["shape"]
        print(
            f"{args.output}: {summary['network']} input, {summary['input']['bytes']} bytes "
            f"(float32 LE, shape {shape})"
        )
        return 0
    seconds = summary.get("seconds", {})
    print(
        f"{args.output}: {summary['network']} {summary['kind']}, {summary['bytes']:,} bytes in "
        f"{seconds.get('export', 0):.1f} s (imports {seconds.get('imports', 0):.1f} s)"
    )
    if args.input_out:
        print(f"{args.input_out}: input, {summary['input']['bytes']} bytes")
    for index, row in enumerate(summary.get("vela", [])):
        get = row.get
        print(
            f"vela partition {index}: {get('cycles_total', '?')} cycles, "
            f"{get('nn_macs', '?')} MACs, command stream {get('command_stream_bytes', '?')} B, "
            f"weights {get('weight_bytes', '?')} B, SRAM {get('sram_memory_used', '?')} KiB"
        )
    return 0


def _sdk_and_cmake(args: argparse.Namespace, arch: str) -> tuple[Path, Path]:
    """``--sdk``/``--cmake`` when given, else the installed toolchain's; CMake last from PATH."""
    from fvp_harness import toolchain  # late: only these sub-verbs need the toolchain

    sdk: Path | None = args.sdk
    cmake: Path | None = getattr(args, "cmake", None)
    if sdk is None:
        found = toolchain.find_toolchain()  # none installed: its error says how to install one
        sdk, cmake = found.sdk(arch), cmake or found.cmake
    elif cmake is None:
        try:
            cmake = toolchain.find_toolchain().cmake
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


def _arch(name: str) -> str:
    """``host`` is this machine's architecture (a host-target scenario works on either)."""
    if name != "host":
        return name
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(
        platform.machine().lower(), platform.machine().lower()
    )
    if machine not in ARCHES:
        raise ConfigurationError(f"--arch host: no ExecuTorch SDK for this machine ({machine}); "
                                 f"choose one of {', '.join(ARCHES)}")
    return machine


def _runner(args: argparse.Namespace) -> int:
    from fvp_harness.toolchain import runner_build  # late: only this sub-verb builds

    args.arch = _arch(args.arch)
    sdk, cmake = _sdk_and_cmake(args, args.arch)
    output = runner_build.build_runner(
        sdk=sdk,
        cmake=cmake,
        arch=args.arch,
        variant=args.variant,
        traced=args.traced,
        output=args.output,
        work=args.work.expanduser(),
        source=args.source if args.source is not None else runner_build.SOURCE_DIR,
        log=lambda line: print(line, flush=True),
    )
    print(f"runner: {output}")
    return 0


def _library(args: argparse.Namespace) -> int:
    from fvp_harness.toolchain import runner_build  # late: only this sub-verb copies

    args.arch = _arch(args.arch)
    sdk, _cmake = _sdk_and_cmake(args, args.arch)
    output = runner_build.copy_library(sdk, args.arch, args.name, args.output)
    print(f"library: {output}")
    return 0


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "toolchain",
        parents=[common],
        help="the real ExecuTorch toolchain: build it, export our networks, build our runner",
        description="The real ExecuTorch toolchain in its own venv (torch 2.13.0, executorch "
        "1.5.1, the Arm flow's pins, cmake) plus the aarch64 C++ SDK, cached; and real .pte "
        "programs of the simulator's networks; our executor runner on its runtime (x86_64 for the "
        "host, aarch64 for the QEMU guest) and the SDK's shared libraries a runner needs.",
    )
    verbs = parser.add_subparsers(dest="toolchain_verb", required=True)
    build = verbs.add_parser(
        "build",
        parents=[common],
        help="build (or find) the toolchain",
        description="Idempotent: a current toolchain is left as it is. Needs about 2.5 GB.",
    )
    build.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="cache folder (default $FVP_HARNESS_TOOLCHAIN or ~/.cache/fvp-harness/executorch)",
    )
    build.add_argument(
        "--force", action="store_true", help="rebuild even when the toolchain is current"
    )
    build.set_defaults(handler=_build)

    export = verbs.add_parser(
        "export",
        parents=[common],
        help="export one of the simulator's networks as a real .pte",
        description="Build the simulator's network (same layers, its int8 weights dequantised) "
        "as a PyTorch module and export it with the toolchain's ExecuTorch; or, with --input-only, "
        "write its input (raw float32 little-endian, what executor_runner --inputs reads). "
        "Deterministic: the same command writes the same bytes. Needs `fvp-harness toolchain "
        "build`.",
    )
    export.add_argument("network", help="resnet8, ds_cnn, mobilenet_v1_025 or deep_autoencoder")
    export.add_argument(
        "--kind",
        default="portable",
        choices=("portable", "xnnpack", "ethos-u85-256"),
        help="portable fp32, XNNPACK-delegated fp32, or Ethos-U85-256 int8 through Vela",
    )
    export.add_argument(
        "-o", "--output", type=Path, required=True, help="the .pte (with --input-only: the input)"
    )
    export.add_argument(
        "--input-out", type=Path, default=None, help="also write the network's input here"
    )
    export.add_argument(
        "--input-only", action="store_true", help="write only the network's input, to -o"
    )
    export.add_argument(
        "--vela-report",
        type=Path,
        default=None,
        help="ethos-u85-256: write what Vela reported per partition here (JSON)",
    )
    export.add_argument(
        "--seed",
        type=int,
        default=0,
        help="the simulator's seed of the weights and the input (as `sim model/input --seed`)",
    )
    export.add_argument(
        "--dir", type=Path, default=None, help="the toolchain's folder (default as for build)"
    )
    export.set_defaults(handler=_export)

    runner = verbs.add_parser(
        "runner",
        parents=[common],
        help="build our executor runner (cached)",
        description="Configure and build the runner with CMake (cached by source, SDK, "
        "architecture, variant and tracing) and copy it to -o.",
    )
    runner.add_argument("--arch", choices=(*ARCHES, "host"), required=True,
                        help="host: this machine's")
    runner.add_argument(
        "--variant",
        choices=("before", "after"),
        required=True,
        help="before: re-create the Method and its planned memory every inference; "
        "after: load once",
    )
    runner.add_argument("--traced", action="store_true", help="write an ETDump to --etdump_path")
    runner.add_argument(
        "--source", type=Path, default=None,
        help="the runner's source folder (executor_runner.cpp, CMakeLists.txt; default the "
        "package's own), e.g. {source}/runner of a commit being bisected",
    )
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
    library.add_argument("--arch", choices=(*ARCHES, "host"), required=True)
    library.add_argument("-o", "--output", type=Path, required=True)
    library.add_argument(
        "--sdk", type=Path, default=None, help="the SDK folder (default: the installed toolchain's)"
    )
    library.set_defaults(handler=_library)
