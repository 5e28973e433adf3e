"""Scenario -> Plan: which units run, in which order, on which booted instance, under which content
key.

Why it is shaped so: docs/architecture.md, "Inside `run/`"."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fvp_harness.errors import ConfigurationError
from fvp_harness.files import file_sha256
from fvp_harness.profiles import Profile
from fvp_harness.run.scrape import PARSERS_VERSION
from fvp_harness.scenario.load import LoadedScenario
from fvp_harness.scenario.model import Scenario
from fvp_harness.store.records import Record
from fvp_harness.version import __version__

__all__ = [
    "KEY_PART_PREFIX",
    "KEY_VERSION",
    "ArtifactState",
    "Plan",
    "Session",
    "Unit",
    "artifact_hashes",
    "build_plan",
    "changed_parts",
    "drift_check_units",
    "fvp_identity",
    "key_part_extras",
    "library_artifact",
    "run_order",
    "unit_artifacts",
    "why_stale",
]

KEY_VERSION = 1
"""Bump when what goes into a content key changes: every key changes with it."""


@dataclass(frozen=True)
class ArtifactState:
    """One host file a unit needs, as hashed now.

    ``sha256`` is None when the file does not exist yet; it is then keyed on its build command
    (``unbuilt``), and the unit's key is provisional until the file is built.
    """

    name: str  # where it is declared, e.g. builds.before.runner, models.ds_cnn.inputs[0].file
    path: Path
    build: str | None
    sha256: str | None
    size: int | None

    @property
    def built(self) -> bool:
        return self.sha256 is not None

    @property
    def key_material(self) -> str:
        if self.sha256 is not None:
            return "sha256:" + self.sha256
        return "unbuilt:" + hashlib.sha256((self.build or "").encode()).hexdigest()


@dataclass(frozen=True)
class Unit:
    """One runner invocation. ``index`` is its position in ``Plan.units`` (the run order);
    ``session`` the index of the booted instance that runs it; ``key`` the full sha256 hex content
    key; ``key_parts`` one digest per input group (runner, model, inputs, profile, fvp, run, build,
    metrics, parsers, identity), to say what changed."""

    id: str
    build: str
    model: str
    repetition: int
    session: int
    index: int
    key: str
    key_parts: Mapping[str, str] = field(default_factory=dict)
    unbuilt: tuple[str, ...] = ()

    @property
    def short_key(self) -> str:
        return self.key[:12]


@dataclass(frozen=True)
class Session:
    """One booted instance and the ids of the units it runs, in order."""

    index: int
    units: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"s{self.index}"


@dataclass(frozen=True)
class Plan:
    """Everything a run needs to know before touching an FVP."""

    scenario: Scenario
    path: Path
    profile: Profile
    sessions: tuple[Session, ...]
    units: tuple[Unit, ...]
    artifacts: Mapping[str, ArtifactState]
    fvp: Mapping[str, Any]

    def unit(self, unit_id: str) -> Unit:
        for unit in self.units:
            if unit.id == unit_id:
                return unit
        raise KeyError(unit_id)

    def session_units(self, session: int) -> list[Unit]:
        """The units of one session, in run order."""
        return [unit for unit in self.units if unit.session == session]

    @property
    def unbuilt(self) -> list[ArtifactState]:
        return [state for state in self.artifacts.values() if not state.built]


def _state(name: str, file: str, build: str | None) -> ArtifactState:
    """The artifact's state; a file that is there but cannot be hashed (unreadable, a name too long
    for the file system, loaded with ``check_files=False``) is a ConfigurationError naming its
    field, not an OSError."""
    path = Path(file)
    try:
        if path.is_file():
            return ArtifactState(name, path, build, file_sha256(path), path.stat().st_size)
    except OSError as exc:
        raise ConfigurationError(f"{name}: {path} cannot be read ({exc.strerror or exc}); expected "
                                 "a regular file this user can read") from exc
    return ArtifactState(name, path, build, None, None)


def library_artifact(build: str, index: int) -> str:
    """The declared name of a build's shared library: ``builds.<build>.libraries[<index>].file``."""
    return f"builds.{build}.libraries[{index}].file"


