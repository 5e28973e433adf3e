"""Plan: run order (interleaved, blocked), sessions, and content keys that are stable and
sensitive."""

from __future__ import annotations

import os
from collections import Counter
from itertools import pairwise

import pytest

from fvp_harness.run import scrape
from fvp_harness.run.plan import artifact_hashes, build_plan, changed_parts, file_sha256, run_order
from fvp_harness.scenario import load_scenario

SCENARIO = """\
name: s
vars: {macs: 256}
builds:
  before: {runner: art/r-before, build: "make b -o {output}", id: b}
  after: {runner: art/r-after, build: "make a -o {output}", id: a}
models:
  resnet8: {file: art/resnet8.m, inputs: [{file: art/resnet8.in}]}
  ds_cnn: {file: art/ds_cnn.m, inputs: [{file: art/ds_cnn.in}]}
run: {repetitions: 3}
"""


@pytest.fixture
def scenario_path(write):
    for name in ("r-before", "r-after", "resnet8.m", "resnet8.in", "ds_cnn.m", "ds_cnn.in"):
        write(f"art/{name}", f"bytes of {name}")
    return write("s.yaml", SCENARIO)


def plan_of(path, *overrides):
    return build_plan(load_scenario(path, list(overrides)))


def test_interleaved_order_alternates_builds_and_rotates_models():
    order = run_order(["before", "after"], ["resnet8", "ds_cnn", "mobilenet", "dae"], 2,
                      "interleaved")
    assert [f"{build}/{model}" for rep, build, model in order if rep == 0] == [
        "before/resnet8",
        "after/resnet8",
        "after/ds_cnn",
        "before/ds_cnn",
        "before/mobilenet",
        "after/mobilenet",
        "after/dae",
        "before/dae",
    ]
    assert [f"{build}/{model}" for rep, build, model in order if rep == 1] == [
        "before/ds_cnn",
        "after/ds_cnn",
        "after/mobilenet",
        "before/mobilenet",
        "before/dae",
        "after/dae",
        "after/resnet8",
        "before/resnet8",
    ]


@pytest.mark.parametrize("models", [1, 2, 3, 4, 5])
def test_interleaving_is_balanced(models):
    names = [f"m{i}" for i in range(models)]
    order = run_order(["before", "after"], names, 4, "interleaved")
    assert len(order) == 2 * models * 4
    firsts = Counter(order[i][1] for i in range(0, len(order), 2))
    assert firsts["before"] == firsts["after"]  # neither build always runs first
    for name in names:  # each model swaps which build goes first every repetition
        per_rep = [build
                   for i, (rep, build, model) in enumerate(order) if model == name and i % 2 == 0]
        assert all(first != second for first, second in pairwise(per_rep)), per_rep
    for i in range(0, len(order), 2):  # builds of one model run back to back
        assert order[i][0] == order[i + 1][0] and order[i][2] == order[i + 1][2]


def test_blocked_order_runs_one_build_then_the_other():
    order = run_order(["before", "after"], ["a", "b"], 2, "blocked")
    assert [build for _, build, _ in order] == ["before"] * 4 + ["after"] * 4
    assert [(rep, model) for rep, _, model in order[:4]] == [(0, "a"), (0, "b"), (1, "a"), (1, "b")]


def test_plan_units_ids_and_indices(scenario_path):
    plan = plan_of(scenario_path)
    assert len(plan.units) == 2 * 2 * 3
    assert [unit.index for unit in plan.units] == list(range(12))
    assert plan.units[0].id == "r0-before-resnet8"
    assert plan.units[2].id == "r0-after-ds_cnn"
    assert len({unit.id for unit in plan.units}) == 12
    assert len({unit.key for unit in plan.units}) == 12
    assert [session.name for session in plan.sessions] == ["s0"]
    assert plan.sessions[0].units == tuple(unit.id for unit in plan.units)
    assert all(len(unit.key) == 64 for unit in plan.units)
    assert plan.unbuilt == []


def test_blocked_plan(scenario_path):
    plan = plan_of(scenario_path, "run.order=blocked")
    assert [unit.build for unit in plan.units] == ["before"] * 6 + ["after"] * 6


def test_sessions_keep_builds_together_and_alternate(scenario_path):
    plan = plan_of(scenario_path, "fvp.instances=2", "run.repetitions=4")
    assert len(plan.sessions) == 2
    for session in plan.sessions:
        units = plan.session_units(session.index)
        assert units
        for first, second in zip(units[::2], units[1::2], strict=True):
            assert (first.model, first.repetition) == (second.model, second.repetition)
            assert first.build != second.build
        firsts = Counter(unit.build for unit in units[::2])
        assert firsts["before"] == firsts["after"]
    assert sorted(unit.id for unit in plan.units) == sorted(
        unit_id for session in plan.sessions for unit_id in session.units
    )


def test_more_instances_than_groups(scenario_path):
    plan = plan_of(scenario_path, "fvp.instances=50", "run.repetitions=1")
    assert len(plan.sessions) == 2


def test_keys_are_stable(scenario_path):
    first = [unit.key for unit in plan_of(scenario_path).units]
    second = [unit.key for unit in plan_of(scenario_path).units]
    assert first == second


def keys(path, *overrides):
    return {unit.id: unit.key for unit in plan_of(path, *overrides).units}


