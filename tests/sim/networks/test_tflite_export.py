"""The simulator's models as int8 TFLite: Vela's own reader sees the same layers and shapes, and a
TFLite interpreter (where ``ai-edge-litert`` is installed) computes what the simulator computes,
layer by layer."""

from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from fvp_harness.sim.networks.architectures import ARCHITECTURES, Layer, get_architecture
from fvp_harness.sim.networks.inference import run_layer
from fvp_harness.sim.networks.modelfile import CompiledModel, compile_model, make_input
from fvp_harness.sim.networks.tflite_export import _padding, export_tflite, plan_tflite

pytest.importorskip("ethosu.vela", reason="the TFLite export uses the schema code Vela ships")

VELA_OPS = {"conv": "Conv2DBias", "depthwise": "DepthwiseConv2DBias", "fc": "FullyConnected",
            "add": "Add", "avgpool": "AvgPool"}
"""The operation Vela's reader makes of each simulator layer kind (TFLite CONV_2D -> Conv2DBias,
...)."""


@pytest.fixture(scope="module")
def compiled() -> dict[str, CompiledModel]:
    return {name: compile_model(get_architecture(name), 0, 256) for name in ARCHITECTURES}


@pytest.fixture(scope="module")
def exported(compiled: dict[str, CompiledModel]) -> dict[str, bytes]:
    return {name: export_tflite(model) for name, model in compiled.items()}


def _nhwc(shape: tuple[int, ...]) -> list[int]:
    return [1, shape[1], shape[2], shape[0]] if len(shape) == 3 else [1, *shape]


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_vela_reads_the_same_layers_and_shapes(
    name: str, compiled: dict[str, CompiledModel], exported: dict[str, bytes], tmp_path: Path
) -> None:
    from ethosu.vela import tflite_reader

    path = tmp_path / f"{name}.tflite"
    path.write_bytes(exported[name])
    graph = tflite_reader.read_tflite(str(path), 1, {}, [], [])
    ops = {op.name: op for op in graph.subgraphs[0].get_all_ops()
           if op.type.name not in ("Const", "Placeholder")}
    arch = compiled[name].arch
    pads = {layer.name
            for layer in arch.layers if layer.kind in ("conv", "depthwise") and _padding(layer)[1]}
    assert set(ops) == {layer.name for layer in arch.layers} | {f"{p}/padded" for p in pads}
    for layer in arch.layers:
        op = ops[layer.name]
        assert op.type.name == VELA_OPS[layer.kind], layer.name
        assert [int(d) for d in op.outputs[0].shape] == _nhwc(layer.out_shape), layer.name
        source = ops.get(f"{layer.name}/padded")
        first_input = source.inputs[0] if source is not None else op.inputs[0]
        assert [int(d) for d in first_input.shape] == _nhwc(layer.in_shapes[0]), layer.name
        if layer.weight_shape is not None:  # Vela holds weights HWIO (conv, depthwise) or IO (fc)
            assert math.prod(op.inputs[1].shape) == layer.n_weights, layer.name
            assert op.inputs[1].quantization.scale_f32.shape == (layer.out_channels,), (
                "per-channel weights")
    for pad in pads:
        assert ops[f"{pad}/padded"].type.name == "Pad"


def test_padding_uses_same_where_tflite_agrees_and_an_explicit_pad_elsewhere() -> None:
    same = Layer("c", "conv", ("x",), "c", ((16, 32, 32),), (16, 32, 32), (3, 3), (1, 1), (1, 1))
    strided = Layer("c", "conv", ("x",), "c", ((16, 32, 32),), (32, 16, 16), (3, 3), (2, 2), (1, 1))
    kws = Layer("c", "conv", ("x",), "c", ((1, 49, 10),), (64, 25, 5), (10, 4), (2, 2), (5, 1))
    valid = Layer("c", "conv", ("x",), "c", ((16, 32, 32),), (32, 16, 16), (1, 1), (2, 2), (0, 0))
    assert _padding(same) == ("SAME", None)
    assert _padding(valid) == ("VALID", None)
    # TFLite's SAME pads 0 before and 1 after a stride-2 3x3 on 32 pixels; PyTorch pads (and reads)
    # 1 before
    assert _padding(strided) == ("VALID", ((1, 1), (1, 1)))
    assert _padding(kws) == ("VALID", ((5, 5), (1, 1)))