def artifact_hashes(scenario: Scenario | LoadedScenario) -> dict[str, ArtifactState]:
    """Hash every runner, model, input and (for a real model) firmware file of a scenario, by
    declared name.

    Missing files are returned unhashed (``built`` false) with their build command. Paths are as in
    the scenario (absolute after ``load_scenario``).
    """
    scenario = scenario.scenario if isinstance(scenario, LoadedScenario) else scenario
    states: dict[str, ArtifactState] = {}
    for name, build in scenario.builds.items():
        states[f"builds.{name}.runner"] = _state(f"builds.{name}.runner", build.runner, build.build)
        for index, library in enumerate(build.libraries):  # on the runner's LD_LIBRARY_PATH
            key = library_artifact(name, index)
            states[key] = _state(key, library.file, library.build)
        for model_name, own in build.models.items():  # this build's own file of a model
            key = f"builds.{name}.models.{model_name}.file"
            states[key] = _state(key, own.file, own.build)
    for name, model in scenario.models.items():
        states[f"models.{name}.file"] = _state(f"models.{name}.file", model.file, model.build)
        for index, item in enumerate(model.inputs):
            key = f"models.{name}.inputs[{index}].file"
            states[key] = _state(key, item.file, item.build)
    if not scenario.fvp.is_sim:
        for name, file in scenario.fvp.firmware.items():
            states[f"fvp.firmware.{name}"] = _state(f"fvp.firmware.{name}", file, None)
    return states


def fvp_identity(scenario: Scenario, version_banner: str | None = None) -> dict[str, Any]:
    """What identifies the model binary: the harness version for ``sim`` (the simulator ships with
    it); for a real model its path, size and mtime, plus its ``--version`` banner when the caller
    has run it."""
    if scenario.fvp.is_sim:
        return {"binary": "sim", "version": __version__}
    binary = scenario.fvp.binary
    resolved = binary if os.sep in binary or "/" in binary else shutil.which(binary)
    identity: dict[str, Any] = {"binary": resolved}
    if resolved is not None and os.path.isfile(resolved):
        stat = os.stat(resolved)
        identity.update(size=stat.st_size, mtime_ns=stat.st_mtime_ns)
    if version_banner is not None:
        identity["version"] = version_banner
    return identity


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


# --- order ----------------------------------------------------------------------------------------


def run_order(
    builds: list[str], models: list[str], repetitions: int, order: str
) -> list[tuple[int, str, str]]:
    """``(repetition, build, model)`` in run order; see the module docstring for the rule."""
    result: list[tuple[int, str, str]] = []
    if order == "blocked":
        for build in builds:
            for rep in range(repetitions):
                result.extend((rep, build, model) for model in models)
        return result
    count = len(models)
    for rep in range(repetitions):
        for step in range(count):
            position = (rep + step) % count
            shift = (position + rep) % len(builds)
            rotated = builds[shift:] + builds[:shift]
            result.extend((rep, build, models[position]) for build in rotated)
    return result


