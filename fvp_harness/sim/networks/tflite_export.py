"""A compiled simulator model as an int8 TFLite flatbuffer: the same layers, shapes, weights and
quantisation.

Which operators, tensors and options it writes and why: docs/vela.md, "The exported TFLite file".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fvp_harness.sim.networks.architectures import Layer
from fvp_harness.sim.networks.inference import LayerQuant
from fvp_harness.sim.networks.modelfile import CompiledModel

__all__ = ["TFLITE_OPS", "TfliteOp", "TflitePlan", "TfliteTensor", "export_tflite", "plan_tflite"]

TFLITE_OPS = {
    "conv": "CONV_2D",
    "depthwise": "DEPTHWISE_CONV_2D",
    "fc": "FULLY_CONNECTED",
    "add": "ADD",
    "avgpool": "AVERAGE_POOL_2D",
}
"""The TFLite builtin each simulator layer kind becomes (plus ``PAD`` before layers with asymmetric
padding; ``MEAN`` for a global pool that rescales, as in model files written before pools shared
their qparams)."""

_OP_VERSIONS = {
    "CONV_2D": 3,
    "DEPTHWISE_CONV_2D": 3,
    "FULLY_CONNECTED": 4,
    "ADD": 2,
    "AVERAGE_POOL_2D": 2,
    "MEAN": 2,
    "PAD": 2,
}
"""Operator versions for int8 (per-channel) kernels, as TFLite's op_version.cc assigns them."""


@dataclass
class TfliteTensor:
    """One tensor of the exported graph: int8 activations, int8 weights or int32 constants."""

    name: str
    shape: tuple[int, ...]
    dtype: str  # "int8" | "int32"
    scale: tuple[float, ...] = ()
    zero_point: tuple[int, ...] = ()
    quantized_dimension: int = 0
    data: np.ndarray | None = None  # constants only


@dataclass
class TfliteOp:
    """One operator: builtin name, tensor indices and its options (padding, strides, activation)."""

    op: str
    inputs: list[int]
    outputs: list[int]
    layer: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class TflitePlan:
    """The whole graph, before serialisation (tests read it; ``export_tflite`` writes it)."""

    tensors: list[TfliteTensor]
    ops: list[TfliteOp]
    inputs: list[int]
    outputs: list[int]
    description: str


