"""Integer kernels against plain float references, exactness of the arithmetic, determinism,
speed."""

from __future__ import annotations

import numpy as np
import pytest

from fvp_harness.sim.networks import inference
from fvp_harness.sim.networks.architectures import ARCHITECTURES, Layer, get_architecture
from fvp_harness.sim.networks.inference import (
    LayerQuant,
    exact_matmul,
    quantize_multiplier,
    requantize,
    run_layer,
    run_model,
)
from fvp_harness.sim.networks.modelfile import compile_model, make_input

RNG = np.random.default_rng(1234)


# --- plain float references (loops, written independently of the kernels under test)
# --------------------------------


def ref_conv(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray,
    stride: tuple[int, int],
    pad: tuple[int, int],
    depthwise: bool = False,
) -> np.ndarray:
    c_in, h, wd = x.shape
    co, _, kh, kw = w.shape
    xp = np.zeros((c_in, h + 2 * pad[0], wd + 2 * pad[1]))
    xp[:, pad[0] : pad[0] + h, pad[1] : pad[1] + wd] = x
    ho = (h + 2 * pad[0] - kh) // stride[0] + 1
    wo = (wd + 2 * pad[1] - kw) // stride[1] + 1
    out = np.zeros((co, ho, wo))
    for o in range(co):
        for i in range(ho):
            for j in range(wo):
                patch = xp[:, i * stride[0] : i * stride[0] + kh,
                           j * stride[1] : j * stride[1] + kw]
                out[o, i, j] = (patch[o] * w[o, 0]).sum() if depthwise else (patch * w[o]).sum()
        out[o] += b[o]
    return out


def quantize(x: np.ndarray, scale: float, zp: int) -> np.ndarray:
    return np.clip(np.round(x / scale) + zp, -128, 127).astype(np.int8)


def dequantize(q: np.ndarray, scale: float, zp: int) -> np.ndarray:
    return (q.astype(np.float64) - zp) * scale


