"""``compare.gates`` and ``expect_identical`` tolerances: what the YAML may say, what it means, and
the located messages for what it may not."""

from __future__ import annotations

import pytest
import yaml

from fvp_harness.errors import ScenarioError
from fvp_harness.scenario import load_scenario
from fvp_harness.scenario.model import Compare, Gate, IdentityTolerance
from tests.helpers import scenario_validator

HEAD = """\
name: s
builds:
  before: {runner: r1, build: "make {output}"}
  after: {runner: r2, build: "make {output}"}
models:
  m: {file: m, build: "make {output}"}
metrics: [cpu_time, load_time, npu_cycles, {name: thr, regex: 'thr (\\d+)', unit: ms}]
compare:
"""


def problems(write, body: str) -> list[str]:
    with pytest.raises(ScenarioError) as info:
        load_scenario(write("s.yaml", HEAD + body))
    return info.value.problems


def test_gates_and_tolerances_as_written_in_yaml(write):
    loaded = load_scenario(write("s.yaml", HEAD + """\
  expect_identical:
    - outputs
    - npu_cycles
    - {metric: load_time, rel: 0.05}
    - {metric: thr, abs: 0.5}
    - {metric: cpu_time}
  gates:
    load_time: {max_regression: 10%}
    npu_cycles: {max_regression: 0}
    cpu_time: {max_regression: 0.2, unit: ms}
    thr: {max_regression: 2.5, unit: "%"}
"""))
    compare = loaded.scenario.compare
    assert compare is not None
    gates = compare.gates
    assert list(gates) == ["load_time", "npu_cycles", "cpu_time", "thr"]  # the scenario's order
    assert (gates["load_time"].relative, gates["load_time"].amount) == (True, 10.0)
    assert (gates["npu_cycles"].relative, gates["npu_cycles"].amount,
            gates["npu_cycles"].unit) == (False, 0.0, None)
    assert (gates["cpu_time"].relative, gates["cpu_time"].amount,
            gates["cpu_time"].unit) == (False, 0.2, "ms")
    assert (gates["thr"].relative, gates["thr"].amount) == (True, 2.5)
    assert compare.identity_names == ["outputs", "npu_cycles", "load_time", "thr", "cpu_time"]
    load, thr, cpu = compare.expect_identical[2:]
    assert (isinstance(load, IdentityTolerance) and
            (load.relative, load.amount, load.exact) == (True, 5.0, False))
    assert isinstance(thr, IdentityTolerance) and (thr.relative, thr.amount) == (False, 0.5)
    # a mapping without a tolerance is an exact check
    assert isinstance(cpu, IdentityTolerance) and cpu.exact
    # what the manifest stores is read back to the same thing (``report DIR`` analyses with it)
    assert Compare.model_validate(compare.model_dump(mode="json")) == compare


def test_defaults_stay_exact_and_gate_free():
    compare = Compare()
    assert compare.expect_identical == ["outputs", "npu_cycles"] and compare.gates == {}
    assert IdentityTolerance(metric="x", rel="5%").amount == 5.0
    assert Gate(max_regression="2.5 %").amount == 2.5


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("  gates:\n    load_time: {max_regression: ten%}\n",
         ":10:33: compare.gates.load_time.max_regression: got 'ten%'; expected a percentage "
         "('10%'), or a number with `unit`"),
        ("  gates:\n    load_time: {max_regression: 0.5}\n",
         ":10:16: compare.gates.load_time: max_regression 0.5 needs a unit: write '0.5%' for a "
         "share of the baseline, or add unit: <the metric's unit> (e.g. ms) for an absolute "
         "amount"),
        ("  gates:\n    load_time: {max_regression: -1, unit: ms}\n",
         ":10:33: compare.gates.load_time.max_regression: max_regression must be 0 or more"),
        ("  gates:\n    load_time: {max_regression: 10%, unit: ms}\n",
         "compare.gates.load_time: max_regression '10%' is a percentage but unit is 'ms'"),
        ("  gates:\n    load_tme: {max_regression: 10%}\n",
         ":10:5: compare.gates.load_tme: unknown metric 'load_tme'; did you mean 'load_time'?"),
        ("  gates:\n    load_time: {max_regresion: 10%}\n",
         "compare.gates.load_time.max_regresion: unknown key 'max_regresion'; did you mean "
         "'max_regression'?"),
        ("  gates:\n    thr: {max_regression: 2, unit: us}\n",
         ":10:36: compare.gates.thr.unit: metric 'thr' is measured in 'ms', not 'us'"),
        ("  gates:\n    load_time: 10%\n", ":10:16: compare.gates.load_time: got '10%'"),
        ("  expect_identical: [outputs, {metric: load_time, rel: 5}]\n",
         ":9:56: compare.expect_identical[1].rel: rel is a fraction of the baseline (0.05 = 5%); "
         "got 5: write '5%' if you meant percent"),
        ("  expect_identical: [outputs, {metric: load_time, rell: 0.05}]\n",
         ":9:51: compare.expect_identical[1].rell: unknown key 'rell'"),
        ("  expect_identical: [outputs, {metric: load_tim, abs: 0.1}]\n",
         ":9:40: compare.expect_identical[1].metric: unknown metric 'load_tim'; did you mean "
         "'load_time'?"),
        ("  expect_identical: [{metric: outputs, abs: 1}]\n",
         ":9:22: compare.expect_identical[0]: outputs are compared byte for byte: a tolerance does "
         "not apply"),
        ("  expect_identical: [outputs, {metric: load_time, rel: 0.05, abs: 1}]\n",
         ":9:31: compare.expect_identical[1]: give rel or abs, not both"),
        ("  expect_identical: [outputs, load_time, {metric: load_time, rel: 0.1}]\n",
         ":9:21: compare.expect_identical: load_time listed twice"),
    ],
)
def test_bad_gates_and_tolerances_name_file_line_and_field(write, body: str, expected: str):
    found = problems(write, body)
    assert any(expected in problem for problem in found), found
    # a misspelt key also leaves the right one missing
    assert len(found) == 1 or "unknown key" in expected, found


def test_set_reaches_a_gate(write):
    path = write("s.yaml", HEAD + "  gates: {load_time: {max_regression: 10%}}\n")
    loaded = load_scenario(path, ["compare.gates.load_time.max_regression=25%"])
    assert (loaded.scenario.compare is not None and
            loaded.scenario.compare.gates["load_time"].amount == 25.0)


def test_the_schema_describes_gates_and_tolerances():
    jsonschema = pytest.importorskip("jsonschema")
    validator = scenario_validator()
    good = yaml.safe_load(HEAD + """\
  expect_identical: [outputs, {metric: load_time, rel: 0.05}, {metric: thr, abs: 0.5}]
  gates:
    load_time: {max_regression: 10%}
    npu_cycles: {max_regression: 0}
    cpu_time: {max_regression: 0.2, unit: ms}
""")
    validator.validate(good)
    for bad in ({"gates": {"load_time": {"max_regression": "ten%"}}},
                {"gates": {"load_time": {"max_regression": -1, "unit": "ms"}}},
                {"gates": {"load_time": "10%"}},
                {"expect_identical": [{"metric": "load_time", "rel": 5}]},
                {"expect_identical": [{"metric": "load_time", "rell": 0.05}]}):
        with pytest.raises(jsonschema.ValidationError):
            validator.validate({**good, "compare": bad})
