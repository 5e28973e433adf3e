"""``fvp-harness sim ...``: make the artifacts that stand in for cross-compiled runner builds,
models and inputs.

What each tool makes: docs/simulator-workload.md, "Making artifacts".
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

from fvp_harness.sim.baremetal import artifact as baremetal_artifact
from fvp_harness.sim.networks.architectures import ARCHITECTURES, get_architecture
from fvp_harness.sim.networks.estimate import vela_summary
from fvp_harness.sim.networks.magic import RUNNER_LIBCS
from fvp_harness.sim.networks.modelfile import (
    DEFAULT_NPU_DEVICE,
    DRIVER_MODES,
    LOG_GENERATIONS,
    SUPPORTED_MACS,
    CompiledModel,
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
from fvp_harness.sim.networks.partition import choose_cpu_layers
from fvp_harness.sim.npu import tool
from fvp_harness.sim.npu.cycles import cycle_source
from fvp_harness.sim.npu.driver_cost import DEFAULT as DRIVER_COSTS
from fvp_harness.sim.npu.driver_cost import DriverSizes
from fvp_harness.sim.npu.partitions import partition_cycles, partition_sizes
from fvp_harness.sim.workloads.vgf_runner import (
    add_tool_parser,
    artifact_info,
    is_vgf_runner,
    make_tool_artifact,
)

__all__ = ["build_parser", "main"]


def build_parser(prog: str = "fvp-harness sim") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Make simulator artifacts: runner builds (A/B and VGF), models, inputs."
    )
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)

    runner = sub.add_parser(
        "runner", help="an emulated executor_runner build (runs inside the simulated guest)"
    )
    runner.add_argument(
        "--driver",
        required=True,
        choices=DRIVER_MODES,
        help="per-inference: re-create Ethos-U driver objects on every execute(), as ExecuTorch "
             "did before "
        "#22599 (the 'before' build); reuse: create them once at init, as main does since #22599 "
        "(merged September 2026; the 'after' build)",
    )
    runner.add_argument(
        "--build-id",
        "--id",
        default="",
        dest="build_id",
        metavar="TEXT",
        help="add the line 'executor_runner build id: TEXT' after flag parsing (not upstream: the "
             "harness proves "
        "which build ran with it); --id is the older spelling",
    )
    runner.add_argument(
        "--cpu-time-report",
        action="store_true",
        help="add 'EthosUBackend::execute() CPU time: X ms' per delegate call (not upstream: the "
             "documented shape "
        "of the report that measured the driver-reuse change, #22596, closed unmerged; it lived in "
        "arm_perf_monitor.cpp)",
    )
    runner.add_argument(
        "--event-tracer",
        action="store_true",
        help="a build with the event tracer (EXECUTORCH_ENABLE_EVENT_TRACER, "
             "ET_EVENT_TRACER_ENABLED): the runner "
        "takes --etdump_path (default model.etdump) and writes its ETDump there after the outputs",
    )
    runner.add_argument(
        "--log-generation",
        choices=LOG_GENERATIONS,
        default="current",
        help="current: executor_runner.cpp as of pytorch/executorch cff6f4dd32 (default); old: as "
             "before "
        "2026-04-10 ('Method loaded.', no 'Iteration' or 'Model loaded in' lines, "
        "--print_all_output)",
    )
    runner.add_argument(
        "--fault",
        default="",
        help="injected faults, comma-separated: crash=N, hang=N, truncate=N, timeout=N (N = "
        "iterations completed before the fault)",
    )
    runner.add_argument(
        "--jitter",
        type=float,
        default=None,
        metavar="R",
        help="relative standard deviation of this build's per-inference CPU time (0 to 0.5), "
        "over the runner_jitter knob: a build that measures noisily",
    )
    runner.add_argument(
        "--libc",
        choices=RUNNER_LIBCS,
        default="glibc",
        help="the C library it was linked against: glibc (default; needs "
             "/lib/ld-linux-aarch64.so.1), musl (needs "
        "/lib/ld-musl-aarch64.so.1: meta-arm's A320 image, TCLIBC=musl) or static (needs no "
        "loader); on a guest without its loader the shell says 'not found', exit 127",
    )
    runner.add_argument(
        "--npu-device",
        default=DEFAULT_NPU_DEVICE,
        metavar="PATH",
        help="the NPU node the delegate opens (upstream's ethosu.device compile spec; default "
             "/dev/ethosu0, the "
        "ethos-u-linux-driver-stack's): absent, the first execute fails as upstream does (Aborted, "
        "exit 134)",
    )
    runner.add_argument(
        "--no-ethos-u",
        dest="ethos_u",
        action="store_false",
        help="a build without the Ethos-U delegate linked (a CPU-only runtime): the runtime has "
        "no EthosUBackend, so loading a program delegated to it fails as upstream's does "
        "('Backend EthosUBackend is not registered.', 'Loading of method forward failed with "
        "status 0x20', Aborted, exit 134)",
    )
    runner.add_argument("-o", "--output", required=True, type=Path, help="file to write")

    add_tool_parser(sub)
    baremetal_artifact.add_tool_parser(sub)

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
    model.add_argument(
        "--accelerator",
        default=None,
        metavar="CONFIG",
        help="NPU configuration compiled for, as Vela spells it (ethos-u55-32..256, "
             "ethos-u85-128..2048); "
        "overrides --macs",
    )
    model.add_argument(
        "--cycle-counter",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the ethosu.enable_cycle_counter compile spec: the delegate prints 'Ethos-U Linux "
             "delegate cycle "
        "counter: N' per inference (default on)",
    )
    model.add_argument(
        "--partitions",
        type=int,
        default=1,
        metavar="K",
        help="delegate the network as K Ethos-U partitions with a CPU operator between each two "
             "(default 1: "
        "fully delegated); the runner then prints one cycle-counter line per delegate call, K per "
        "inference",
    )
    # --tflite, --npu-cycles, --vela-*: the TFLite file and Vela's estimate
    tool.add_arguments(model)

    inputs = sub.add_parser("input",
                            help="a seeded raw int8 input file of the network's input shape")
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


def _partitions_info(model: CompiledModel) -> list[dict[str, object]]:
    """``sim info`` of a partly delegated model: each partition's layers, NPU cycles and driver
    costs."""
    rows: list[dict[str, object]] = []
    for partition, cycles in zip(model.delegation.partitions, partition_cycles(model), strict=True):
        sizes = partition_sizes(model, partition)
        rows.append({"layers": [model.arch.layers[i].name for i in partition.layers],
                     "npu_cycles": cycles,
                     "cpu_ms": {mode: round(DRIVER_COSTS.execute_ms(sizes, mode), 4)
                                for mode in DRIVER_MODES}})
    return rows


def _info(path: Path) -> dict[str, object]:
    data = path.read_bytes()
    if baremetal_artifact.is_baremetal_artifact(data):
        return baremetal_artifact.artifact_info(path, data)
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
            "cpu_time_report": artifact.cpu_time_report,
            "log_generation": artifact.log_generation,
            "event_tracer": artifact.event_tracer,
            "libc": artifact.libc,
            "npu_device": artifact.npu_device,
            "jitter": artifact.jitter,
        }
    if is_model_file(data):
        model = decode_model(data)
        sizes = DriverSizes.from_mapping(model.sizes.to_dict())
        return {
            "file": str(path),
            "kind": "model",
            "model": model.arch.name,
            "seed": model.seed,
            "npu": model.accelerator.name,
            "cycle_counter": model.cycle_counter,
            "params": model.arch.params,
            "macs": model.arch.macs,
            "input_shape": [1, *model.arch.input_shape],
            "output_shape": [1, *model.arch.output_shape],
            "sizes": model.sizes.to_dict(),
            "npu_cycles": sum(partition_cycles(model)),
            **({"partitions": _partitions_info(model)} if model.cpu_layers else {}),
            "npu_cycles_source": cycle_source(model),
            **({"vela": vela_summary(model.vela)} if model.vela is not None else {}),
            "cpu_ms": {mode: round(DRIVER_COSTS.execute_ms(sizes, mode), 4)
                       for mode in DRIVER_MODES},
        }
    raise ModelFileError(f"{path} is neither a simulator model file nor a runner artifact")


def main(argv: Sequence[str] | None = None, out: TextIO | None = None,
         err: TextIO | None = None) -> int:
    """Run one ``sim`` sub-command; returns the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    try:
        if args.what == "runner":
            if args.event_tracer and args.log_generation != "current":
                err.write("fvp-harness sim runner: --event-tracer is emulated for --log-generation "
                          "current only\n")
                return 2
            try:
                artifact = RunnerArtifact(args.driver, args.build_id, args.fault,
                                          args.cpu_time_report,
                                          args.log_generation, event_tracer=args.event_tracer,
                                          libc=args.libc,
                                          npu_device=args.npu_device, ethos_u=args.ethos_u,
                                          jitter=args.jitter)
            except ValueError as exc:
                err.write(f"fvp-harness sim runner: {exc}\n")
                return 2
            data = encode_runner(artifact)
            if args.fault:
                # late: only builds with faults need it
                from fvp_harness.sim.workloads.executor_runner import (
                    UsageError,
                    parse_faults,
                )

                try:
                    parse_faults(args.fault)
                except UsageError as exc:
                    err.write(f"fvp-harness sim runner: {exc}\n")
                    return 2
            _write(args.output, data, executable=True)
            extras = [f"build id {args.build_id}" if args.build_id else "no build-id line"]
            extras += ["CPU-time report"] if args.cpu_time_report else []
            extras += ["event tracer (--etdump_path)"] if args.event_tracer else []
            extras += [f"{args.log_generation} log generation"] + (
                [f"fault {args.fault}"] if args.fault else []
            )
            extras += [args.libc] + ([f"NPU {args.npu_device}"]
                                     if args.npu_device != DEFAULT_NPU_DEVICE else [])
            extras += [] if args.ethos_u else ["without the Ethos-U delegate"]
            extras += [f"jitter {args.jitter:g}"] if args.jitter is not None else []
            out.write(
                f"{args.output}: executor_runner build (driver {args.driver}, "
                f"{', '.join(extras)}), {len(data)} bytes\n"
            )
        elif args.what == "baremetal-runner":
            return baremetal_artifact.make_tool_artifact(args, out, err)
        elif args.what == "vgf-runner":
            return make_tool_artifact(args, out)
        elif args.what == "model":
            arch = get_architecture(args.name)
            try:
                cpu_layers = choose_cpu_layers(arch, args.partitions)
                model = compile_model(arch, args.seed, args.macs, args.cycle_counter,
                                      accelerator=args.accelerator, cpu_layers=cpu_layers)
            except ValueError as exc:
                err.write(f"fvp-harness sim model: {exc}\n")
                return 2
            model, notes = tool.apply(args, model, _write)
            data = encode_model(model)
            _write(args.output, data)
            s = model.sizes
            out.write(
                f"{args.output}: {arch.name} for {model.accelerator}, seed {args.seed}, "
                f"{len(data)} bytes (command stream {s.command_stream} B, weights {s.weights} B, "
                f"scratch {s.scratch} B, input {s.input} B, output {s.output} "
                f"B){'' if args.cycle_counter else ', cycle counter off'}\n"
            )
            if model.cpu_layers:
                out.write(f"  {args.partitions} Ethos-U partitions, NPU cycles "
                          f"{list(partition_cycles(model))} per call; on the CPU between them: "
                          f"{', '.join(model.cpu_layers)}\n")
            out.write("".join(f"  {note}\n" for note in notes))
        elif args.what == "input":
            arch = get_architecture(args.name)
            data = make_input(arch, args.seed).tobytes()
            _write(args.output, data)
            out.write(
                f"{args.output}: int8 input {[1, *arch.input_shape]} "
                f"({math.prod(arch.input_shape)} bytes), seed {args.seed}\n"
            )
        else:
            out.write(json.dumps(_info(args.file), indent=2) + "\n")
    except (ModelFileError, FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
        err.write(f"fvp-harness sim {args.what}: {exc}\n")
        # the file named is missing or no simulator artifact: bad input, as the harness's exit 2
        return 2
    except (OSError, tool.VelaFailed) as exc:
        err.write(f"fvp-harness sim {args.what}: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