def _nhwc(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Simulator (C, H, W) or (N,) -> TFLite [1, H, W, C] or [1, N]."""
    if len(shape) == 3:
        c, h, w = shape
        return (1, h, w, c)
    return (1, *shape)


def _weight_scales(layer: Layer, q: LayerQuant, in_scale: float, out_scale: float) -> np.ndarray:
    real = q.multiplier.astype(np.float64) * np.exp2(-(31.0 + q.shift.astype(np.float64)))
    scales = real * out_scale / in_scale
    if np.any(scales <= 0):
        raise ValueError(f"layer {layer.name}: a channel's requantisation multiplier is 0 (no "
                         "weight scale)")
    return np.broadcast_to(scales, (layer.out_channels,)).copy()


def _padding(layer: Layer) -> tuple[str, tuple[tuple[int, int], tuple[int, int]] | None]:
    """``("SAME"|"VALID", None)`` when TFLite's padding equals the layer's, else ``("VALID",
    explicit pads)``."""
    if layer.padding == (0, 0):
        return "VALID", None
    _, h, w = layer.in_shapes[0]
    same = True
    for size, kernel, stride, pad, out in zip(
        (h, w), layer.kernel, layer.stride, layer.padding, layer.out_shape[1:], strict=True
    ):
        total = max((math.ceil(size / stride) - 1) * stride + kernel - size, 0)
        # padding PyTorch actually reads after the input
        used_after = (out - 1) * stride + kernel - size - pad
        same = (same and out == math.ceil(size / stride) and
                (pad, used_after) == (total // 2, total - total // 2))
    if same:
        return "SAME", None
    (ph, pw) = layer.padding
    return "VALID", ((ph, ph), (pw, pw))


def plan_tflite(model: CompiledModel) -> TflitePlan:
    """The TFLite graph of a compiled model (see the module docstring for the mapping)."""
    arch = model.arch
    tensors: list[TfliteTensor] = []
    ops: list[TfliteOp] = []
    index: dict[str, int] = {}

    def add(tensor: TfliteTensor) -> int:
        tensors.append(tensor)
        return len(tensors) - 1

    def activation(name: str, shape: tuple[int, ...]) -> int:
        scale, zp = model.tensors[name]
        index[name] = add(TfliteTensor(name, _nhwc(shape), "int8", (scale,), (zp,)))
        return index[name]

    activation(arch.input_name, arch.input_shape)
    for layer in arch.layers:
        q = model.quant[layer.name]
        in_scale, in_zp = model.tensors[layer.inputs[0]]
        out_scale, _ = model.tensors[layer.output]
        inputs = [index[name] for name in layer.inputs]
        options: dict[str, Any] = {"relu": layer.relu}
        if layer.kind in ("conv", "depthwise"):
            padding, explicit = _padding(layer)
            if explicit is not None:
                c, h, w = layer.in_shapes[0]
                (top, bottom), (left, right) = explicit
                pads = np.array([[0, 0], [top, bottom], [left, right], [0, 0]], dtype=np.int32)
                pad_const = add(TfliteTensor(f"{layer.name}/padding", (4, 2), "int32", data=pads))
                padded = add(
                    TfliteTensor(
                        f"{layer.name}/padded", (1, h + top + bottom, w + left + right, c), "int8",
                        (in_scale,), (in_zp,),
                    )
                )
                ops.append(TfliteOp("PAD", [inputs[0], pad_const], [padded], layer.name))
                inputs = [padded]
            options.update(padding=padding, stride=layer.stride)
        if layer.weight_shape is not None:
            assert q.weights is not None and q.bias is not None
            w_scale = _weight_scales(layer, q, in_scale, out_scale)
            if layer.kind == "conv":
                weights, axis = q.weights.transpose(0, 2, 3, 1), 0  # (Co, Ci, kh, kw) -> OHWI
            elif layer.kind == "depthwise":
                weights, axis = q.weights.transpose(1, 2, 3, 0), 3  # (C, 1, kh, kw) -> 1HWC
            else:
                weights, axis = q.weights, 0
                src = layer.in_shapes[0]
                if len(src) == 3:  # CHW flattening -> HWC flattening
                    weights = weights.reshape(layer.out_channels, *src).transpose(0, 2, 3, 1)
                    weights = weights.reshape(layer.out_channels, -1)
            zeros = (0,) * layer.out_channels
            inputs.append(
                add(
                    TfliteTensor(
                        f"{layer.name}/weights", weights.shape, "int8", tuple(w_scale), zeros, axis,
                        np.ascontiguousarray(weights, dtype=np.int8),
                    )
                )
            )
            inputs.append(
                add(
                    TfliteTensor(
                        f"{layer.name}/bias", (layer.out_channels,), "int32",
                        tuple(w_scale * in_scale), zeros, 0,
                        np.ascontiguousarray(q.bias, dtype=np.int32),
                    )
                )
            )
        op = TFLITE_OPS[layer.kind]
        if layer.kind == "avgpool":
            options.update(stride=layer.stride, filter=layer.kernel)
            # a file from before pools shared their qparams
            if model.tensors[layer.output] != (in_scale, in_zp):
                if layer.out_shape[1:] != (1, 1):
                    raise ValueError(
                        f"layer {layer.name}: an average pool that rescales has no TFLite "
                        "equivalent unless it is global (MEAN); recompile the model file"
                    )
                op = "MEAN"
                axes = np.array([1, 2], dtype=np.int32)
                inputs.append(add(TfliteTensor(f"{layer.name}/axes", (2,), "int32", data=axes)))
        output = activation(layer.output, layer.out_shape)
        ops.append(TfliteOp(op, inputs, [output], layer.name, options))
    return TflitePlan(
        tensors, ops, [index[arch.input_name]], [index[arch.output_name]],
        f"fvp-sim {arch.name} seed {model.seed}"
    )


# --- serialisation with Vela's generated schema code
# --------------------------------------------------------------------


def export_tflite(model: CompiledModel) -> bytes:
    """The model as TFLite flatbuffer bytes (deterministic: same model, same bytes).

    Raises ImportError naming the package when Vela's schema code (``ethos-u-vela``) is not
    installed.
    """
    try:
        import flatbuffers
        from ethosu.vela.tflite import (
            ActivationFunctionType,
            AddOptions,
            Buffer,
            BuiltinOperator,
            BuiltinOptions,
            Conv2DOptions,
            DepthwiseConv2DOptions,
            FullyConnectedOptions,
            Model,
            Operator,
            OperatorCode,
            Padding,
            PadOptions,
            Pool2DOptions,
            QuantizationParameters,
            ReducerOptions,
            SubGraph,
            Tensor,
            TensorType,
        )
    except ImportError as exc:  # pragma: no cover - exercised only without the dependency
        raise ImportError(
            "writing TFLite needs the TFLite schema code Vela ships: pip install ethos-u-vela"
        ) from exc

    plan = plan_tflite(model)
    builder = flatbuffers.Builder(1 << 16)

    def int_vector(values: list[int] | tuple[int, ...], dtype: type = np.int32) -> int:
        return int(builder.CreateNumpyVector(np.asarray(values, dtype=dtype)))

    def float_vector(values: tuple[float, ...]) -> int:
        return int(builder.CreateNumpyVector(np.asarray(values, dtype=np.float32)))

    def aligned_bytes(data: bytes) -> int:
        # 16-byte aligned constant data, as TFLite's converter writes it
        builder.Prep(16, len(data))
        return int(builder.CreateByteVector(data))

    # buffers: 0 is the empty sentinel every non-constant tensor points to (schema convention)
    buffer_offsets = []
    buffer_of: dict[int, int] = {}
    Buffer.BufferStart(builder)
    buffer_offsets.append(Buffer.BufferEnd(builder))
    for i, tensor in enumerate(plan.tensors):
        if tensor.data is None:
            continue
        data = aligned_bytes(
            np.ascontiguousarray(tensor.data).astype(tensor.data.dtype.newbyteorder("<")).tobytes())
        Buffer.BufferStart(builder)
        Buffer.BufferAddData(builder, data)
        buffer_of[i] = len(buffer_offsets)
        buffer_offsets.append(Buffer.BufferEnd(builder))

    tensor_offsets = []
    for i, tensor in enumerate(plan.tensors):
        name = builder.CreateString(tensor.name)
        shape = int_vector(tensor.shape)
        quant = None
        if tensor.scale:
            scale = float_vector(tensor.scale)
            zero_point = int_vector(tensor.zero_point, np.int64)
            QuantizationParameters.QuantizationParametersStart(builder)
            QuantizationParameters.QuantizationParametersAddScale(builder, scale)
            QuantizationParameters.QuantizationParametersAddZeroPoint(builder, zero_point)
            QuantizationParameters.QuantizationParametersAddQuantizedDimension(
                builder, tensor.quantized_dimension
            )
            quant = QuantizationParameters.QuantizationParametersEnd(builder)
        Tensor.TensorStart(builder)
        Tensor.TensorAddShape(builder, shape)
        types = TensorType.TensorType
        Tensor.TensorAddType(builder, types.INT8 if tensor.dtype == "int8" else types.INT32)
        Tensor.TensorAddBuffer(builder, buffer_of.get(i, 0))
        Tensor.TensorAddName(builder, name)
        if quant is not None:
            Tensor.TensorAddQuantization(builder, quant)
        tensor_offsets.append(Tensor.TensorEnd(builder))

    op_names = sorted({op.op for op in plan.ops},
                      key=lambda n: getattr(BuiltinOperator.BuiltinOperator, n))
    opcode_index = {name: i for i, name in enumerate(op_names)}
    code_offsets = []
    for name in op_names:
        code = getattr(BuiltinOperator.BuiltinOperator, name)
        OperatorCode.OperatorCodeStart(builder)
        OperatorCode.OperatorCodeAddDeprecatedBuiltinCode(builder, min(code, 127))
        OperatorCode.OperatorCodeAddBuiltinCode(builder, code)
        OperatorCode.OperatorCodeAddVersion(builder, _OP_VERSIONS[name])
        code_offsets.append(OperatorCode.OperatorCodeEnd(builder))

    relu = ActivationFunctionType.ActivationFunctionType

    def options_of(op: TfliteOp) -> tuple[int, int | None]:
        act = relu.RELU if op.options.get("relu") else relu.NONE
        if op.op in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            padding = getattr(Padding.Padding, op.options["padding"])
            stride_h, stride_w = op.options["stride"]
            if op.op == "CONV_2D":
                Conv2DOptions.Conv2DOptionsStart(builder)
                Conv2DOptions.Conv2DOptionsAddPadding(builder, padding)
                Conv2DOptions.Conv2DOptionsAddStrideH(builder, stride_h)
                Conv2DOptions.Conv2DOptionsAddStrideW(builder, stride_w)
                Conv2DOptions.Conv2DOptionsAddDilationHFactor(builder, 1)
                Conv2DOptions.Conv2DOptionsAddDilationWFactor(builder, 1)
                Conv2DOptions.Conv2DOptionsAddFusedActivationFunction(builder, act)
                return BuiltinOptions.BuiltinOptions.Conv2DOptions, Conv2DOptions.Conv2DOptionsEnd(
                    builder)
            DepthwiseConv2DOptions.DepthwiseConv2DOptionsStart(builder)
            DepthwiseConv2DOptions.DepthwiseConv2DOptionsAddPadding(builder, padding)
            DepthwiseConv2DOptions.DepthwiseConv2DOptionsAddStrideH(builder, stride_h)
            DepthwiseConv2DOptions.DepthwiseConv2DOptionsAddStrideW(builder, stride_w)
            DepthwiseConv2DOptions.DepthwiseConv2DOptionsAddDepthMultiplier(builder, 1)
            DepthwiseConv2DOptions.DepthwiseConv2DOptionsAddDilationHFactor(builder, 1)
            DepthwiseConv2DOptions.DepthwiseConv2DOptionsAddDilationWFactor(builder, 1)
            DepthwiseConv2DOptions.DepthwiseConv2DOptionsAddFusedActivationFunction(builder, act)
            return (
                BuiltinOptions.BuiltinOptions.DepthwiseConv2DOptions,
                DepthwiseConv2DOptions.DepthwiseConv2DOptionsEnd(builder),
            )
        if op.op == "FULLY_CONNECTED":
            FullyConnectedOptions.FullyConnectedOptionsStart(builder)
            FullyConnectedOptions.FullyConnectedOptionsAddFusedActivationFunction(builder, act)
            return (
                BuiltinOptions.BuiltinOptions.FullyConnectedOptions,
                FullyConnectedOptions.FullyConnectedOptionsEnd(builder),
            )
        if op.op == "ADD":
            AddOptions.AddOptionsStart(builder)
            AddOptions.AddOptionsAddFusedActivationFunction(builder, act)
            return BuiltinOptions.BuiltinOptions.AddOptions, AddOptions.AddOptionsEnd(builder)
        if op.op == "MEAN":
            ReducerOptions.ReducerOptionsStart(builder)
            ReducerOptions.ReducerOptionsAddKeepDims(builder, True)
            return BuiltinOptions.BuiltinOptions.ReducerOptions, ReducerOptions.ReducerOptionsEnd(
                builder)
        if op.op == "AVERAGE_POOL_2D":
            Pool2DOptions.Pool2DOptionsStart(builder)
            Pool2DOptions.Pool2DOptionsAddPadding(builder, Padding.Padding.VALID)
            Pool2DOptions.Pool2DOptionsAddStrideH(builder, op.options["stride"][0])
            Pool2DOptions.Pool2DOptionsAddStrideW(builder, op.options["stride"][1])
            Pool2DOptions.Pool2DOptionsAddFilterHeight(builder, op.options["filter"][0])
            Pool2DOptions.Pool2DOptionsAddFilterWidth(builder, op.options["filter"][1])
            Pool2DOptions.Pool2DOptionsAddFusedActivationFunction(builder, act)
            return BuiltinOptions.BuiltinOptions.Pool2DOptions, Pool2DOptions.Pool2DOptionsEnd(
                builder)
        PadOptions.PadOptionsStart(builder)
        return BuiltinOptions.BuiltinOptions.PadOptions, PadOptions.PadOptionsEnd(builder)

    op_offsets = []
    for op in plan.ops:
        inputs = int_vector(op.inputs)
        outputs = int_vector(op.outputs)
        options_type, options = options_of(op)
        Operator.OperatorStart(builder)
        Operator.OperatorAddOpcodeIndex(builder, opcode_index[op.op])
        Operator.OperatorAddInputs(builder, inputs)
        Operator.OperatorAddOutputs(builder, outputs)
        Operator.OperatorAddBuiltinOptionsType(builder, options_type)
        if options is not None:
            Operator.OperatorAddBuiltinOptions(builder, options)
        op_offsets.append(Operator.OperatorEnd(builder))

    def offsets(items: list[int]) -> int:
        builder.StartVector(4, len(items), 4)
        for item in reversed(items):
            builder.PrependUOffsetTRelative(item)
        return int(builder.EndVector())

    tensors_vec = offsets(tensor_offsets)
    ops_vec = offsets(op_offsets)
    sg_inputs = int_vector(plan.inputs)
    sg_outputs = int_vector(plan.outputs)
    sg_name = builder.CreateString("main")
    SubGraph.SubGraphStart(builder)
    SubGraph.SubGraphAddTensors(builder, tensors_vec)
    SubGraph.SubGraphAddInputs(builder, sg_inputs)
    SubGraph.SubGraphAddOutputs(builder, sg_outputs)
    SubGraph.SubGraphAddOperators(builder, ops_vec)
    SubGraph.SubGraphAddName(builder, sg_name)
    subgraph = SubGraph.SubGraphEnd(builder)

    codes_vec = offsets(code_offsets)
    subgraphs_vec = offsets([subgraph])
    buffers_vec = offsets(buffer_offsets)
    description = builder.CreateString(plan.description)
    Model.ModelStart(builder)
    Model.ModelAddVersion(builder, 3)
    Model.ModelAddOperatorCodes(builder, codes_vec)
    Model.ModelAddSubgraphs(builder, subgraphs_vec)
    Model.ModelAddDescription(builder, description)
    Model.ModelAddBuffers(builder, buffers_vec)
    builder.Finish(Model.ModelEnd(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())