@pytest.mark.parametrize(
    "override",
    [
        "run.command={runner} --model_path={model} --num_executions={iterations}",
        "run.warmup=2",
        "run.iterations=11",
        "run.env.X=1",
        "run.order=blocked",
        "fvp.params.host.ethosu.num_macs=512",
        "fvp.args=[--stat]",
        "fvp.sim.boot_seconds=3",
        "metrics=[cpu_time]",
        "metrics=[{name: cpu_time}, npu_cycles]",
        "platform=corstone1000",
    ],
)
def test_every_run_setting_changes_every_key(scenario_path, override):
    before, after = keys(scenario_path), keys(scenario_path, override)
    assert before.keys() == after.keys() or override == "run.order=blocked"
    assert all(before[unit] != after[unit] for unit in before)


def test_settings_that_do_not_change_results_keep_keys(scenario_path):
    base = keys(scenario_path)
    assert (
        keys(scenario_path, "fvp.timeouts.boot=5", "report.title=x", "fvp.instances=2",
             "run.retries=3")
        == base
    )
    more = keys(scenario_path, "run.repetitions=4")
    assert all(more[unit] == key for unit, key in base.items())


def test_build_settings_change_only_that_builds_keys(scenario_path):
    base = keys(scenario_path)
    changed = keys(scenario_path, "builds.after.env.DEBUG=1")
    for unit, key in base.items():
        assert (changed[unit] != key) == ("-after-" in unit)
    assert (keys(scenario_path, "builds.before.args=[--x]")["r0-before-ds_cnn"]
            != base["r0-before-ds_cnn"])
    assert (keys(scenario_path, "builds.before.id=other")["r0-before-ds_cnn"]
            != base["r0-before-ds_cnn"])


@pytest.mark.parametrize(
    "name, affected",
    [
        ("r-before", "-before-"),
        ("r-after", "-after-"),
        ("resnet8.m", "-resnet8"),
        ("ds_cnn.in", "-ds_cnn"),
    ],
)
def test_one_changed_byte_changes_exactly_the_units_that_use_it(scenario_path, name, affected):
    base = plan_of(scenario_path)
    artifact = scenario_path.parent / "art" / name
    data = bytearray(artifact.read_bytes())
    data[-1] ^= 1
    artifact.write_bytes(bytes(data))
    changed = plan_of(scenario_path)
    for old, new in zip(base.units, changed.units, strict=True):
        assert (old.key != new.key) == (affected in old.id), old.id
        if old.key != new.key:
            assert len(changed_parts(old.key_parts, new.key_parts)) == 1


def test_unbuilt_artifact_is_keyed_on_its_build_command(scenario_path):
    os.remove(scenario_path.parent / "art" / "r-after")
    plan = plan_of(scenario_path)
    unit = plan.unit("r0-after-resnet8")
    assert unit.unbuilt == ("builds.after.runner",)
    assert plan.unit("r0-before-resnet8").unbuilt == ()
    assert [state.name for state in plan.unbuilt] == ["builds.after.runner"]
    other = plan_of(scenario_path, "builds.after.build=make other -o {output}")
    assert other.unit("r0-after-resnet8").key != unit.key


def test_parser_version_is_in_the_key(scenario_path, monkeypatch):
    base = keys(scenario_path)
    monkeypatch.setattr("fvp_harness.run.plan.PARSERS_VERSION", scrape.PARSERS_VERSION + 1)
    assert all(key != base[unit] for unit, key in keys(scenario_path).items())


def test_real_fvp_identity_uses_size_mtime_and_version(scenario_path, write):
    fvp = write("bin/FVP", "#!/bin/sh\n")
    fvp.chmod(0o755)
    write("fw/bl1", "1")
    write("fw/flash", "2")
    folder = scenario_path.parent
    overrides = [f"fvp.binary={fvp}",
                 f"fvp.firmware={{bl1: {folder}/fw/bl1, flash: {folder}/fw/flash}}"]
    loaded = load_scenario(scenario_path, overrides)
    plan = build_plan(loaded)
    assert plan.fvp["binary"] == str(fvp) and plan.fvp["size"] == 10
    with_version = build_plan(loaded, fvp_version="Fast Models [11.30.27 (Jun 2025)]")
    assert with_version.units[0].key != plan.units[0].key
    assert "fvp.firmware.bl1" in plan.artifacts
    (scenario_path.parent / "fw" / "bl1").write_text("changed")
    assert build_plan(loaded).units[0].key != plan.units[0].key


def test_sim_identity_is_the_harness_version(scenario_path):
    from fvp_harness import __version__

    assert plan_of(scenario_path).fvp == {"binary": "sim", "version": __version__}


def test_artifact_hashes(scenario_path):
    states = artifact_hashes(load_scenario(scenario_path))
    state = states["models.resnet8.inputs[0].file"]
    assert (
        state.built and state.sha256 == file_sha256(state.path) and
        state.size == len("bytes of resnet8.in")
    )
    assert set(states) == {
        "builds.before.runner",
        "builds.after.runner",
        "models.resnet8.file",
        "models.resnet8.inputs[0].file",
        "models.ds_cnn.file",
        "models.ds_cnn.inputs[0].file",
    }


def test_build_plan_accepts_scenario_path_and_profile(scenario_path):
    loaded = load_scenario(scenario_path)
    plan = build_plan(loaded.scenario, loaded.path, loaded.profile)
    assert [unit.key for unit in plan.units] == [unit.key for unit in build_plan(loaded).units]
    with pytest.raises(TypeError):
        build_plan(loaded.scenario)


def test_shipped_driver_reuse_plan(repo):
    plan = build_plan(load_scenario(repo / "scenarios" / "driver_reuse.yaml"))
    assert len(plan.units) == 4 * 2 * plan.scenario.run.planned_repetitions
    assert [unit.id for unit in plan.units[:4]] == [
        "r0-before-resnet8",
        "r0-after-resnet8",
        "r0-after-ds_cnn",
        "r0-before-ds_cnn",
    ]
