"""Scraping is bounded (scenario regexes run on RE2) and checked (implausible samples are refused
one by one)."""

from __future__ import annotations

import time

import pytest

from fvp_harness.errors import ScenarioError
from fvp_harness.run.scrape import scrape
from fvp_harness.scenario import load_scenario
from fvp_harness.scenario.metrics import COUNTER_LIMIT, check_sample, validate_regex
from fvp_harness.scenario.model import MetricSpec


@pytest.mark.timeout(10)
def test_catastrophic_backtracking_pattern_finishes_at_once():
    spec = MetricSpec(name="x", regex=r"(a+)+$")
    text = ("a" * 40 + "b\n") * 50 + "a" * 40 + "\n"  # Python's re takes forever on the first line
    began = time.monotonic()
    result = scrape(text, [spec])
    assert time.monotonic() - began < 1.0
    # the last line matches, 'aaa...' is no number
    assert result.samples["x"] == [] and result.rejected == {"x": 1}


@pytest.mark.parametrize(("regex", "why"), [
    (r"(\d+) \1", "backreferences"),
    (r"(?P<n>\d+)(?P=n)", "backreferences"),
    (r"(?<=time: )(\d+)", "lookarounds"),
    (r"(\d+)(?! ms)", "lookarounds"),
    (r"(?>a+)(\d)", "atomic groups"),
    (r"(\d++)", "possessive quantifiers"),
    (r"x=(\d+)\Z", r"\Z is not supported"),
    (r"(", "missing )"),
])
def test_patterns_re2_cannot_run_are_refused_with_the_reason(regex, why):
    problem = validate_regex(regex)
    assert problem is not None and why in problem, problem


def test_a_scenario_with_a_backreference_names_file_line_and_reason(write):
    path = write("s.yaml",
                 "name: s\nbuilds: {b: {runner: r, build: x}}\nmodels: {m: {file: m, build: x}}\n"
                 "metrics: [{name: t, regex: '(\\d+) \\1'}]\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    [message] = info.value.problems
    assert ":4:28: metrics[0].regex: invalid regex" in message and "backreferences" in message
    assert "linear-time" in message


def test_re2_keeps_multiline_anchors_positions_and_optional_groups():
    spec = MetricSpec(name="t", regex=r"^t=(\d+)?$", unit="ms")
    text = "t=1\nt=\né t=9\nt=3\n"  # non-ASCII text takes the character-offset path
    assert scrape(text, [spec]).samples["t"] == [1.0, 3.0]
    cut = scrape("t=1\nt=2", [spec])  # the last value ends the text without a line break: maybe cut
    assert cut.samples["t"] == [1.0] and cut.rejected_at == {"t": [1]}


@pytest.mark.parametrize(("value", "unit", "per", "refused"), [
    (float("nan"), "", "inference", "not a finite number"),
    (float("inf"), "cycles", "run", "not a finite number"),
    (-1.0, "ms", "inference", "negative time"),
    (3_600_001.0, "ms", "inference", "implausible time"),
    (3_600_001.0, "ms", "run", None),  # a run may take more than an hour
    (90_000.0, "s", "run", "implausible time"),
    (-1.0, "CPU cycles", "run", "negative counter"),
    (float(COUNTER_LIMIT), "cycles", "inference", "counter out of range"),
    (-5.0, "", "inference", None),  # no unit: a difference may be negative
    (-5.0, "dB", "inference", None),
    (12.5, "us", "inference", None),
])
def test_check_sample_ranges_by_unit(value, unit, per, refused):
    why = check_sample(value, unit, per)
    assert (why is None) if refused is None else (why is not None and refused in why), why


def test_scale_that_overflows_and_nan_text_are_refused_with_warnings():
    specs = [MetricSpec(name="v", regex=r"v=(\S+)", scale=1e300),
             MetricSpec(name="w", regex=r"w=(\S+)")]
    result = scrape("v=1e10\nv=2\nw=nan\nw=inf\nw=4\n", specs)
    assert result.samples == {"v": [2e300], "w": [4.0]}
    assert result.rejected == {"v": 1, "w": 2}
    assert any("not a finite number" in warning for warning in result.warnings)
