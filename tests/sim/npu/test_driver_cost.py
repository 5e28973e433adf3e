"""The driver cost model reproduces the published before/after table and its constants come from the
fit."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from fvp_harness.sim.networks.architectures import get_architecture
from fvp_harness.sim.networks.modelfile import sizes_of
from fvp_harness.sim.npu.driver_cost import DEFAULT, DriverSizes, fit
from tests.helpers import REPO

PUBLISHED = {
    "resnet8": (2.60, 0.93),
    "ds_cnn": (1.99, 0.93),
    "mobilenet_v1_025": (4.35, 1.01),
    "deep_autoencoder": (3.97, 0.93),
}


def sizes(name: str) -> DriverSizes:
    return DriverSizes.from_mapping(sizes_of(get_architecture(name)).to_dict())


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_table_within_tolerance(name: str) -> None:
    before, after = PUBLISHED[name]
    got_before = DEFAULT.execute_ms(sizes(name), "per-inference")
    got_after = DEFAULT.execute_ms(sizes(name), "reuse")
    assert got_before == pytest.approx(before, rel=0.10)
    assert got_after == pytest.approx(after, rel=0.10)
    saved, got_saved = 1 - after / before, 1 - got_after / got_before
    assert abs(saved - got_saved) <= 0.05


def _fit_script() -> ModuleType:
    path = REPO / "benchmarks" / "fit_driver_cost.py"
    spec = importlib.util.spec_from_file_location("fit_driver_cost", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fit_driver_cost", module)
    spec.loader.exec_module(module)
    return module


def test_constants_are_the_least_squares_fit() -> None:
    script = _fit_script()
    assert script.PUBLISHED == PUBLISHED
    fitted = fit([(s, before, after) for _, s, before, after in script.observations()])
    for field in ("fixed_ms", "io_us_per_kib", "object_ms", "byte_us_per_kib"):
        assert getattr(DEFAULT, field) == pytest.approx(getattr(fitted, field), abs=1e-4), field


def test_fit_script_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert _fit_script().main() == 0
    out = capsys.readouterr().out
    assert "FIXED" in out and "resnet8" in out and "deep_autoencoder" in out


def test_model_properties() -> None:
    s = sizes("resnet8")
    assert s.objects == 6
    assert DEFAULT.execute_ms(s, "per-inference") > DEFAULT.execute_ms(s, "reuse")
    bigger = DriverSizes(s.command_stream, s.weights * 2, s.scratch, s.input, s.output)
    assert DEFAULT.execute_ms(bigger, "per-inference") > DEFAULT.execute_ms(s, "per-inference")
    # weights stay resident
    assert DEFAULT.execute_ms(bigger, "reuse") == DEFAULT.execute_ms(s, "reuse")
    two_inputs = DriverSizes(s.command_stream, s.weights, s.scratch, s.input, s.output, n_inputs=2)
    assert two_inputs.objects == 7
    assert 0 < DEFAULT.setup_ms(s) < DEFAULT.recreate_ms(s)
    with pytest.raises(ValueError, match="driver mode"):
        DEFAULT.execute_ms(s, "sometimes")
