"""Accelerator configurations: Vela's spelling, the model file keeps the family, refusals name what
exists."""

from __future__ import annotations

import pytest

from fvp_harness.sim.networks.accelerator import Accelerator, parse_accelerator
from fvp_harness.sim.networks.architectures import get_architecture
from fvp_harness.sim.networks.modelfile import compile_model, decode_model, encode_model
from fvp_harness.sim.npu.cycles import inference_cycles, model_cycles


def test_parse_accepts_vela_spelling_and_refuses_the_rest() -> None:
    assert parse_accelerator("ethos-u55-128") == Accelerator("ethos-u55", 128)
    assert parse_accelerator(" Ethos-U85-2048 ").name == "ethos-u85-2048"
    with pytest.raises(ValueError, match="ethos-u55 has no 512-MAC configuration"):
        parse_accelerator("ethos-u55-512")
    with pytest.raises(ValueError,
                       match=r"unknown accelerator 'ethos-u65-256' \(known: ethos-u55-32"):
        parse_accelerator("ethos-u65-256")


def test_model_file_keeps_the_family_and_the_counter_follows_it() -> None:
    arch = get_architecture("ds_cnn")
    u55 = decode_model(encode_model(compile_model(arch, accelerator="ethos-u55-128")))
    u85 = decode_model(encode_model(compile_model(arch, num_macs=128)))
    assert (u55.accelerator.name, u85.accelerator.name) == ("ethos-u55-128", "ethos-u85-128")
    assert model_cycles(u55) == inference_cycles(arch.layers, u55.schedule, 128, "ethos-u55")
    assert model_cycles(u85) == inference_cycles(arch.layers, u85.schedule, 128)
    assert model_cycles(u55) != model_cycles(u85)