def drift_check_units(scenario: Scenario) -> list[tuple[int, str]]:
    """(repetition, model) of the baseline units a run with ``compare.baseline_from`` re-runs to
    check that the platform did not move: ``compare.drift_check.units`` of them, dealt over the
    models in the scenario's order (repetition 0 of every model, then repetition 1, ...), at most
    every baseline unit; [] without ``baseline_from``."""
    compare = scenario.compare
    if compare is None or not compare.baseline_from:
        return []
    models = list(scenario.models)
    count = min(compare.drift_check.units, scenario.run.planned_repetitions * len(models))
    return [(index // len(models), models[index % len(models)]) for index in range(count)]


def _sessions(order: list[tuple[int, str, str]], instances: int, build_count: int) -> list[int]:
    """Session index per unit: (repetition, model) groups dealt round-robin in run order, in chunks
    of ``build_count`` groups (the period of the build rotation), so each session still alternates
    which build goes first. Chunks shrink to single groups when there are too few groups to feed
    every instance."""
    groups: dict[tuple[int, str], int] = {}
    for rep, _build, model in order:
        groups.setdefault((rep, model), len(groups))
    count = max(1, min(instances, len(groups)))
    chunk = build_count if len(groups) >= build_count * count else 1
    return [(groups[(rep, model)] // chunk) % count for rep, _build, model in order]


# --- the plan -------------------------------------------------------------------------------------


def build_plan(
    scenario: LoadedScenario | Scenario,
    scenario_path: Path | None = None,
    profile: Profile | None = None,
    *,
    fvp_version: str | None = None,
    artifacts: Mapping[str, ArtifactState] | None = None,
) -> Plan:
    """Expand a scenario into sessions and units with content keys.

    Pass the ``LoadedScenario`` from ``load_scenario`` (or a ``Scenario`` with its path and
    profile). ``fvp_version`` is the real model's ``--version`` banner once the target layer has
    read it; ``artifacts`` lets a caller that has just built and hashed files reuse those hashes.
    """
    if isinstance(scenario, LoadedScenario):
        scenario_path, profile, scenario = scenario.path, scenario.profile, scenario.scenario
    if scenario_path is None or profile is None:
        raise TypeError("build_plan needs a LoadedScenario, or a Scenario with scenario_path and "
                        "profile")
    states = dict(artifacts) if artifacts is not None else artifact_hashes(scenario)
    fvp = fvp_identity(scenario, fvp_version)
    shared = _shared_parts(scenario, profile, fvp, states)

    order = run_order(
        list(scenario.builds), list(scenario.models), scenario.run.planned_repetitions,
        scenario.run.order
    )
    # the baseline was measured by a stored run
    if scenario.compare is not None and scenario.compare.baseline_from:
        baseline, checked = scenario.compare.baseline, set(drift_check_units(scenario))
        order = [(rep, build, model)
                 for rep, build, model in order if build != baseline or (rep, model) in checked]
    sessions_of = _sessions(order, scenario.fvp.instances, len(scenario.builds))
    units = []
    for index, ((rep, build, model), session) in enumerate(zip(order, sessions_of, strict=True)):
        parts, unbuilt = _unit_parts(scenario, shared, states, rep, build, model)
        key = _digest({"key_version": KEY_VERSION, **parts})
        unit_id = f"r{rep}-{build}-{model}"
        units.append(Unit(unit_id, build, model, rep, session, index, key, parts, unbuilt))
    sessions = tuple(
        Session(number, tuple(unit.id for unit in units if unit.session == number))
        for number in sorted({unit.session for unit in units})
    )
    return Plan(scenario, Path(scenario_path), profile, sessions, tuple(units), states, fvp)


def _shared_parts(
    scenario: Scenario, profile: Profile, fvp: Mapping[str, Any],
    states: Mapping[str, ArtifactState]
) -> dict[str, str]:
    run = scenario.run
    firmware = {
        name: state.key_material
        for name, state in states.items() if name.startswith("fvp.firmware.")
    }
    return {
        # ``architecture`` only refuses runners built for another CPU: it changes no measurement, so
        # no key
        "profile": _digest(profile.model_dump(mode="json", exclude={"architecture"})),
        "fvp": _digest(
            {
                "identity": fvp,
                "target": scenario.target,
                "params": scenario.fvp.params,
                "args": scenario.fvp.args,
                "sim": scenario.fvp.sim if scenario.fvp.is_sim else {},
                "firmware": firmware,
                # bare metal only (left out when unset, so the keys of other scenarios do not move)
                **({"timelimit": scenario.fvp.timelimit} if scenario.fvp.timelimit is not None
                   else {}),
            }
        ),
        "run": _digest(
            {
                "command": run.command,
                "warmup": run.warmup,
                "iterations": run.iterations,
                "order": run.order,
                "env": run.env,
                "fetch": run.fetch,
                **({"cmd_line": run.cmd_line_template if run.semihosting else None}
                   if profile.baremetal else {}),
            }
        ),
        "metrics": _digest([spec.model_dump(mode="json") for spec in scenario.metrics]),
        "parsers": _digest({"parsers_version": PARSERS_VERSION}),
    }


def unit_artifacts(scenario: Scenario, build: str, model: str) -> tuple[str, ...]:
    """The declared names of the files a unit of ``build`` x ``model`` needs: its runner, its model
    file, its inputs, then the build's shared libraries. One list for the key (``_unit_parts``)
    and for ``plan``'s marks of units whose keys a rebuild changes."""
    inputs = (f"models.{model}.inputs[{i}].file" for i in range(len(scenario.models[model].inputs)))
    libraries = (library_artifact(build, i) for i in range(len(scenario.builds[build].libraries)))
    return (f"builds.{build}.runner", scenario.model_artifact(build, model), *inputs, *libraries)


def _unit_parts(
    scenario: Scenario,
    shared: Mapping[str, str],
    states: Mapping[str, ArtifactState],
    rep: int,
    build: str,
    model: str,
) -> tuple[dict[str, str], tuple[str, ...]]:
    spec = scenario.builds[build]
    runner_name, model_name, *rest = unit_artifacts(scenario, build, model)
    runner, model_state = states[runner_name], states[model_name]
    libraries = [states[name] for name in rest[len(rest) - len(spec.libraries):]]
    inputs = [states[name] for name in rest[:len(rest) - len(spec.libraries)]]
    parts = {
        # the unit's identity: an A/A test (two builds with the same bytes) must still give two keys
        "identity": _digest({"build": build, "model": model, "repetition": rep}),
        "runner": _digest(runner.key_material),
        "build": _digest(
            {
                "env": spec.env,
                "args": spec.args,
                "id": spec.id,
                # bare metal: the build's own launch parameters; traced: its --etdump_path
                # (left out when unset: keys stay)
                **{
                    name: value
                    for name, value in (
                        ("fvp_params", spec.fvp_params),
                        ("data_address", spec.data_address),
                        ("traced", spec.traced),
                    )
                    if value
                },
            }
        ),
        "model": _digest(model_state.key_material),
        "inputs": _digest([state.key_material for state in inputs]),
        # in order (the LD_LIBRARY_PATH order); left out without libraries: other keys stay
        **(
            {"libraries": _digest([state.key_material for state in libraries])} if libraries else {}
        ),
        **shared,
    }
    unbuilt = tuple(state.name for state in (runner, model_state, *inputs, *libraries)
                    if not state.built)
    return parts, unbuilt


def changed_parts(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    """Names of the key parts that differ (for ``make -n``: why a unit must run again)."""
    names: Iterable[str] = sorted(set(old) | set(new))
    return [name for name in names if old.get(name) != new.get(name)]


# --- what a record says about a unit --------------------------------------------------------------

KEY_PART_PREFIX = "kp."
"""Every record carries ``extra["kp.<part>"]`` (16 hex digits per content-key part), so ``make -n``
and ``run --resume`` can say which input changed since a unit last ran (``changed_parts``)."""


def key_part_extras(parts: Mapping[str, str]) -> dict[str, str]:
    """The ``extra`` entries that remember a unit's key parts (shortened: equality is all
    ``changed_parts`` needs)."""
    return {KEY_PART_PREFIX + name: digest[:16] for name, digest in sorted(parts.items())}


def why_stale(unit: Unit, latest: Record | None) -> str:
    """Why a unit without an ok record under its key must run (``make -n``, ``run --resume``):
    ``never run``, ``failed last time (...)``, ``changed: <parts>`` or ``inputs changed``.
    ``latest`` is the unit's latest stored record whatever its key."""
    if unit.unbuilt:
        return "not built yet: " + ", ".join(unit.unbuilt)
    if latest is None:
        return "never run"
    if latest.key == unit.key:
        detail = (latest.failure or "").splitlines()[0][:100] if latest.failure else ""
        return f"failed last time ({latest.failure_class}: {detail})"
    old = {name[len(KEY_PART_PREFIX):]: str(value) for name, value in latest.extra.items()
           if name.startswith(KEY_PART_PREFIX)}
    if old:
        changed = changed_parts(old, {name: digest[:16] for name, digest in unit.key_parts.items()})
        if changed:
            return "changed: " + ", ".join(changed)
    return f"inputs changed (key {latest.key[:12]} -> {unit.key[:12]})"
