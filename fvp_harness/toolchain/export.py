"""Export one of the simulator's networks as a real ExecuTorch ``.pte``, in the TOOLCHAIN's python.

A script of its own because torch and executorch live only in the toolchain's venv; it reads the
networks through ``sim.networks`` (numpy only) and nothing else of the harness
(``tests/test_layers.py``). The module, weights, input, kinds and exit status:
docs/real-executorch.md, "The four networks as real programs".
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from fvp_harness.sim.networks.architectures import ARCHITECTURES, Architecture, get_architecture
from fvp_harness.sim.networks.modelfile import (
    CALIBRATION_SAMPLES,
    INPUT_SCALE,
    CompiledModel,
    compile_model,
    make_input,
)
from fvp_harness.sim.networks.tflite_export import plan_tflite

__all__ = [
    "KINDS",
    "build_module",
    "export_program",
    "float_input",
    "float_parameters",
    "main",
    "vela_summaries",
]

KINDS = ("portable", "xnnpack", "ethos-u85-256")
ETHOS_TARGET = "ethos-u85-256"
EXIT_BAD_INPUT = 2


def float_parameters(model: CompiledModel) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Layer name -> (weights in PyTorch layout, bias), float32, dequantised from the simulator's
    int8 model."""
    scales = {
        tensor.name: np.asarray(tensor.scale, dtype=np.float64)
        for tensor in plan_tflite(model).tensors
        if tensor.name.endswith(("/weights", "/bias"))
    }
    found: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for layer in model.arch.layers:
        q = model.quant[layer.name]
        if q.weights is None or q.bias is None:
            continue
        w_scale = scales[f"{layer.name}/weights"].reshape(-1, *([1] * (q.weights.ndim - 1)))
        weights = (q.weights.astype(np.float64) * w_scale).astype(np.float32)
        bias = (q.bias.astype(np.float64) * scales[f"{layer.name}/bias"]).astype(np.float32)
        found[layer.name] = (weights, bias)
    return found


def float_input(arch: Architecture, seed: int) -> np.ndarray:
    """The simulator's int8 input for ``seed``, dequantised, with the batch dimension: shape ``(1,
    *input)``."""
    return (make_input(arch, seed).astype(np.float32) * np.float32(INPUT_SCALE)).reshape(
        1, *arch.input_shape
    )


