"""Integer-only int8 inference in numpy, the arithmetic an Ethos-U NPU performs (TFLite/TOSA style).

Why integer arithmetic rather than float: the harness checks that both runner builds produce
byte-identical outputs, so the outputs must come from a fully specified integer computation, as they
do on the NPU.

Numbers:
    * activations: int8 with a per-tensor ``scale`` and ``zero_point``
      (real = scale * (q - zero_point));
    * weights: symmetric per-output-channel int8 (zero point 0); biases int32 with scale
      ``in_scale * w_scale[c]``;
    * accumulation: exact integer sums of ``(x - zp_x) * w`` plus bias, checked to fit int32
      (``AccumulatorOverflow`` otherwise, which a correctly calibrated model never triggers);
    * requantisation: ``out = zp_out + round(acc * M / 2**(31 + shift))`` with a 31-bit multiplier
      ``M`` in ``[2**30, 2**31)`` and a per-channel ``shift``; one rounding step, half away from
      zero (documented choice; TFLite's double rounding differs by at most one unit in rare ties),
      then clamping to ``[act_min, act_max]`` (ReLU is the clamp at the output zero point).
    * residual add: both inputs are rescaled to a common fixed-point scale with 20 extra fraction
      bits, added, and requantised to the output (TFLite's ADD scheme); average pool: integer window
      sum, then one requantisation by ``in_scale / (out_scale * window)``.

Speed: convolutions use im2col via ``sliding_window_view`` and one matrix product. The product runs
in float64 BLAS because numpy's integer matmul is unaccelerated; it is exact, not approximate: every
operand is an integer with ``|x - zp| <= 255`` and ``|w| <= 127``, so each product and every partial
sum of at most 2**37 terms stays below 2**53, where float64 represents integers exactly whatever the
summation order. ``exact_matmul`` checks the bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from fvp_harness.sim.networks.architectures import Architecture, Layer

__all__ = [
    "AccumulatorOverflow",
    "LayerQuant",
    "add_int8",
    "avgpool_int8",
    "conv2d_int8",
    "depthwise_int8",
    "exact_matmul",
    "fc_int8",
    "float_forward",
    "float_layer",
    "quantize_multiplier",
    "requantize",
    "run_layer",
    "run_model",
    "window_size",
]

INT8_MIN, INT8_MAX = -128, 127
ADD_LEFT_SHIFT = 20
"""Extra fraction bits the residual add works with before requantising (as TFLite's int8 ADD)."""


class AccumulatorOverflow(ArithmeticError):
    """An int32 accumulator would overflow: the model's quantisation is broken (never happens for
    calibrated files)."""


@dataclass(frozen=True)
class LayerQuant:
    """Integer parameters of one layer, as stored in the model file.

    ``multiplier``/``shift`` are per output channel (conv, depthwise, fc) or length 1 (add output,
    avgpool). ``in_multiplier``/``in_shift`` are only used by add (one per input).
    """

    in_zero_points: tuple[int, ...]
    out_zero_point: int
    act_min: int
    act_max: int
    multiplier: np.ndarray
    shift: np.ndarray
    weights: np.ndarray | None = None
    bias: np.ndarray | None = None
    in_multiplier: np.ndarray | None = None
    in_shift: np.ndarray | None = None


def quantize_multiplier(real: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """Split positive real multipliers into (M, shift) with real ~= M * 2**-(31 + shift), M in
    [2**30, 2**31).

    Multipliers too small to represent (below 2**-62) become M = 0 (the channel outputs its zero
    point).
    """
    values = np.atleast_1d(np.asarray(real, dtype=np.float64))
    if np.any(values < 0) or not np.all(np.isfinite(values)):
        raise ValueError("requantisation multipliers must be finite and non-negative")
    mantissa, exponent = np.frexp(values)  # values = mantissa * 2**exponent, mantissa in [0.5, 1)
    m = np.round(mantissa * (1 << 31)).astype(np.int64)
    carry = m == (1 << 31)
    m[carry] //= 2
    exponent = exponent + carry
    shift = -exponent.astype(np.int64)
    tiny = (values == 0) | (31 + shift > 62)
    m[tiny] = 0
    shift[tiny] = 0
    if np.any(31 + shift < 1):
        raise ValueError(f"requantisation multiplier too large: {values.max()}")
    return m.astype(np.int32), shift.astype(np.int8)


def requantize(acc: np.ndarray, multiplier: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """``round_half_away(acc * M / 2**(31 + shift))`` in int64; multiplier/shift broadcast against
    ``acc``."""
    product = acc.astype(np.int64) * multiplier.astype(np.int64)
    total = 31 + shift.astype(np.int64)
    half = np.left_shift(np.int64(1), total - 1)
    magnitude = np.right_shift(np.abs(product) + half, total)
    return np.where(product < 0, -magnitude, magnitude)


def _finish(acc: np.ndarray, q: LayerQuant, channel_shape: tuple[int, ...]) -> np.ndarray:
    """Requantise per channel (channels on axis 0), add the output zero point, clamp, and return
    int8."""
    m = q.multiplier.reshape(channel_shape)
    s = q.shift.reshape(channel_shape)
    out = requantize(acc, m, s) + q.out_zero_point
    return np.clip(out, q.act_min, q.act_max).astype(np.int8)


def _check_int32(acc: np.ndarray, what: str) -> np.ndarray:
    if acc.size and (acc.max() > np.iinfo(np.int32).max or acc.min() < np.iinfo(np.int32).min):
        raise AccumulatorOverflow(f"{what}: int32 accumulator overflow")
    return acc


def exact_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer matrix product ``a @ b`` computed exactly through float64 BLAS (see the module
    docstring)."""
    k = a.shape[-1]
    bound = float(np.abs(a).max(initial=0)) * float(np.abs(b).max(initial=0)) * k
    if bound >= 2.0**53:
        raise AccumulatorOverflow(f"matmul of depth {k} cannot be computed exactly in float64")
    result = np.asarray(a, dtype=np.float64) @ np.asarray(b, dtype=np.float64)
    return result.astype(np.int64)


def _im2col(
    x: np.ndarray,
    kernel: tuple[int, int],
    stride: tuple[int, int],
    padding: tuple[int, int],
    dtype: type = np.float64,
) -> tuple[np.ndarray, int, int]:
    """(C, H, W) -> (Ho*Wo, C*kh*kw) patches of the zero-padded input (padding is the real value
    0)."""
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    padded: np.ndarray = np.pad(x.astype(dtype, copy=False), ((0, 0), (ph, ph), (pw, pw)))
    # (C, Ho, Wo, kh, kw)
    windows = sliding_window_view(padded, (kh, kw), axis=(1, 2))[:, ::sh, ::sw]
    c, ho, wo = windows.shape[:3]
    cols = windows.transpose(1, 2, 0, 3, 4).reshape(ho * wo, c * kh * kw)
    return cols, ho, wo


def conv2d_int8(
    x: np.ndarray, q: LayerQuant, stride: tuple[int, int], padding: tuple[int, int]
) -> np.ndarray:
    """Standard convolution, any kernel/stride/symmetric padding. x: int8 (Ci, H, W) -> int8 (Co,
    Ho, Wo)."""
    assert q.weights is not None and q.bias is not None
    co, ci, kh, kw = q.weights.shape
    centred = x.astype(np.int16) - q.in_zero_points[0]
    cols, ho, wo = _im2col(centred, (kh, kw), stride, padding)
    acc = exact_matmul(cols, q.weights.reshape(co, ci * kh * kw).T).T.reshape(co, ho, wo)
    acc = _check_int32(acc + q.bias.astype(np.int64)[:, None, None], "conv")
    return _finish(acc, q, (co, 1, 1))


def depthwise_int8(
    x: np.ndarray, q: LayerQuant, stride: tuple[int, int], padding: tuple[int, int]
) -> np.ndarray:
    """Depthwise convolution (channel multiplier 1): one shifted multiply-add per kernel tap, over
    all channels."""
    assert q.weights is not None and q.bias is not None
    c, _, kh, kw = q.weights.shape
    (sh, sw), (ph, pw) = stride, padding
    centred = np.pad(x.astype(np.int32) - q.in_zero_points[0], ((0, 0), (ph, ph), (pw, pw)))
    ho = (centred.shape[1] - kh) // sh + 1
    wo = (centred.shape[2] - kw) // sw + 1
    acc = np.zeros((c, ho, wo), dtype=np.int32)
    w = q.weights.astype(np.int32)
    for i in range(kh):
        for j in range(kw):
            tap = centred[:, i : i + sh * (ho - 1) + 1 : sh, j : j + sw * (wo - 1) + 1 : sw]
            acc += tap * w[:, 0, i, j][:, None, None]
    acc64 = _check_int32(acc.astype(np.int64) + q.bias.astype(np.int64)[:, None, None], "depthwise")
    return _finish(acc64, q, (c, 1, 1))


def fc_int8(x: np.ndarray, q: LayerQuant) -> np.ndarray:
    """Fully connected: int8 vector (any shape, flattened) -> int8 (Out,)."""
    assert q.weights is not None and q.bias is not None
    centred = x.reshape(-1).astype(np.int16) - q.in_zero_points[0]
    acc = exact_matmul(q.weights, centred) + q.bias.astype(np.int64)
    return _finish(_check_int32(acc, "fc"), q, (-1,))


def add_int8(a: np.ndarray, b: np.ndarray, q: LayerQuant) -> np.ndarray:
    """Residual add of two int8 tensors with their own scales (TFLite ADD scheme, see the module
    docstring)."""
    assert q.in_multiplier is not None and q.in_shift is not None
    total = np.zeros(a.shape, dtype=np.int64)
    for i, tensor in enumerate((a, b)):
        shifted = (tensor.astype(np.int64) - q.in_zero_points[i]) << ADD_LEFT_SHIFT
        total += requantize(shifted, q.in_multiplier[i : i + 1], q.in_shift[i : i + 1])
    out = requantize(total, q.multiplier, q.shift) + q.out_zero_point
    return np.clip(out, q.act_min, q.act_max).astype(np.int8)


def avgpool_int8(
    x: np.ndarray, q: LayerQuant, kernel: tuple[int, int], stride: tuple[int, int]
) -> np.ndarray:
    """Average pool without padding: integer window sums, one requantisation that includes the
    1/window factor."""
    centred = x.astype(np.int64) - q.in_zero_points[0]
    windows = sliding_window_view(centred, kernel, axis=(1, 2))[:, :: stride[0], :: stride[1]]
    sums = windows.sum(axis=(3, 4))
    return _finish(sums, q, (1, 1, 1))


def run_layer(layer: Layer, inputs: list[np.ndarray], q: LayerQuant) -> np.ndarray:
    """Dispatch one layer on int8 inputs."""
    if layer.kind == "conv":
        return conv2d_int8(inputs[0], q, layer.stride, layer.padding)
    if layer.kind == "depthwise":
        return depthwise_int8(inputs[0], q, layer.stride, layer.padding)
    if layer.kind == "fc":
        return fc_int8(inputs[0], q)
    if layer.kind == "add":
        return add_int8(inputs[0], inputs[1], q)
    if layer.kind == "avgpool":
        return avgpool_int8(inputs[0], q, layer.kernel, layer.stride)
    raise ValueError(f"unknown layer kind {layer.kind}")


def run_model(arch: Architecture, quant: Mapping[str, LayerQuant], x: np.ndarray) -> np.ndarray:
    """Run a whole network on an int8 input of ``arch.input_shape``; returns the int8 output.

    Tensors are dropped after their last use, so memory follows the live set as on the NPU.
    """
    if x.shape != arch.input_shape:
        x = x.reshape(arch.input_shape)
    last_use: dict[str, int] = {}
    for index, layer in enumerate(arch.layers):
        for name in layer.inputs:
            last_use[name] = index
    tensors: dict[str, np.ndarray] = {arch.input_name: x.astype(np.int8, copy=False)}
    for index, layer in enumerate(arch.layers):
        out = run_layer(layer, [tensors[name] for name in layer.inputs], quant[layer.name])
        for name in layer.inputs:
            if last_use[name] == index:
                del tensors[name]
        tensors[layer.output] = out
    return tensors[arch.output_name]


# --- float reference (calibration at "compile" time; tests compare the integer kernels against it)
# -------------------


def float_layer(
    layer: Layer, inputs: list[np.ndarray], weights: np.ndarray | None, bias: np.ndarray | None
) -> np.ndarray:
    """The same layer in float64 (what the quantised layer approximates)."""
    if layer.kind == "conv":
        assert weights is not None and bias is not None
        co = weights.shape[0]
        cols, ho, wo = _im2col(inputs[0], layer.kernel, layer.stride, layer.padding)
        out = (cols @ weights.reshape(co, -1).T).T.reshape(co, ho, wo) + bias[:, None, None]
    elif layer.kind == "depthwise":
        assert weights is not None and bias is not None
        (kh, kw), (sh, sw), (ph, pw) = layer.kernel, layer.stride, layer.padding
        padded = np.pad(inputs[0], ((0, 0), (ph, ph), (pw, pw)))
        windows = sliding_window_view(padded, (kh, kw), axis=(1, 2))[:, ::sh, ::sw]
        out = np.einsum("chwij,cij->chw", windows, weights[:, 0]) + bias[:, None, None]
    elif layer.kind == "fc":
        assert weights is not None and bias is not None
        out = weights @ inputs[0].reshape(-1) + bias
    elif layer.kind == "add":
        out = inputs[0] + inputs[1]
    elif layer.kind == "avgpool":
        windows = sliding_window_view(inputs[0], layer.kernel, axis=(1, 2))[
            :, :: layer.stride[0], :: layer.stride[1]
        ]
        out = windows.mean(axis=(3, 4))
    else:
        raise ValueError(f"unknown layer kind {layer.kind}")
    return np.maximum(out, 0.0) if layer.relu else out


def float_forward(
    arch: Architecture, weights: Mapping[str, tuple[np.ndarray | None, np.ndarray | None]],
    x: np.ndarray
) -> dict[str, np.ndarray]:
    """Every tensor of a float forward pass (used to calibrate activation ranges)."""
    tensors: dict[str,
                  np.ndarray] = {arch.input_name: x.reshape(arch.input_shape).astype(np.float64)}
    for layer in arch.layers:
        w, b = weights[layer.name]
        tensors[layer.output] = float_layer(layer, [tensors[name] for name in layer.inputs], w, b)
    return tensors


def window_size(layer: Layer) -> int:
    """Elements averaged per output of an avgpool layer."""
    return math.prod(layer.kernel)
