"""The four MLPerf Tiny networks as layer graphs, shaped as ExecuTorch's PyTorch ports define them.

Why a graph of plain records instead of code per model: the model file, the inference engine, the
NPU cycle model and the driver cost model all read the same list of layers, so a fifth network needs
only a builder function here and gets weights, schedule, sizes, cycles and driver costs without new
constants anywhere else.

Conventions: batch 1 and NCHW as in the ports; feature maps are stored as ``(C, H, W)``, vectors as
``(N,)``; padding is symmetric ``(pad_h, pad_w)`` as PyTorch's ``padding=`` gives it; BatchNorm is
folded into the convolution (hence every convolution and fully connected layer has a bias); ReLU is
fused into the producing layer. Parameter and MAC counts follow the usual convention (weights +
biases; multiply-accumulates of convolutions and fully connected layers only) and match the
reference figures (tests/sim/networks/test_architectures.py checks them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ARCHITECTURES",
    "KINDS",
    "Architecture",
    "Layer",
    "deep_autoencoder",
    "ds_cnn",
    "get_architecture",
    "mobilenet_v1_025",
    "resnet8",
]

KINDS = ("conv", "depthwise", "fc", "add", "avgpool")
"""Layer kinds the inference engine, NPU model and model file understand."""

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Layer:
    """One operation: reads ``inputs`` (tensor names), writes ``output``.

    ``kernel``/``stride``/``padding`` are ``(h, w)`` pairs and only meaningful for conv, depthwise
    and avgpool.
    """

    name: str
    kind: str
    inputs: tuple[str, ...]
    output: str
    in_shapes: tuple[Shape, ...]
    out_shape: Shape
    kernel: tuple[int, int] = (1, 1)
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    relu: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"layer {self.name}: unknown kind {self.kind!r} (known: "
                             f"{', '.join(KINDS)})")

    @property
    def in_channels(self) -> int:
        return self.in_shapes[0][0]

    @property
    def out_channels(self) -> int:
        return self.out_shape[0]

    @property
    def weight_shape(self) -> Shape | None:
        """PyTorch weight layout: conv (Co, Ci, kh, kw), depthwise (C, 1, kh, kw), fc (Out, In);
        None if no weights."""
        if self.kind == "conv":
            return (self.out_channels, self.in_channels, *self.kernel)
        if self.kind == "depthwise":
            return (self.out_channels, 1, *self.kernel)
        if self.kind == "fc":
            return (self.out_shape[0], math.prod(self.in_shapes[0]))
        return None

    @property
    def n_weights(self) -> int:
        shape = self.weight_shape
        return math.prod(shape) if shape else 0

    @property
    def n_bias(self) -> int:
        return self.out_channels if self.weight_shape else 0

    @property
    def params(self) -> int:
        return self.n_weights + self.n_bias

    @property
    def out_elements(self) -> int:
        return math.prod(self.out_shape)

    @property
    def in_elements(self) -> int:
        return sum(math.prod(shape) for shape in self.in_shapes)

    @property
    def macs(self) -> int:
        """Multiply-accumulates: one per weight per output position (conv, depthwise, fc); 0
        otherwise."""
        if self.kind in ("conv", "depthwise"):
            spatial = self.out_shape[1] * self.out_shape[2]
            return spatial * self.n_weights
        if self.kind == "fc":
            return self.n_weights
        return 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, stored per layer in the model file."""
        return {
            "name": self.name,
            "kind": self.kind,
            "inputs": list(self.inputs),
            "output": self.output,
            "in_shapes": [list(shape) for shape in self.in_shapes],
            "out_shape": list(self.out_shape),
            "kernel": list(self.kernel),
            "stride": list(self.stride),
            "padding": list(self.padding),
            "relu": self.relu,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Layer:
        def pair(key: str) -> tuple[int, int]:
            a, b = data[key]
            return int(a), int(b)

        return cls(
            name=str(data["name"]),
            kind=str(data["kind"]),
            inputs=tuple(str(name) for name in data["inputs"]),
            output=str(data["output"]),
            in_shapes=tuple(tuple(int(d) for d in shape) for shape in data["in_shapes"]),
            out_shape=tuple(int(d) for d in data["out_shape"]),
            kernel=pair("kernel"),
            stride=pair("stride"),
            padding=pair("padding"),
            relu=bool(data["relu"]),
        )


@dataclass(frozen=True)
class Architecture:
    """A network: its input, its layers in execution order, and its output (the last layer's
    output)."""

    name: str
    description: str
    input_shape: Shape
    layers: tuple[Layer, ...]
    input_name: str = "input"

    @property
    def output_name(self) -> str:
        return self.layers[-1].output

    @property
    def output_shape(self) -> Shape:
        return self.layers[-1].out_shape

    @property
    def params(self) -> int:
        return sum(layer.params for layer in self.layers)

    @property
    def macs(self) -> int:
        return sum(layer.macs for layer in self.layers)


@dataclass
class _Builder:
    """Appends layers while tracking shapes, so the architectures below read like the PyTorch
    modules."""

    input_shape: Shape
    layers: list[Layer] = field(default_factory=list)
    shapes: dict[str, Shape] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.shapes["input"] = self.input_shape

    def _add(self, layer: Layer) -> str:
        if layer.output in self.shapes:
            raise ValueError(f"tensor {layer.output} defined twice")
        self.layers.append(layer)
        self.shapes[layer.output] = layer.out_shape
        return layer.output

    @staticmethod
    def _spatial(size: int, kernel: int, stride: int, pad: int) -> int:
        out = (size + 2 * pad - kernel) // stride + 1
        if out < 1:
            raise ValueError(f"kernel {kernel} with stride {stride}, pad {pad} does not fit size "
                             f"{size}")
        return out

    def conv(
        self,
        name: str,
        src: str,
        out_ch: int,
        kernel: tuple[int, int],
        stride: tuple[int, int] = (1, 1),
        padding: tuple[int, int] = (0, 0),
        relu: bool = True,
        depthwise: bool = False,
    ) -> str:
        c, h, w = self.shapes[src]
        if depthwise and out_ch != c:
            raise ValueError(f"{name}: depthwise keeps the channel count ({c})")
        out_shape = (
            out_ch,
            self._spatial(h, kernel[0], stride[0], padding[0]),
            self._spatial(w, kernel[1], stride[1], padding[1]),
        )
        return self._add(
            Layer(
                name,
                "depthwise" if depthwise else "conv",
                (src,),
                name,
                ((c, h, w),),
                out_shape,
                kernel,
                stride,
                padding,
                relu,
            )
        )

    def add(self, name: str, a: str, b: str, relu: bool = True) -> str:
        if self.shapes[a] != self.shapes[b]:
            raise ValueError(f"{name}: shapes differ {self.shapes[a]} vs {self.shapes[b]}")
        return self._add(
            Layer(name, "add", (a, b), name, (self.shapes[a], self.shapes[b]), self.shapes[a],
                  relu=relu)
        )

    def global_avgpool(self, name: str, src: str) -> str:
        c, h, w = self.shapes[src]
        return self._add(Layer(name, "avgpool", (src,), name, ((c, h, w),), (c, 1, 1), (h, w),
                               (h, w)))

    def fc(self, name: str, src: str, out: int, relu: bool = False) -> str:
        return self._add(Layer(name, "fc", (src,), name, (self.shapes[src],), (out,), relu=relu))


def resnet8() -> Architecture:
    """MLPerf Tiny image classification (CIFAR-10): 3 residual stages of 16/32/64 channels."""
    b = _Builder((3, 32, 32))
    x = b.conv("conv1", "input", 16, (3, 3), padding=(1, 1))
    # stage 1: identity skip
    y = b.conv("s1_conv1", x, 16, (3, 3), padding=(1, 1))
    y = b.conv("s1_conv2", y, 16, (3, 3), padding=(1, 1), relu=False)
    x = b.add("s1_add", x, y)
    # stages 2 and 3: stride-2 conv, 1x1 stride-2 projection on the skip
    for stage, ch in ((2, 32), (3, 64)):
        y = b.conv(f"s{stage}_conv1", x, ch, (3, 3), stride=(2, 2), padding=(1, 1))
        y = b.conv(f"s{stage}_conv2", y, ch, (3, 3), padding=(1, 1), relu=False)
        skip = b.conv(f"s{stage}_skip", x, ch, (1, 1), stride=(2, 2), relu=False)
        x = b.add(f"s{stage}_add", skip, y)
    x = b.global_avgpool("avgpool", x)
    b.fc("fc", x, 10)
    return Architecture(
        "resnet8", "ResNet8, CIFAR-10 image classification (MLPerf Tiny IC)", b.input_shape,
        tuple(b.layers)
    )


def ds_cnn() -> Architecture:
    """MLPerf Tiny keyword spotting: one 10x4 conv, four depthwise-separable blocks, average pool,
    FC."""
    b = _Builder((1, 49, 10))
    x = b.conv("conv1", "input", 64, (10, 4), stride=(2, 2), padding=(5, 1))
    for i in range(1, 5):
        x = b.conv(f"dw{i}", x, 64, (3, 3), padding=(1, 1), depthwise=True)
        x = b.conv(f"pw{i}", x, 64, (1, 1))
    x = b.global_avgpool("avgpool", x)
    b.fc("fc", x, 12)
    return Architecture(
        "ds_cnn", "DS-CNN, keyword spotting (MLPerf Tiny KWS)", b.input_shape, tuple(b.layers)
    )


_MOBILENET_BLOCKS: tuple[tuple[int, int], ...] = (
    (1, 16),
    (2, 32),
    (1, 32),
    (2, 64),
    (1, 64),
    (2, 128),
    (1, 128),
    (1, 128),
    (1, 128),
    (1, 128),
    (1, 128),
    (2, 256),
    (1, 256),
)
"""(stride, output channels) of MobileNetV1 x0.25's 13 depthwise-separable blocks."""


def mobilenet_v1_025() -> Architecture:
    """MLPerf Tiny visual wake words: MobileNetV1 with width multiplier 0.25 at 96x96."""
    b = _Builder((3, 96, 96))
    x = b.conv("conv1", "input", 8, (3, 3), stride=(2, 2), padding=(1, 1))
    for i, (stride, out_ch) in enumerate(_MOBILENET_BLOCKS, start=1):
        channels = b.shapes[x][0]
        x = b.conv(f"b{i}_dw", x, channels, (3, 3), stride=(stride, stride), padding=(1, 1),
                   depthwise=True)
        x = b.conv(f"b{i}_pw", x, out_ch, (1, 1))
    x = b.global_avgpool("avgpool", x)
    b.fc("fc", x, 2)
    return Architecture(
        "mobilenet_v1_025",
        "MobileNetV1 x0.25, visual wake words (MLPerf Tiny VWW)",
        b.input_shape,
        tuple(b.layers),
    )


def deep_autoencoder() -> Architecture:
    """MLPerf Tiny anomaly detection (ToyADMOS): a fully connected 640-128x4-8-128x4-640
    autoencoder."""
    b = _Builder((640,))
    widths = [128, 128, 128, 128, 8, 128, 128, 128, 128]
    x = "input"
    for i, width in enumerate(widths, start=1):
        x = b.fc(f"fc{i}", x, width, relu=True)
    b.fc(f"fc{len(widths) + 1}", x, 640, relu=False)
    return Architecture(
        "deep_autoencoder",
        "Deep AutoEncoder, anomaly detection (MLPerf Tiny AD)",
        b.input_shape,
        tuple(b.layers),
    )


ARCHITECTURES: dict[str, Callable[[], Architecture]] = {
    "resnet8": resnet8,
    "ds_cnn": ds_cnn,
    "mobilenet_v1_025": mobilenet_v1_025,
    "deep_autoencoder": deep_autoencoder,
}


def get_architecture(name: str) -> Architecture:
    """The architecture called ``name``; ValueError listing the known names otherwise."""
    try:
        return ARCHITECTURES[name]()
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(ARCHITECTURES)}") from None
