"""``networks/once.py``: an inference computed once per (model file, input), the same answer as
recomputing it."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from fvp_harness.sim.networks import once
from fvp_harness.sim.networks.architectures import get_architecture
from fvp_harness.sim.networks.inference import AccumulatorOverflow, run_model
from fvp_harness.sim.networks.modelfile import compile_model, encode_model, make_input


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """The inputs ``run_model`` really ran on, in order (the cache emptied before and after)."""
    calls: list[bytes] = []

    def counting(arch: object, quant: object, x: np.ndarray) -> np.ndarray:
        calls.append(x.tobytes())
        return run_model(arch, quant, x)  # type: ignore[arg-type]

    once.clear()
    monkeypatch.setattr(once, "run_model", counting)
    yield calls
    once.clear()


def test_the_same_model_file_and_input_bytes_are_computed_once_with_the_same_answer(
        computed: list[bytes]) -> None:
    arch = get_architecture("ds_cnn")
    model = compile_model(arch, 0, 256)
    digest = once.model_digest(encode_model(model))
    x = make_input(arch, 0)
    first = once.run_model_once(digest, model.arch, model.quant, x)
    again = once.run_model_once(digest, model.arch, model.quant, x.copy())
    assert len(computed) == 1
    assert (np.array_equal(first, run_model(model.arch, model.quant, x)) and
            np.array_equal(again, first))
    other = make_input(arch, 1)  # other input bytes: computed
    assert np.array_equal(once.run_model_once(digest, model.arch, model.quant, other),
                          run_model(model.arch, model.quant, other))
    reseeded = compile_model(arch, 1, 256)  # another model file, the same input: computed
    assert np.array_equal(once.run_model_once(once.model_digest(encode_model(reseeded)),
                                              reseeded.arch,
                                              reseeded.quant, x),
                          run_model(reseeded.arch, reseeded.quant, x))
    assert computed == [x.tobytes(), other.tobytes(), x.tobytes()]


def test_a_caller_changing_its_output_changes_no_later_answer(computed: list[bytes]) -> None:
    arch = get_architecture("deep_autoencoder")
    model = compile_model(arch, 0, 256)
    x = make_input(arch, 0)
    first = once.run_model_once("m", model.arch, model.quant, x)
    expected = first.copy()
    first[...] = 0
    second = once.run_model_once("m", model.arch, model.quant, x)
    second[...] = 1
    assert np.array_equal(once.run_model_once("m", model.arch, model.quant, x), expected)
    assert len(computed) == 1


def test_a_failing_inference_fails_every_time_and_the_oldest_result_is_dropped_first(
        computed: list[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    arch = get_architecture("deep_autoencoder")
    model = compile_model(arch, 0, 256)
    inputs = [make_input(arch, seed) for seed in range(3)]
    monkeypatch.setattr(once, "MAX_ENTRIES", 2)
    for x in inputs:  # keeps inputs 1 and 2
        once.run_model_once("m", model.arch, model.quant, x)
    # 1 kept and used; 0 computed again in place of 2, the least recently used
    for index in (1, 0, 1, 2):
        once.run_model_once("m", model.arch, model.quant, inputs[index])
    assert computed == [inputs[index].tobytes() for index in (0, 1, 2, 0, 2)]

    def overflowing(*_: object) -> np.ndarray:
        computed.append(b"overflow")
        raise AccumulatorOverflow("conv1: accumulator exceeds int32")

    monkeypatch.setattr(once, "run_model", overflowing)
    for _ in range(2):
        with pytest.raises(AccumulatorOverflow):
            once.run_model_once("bad", model.arch, model.quant, inputs[0])
    assert computed[-2:] == [b"overflow", b"overflow"]
