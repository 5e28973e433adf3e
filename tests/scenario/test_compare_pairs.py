"""``compare`` with more than two builds: ``candidates`` (one baseline, several candidates) and
``pairs`` (any list of ``{baseline, candidate}``), what they mean, how they are stored, and the
located messages for what they may not say."""

from __future__ import annotations

import pytest
import yaml

from fvp_harness.errors import ScenarioError
from fvp_harness.scenario import load_scenario
from fvp_harness.scenario.model import Compare, Scenario
from tests.helpers import scenario_validator

HEAD = """\
name: macs
builds:
  u85-128: {runner: r1, build: "make {output}"}
  u85-256: {runner: r2, build: "make {output}"}
  u85-512: {runner: r3, build: "make {output}"}
models:
  m: {file: m, build: "make {output}"}
metrics: [cpu_time, npu_cycles]
compare:
"""


def problems(write, body: str) -> list[str]:
    with pytest.raises(ScenarioError) as info:
        load_scenario(write("s.yaml", HEAD + body))
    return info.value.problems


def test_candidates_compare_each_against_the_one_baseline(write):
    loaded = load_scenario(write("s.yaml",
                                 HEAD + "  baseline: u85-128\n  candidates: [u85-256, u85-512]\n"))
    compare = loaded.scenario.compare
    assert compare is not None
    assert compare.build_pairs == [("u85-128", "u85-256"), ("u85-128", "u85-512")]
    # code that knows one pair reads the first
    assert (compare.baseline, compare.candidate) == ("u85-128", "u85-256")


def test_pairs_may_have_different_baselines(write):
    loaded = load_scenario(write("s.yaml", HEAD + """\
  pairs:
    - {baseline: u85-128, candidate: u85-256}
    - {baseline: u85-256, candidate: u85-512}
"""))
    compare = loaded.scenario.compare
    assert compare is not None
    assert compare.build_pairs == [("u85-128", "u85-256"), ("u85-256", "u85-512")]
    assert (compare.baseline, compare.candidate) == ("u85-128", "u85-256")


def test_two_builds_are_one_pair_and_dump_as_before():
    compare = Compare(baseline="a", candidate="b")
    assert compare.build_pairs == [("a", "b")]
    dumped = compare.model_dump(mode="json")
    assert (dumped["baseline"], dumped["candidate"]) == ("a", "b")
    # a two-build manifest stores what it always stored
    assert not {"candidates", "pairs"} & set(dumped)


@pytest.mark.parametrize(
    ("data", "absent"),
    [
        ({"baseline": "a", "candidates": ["b", "c"]}, {"candidate", "pairs"}),
        ({"pairs": [{"baseline": "a", "candidate": "b"}, {"baseline": "c", "candidate": "d"}]},
         {"baseline", "candidate", "candidates"}),
    ],
)
def test_what_the_manifest_stores_validates_again_as_the_same_spec(data, absent):
    compare = Compare.model_validate(data)
    dumped = compare.model_dump(mode="json")
    # the first pair copied into baseline/candidate is not written back
    assert not absent & set(dumped)
    again = Compare.model_validate(dumped)
    assert again == compare and again.build_pairs == compare.build_pairs


def test_a_whole_scenario_round_trips_through_json(write):
    loaded = load_scenario(write("s.yaml",
                                 HEAD + "  baseline: u85-128\n  candidates: [u85-256, u85-512]\n"))
    again = Scenario.model_validate(loaded.scenario.model_dump(mode="json"))
    assert (again.compare is not None and
            again.compare.build_pairs == loaded.scenario.compare.build_pairs)