def build_module(arch: Architecture, params: dict[str, tuple[np.ndarray, np.ndarray]]) -> Any:
    """The network as a ``torch.nn.Module`` with ``params`` loaded (see the module docstring for the
    mapping)."""
    import torch  # late: torch is in the toolchain's venv only, and loads in seconds

    class Network(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ops = torch.nn.ModuleDict()
            for layer in arch.layers:
                if layer.kind in ("conv", "depthwise"):
                    groups = layer.in_channels if layer.kind == "depthwise" else 1
                    op: torch.nn.Module = torch.nn.Conv2d(
                        layer.in_channels,
                        layer.out_channels,
                        layer.kernel,
                        stride=layer.stride,
                        padding=layer.padding,
                        groups=groups,
                        bias=True,
                    )
                elif layer.kind == "fc":
                    op = torch.nn.Linear(
                        int(np.prod(layer.in_shapes[0])), layer.out_channels, bias=True
                    )
                elif layer.kind == "avgpool":
                    op = torch.nn.AvgPool2d(layer.kernel, stride=layer.stride)
                else:
                    continue
                if layer.name in params:
                    weights, bias = params[layer.name]
                    with torch.no_grad():
                        op.weight.copy_(torch.from_numpy(weights))
                        op.bias.copy_(torch.from_numpy(bias))
                self.ops[layer.name] = op

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            tensors = {arch.input_name: x}
            for layer in arch.layers:
                inputs = [tensors[name] for name in layer.inputs]
                if layer.kind == "add":
                    out = inputs[0] + inputs[1]
                elif layer.kind == "fc":
                    out = self.ops[layer.name](torch.flatten(inputs[0], 1))
                else:
                    out = self.ops[layer.name](inputs[0])
                tensors[layer.output] = torch.relu(out) if layer.relu else out
            return tensors[arch.output_name]

    return Network().eval()


@contextlib.contextmanager
def vela_summaries(rows: list[dict[str, Any]]) -> Iterator[None]:
    """While active, every Vela run the Arm backend makes appends its summary CSV row to
    ``rows``."""
    from ethosu.vela import vela  # late: the Arm flow's Vela, in the toolchain's venv

    original = vela.main

    def main(args: list[str] | None = None) -> int:
        status: int = original(args)
        out_dir = next(
            arg.split("=", 1)[1] for arg in args or [] if arg.startswith("--output-dir=")
        )
        found: dict[str, Any] = {}
        for path in sorted(Path(out_dir).glob("*_summary_*.csv")):
            with path.open(newline="", encoding="utf-8") as handle:
                found.update(next(csv.DictReader(handle), {}))
        for path in sorted(Path(out_dir).glob("*_vela.npz")):
            with np.load(path, allow_pickle=False) as data:
                found.update(
                    command_stream_bytes=int(data["cmd_data"].nbytes),
                    weight_bytes=int(data["weight_data"].nbytes),
                    scratch_bytes=int(data["scratch_shape"][0]),
                )
        rows.append(found)
        return status

    vela.main = main
    try:
        yield
    finally:
        vela.main = original


def export_program(
    module: Any, example: Any, kind: str, calibration: list[Any], vela_rows: list[dict[str, Any]]
) -> bytes:
    """The ``.pte`` bytes of ``module`` for ``kind``."""
    import torch  # late: the toolchain's venv only
    from executorch.exir import to_edge, to_edge_transform_and_lower

    if kind == "portable":
        return bytes(to_edge(torch.export.export(module, (example,))).to_executorch().buffer)
    if kind == "xnnpack":
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

        lowered = to_edge_transform_and_lower(
            torch.export.export(module, (example,)), partitioner=[XnnpackPartitioner()]
        )
        return bytes(lowered.to_executorch().buffer)
    from executorch.backends.arm.ethosu import EthosUCompileSpec, EthosUPartitioner
    from executorch.backends.arm.quantizer import EthosUQuantizer, get_symmetric_quantization_config
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    spec = EthosUCompileSpec(ETHOS_TARGET)
    quantizer = EthosUQuantizer(spec)
    quantizer.set_global(get_symmetric_quantization_config())
    graph = torch.export.export(module, (example,)).module(check_guards=False)
    prepared = prepare_pt2e(graph, quantizer)
    for sample in calibration:
        prepared(sample)
    quantized = convert_pt2e(prepared)
    with vela_summaries(vela_rows):
        lowered = to_edge_transform_and_lower(
            torch.export.export(quantized, (example,)), partitioner=[EthosUPartitioner(spec)]
        )
        return bytes(lowered.to_executorch().buffer)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="export.py", description=__doc__.splitlines()[0])
    parser.add_argument("network")
    parser.add_argument("--kind", default="portable")
    parser.add_argument(
        "-o", "--output", type=Path, help="the .pte (or, with --input-only, the input file)"
    )
    parser.add_argument(
        "--input-out", type=Path, help="also write the network's input (raw float32 LE) here"
    )
    parser.add_argument("--input-only", action="store_true", help="write only the input, to -o")
    parser.add_argument(
        "--vela-report", type=Path, help="Ethos-U: write Vela's summary rows here (JSON)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="the simulator's seed of weights and input"
    )
    return parser


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.network not in ARCHITECTURES:
        return _fail(f"unknown network {args.network!r} (known: {', '.join(ARCHITECTURES)})")
    if args.kind not in KINDS:
        return _fail(f"unknown kind {args.kind!r} (known: {', '.join(KINDS)})")
    if args.output is None:
        return _fail("-o/--output is required")
    began = time.monotonic()
    arch = get_architecture(args.network)
    example = float_input(arch, args.seed)
    summary: dict[str, Any] = {"network": arch.name, "seed": args.seed}
    for path in [args.output] if args.input_only else [args.input_out] if args.input_out else []:
        path.write_bytes(example.astype("<f4").tobytes())
        summary["input"] = {
            "path": str(path),
            "bytes": example.nbytes,
            "shape": list(example.shape),
        }
    if args.input_only:
        print(json.dumps(summary))
        return 0
    import torch  # late: the toolchain's venv only

    imported = time.monotonic()
    model = compile_model(arch, args.seed)
    module = build_module(arch, float_parameters(model))
    calibration = [
        torch.from_numpy(float_input(arch, args.seed + 1 + k)) for k in range(CALIBRATION_SAMPLES)
    ]
    vela_rows: list[dict[str, Any]] = []
    program = export_program(module, torch.from_numpy(example), args.kind, calibration, vela_rows)
    args.output.write_bytes(program)
    summary.update(
        kind=args.kind,
        output=str(args.output),
        bytes=len(program),
        seconds={
            "imports": round(imported - began, 2),
            "export": round(time.monotonic() - imported, 2),
        },
    )
    if vela_rows:
        summary["vela"] = vela_rows
    if args.vela_report:
        args.vela_report.write_text(json.dumps(vela_rows, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