def test_export_is_deterministic_and_a_flatbuffer(
    compiled: dict[str, CompiledModel], exported: dict[str, bytes]
) -> None:
    again = export_tflite(compiled["ds_cnn"])
    assert again == exported["ds_cnn"]
    assert again[4:8] == b"TFL3", "the TFLite file identifier"
    # the accelerator is no part of the network: the same file serves every MAC configuration
    other = dataclasses.replace(compiled["ds_cnn"], num_macs=2048)
    assert export_tflite(other) == again


def test_a_pool_that_rescales_becomes_mean(compiled: dict[str, CompiledModel]) -> None:
    """Model files from before pools shared their input's scale rescale in the pool: TFLite's MEAN
    does that."""
    model = compiled["resnet8"]
    assert [op.op for op in plan_tflite(model).ops if op.layer == "avgpool"] == ["AVERAGE_POOL_2D"]
    scale, zp = model.tensors["avgpool"]
    older = dataclasses.replace(model, tensors={**model.tensors, "avgpool": (scale * 0.5, zp)})
    assert [op.op for op in plan_tflite(older).ops if op.layer == "avgpool"] == ["MEAN"]


def test_a_layer_without_a_weight_scale_is_refused(compiled: dict[str, CompiledModel]) -> None:
    model = compiled["deep_autoencoder"]
    q = model.quant["fc1"]
    broken = dataclasses.replace(q, multiplier=np.zeros_like(q.multiplier))
    with pytest.raises(ValueError, match=r"layer fc1: .* multiplier is 0"):
        plan_tflite(dataclasses.replace(model, quant={**model.quant, "fc1": broken}))


def _nchw(tensor: np.ndarray) -> np.ndarray:
    tensor = tensor[0]
    return tensor.transpose(2, 0, 1) if tensor.ndim == 3 else tensor


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_a_tflite_interpreter_computes_what_the_simulator_computes(
    name: str, compiled: dict[str, CompiledModel], exported: dict[str, bytes]
) -> None:
    """TFLite's reference kernels, fed each layer's own inputs, give the simulator's int8 outputs
    within one unit; they differ only where TFLite's double rounding (or float32 scales) tips a
    value that lies on a tie."""
    litert = pytest.importorskip("ai_edge_litert.interpreter",
                                 reason="no TFLite interpreter (ai-edge-litert)")
    model = compiled[name]
    # preserving every tensor is a debugging mode: exactly what is wanted here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        interpreter = litert.Interpreter(
            model_content=exported[name],
            experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF,
            experimental_preserve_all_tensors=True,
        )
    interpreter.allocate_tensors()
    index = {detail["name"]: detail["index"] for detail in interpreter.get_tensor_details()}
    differing = total = 0
    for seed in range(2):
        x = make_input(model.arch, seed)
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"],
                               x.transpose(1, 2, 0)[None] if x.ndim == 3 else x[None])
        interpreter.invoke()
        for layer in model.arch.layers:
            inputs = [_nchw(interpreter.get_tensor(index[tensor])) for tensor in layer.inputs]
            ours = run_layer(layer, inputs, model.quant[layer.name]).astype(np.int32)
            theirs = _nchw(interpreter.get_tensor(index[layer.output])).reshape(ours.shape).astype(
                np.int32)
            assert np.abs(ours - theirs).max() <= 1, (layer.name, seed)
            differing += int(np.count_nonzero(ours != theirs))
            total += ours.size
    assert differing <= 0.01 * total, f"{differing} of {total} elements differ by one unit"