def test_a_scenario_built_in_code_checks_the_names_too():
    with pytest.raises(ValueError, match=r"compare\.candidates\[1\]: no build named 'u85-1024'"):
        Scenario.model_validate({
            "name": "s", "builds": {"u85-128": {"runner": "r"}, "u85-256": {"runner": "r"}},
            "models": {"m": {"file": "m"}},
            "compare": {"baseline": "u85-128", "candidates": ["u85-256", "u85-1024"]},
        })


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("  baseline: u85-128\n  candidates: [u85-256, u85-51]\n",
         "s.yaml:11:25: compare.candidates[1]: no build named 'u85-51'; did you mean 'u85-512'? "
         "(builds: u85-128, u85-256, u85-512)"),
        ("  baseline: u85-128\n  candidates: [u85-256, u85-128]\n",
         "s.yaml:11:25: compare.candidates[1]: 'u85-128' is the baseline; each candidate must be "
         "another build"),
        ("  baseline: u85-12\n  candidates: [u85-256]\n",
         "s.yaml:10:13: compare.baseline: no build named 'u85-12'; did you mean"),
        ("  candidates: [u85-256]\n",
         "s.yaml:9:1: compare.baseline: not given, so it is the default 'before', and there is no "
         "build named 'before'"),
        ("  pairs:\n    - {baseline: u85-128, candidate: u85-256}\n    - {baseline: u85-265, "
         "candidate: u85-512}\n",
         "s.yaml:12:18: compare.pairs[1].baseline: no build named 'u85-265'; did you mean "
         "'u85-256'?"),
        ("  pairs:\n    - {baseline: u85-128, candidate: u85-128}\n",
         "s.yaml:11:38: compare.pairs[0].candidate: candidate is the same build as baseline "
         "('u85-128'); expected two different builds"),
        ("  baseline: u85-128\n  candidate: u85-256\n  candidates: [u85-512]\n",
         "s.yaml:10:3: compare: give candidate (one build) or candidates (several), not both"),
        ("  baseline: u85-128\n  pairs:\n    - {baseline: u85-128, candidate: u85-256}\n",
         "s.yaml:10:3: compare: pairs names the builds of every comparison; drop baseline (or drop "
         "pairs)"),
        ("  baseline: u85-128\n  candidates: [u85-256, u85-256]\n",
         "s.yaml:11:15: compare.candidates: u85-256 listed twice; each candidate is compared once"),
        ("  baseline: u85-128\n  candidates: []\n",
         "s.yaml:11:15: compare.candidates: got []; list should have at least 1"),
        ("  pairs:\n    - {baseline: u85-128, candidate: u85-256}\n    - {baseline: u85-128, "
         "candidate: u85-256}\n",
         "s.yaml:11:5: compare.pairs: the pair u85-256 vs u85-128 is listed twice"),
        ("  pairs:\n    - {baseline: u85-128, candidat: u85-256}\n",
         "s.yaml:11:27: compare.pairs[0].candidat: unknown key 'candidat'; did you mean "
         "'candidate'?"),
    ],
)
def test_bad_pairs_name_file_line_and_field(write, body: str, expected: str):
    found = problems(write, body)
    assert any(f"/{expected}" in problem for problem in found), found


def test_an_unreadable_candidates_list_is_not_guessed_at(write):
    """``candidates`` that does not validate leaves ``candidate`` at its default; that default is
    not reported."""
    found = problems(write, "  baseline: u85-128\n  candidates: [u85-256, [x]]\n")
    assert len(found) == 1 and "compare.candidates[1]" in found[0], found


def test_set_can_switch_to_candidates(write):
    path = write("s.yaml", HEAD + "  baseline: u85-128\n  candidates: [u85-256]\n")
    loaded = load_scenario(path, ["compare.candidates=[u85-512, u85-256]"])
    assert loaded.scenario.compare is not None
    assert loaded.scenario.compare.build_pairs == [("u85-128", "u85-512"), ("u85-128", "u85-256")]


def test_the_schema_describes_candidates_and_pairs():
    jsonschema = pytest.importorskip("jsonschema")
    validator = scenario_validator()
    base = yaml.safe_load(HEAD + "  baseline: u85-128\n")
    validator.validate({**base,
                        "compare": {"baseline": "u85-128", "candidates": ["u85-256", "u85-512"]}})
    validator.validate({**base,
                        "compare": {"pairs": [{"baseline": "u85-128", "candidate": "u85-256"}]}})
    for bad in ({"candidates": "u85-256"}, {"pairs": [{"baseline": "u85-128"}]},
                {"pairs": [{"baseline": "u85-128", "candidate": "u85-256", "extra": 1}]}):
        with pytest.raises(jsonschema.ValidationError):
            validator.validate({**base, "compare": bad})
