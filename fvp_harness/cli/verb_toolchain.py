"""``fvp-harness toolchain build|export``: the real ExecuTorch toolchain; programs of our networks.

Wiring only: ``fvp_harness.toolchain`` builds and finds the toolchain; ``toolchain export`` runs
``fvp_harness/toolchain/export.py`` in the toolchain's python (torch is not in the harness's
environment). Each sub-verb is one ``add_parser`` on the ``toolchain_verb`` group, so more can join
it.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from fvp_harness.errors import ConfigurationError

__all__ = ["ORDER", "register"]

ORDER = 86


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


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "toolchain",
        parents=[common],
        help="build the real ExecuTorch toolchain; export our networks to .pte",
        description="The real ExecuTorch toolchain in its own venv (torch 2.13.0, executorch "
        "1.5.1, the Arm flow's pins, cmake) plus the aarch64 C++ SDK, cached; and real .pte "
        "programs of the simulator's networks.",
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
