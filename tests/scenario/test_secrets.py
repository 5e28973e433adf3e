"""Secret environment values: how a scenario marks them, what validation refuses, and the redaction
helpers."""

from __future__ import annotations

import json

import pytest

from fvp_harness.errors import ScenarioError
from fvp_harness.scenario import load_scenario
from fvp_harness.scenario.model import Scenario
from fvp_harness.scenario.secrets import (
    MASK,
    redact_data,
    redact_manifest,
    redact_text,
    secret_names,
)

SECRET = "s3cr3t-v4lue"

BODY = """\
models:
  m: {file: m, build: "make {output}"}
"""


def scenario_of(write, text: str) -> Scenario:
    return load_scenario(write("s.yaml", "name: s\n" + text + BODY)).scenario


def test_three_ways_to_mark_a_secret_and_the_runner_value_stays(write):
    scenario = scenario_of(write, f"""\
vars: {{tok: {SECRET}}}
run:
  env:
    TOKEN: {{value: "${{vars.tok}}", secret: true}}
    PLAIN: hello
    NUM_KEYS: 3
builds:
  before: {{runner: r1, build: x, env: {{API_KEY: abcdefgh}}}}
  after: {{runner: r2, build: x, env: {{CERT: certificate-text}}, secret_env: [CERT]}}
""")
    # what the runner gets
    assert scenario.run.env == {"TOKEN": SECRET, "PLAIN": "hello", "NUM_KEYS": "3"}
    assert scenario.run.secret_env == ["TOKEN"]
    # NUM_KEYS: too short to be a secret by name
    assert secret_names(scenario) == {"TOKEN", "API_KEY", "CERT"}
    assert (set(scenario.secret_values())
            >= {SECRET, "abcdefgh", "certificate-text", "'certificate-text'"[1:-1]})


def test_redacted_scenario_hides_every_copy_and_still_validates(write):
    scenario = scenario_of(write, f"""\
vars: {{tok: {SECRET}}}
run:
  env: {{TOKEN: "${{vars.tok}}"}}
  command: "{{runner}} --model_path={{model}} --token={SECRET}"
builds:
  before: {{runner: r1, build: x}}
  after: {{runner: r2, build: x}}
""")
    data = scenario.redacted()
    text = json.dumps(data)
    assert SECRET not in text
    assert data["run"]["env"]["TOKEN"] == MASK and data["vars"]["tok"] == MASK
    assert data["run"]["command"].endswith(f"--token={MASK}")
    again = Scenario.model_validate(data)  # report DIR reads the manifest's copy back
    assert again.secret_values() == ()


def test_patterns_can_be_changed_or_turned_off(write):
    scenario = scenario_of(write, """\
run:
  env: {LICENSE_FILE: /opt/license.dat, MY_TOKEN: abcdefgh}
  secret_patterns: ["LICENSE_*"]
builds:
  before: {runner: r1, build: x}
  after: {runner: r2, build: x}
""")
    assert secret_names(scenario) == {"LICENSE_FILE"}


@pytest.mark.parametrize(("env", "message"), [
    ("{PIN: {value: '123', secret: true}}",
     "run.env.PIN: a secret value must have at least 6 characters"),
    ("{A: {valu: x}}",
     "run.env.A: got {'valu': 'x'}; expected text, or {value: TEXT, secret: true}"),
    ("{A: {value: x, secret: maybe}}", "run.env.A: got {'value': 'x', 'secret': 'maybe'}"),
])
def test_malformed_or_short_secrets_are_refused(write, env, message):
    path = write("s.yaml",
                 f"name: s\nrun:\n  env: {env}\nbuilds: {{b: {{runner: r, build: x}}}}\n" + BODY)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert any(message in problem for problem in info.value.problems), info.value.problems


def test_secret_env_must_name_an_env_entry(write):
    path = write("s.yaml", "name: s\nrun:\n  env: {TOKEN: abcdefgh}\n  secret_env: [TOKN]\n"
                 "builds: {b: {runner: r, build: x}}\n" + BODY)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert any(":4:16: run.secret_env[0]: 'TOKN' is not set in run.env" in item
               for item in info.value.problems)


def test_set_can_mark_a_secret(write):
    path = write("s.yaml", "name: s\nbuilds: {b: {runner: r, build: x}}\n" + BODY)
    scenario = load_scenario(path,
                             [f"run.env.LICENCE={SECRET}", "run.secret_env=[LICENCE]"]).scenario
    assert scenario.secret_values()[0] == SECRET


def test_redact_helpers():
    secrets = (f"'{SECRET}'", SECRET)
    assert (redact_text(f"export T='{SECRET}'; run {SECRET}", secrets)
            == f"export T={MASK}; run {MASK}")
    digest = "ab" * 32
    data = {"k": digest, "env": {"TOKEN": "short"}, "list": [f"x{SECRET}y"]}
    assert (redact_data(data, ("abab" * 4,), {"TOKEN"})
            == {"k": digest, "env": {"TOKEN": MASK}, "list": [f"x{SECRET}y"]})
    manifest = {"scenario": {"resolved": {"run": {"env": {"TOKEN": SECRET}}}},
                "overrides": [f"run.env.TOKEN={SECRET}"]}
    assert SECRET not in json.dumps(redact_manifest(manifest))


def test_validation_messages_never_show_a_secret_value(write):
    """A message that quotes the value it refuses (``got {...}``, the ``--set`` text) shows ``***``
    instead."""
    path = write("s.yaml", "name: s\nbuilds: {b: {runner: r, build: x}}\n" + BODY)
    cert = "-----BEGIN KEY-----\\nMIIBszCCAVmgAwIBAgIU\\n-----END KEY-----"
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, [f'run.env.LICENCE={{value: "{SECRET}", secret: true, typo: 1}}',
                             f"run.env.API_TOKEN=[{SECRET}-2]",
                             f'builds.b.env.CERT={{value: "{cert}", secret: yes, extra: no}}'])
    text = "\n".join(info.value.problems)
    assert "run.env.LICENCE" in text and "run.env.API_TOKEN" in text and "builds.b.env.CERT" in text
    for leaked in (SECRET, "MIIBszCCAVmgAwIBAgIU", "-----BEGIN KEY-----"):
        assert leaked not in text, text
    assert MASK in text


def test_a_multi_line_secret_is_accepted_and_masked_line_by_line(write):
    scenario = scenario_of(write,
                           'run:\n  env:\n    CERT: {value: '
                           '"-----BEGIN-----\\nline-two-secret\\nend-of-it", '
                                  'secret: true}\nbuilds: {b: {runner: r, build: x}}\n')
    secrets = scenario.secret_values()
    echoed = "$ export CERT='-----BEGIN-----\r\n> line-two-secret\r\n> end-of-it'\r\n"
    assert redact_text(echoed, secrets) == "$ export CERT=***\r\n> ***\r\n> ***\r\n"
    assert redact_text("x line-two-secret y", secrets) == f"x {MASK} y"
    assert redact_text("-----BEGIN-----\nline-two-secret\nend-of-it", secrets) == MASK