def make_weights(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    w = RNG.normal(0, 0.2, size=shape)
    w_scale = np.abs(w.reshape(shape[0], -1)).max(axis=1) / 127
    w_q = np.round(w / w_scale.reshape(-1, *[1] * (len(shape) - 1))).astype(np.int8)
    return w_q, w_scale


def layer_quant(
    w_q: np.ndarray | None,
    bias_q: np.ndarray | None,
    real_mult: np.ndarray,
    zp_in: int,
    zp_out: int,
    relu: bool,
) -> LayerQuant:
    m, s = quantize_multiplier(real_mult)
    return LayerQuant((zp_in,), zp_out, max(-128, zp_out) if relu else -128, 127, m, s, w_q, bias_q)


def check_close(got_q: np.ndarray, expected: np.ndarray, scale: float, zp: int,
                units: float = 1.0) -> None:
    """Within ``units`` output quantisation steps of the float reference (clipped to the
    representable range)."""
    lo, hi = dequantize(np.array([-128, 127]), scale, zp)
    expected = np.clip(expected, lo, hi)
    err = np.abs(dequantize(got_q, scale, zp) - expected) / scale
    assert err.max() <= units, f"max error {err.max():.2f} quantisation steps"


CONV_CASES = [
    # (cin, cout, h, w, kernel, stride, padding)
    (3, 8, 12, 12, (3, 3), (1, 1), (1, 1)),
    (4, 6, 11, 9, (3, 3), (2, 2), (1, 1)),
    (1, 5, 13, 7, (5, 2), (2, 2), (2, 1)),
    (6, 4, 8, 8, (1, 1), (2, 2), (0, 0)),
    (2, 3, 7, 7, (3, 3), (3, 1), (0, 2)),
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("relu", [False, True])
def test_conv_matches_float_reference(case: tuple, relu: bool) -> None:
    cin, cout, h, w, kernel, stride, pad = case
    s_in, zp_in = 0.02, 5
    x_q = RNG.integers(-128, 128, size=(cin, h, w), dtype=np.int8)
    x = dequantize(x_q, s_in, zp_in)
    w_q, w_scale = make_weights((cout, cin, *kernel))
    bias_q = RNG.integers(-2000, 2000, size=cout).astype(np.int32)
    expected = ref_conv(x, w_q * w_scale[:, None, None, None], bias_q * s_in * w_scale, stride, pad)
    if relu:
        expected = np.maximum(expected, 0)
    s_out = (expected.max() - min(expected.min(), 0)) / 255
    zp_out = round(-128 - float(min(expected.min(), 0)) / s_out)
    q = layer_quant(w_q, bias_q, s_in * w_scale / s_out, zp_in, zp_out, relu)
    layer = Layer("c", "conv", ("in",), "c", ((cin, h, w),), expected.shape, kernel, stride, pad,
                  relu)
    got = run_layer(layer, [x_q], q)
    assert got.dtype == np.int8 and got.shape == expected.shape
    check_close(got, expected, s_out, zp_out, units=0.51)


@pytest.mark.parametrize("stride", [(1, 1), (2, 2)])
def test_depthwise_matches_float_reference(stride: tuple[int, int]) -> None:
    c, h, w = 7, 10, 9
    s_in, zp_in = 0.03, -128
    x_q = RNG.integers(-128, 128, size=(c, h, w), dtype=np.int8)
    x = dequantize(x_q, s_in, zp_in)
    w_q, w_scale = make_weights((c, 1, 3, 3))
    bias_q = RNG.integers(-500, 500, size=c).astype(np.int32)
    expected = np.maximum(
        ref_conv(
            x, w_q * w_scale[:, None, None, None], bias_q * s_in * w_scale, stride, (1, 1),
            depthwise=True
        ),
        0,
    )
    s_out, zp_out = expected.max() / 255, -128
    q = layer_quant(w_q, bias_q, s_in * w_scale / s_out, zp_in, zp_out, True)
    layer = Layer("d", "depthwise", ("in",), "d", ((c, h, w),), expected.shape, (3, 3), stride,
                  (1, 1), True)
    check_close(run_layer(layer, [x_q], q), expected, s_out, zp_out, units=0.51)


def test_fully_connected_matches_float_reference() -> None:
    n_in, n_out = 70, 9
    s_in, zp_in = 0.05, 3
    x_q = RNG.integers(-128, 128, size=(n_in, 1, 1), dtype=np.int8)
    w_q, w_scale = make_weights((n_out, n_in))
    bias_q = RNG.integers(-3000, 3000, size=n_out).astype(np.int32)
    expected = (w_q * w_scale[:, None]) @ dequantize(x_q, s_in, zp_in).reshape(
        -1
    ) + bias_q * s_in * w_scale
    s_out = np.abs(expected).max() / 127
    q = layer_quant(w_q, bias_q, s_in * w_scale / s_out, zp_in, 0, False)
    layer = Layer("f", "fc", ("in",), "f", ((n_in, 1, 1),), (n_out,))
    check_close(run_layer(layer, [x_q], q), expected, s_out, 0, units=0.51)


def test_residual_add_matches_float_reference() -> None:
    shape = (4, 6, 6)
    (sa, za), (sb, zb), (so, zo) = (0.02, -10), (0.05, 7), (0.06, -128)
    a = RNG.integers(-128, 128, size=shape, dtype=np.int8)
    b = RNG.integers(-128, 128, size=shape, dtype=np.int8)
    expected = np.maximum(dequantize(a, sa, za) + dequantize(b, sb, zb), 0)
    twice = 2 * max(sa, sb)
    im, ishift = quantize_multiplier(np.array([sa, sb]) / twice)
    m, s = quantize_multiplier(twice / ((1 << inference.ADD_LEFT_SHIFT) * so))
    q = LayerQuant((za, zb), zo, zo, 127, m, s, in_multiplier=im, in_shift=ishift)
    layer = Layer("a", "add", ("x", "y"), "a", (shape, shape), shape, relu=True)
    check_close(run_layer(layer, [a, b], q), expected, so, zo, units=0.51)


def test_average_pool_matches_float_reference() -> None:
    x_q = RNG.integers(-128, 128, size=(5, 8, 8), dtype=np.int8)
    s_in, zp_in, s_out, zp_out = 0.04, -20, 0.03, 3
    expected = dequantize(x_q, s_in, zp_in).mean(axis=(1, 2), keepdims=True)
    m, s = quantize_multiplier(s_in / (s_out * 64))
    q = LayerQuant((zp_in,), zp_out, -128, 127, m, s)
    layer = Layer("p", "avgpool", ("x",), "p", ((5, 8, 8),), (5, 1, 1), (8, 8), (8, 8))
    check_close(run_layer(layer, [x_q], q), expected, s_out, zp_out, units=0.51)
    # a non-global window with a stride
    layer2 = Layer("p2", "avgpool", ("x",), "p2", ((5, 8, 8),), (5, 3, 3), (4, 4), (2, 2))
    m2, s2 = quantize_multiplier(s_in / (s_out * 16))
    got = run_layer(layer2, [x_q], LayerQuant((zp_in,), zp_out, -128, 127, m2, s2))
    windows = np.lib.stride_tricks.sliding_window_view(
        dequantize(x_q, s_in, zp_in), (4, 4), axis=(1, 2)
    )
    check_close(got, windows[:, ::2, ::2].mean(axis=(3, 4)), s_out, zp_out, units=0.51)


def test_requantize_rounds_half_away_from_zero() -> None:
    m, s = quantize_multiplier(0.5)
    acc = np.array([-3, -2, -1, 0, 1, 2, 3])
    assert requantize(acc, m, s).tolist() == [-2, -1, -1, 0, 1, 1, 2]


@pytest.mark.parametrize("real", [1e-9, 3.3e-5, 0.0123, 0.4999, 0.5, 0.999999, 1.0, 3.7])
def test_quantize_multiplier_is_accurate(real: float) -> None:
    m, s = quantize_multiplier(real)
    assert 2**30 <= int(m[0]) < 2**31
    assert int(m[0]) * 2.0 ** -(31 + int(s[0])) == pytest.approx(real, rel=1e-9)


def test_exact_matmul_equals_integer_arithmetic() -> None:
    a = RNG.integers(-255, 256, size=(50, 640)).astype(np.int16)
    b = RNG.integers(-127, 128, size=(640, 30)).astype(np.int8)
    assert np.array_equal(exact_matmul(a, b), a.astype(np.int64) @ b.astype(np.int64))


def test_accumulator_overflow_is_detected() -> None:
    with pytest.raises(inference.AccumulatorOverflow):
        inference._check_int32(np.array([2**31]), "test")


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_models_are_deterministic_and_track_the_float_network(name: str) -> None:
    arch = get_architecture(name)
    model = compile_model(arch, seed=3)
    x = make_input(arch, 100)  # not one of the calibration inputs
    first = run_model(arch, model.quant, x)
    assert first.dtype == np.int8 and first.shape == arch.output_shape
    for _ in range(2):
        assert np.array_equal(run_model(arch, model.quant, x.copy()), first)
    assert np.array_equal(run_model(arch, compile_model(arch, seed=3).quant, x), first)
    # the integer network approximates the float network it was quantised from
    weights = {}
    for layer in arch.layers:
        q = model.quant[layer.name]
        if q.weights is None:
            weights[layer.name] = (None, None)
            continue
        in_scale = model.tensors[layer.inputs[0]][0]
        w_scale = (
            q.multiplier.astype(np.float64)
            * 2.0 ** -(31 + q.shift.astype(np.float64))
            * model.tensors[layer.output][0]
            / in_scale
        )
        wf = q.weights * w_scale.reshape(-1, *[1] * (q.weights.ndim - 1))
        weights[layer.name] = (wf, q.bias * in_scale * w_scale)
    in_scale, in_zp = model.input_quant
    floats = inference.float_forward(arch, weights, dequantize(x, in_scale, in_zp))
    out_scale, out_zp = model.output_quant
    got = dequantize(first, out_scale, out_zp)
    ref = floats[arch.output_name].reshape(-1)
    corr = np.corrcoef(got.reshape(-1), ref)[0, 1] if ref.size > 2 else 1.0
    assert corr > 0.99
    assert np.abs(got.reshape(-1) - ref).max() <= 0.05 * np.abs(ref).max()


def test_different_seeds_give_different_outputs() -> None:
    arch = get_architecture("resnet8")
    x = make_input(arch, 0)
    a = run_model(arch, compile_model(arch, 0).quant, x)
    b = run_model(arch, compile_model(arch, 1).quant, x)
    assert not np.array_equal(a, b)
