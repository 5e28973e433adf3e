"""``fvp-harness sim ...``: make the artifacts that stand in for cross-compiled runner builds, models and
inputs.

Why here and not in the harness CLI: the simulator is its own world (it could ship alone), so its artifact
makers live with it; ``fvp_harness/cli/verb_sim.py`` only forwards the arguments to ``main``.

    sim runner --driver per-inference|reuse [--id TEXT] [--fault SPEC] -o FILE
    sim vgf-runner [--id TEXT] [--no-io-stats] -o FILE   (VGF benchmark mode: fvp_harness/sim/vgf_runner.py)
    sim model NAME -o FILE [--seed N] [--macs 256]
    sim input NAME -o FILE [--seed N]
    sim info FILE                      (what a model or runner file holds, with NPU cycles and driver costs)

Exit status: 0 ok, 2 bad arguments (argparse), 1 a file could not be written or read.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from fvp_harness.sim.driver_cost import DEFAULT as DRIVER_COSTS
from fvp_harness.sim.driver_cost import DriverSizes
from fvp_harness.sim.modelfile import (
    DRIVER_MODES,
    SUPPORTED_MACS,
    ModelFileError,
    RunnerArtifact,
    compile_model,
    decode_model,
    decode_runner,
    encode_model,
    encode_runner,
    is_model_file,
    is_runner,
    make_input,
)
from fvp_harness.sim.models import ARCHITECTURES, get_architecture
from fvp_harness.sim.npu import inference_cycles
from fvp_harness.sim.vgf_runner import add_tool_parser, artifact_info, is_vgf_runner, make_tool_artifact

__all__ = ["build_parser", "main"]


def build_parser(prog: str = "fvp-harness sim") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description="Make simulator artifacts: runner builds (A/B and VGF), models, inputs."
    )
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)

    runner = sub.add_parser(
        "runner", help="an emulated executor_runner build (runs inside the simulated guest)"
    )
    runner.add_argument(
        "--driver",
        required=True,
        choices=DRIVER_MODES,
        help="per-inference: re-create Ethos-U driver objects on every execute() (before the "
        "driver-reuse change); reuse: create them once (after)",
    )
    runner.add_argument(
        "--id",
        default="",
        dest="build_id",
        help="identity text printed as the first log line ('executor_runner build id: TEXT')",
    )
    runner.add_argument(
        "--fault",
        default="",
        help="injected faults, comma-separated: crash=N, hang=N, truncate=N, timeout=N (N = "
        "iterations completed before the fault)",
    )
    runner.add_argument("-o", "--output", required=True, type=Path, help="file to write")

    add_tool_parser(sub)

    model = sub.add_parser("model", help="'compile' a network into a simulator model file")
    model.add_argument("name", choices=sorted(ARCHITECTURES))
    model.add_argument("-o", "--output", required=True, type=Path)
    model.add_argument("--seed", type=int, default=0, help="seed of the random weights (default 0)")
    model.add_argument(
        "--macs",
        type=int,
        default=256,
        choices=SUPPORTED_MACS,
        help="Ethos-U85 configuration compiled for (default 256, i.e. ethos-u85-256)",
    )

    inputs = sub.add_parser("input", help="a seeded raw int8 input file of the network's input shape")
    inputs.add_argument("name", choices=sorted(ARCHITECTURES))
    inputs.add_argument("-o", "--output", required=True, type=Path)
    inputs.add_argument("--seed", type=int, default=0)

    info = sub.add_parser("info", help="describe a model or runner file (JSON)")
    info.add_argument("file", type=Path)
    return parser


def _write(path: Path, data: bytes, executable: bool = False) -> None:
    """Write atomically (temp file + rename) so a half-written artifact is never deployed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    if executable:
        tmp.chmod(0o755)
    tmp.replace(path)


def _info(path: Path) -> dict[str, object]:
    data = path.read_bytes()
    if is_vgf_runner(data):
        return artifact_info(path, data)
    if is_runner(data):
        artifact = decode_runner(data)
        return {
            "file": str(path),
            "kind": "runner",
            "driver": artifact.driver,
            "id": artifact.build_id,
            "fault": artifact.fault,
        }
    if is_model_file(data):
        model = decode_model(data)
        sizes = DriverSizes.from_mapping(model.sizes.to_dict())
        return {
            "file": str(path),
            "kind": "model",
            "model": model.arch.name,
            "seed": model.seed,
            "npu": f"ethos-u85-{model.num_macs}",
            "params": model.arch.params,
            "macs": model.arch.macs,
            "input_shape": [1, *model.arch.input_shape],
            "output_shape": [1, *model.arch.output_shape],
            "sizes": model.sizes.to_dict(),
            "npu_cycles": inference_cycles(model.arch.layers, model.schedule, model.num_macs),
            "cpu_ms": {mode: round(DRIVER_COSTS.execute_ms(sizes, mode), 4) for mode in DRIVER_MODES},
        }
    raise ModelFileError(f"{path} is neither a simulator model file nor a runner artifact")


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run one ``sim`` sub-command; returns the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    try:
        if args.what == "runner":
            data = encode_runner(RunnerArtifact(args.driver, args.build_id, args.fault))
            if args.fault:
                from fvp_harness.sim.runner import UsageError, parse_faults  # late: only builds with faults need it

                try:
                    parse_faults(args.fault)
                except UsageError as exc:
                    err.write(f"fvp-harness sim runner: {exc}\n")
                    return 2
            _write(args.output, data, executable=True)
            out.write(
                f"{args.output}: executor_runner build (driver {args.driver}, id {args.build_id or 'unset'}"
                f"{', fault ' + args.fault if args.fault else ''}), {len(data)} bytes\n"
            )
        elif args.what == "vgf-runner":
            return make_tool_artifact(args, out)
        elif args.what == "model":
            arch = get_architecture(args.name)
            model = compile_model(arch, args.seed, args.macs)
            data = encode_model(model)
            _write(args.output, data)
            s = model.sizes
            out.write(
                f"{args.output}: {arch.name} for ethos-u85-{args.macs}, seed {args.seed}, {len(data)} bytes "
                f"(command stream {s.command_stream} B, weights {s.weights} B, scratch {s.scratch} B, "
                f"input {s.input} B, output {s.output} B)\n"
            )
        elif args.what == "input":
            arch = get_architecture(args.name)
            data = make_input(arch, args.seed).tobytes()
            _write(args.output, data)
            out.write(
                f"{args.output}: int8 input {[1, *arch.input_shape]} ({math.prod(arch.input_shape)} bytes), "
                f"seed {args.seed}\n"
            )
        else:
            out.write(json.dumps(_info(args.file), indent=2) + "\n")
    except (OSError, ModelFileError) as exc:
        err.write(f"fvp-harness sim {args.what}: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
