"""The NPU cycle model: in the range of Vela's estimates, scaling with MACs, computed from layers
only."""

from __future__ import annotations

import itertools

import pytest

from fvp_harness.sim.networks.architectures import (
    ARCHITECTURES,
    Architecture,
    Layer,
    get_architecture,
)
from fvp_harness.sim.networks.modelfile import schedule_layers
from fvp_harness.sim.npu.cycles import inference_cycles, layer_cycles, utilisation

MACS = (128, 256, 512, 1024, 2048)


def cycles(name: str, macs: int) -> int:
    arch = get_architecture(name)
    return inference_cycles(arch.layers, schedule_layers(arch), macs)


def test_resnet8_and_ds_cnn_at_256_macs_near_vela() -> None:
    assert cycles("resnet8", 256) == pytest.approx(85_092, rel=0.10)
    assert cycles("ds_cnn", 256) == pytest.approx(40_347, rel=0.10)


@pytest.mark.parametrize(("macs", "vela_us"), list(zip(MACS, (158, 85, 49, 29, 20), strict=True)))
def test_resnet8_across_mac_configs_near_vela(macs: int, vela_us: int) -> None:
    assert cycles("resnet8", macs) / 1000 == pytest.approx(vela_us, rel=0.12)


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_more_macs_never_slower(name: str) -> None:
    values = [cycles(name, macs) for macs in MACS]
    assert values == sorted(values, reverse=True)
    # fully connected layers are weight-decode bound: flat across configs
    if name != "deep_autoencoder":
        assert all(a > b for a, b in itertools.pairwise(values))


def test_deterministic() -> None:
    assert len({cycles("mobilenet_v1_025", 256) for _ in range(3)}) == 1


def test_utilisation_by_layer_kind_as_the_reference_describes() -> None:
    resnet = {layer.name: layer for layer in get_architecture("resnet8").layers}
    ds = {layer.name: layer for layer in get_architecture("ds_cnn").layers}
    assert 0.60 <= utilisation(resnet["s1_conv1"], 256) <= 0.70  # 3x3 convolutions
    assert 0.20 <= utilisation(resnet["conv1"], 256) <= 0.32  # first conv, 3 input channels
    assert 0.02 <= utilisation(ds["dw1"], 256) <= 0.08  # depthwise
    assert 0.12 <= utilisation(ds["pw1"], 256) <= 0.80  # pointwise
    fc = layer_cycles(resnet["fc"], schedule_layers(get_architecture("resnet8"))[-1], 256)
    assert fc.bound in ("decode", "memory")
    ae = get_architecture("deep_autoencoder")
    assert layer_cycles(ae.layers[0], schedule_layers(ae)[0], 256).bound in ("decode", "memory")


def test_a_new_network_gets_cycles_without_new_constants() -> None:
    layer = Layer("c", "conv", ("input",), "c", ((8, 16, 16),), (32, 16, 16), (3, 3), (1, 1),
                  (1, 1), True)
    arch = Architecture("tiny", "a network nobody told the model about", (8, 16, 16), (layer,))
    small = inference_cycles(arch.layers, schedule_layers(arch), 256)
    assert small > 0
    assert small < cycles("ds_cnn", 256)


def test_unknown_config_refused() -> None:
    arch = get_architecture("ds_cnn")
    with pytest.raises(ValueError, match="no ethos-u85 configuration with 384 MACs"):
        inference_cycles(arch.layers, schedule_layers(arch), 384)


def test_u55_configurations_follow_the_work() -> None:
    """The Ethos-U55 fallback: more MACs never cost cycles, and a U55 is slower than a U85 of equal
    MACs (narrower output stage, slower memories)."""
    arch = get_architecture("resnet8")
    schedule = schedule_layers(arch)
    u55 = [inference_cycles(arch.layers, schedule, macs, "ethos-u55")
           for macs in (32, 64, 128, 256)]
    assert u55 == sorted(u55, reverse=True) and u55[0] > u55[-1]
    assert (inference_cycles(arch.layers, schedule, 256, "ethos-u55")
            > inference_cycles(arch.layers, schedule, 256))
    with pytest.raises(ValueError, match="no ethos-u55 configuration with 512 MACs"):
        inference_cycles(arch.layers, schedule, 512, "ethos-u55")
