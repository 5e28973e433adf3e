"""Model and runner file formats: magic, round trips, integrity, and the compiled sizes against
Vela's reports."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from fvp_harness.sim.networks.architectures import ARCHITECTURES, Architecture, get_architecture
from fvp_harness.sim.networks.inference import run_model
from fvp_harness.sim.networks.modelfile import (
    MODEL_MAGIC,
    RUNNER_MAGIC,
    ModelFileError,
    RunnerArtifact,
    compile_model,
    decode_model,
    decode_runner,
    encode_model,
    encode_runner,
    is_pte,
    make_input,
    sizes_of,
)

VELA = {  # command stream, encoded weights, scratch (Vela 5.2, ethos-u85-256)
    "resnet8": (5_732, 92_321, 49_152),
    "ds_cnn": (4_920, 31_553, 16_000),
}


@pytest.mark.parametrize("name", sorted(VELA))
def test_sizes_land_near_the_vela_reports(name: str) -> None:
    sizes = sizes_of(get_architecture(name))
    command, weights, scratch = VELA[name]
    assert sizes.command_stream == pytest.approx(command, rel=0.03)
    assert sizes.weights == pytest.approx(weights, rel=0.03)
    assert sizes.scratch == scratch  # the largest live activation set, exactly


def test_io_sizes_and_every_model_has_sizes() -> None:
    assert sizes_of(get_architecture("mobilenet_v1_025")).input == 3 * 96 * 96
    assert sizes_of(get_architecture("deep_autoencoder")).output == 640
    for name in ARCHITECTURES:
        s = sizes_of(get_architecture(name))
        assert min(s.command_stream, s.weights, s.scratch, s.input, s.output) > 0


def test_sizes_follow_the_layers_not_the_model_name() -> None:
    arch = get_architecture("ds_cnn")
    renamed = Architecture("my_kws", "not a known model", arch.input_shape, arch.layers)
    assert sizes_of(renamed) == sizes_of(arch)
    shorter = Architecture("short", "", arch.input_shape, arch.layers[:3])
    assert sizes_of(shorter).command_stream < sizes_of(arch).command_stream


def test_model_file_layout_and_magic(model_files: dict[str, bytes]) -> None:
    data = model_files["resnet8"]
    assert data[:8] == MODEL_MAGIC == b"FVPSIMMD"
    version, flags, macs, header_len, payload_len = struct.unpack_from("<HHIII", data, 8)
    assert (version, flags, macs) == (1, 0, 256)
    assert len(data) == 64 + header_len + payload_len
    assert not is_pte(data[:64]) and not data.startswith(b"\x7fELF")


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_round_trip_preserves_everything(name: str) -> None:
    arch = get_architecture(name)
    model = compile_model(arch, seed=5, num_macs=512)
    back = decode_model(encode_model(model))
    assert back.arch == arch and back.num_macs == 512 and back.seed == 5
    assert back.sizes == model.sizes and back.schedule == model.schedule
    assert back.tensors.keys() == model.tensors.keys()
    for name, (scale, zero_point) in model.tensors.items():
        assert back.tensors[name][0] == pytest.approx(scale)
        assert back.tensors[name][1] == zero_point
    x = make_input(arch, 1)
    assert np.array_equal(run_model(back.arch, back.quant, x), run_model(arch, model.quant, x))


def test_same_seed_same_bytes_other_seed_other_weights() -> None:
    arch = get_architecture("ds_cnn")
    assert encode_model(compile_model(arch, 3)) == encode_model(compile_model(arch, 3))
    assert encode_model(compile_model(arch, 3)) != encode_model(compile_model(arch, 4))


def test_corrupt_truncated_and_foreign_files_are_refused(model_files: dict[str, bytes]) -> None:
    data = bytearray(model_files["ds_cnn"])
    with pytest.raises(ModelFileError, match="truncated"):
        decode_model(bytes(data[:-10]))
    data[-5] ^= 0xFF
    with pytest.raises(ModelFileError, match="checksum"):
        decode_model(bytes(data))
    with pytest.raises(ModelFileError, match="magic"):
        decode_model(b"\0\0\0\0ET12" + b"\0" * 100)
    newer = bytearray(model_files["ds_cnn"])
    newer[8] = 9
    with pytest.raises(ModelFileError, match="version 9"):
        decode_model(bytes(newer))


def test_pte_detection() -> None:
    assert is_pte(b"\x18\x00\x00\x00ET12eh00")
    assert is_pte(b"\x18\x00\x00\x00ET09")
    assert is_pte(b"\x18\x00\x00\x00BP08")
    assert not is_pte(b"\x18\x00\x00\x00ETxx")
    assert not is_pte(MODEL_MAGIC) and not is_pte(RUNNER_MAGIC)


def test_runner_artifact_round_trip_and_refusals() -> None:
    artifact = RunnerArtifact("per-inference", "before-abc123", "crash=2")
    data = encode_runner(artifact)
    assert data[:8] == b"FVPSIMRN" and not data.startswith(b"\x7fELF") and not is_pte(data[:64])
    assert decode_runner(data) == artifact
    with pytest.raises(ValueError, match="driver mode"):
        RunnerArtifact("sometimes")
    with pytest.raises(ModelFileError, match="corrupt"):
        decode_runner(b"FVPSIMRN\x02\x00\x00\x00\x02\x00\x00\x00{}")
    with pytest.raises(ModelFileError, match="version 9"):
        decode_runner(b"FVPSIMRN\x09\x00\x00\x00\x02\x00\x00\x00{}")
    with pytest.raises(ModelFileError):
        decode_runner(b"\x7fELF")
    with pytest.raises(ValueError, match="log generation"):
        RunnerArtifact("reuse", log_generation="ancient")


def test_runner_artifact_version_2_carries_the_instrumentation_options() -> None:
    artifact = RunnerArtifact("reuse", "after-1", "", cpu_time_report=True, log_generation="old")
    data = encode_runner(artifact)
    assert struct.unpack_from("<H", data, 8) == (2,)
    assert decode_runner(data) == artifact
    assert (decode_runner(encode_runner(RunnerArtifact("reuse")))
            == RunnerArtifact("reuse", "", "", False, "current"))


def test_runner_artifact_version_1_is_still_read() -> None:
    """A version 1 build printed its id and the CPU-time line: it keeps the CPU-time line (stock log
    otherwise)."""
    body = json.dumps({"driver": "per-inference", "fault": "", "format": "fvp-sim-executor-runner",
                       "id": "v1"})
    data = b"FVPSIMRN" + struct.pack("<HHI", 1, 0, len(body)) + body.encode() + b"\n"
    assert decode_runner(data) == RunnerArtifact("per-inference", "v1", "", cpu_time_report=True)


def test_cycle_counter_compile_spec_round_trips() -> None:
    arch = get_architecture("ds_cnn")
    assert decode_model(encode_model(compile_model(arch, 0, 256))).cycle_counter is True
    off = encode_model(compile_model(arch, 0, 256, cycle_counter=False))
    assert decode_model(off).cycle_counter is False
    assert b'"ethosu.enable_cycle_counter":false' in off


def test_unsupported_macs_refused() -> None:
    with pytest.raises(ValueError, match="not an Ethos-U85 configuration"):
        compile_model(get_architecture("resnet8"), num_macs=300)
