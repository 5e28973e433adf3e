"""The four networks have the reference's shapes, parameter counts and MAC counts."""

from __future__ import annotations

import pytest

from fvp_harness.sim.networks.architectures import ARCHITECTURES, Layer, get_architecture

REFERENCE = {
    # name: (input shape, output shape, params, MACs in millions as the reference rounds them)
    "resnet8": ((3, 32, 32), (10,), 77_706, 12.50),
    "ds_cnn": ((1, 49, 10), (12,), 22_604, 2.66),
    "mobilenet_v1_025": ((3, 96, 96), (2,), 210_850, 7.49),
    "deep_autoencoder": ((640,), (640,), 265_864, 0.26),
}


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_counts_match_the_reference(name: str) -> None:
    arch = get_architecture(name)
    in_shape, out_shape, params, mmacs = REFERENCE[name]
    assert arch.input_shape == in_shape
    assert arch.output_shape == out_shape
    assert arch.params == params
    assert round(arch.macs / 1e6, 2) == mmacs


def test_exact_mac_counts() -> None:
    # worked out by hand from the layer shapes (see the reference's architecture descriptions)
    assert get_architecture("resnet8").macs == 12_501_632
    assert get_architecture("ds_cnn").macs == 2_656_768
    assert get_architecture("mobilenet_v1_025").macs == 7_489_664
    assert get_architecture("deep_autoencoder").macs == 264_192


def test_ds_cnn_first_conv_gives_25x5x64() -> None:
    first = get_architecture("ds_cnn").layers[0]
    assert (first.kernel, first.stride, first.padding) == ((10, 4), (2, 2), (5, 1))
    assert first.out_shape == (64, 25, 5)


def test_mobilenet_spatial_sizes() -> None:
    arch = get_architecture("mobilenet_v1_025")
    spatial = []
    for layer in arch.layers:
        if layer.kind == "depthwise" and layer.out_shape[1] not in spatial:
            spatial.append(layer.out_shape[1])
    assert [arch.layers[0].out_shape[1], *spatial] == [48, 48, 24, 12, 6, 3]
    assert [layer.out_channels for layer in arch.layers if layer.kind == "conv"][1:] == [
        16,
        32,
        32,
        64,
        64,
        128,
        128,
        128,
        128,
        128,
        128,
        256,
        256,
    ]


def test_resnet8_residual_structure() -> None:
    arch = get_architecture("resnet8")
    adds = [layer for layer in arch.layers if layer.kind == "add"]
    assert [layer.out_shape for layer in adds] == [(16, 32, 32), (32, 16, 16), (64, 8, 8)]
    skips = [layer for layer in arch.layers if layer.name.endswith("_skip")]
    assert [(s.kernel, s.stride) for s in skips] == [((1, 1), (2, 2))] * 2
    assert arch.layers[-2].kind == "avgpool" and arch.layers[-2].kernel == (8, 8)


def test_autoencoder_last_layer_has_no_activation() -> None:
    layers = get_architecture("deep_autoencoder").layers
    assert all(layer.relu for layer in layers[:-1]) and not layers[-1].relu
    assert ([layer.out_shape[0] for layer in layers]
            == [128, 128, 128, 128, 8, 128, 128, 128, 128, 640])


def test_layer_dict_round_trip() -> None:
    for name in ARCHITECTURES:
        for layer in get_architecture(name).layers:
            assert Layer.from_dict(layer.to_dict()) == layer


def test_unknown_model_and_kind_are_refused() -> None:
    with pytest.raises(ValueError, match="known: resnet8"):
        get_architecture("resnet9")
    with pytest.raises(ValueError, match="unknown kind"):
        Layer("x", "softmax", ("input",), "x", ((1,),), (1,))
