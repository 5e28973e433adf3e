"""Export a small network as real ExecuTorch programs: portable, XNNPACK-delegated and
Ethos-U85-256-delegated.

Run by the tests under the ExecuTorch toolchain's Python (torch 2.13.0, executorch 1.5.1 and the
Arm flow's pins), not the harness's: ``python export_programs.py OUT_DIR [KIND ...]`` writes
``OUT_DIR/<kind>.pte`` for each kind (portable, xnnpack, ethos-u85-256; all three by default).
Seeded, so the same toolchain writes the same bytes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from executorch.exir import to_edge, to_edge_transform_and_lower


class Small(torch.nn.Module):
    """A convolution, a ReLU and a fully connected layer: operators every backend has."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3)
        self.fc = torch.nn.Linear(4 * 6 * 6, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def export(kind: str) -> bytes:
    torch.manual_seed(0)
    model, example = Small().eval(), (torch.randn(1, 1, 8, 8),)
    if kind == "portable":
        return bytes(to_edge(torch.export.export(model, example)).to_executorch().buffer)
    if kind == "xnnpack":
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

        lowered = to_edge_transform_and_lower(
            torch.export.export(model, example), partitioner=[XnnpackPartitioner()]
        )
        return bytes(lowered.to_executorch().buffer)
    if kind == "ethos-u85-256":
        from executorch.backends.arm.ethosu import EthosUCompileSpec, EthosUPartitioner
        from executorch.backends.arm.quantizer import (
            EthosUQuantizer,
            get_symmetric_quantization_config,
        )
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

        spec = EthosUCompileSpec(kind)
        quantizer = EthosUQuantizer(spec)
        quantizer.set_global(get_symmetric_quantization_config())
        graph = torch.export.export(model, example).module(
            check_guards=False
        )  # the Arm passes refuse the guards
        prepared = prepare_pt2e(graph, quantizer)
        prepared(*example)
        quantized = convert_pt2e(prepared)
        lowered = to_edge_transform_and_lower(
            torch.export.export(quantized, example), partitioner=[EthosUPartitioner(spec)]
        )
        return bytes(lowered.to_executorch().buffer)
    raise SystemExit(f"unknown kind {kind!r}: portable, xnnpack or ethos-u85-256")


def main(argv: list[str]) -> None:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for kind in argv[1:] or ["portable", "xnnpack", "ethos-u85-256"]:
        (out / f"{kind}.pte").write_bytes(export(kind))


if __name__ == "__main__":
    main(sys.argv[1:])
