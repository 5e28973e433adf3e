"""The scenario language: pydantic models of a scenario YAML file, its template rules and its JSON schema.

A scenario says which platform to boot, which builds of the runner to compare, on which models, how to run
them and what to measure. It is parsed once, at the edge, into these validated, immutable objects; nothing
downstream sees a raw dict.

``scenario.load.load_scenario(path, overrides)`` returns a :class:`LoadedScenario` (the ``Scenario``, its file,
its resolved ``Profile``). On the way it resolves ``extends`` (deep merge, lists replace), ``--set`` overrides,
``${...}`` variables and relative paths (made absolute, relative to the file they were written in), and reports
every problem as ``file:line:col: field.path: what is wrong, what was expected`` in one ``ScenarioError``. The
loader lives in ``scenario.load``; this module keeps the models and the template rules.
"""

from __future__ import annotations

import re
import shlex
import string
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from fvp_harness.located import did_you_mean, format_path
from fvp_harness.scenario.metrics import BUILTIN_METRICS

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "BUILD_PLACEHOLDERS",
    "DEFAULT_GUEST_DIR",
    "RUN_PLACEHOLDERS",
    "Artifact",
    "Build",
    "Compare",
    "Deploy",
    "FvpConfig",
    "MetricSpec",
    "Model",
    "Report",
    "Run",
    "Scenario",
    "StrictModel",
    "Timeouts",
    "cross_field_problems",
    "expand_build_command",
    "render_template",
    "scenario_json_schema",
    "template_fields",
]

ParamValue = str | int | float | bool

RUN_PLACEHOLDERS: dict[str, str] = {
    "runner": "guest path of the deployed runner",
    "model": "guest path of the deployed model file",
    "inputs": "guest paths of the model's input files, comma-separated",
    "iterations": "warmup + iterations: how many executions the runner performs",
    "output": "guest path prefix for the runner's output files (one per unit)",
    "unit_dir": "a guest folder private to this unit",
    "build": "the build's name (e.g. before)",
    "model_name": "the model's name (e.g. resnet8)",
    "unit": "the unit id (e.g. r0-before-resnet8)",
}
"""Placeholders of ``run.command`` and ``run.fetch`` (values are shell-quoted when rendered)."""

BUILD_PLACEHOLDERS: dict[str, str] = {
    "output": "host path of the file the command must write (quoted)",
    "fvp_harness": "the running Python interpreter (quoted) + ' -m fvp_harness' (no console script needed)",
}
"""Placeholders of ``build`` commands of builds, models and inputs."""

DEFAULT_GUEST_DIR = "/tmp/fvp-harness"
"""Where artifacts go in the guest unless ``deploy.guest_dir`` says otherwise (under ``<sha256[:16]>/<name>``)."""

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
"""Build and model names end up in unit ids and file names: keep them plain."""

LOADER_CONTEXT = "fvp_harness.scenario.load"
"""Validation context flag: the loader runs the cross-field checks itself, with file positions."""


def template_fields(template: str) -> list[str]:
    """Placeholder names used in a ``{name}`` template (``{{`` and ``}}`` are literal braces).

    Raises ``ValueError`` for unbalanced braces and for format specs or conversions, which templates do not
    support.
    """
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(
            f"unbalanced brace in template ({exc}); write {{{{ and }}}} for literal braces"
        ) from exc
    names = []
    for _literal, name, spec, conversion in parsed:
        if name is None:
            continue
        if spec or conversion:
            raise ValueError(
                f"placeholder {{{name}}} takes no format spec or conversion; write plain {{{name}}}"
            )
        names.append(name)
    return names


def _check_template(template: str, known: Mapping[str, str]) -> str:
    for name in template_fields(template):
        if name not in known:
            hint = did_you_mean(name, known).replace("'", "")
            if hint:
                hint = hint.replace("did you mean ", "did you mean {").rstrip("?") + "}?"
            listed = " ".join("{" + key + "}" for key in known)
            raise ValueError(
                f"unknown placeholder {{{name}}}{hint} (expected one of {listed}; "
                "write {{ and }} for literal braces)"
            )
    return template


def render_template(template: str, values: Mapping[str, str], *, quote: bool = True) -> str:
    """Fill a validated template. Each value is ``shlex.quote``-d unless ``quote`` is false (never build guest
    commands by plain string formatting of user values)."""
    prepared = {key: shlex.quote(str(value)) if quote else str(value) for key, value in values.items()}
    return template.format_map(prepared)


def expand_build_command(template: str, output: Path | str) -> str:
    """A host build command with ``{output}`` and ``{fvp_harness}`` filled in (a shell-style string: split it
    with ``shlex.split``). ``{fvp_harness}`` is this interpreter plus ``-m fvp_harness``, so builds work from
    a fresh virtual environment without the console script on PATH."""
    return template.format_map(
        {"output": shlex.quote(str(output)), "fvp_harness": f"{shlex.quote(sys.executable)} -m fvp_harness"}
    )


class StrictModel(BaseModel):
    """Base for every scenario section: unknown keys are errors, objects are immutable after validation."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Timeouts(StrictModel):
    """Deadlines in seconds, each multiplied by ``fvp.timeout_scale`` and ``--timeout-scale``."""

    boot: float = Field(600.0, gt=0, description="From launch until the login prompt (real models: minutes).")
    login: float = Field(60.0, gt=0, description="From the login prompt until a shell answers.")
    command: float = Field(120.0, gt=0, description="One framed guest command (setup, hash checks).")
    deploy: float = Field(900.0, gt=0, description="Putting one artifact into the guest.")
    unit: float = Field(600.0, gt=0, description="One unit: one runner invocation with all its iterations.")
    session: float = Field(14400.0, gt=0, description="One booted instance from launch to stop.")


class FvpConfig(StrictModel):
    """How to launch the model: which binary, which -C parameters, extra options, timeouts."""

    binary: str = Field(
        "sim",
        min_length=1,
        description="`sim` for the embedded simulator, an executable name on PATH, or a path to the FVP "
        "binary.",
    )
    params: dict[str, ParamValue] = Field(
        default_factory=dict, description="-C parameters, added to (and overriding) the platform profile's."
    )
    args: list[str] = Field(
        default_factory=list, description="Extra command-line options as a list, so options can repeat."
    )
    firmware: dict[str, str] = Field(
        default_factory=dict,
        description="Files the platform profile requires from the user for a real model (e.g. bl1, flash).",
    )
    sim: dict[str, ParamValue] = Field(
        default_factory=dict,
        description="Embedded-simulator knobs (boot time, speed, faults); passed as FVP_SIM_* environment "
        "variables and ignored for a real FVP.",
    )
    instances: int = Field(1, ge=1, description="How many instances to boot in parallel for this scenario.")
    timeouts: Timeouts = Field(default_factory=Timeouts)
    timeout_scale: float = Field(
        1.0, gt=0, description="Multiplies every timeout (slow hosts, parallel load)."
    )

    @property
    def is_sim(self) -> bool:
        """True for the embedded simulator (the only switch between simulated and real: see the house
        rules)."""
        return self.binary == "sim"


class _BuildCommand(StrictModel):
    """Shared check: ``build`` commands may use only the build placeholders."""

    @field_validator("build", check_fields=False)
    @classmethod
    def _known_placeholders(cls, value: str | None) -> str | None:
        return None if value is None else _check_template(value, BUILD_PLACEHOLDERS)


def _env_text(value: Any) -> Any:
    """Environment values are text; YAML reads ``THREADS: 1`` as a number, so accept scalars and convert
    them."""
    if isinstance(value, dict):
        return {
            key: ("true" if item else "false")
            if isinstance(item, bool)
            else str(item)
            if isinstance(item, int | float)
            else item
            for key, item in value.items()
        }
    return value


class Artifact(_BuildCommand):
    """A file the run needs, optionally produced by a command when missing or stale."""

    file: str = Field(description="Host path of the file (relative paths are relative to the scenario file).")
    build: str | None = Field(
        None,
        description="Command that writes the file; `{output}` is replaced by its path. Run when missing or "
        "older than any of `sources`.",
    )
    sources: list[str] = Field(default_factory=list, description="Files the build command reads (staleness).")


class Build(_BuildCommand):
    """One variant of the runner (e.g. `before`, `after`)."""

    runner: str = Field(description="Host path of the runner executable.")
    build: str | None = Field(None, description="Command that produces the runner; `{output}` is its path.")
    sources: list[str] = Field(default_factory=list, description="Files the build command reads (staleness).")
    env: dict[str, str] = Field(default_factory=dict, description="Environment set for this build's runs.")
    args: list[str] = Field(default_factory=list, description="Extra runner arguments for this build.")

    @field_validator("env", mode="before")
    @classmethod
    def _env_is_text(cls, value: Any) -> Any:
        return _env_text(value)

    id: str | None = Field(
        None,
        description="Text the runner prints to identify itself; a unit whose output lacks it fails as a "
        "provenance error (the wrong build ran).",
    )


class Model(_BuildCommand):
    """One model file and the input files it is run with."""

    file: str = Field(description="Host path of the model file.")
    build: str | None = Field(None, description="Command that produces the model; `{output}` is its path.")
    sources: list[str] = Field(default_factory=list, description="Files the build command reads (staleness).")
    inputs: list[Artifact] = Field(
        default_factory=list, description="Input tensor files, passed as {inputs}."
    )


class Deploy(StrictModel):
    """How artifacts get into the guest."""

    method: Literal["console", "ssh", "preloaded"] = "console"
    guest_dir: str = Field(DEFAULT_GUEST_DIR, description="Guest folder for content-addressed artifacts.")


class Run(StrictModel):
    """How each unit runs the runner."""

    command: str = Field(
        "{runner} --model_path={model} --num_executions={iterations} --output_file={output}",
        description="Command template. Placeholders: {runner} {model} {inputs} {iterations} {output} "
        "{unit_dir} {build} {model_name} {unit}. {iterations} is warmup + iterations (what the runner "
        "executes). {{ and }} are literal braces.",
    )
    warmup: int = Field(
        1, ge=0, description="Executions at the start of each unit whose samples are discarded."
    )
    iterations: int = Field(10, ge=1, description="Measured executions per unit.")
    repetitions: int = Field(3, ge=1, description="Separate runner processes per build x model.")
    order: Literal["interleaved", "blocked"] = Field(
        "interleaved",
        description="interleaved: builds alternate and models rotate; blocked: one build at a time.",
    )
    timeout: float | None = Field(None, gt=0, description="Per-unit timeout (default: fvp.timeouts.unit).")
    env: dict[str, str] = Field(default_factory=dict, description="Environment for every unit.")
    fetch: list[str] = Field(
        default_factory=list, description="Guest files to copy back after each unit (templates like command)."
    )

    @field_validator("env", mode="before")
    @classmethod
    def _env_is_text(cls, value: Any) -> Any:
        return _env_text(value)

    retries: int = Field(
        1, ge=0, description="Retries of a unit after an infrastructure failure (fresh instance)."
    )

    @field_validator("command")
    @classmethod
    def _command_placeholders(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the run command is empty; expected e.g. '{runner} --model_path={model}'")
        return _check_template(value, RUN_PLACEHOLDERS)

    @field_validator("fetch")
    @classmethod
    def _fetch_placeholders(cls, value: list[str]) -> list[str]:
        for item in value:
            _check_template(item, RUN_PLACEHOLDERS)
        return value


class MetricSpec(StrictModel):
    """A metric: either a built-in parser (only `name`) or a custom regex with one capture group."""

    name: str = Field(
        min_length=1, description="A built-in metric name, or the name of a custom regex metric."
    )
    regex: str | None = Field(
        None, description="Regex with one group capturing the number; omit for built-ins."
    )
    unit: str = ""
    scale: float = Field(1.0, description="Multiplier applied to every captured value.")
    per: Literal["inference", "run"] = "inference"
    required: bool = False

    @field_validator("regex")
    @classmethod
    def _one_group(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            compiled = re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regex: {exc}") from exc
        if compiled.groups != 1:
            raise ValueError(
                f"the regex has {compiled.groups} groups; expected exactly one, capturing the number "
                "(use (?:...) for other groups)"
            )
        return value

    @property
    def builtin(self) -> bool:
        """True when the built-in parser of that name measures it (no regex given)."""
        return self.regex is None


class Compare(StrictModel):
    """Which builds to compare and what to expect."""

    baseline: str = "before"
    candidate: str = "after"
    primary: str | list[str] = Field(
        "cpu_time",
        description="The metric whose saving the report headlines, or a list of them in order of preference: the "
        "first one every unit produced is the primary (e.g. [cpu_time, iteration_time]: an instrumented runner's "
        "CPU time, else the stock runner's iteration time), and the report says which it was and why.",
    )
    expect_identical: list[str] = Field(
        default_factory=lambda: ["outputs", "npu_cycles"],
        description="Metrics (or `outputs`) that must be identical between baseline and candidate.",
    )
    min_effect: float = Field(1.0, ge=0, description="Smallest change in percent that counts as a change.")

    @field_validator("primary")
    @classmethod
    def _some_primary(cls, value: str | list[str]) -> str | list[str]:
        if isinstance(value, list):
            if not value:
                raise ValueError("give at least one metric (a name, or a list in order of preference)")
            if len(set(value)) != len(value):
                raise ValueError("a metric is listed twice")
        return value

    @property
    def primary_candidates(self) -> list[str]:
        """``primary`` as a list in order of preference (one name for a plain string)."""
        return [self.primary] if isinstance(self.primary, str) else list(self.primary)


_ReportOutput = Literal["markdown", "csv", "json", "png"]
_REPORT_OUTPUTS: tuple[_ReportOutput, ...] = ("markdown", "csv", "json", "png")


class Report(StrictModel):
    """What the report looks like and which files it writes."""

    title: str | None = None
    outputs: list[_ReportOutput] = Field(default_factory=lambda: list(_REPORT_OUTPUTS))


class Scenario(StrictModel):
    """A whole scenario file, after variables, `extends` and overrides are resolved."""

    name: str = Field(description="Short name; results go to results/<scenario file stem>/.")
    description: str = ""
    platform: str = Field("corstone1000-a320", description="Built-in profile name or path to a profile YAML.")
    target: Literal["fvp", "host"] = Field("fvp", description="fvp: boot a model; host: run on this machine.")
    vars: dict[str, Any] = Field(default_factory=dict, description="Values for ${vars.NAME} substitution.")
    fvp: FvpConfig = Field(default_factory=FvpConfig)
    builds: dict[str, Build] = Field(
        min_length=1, description="Runner variants by name (e.g. before, after)."
    )
    models: dict[str, Model] = Field(min_length=1, description="Models by name (e.g. resnet8).")
    deploy: Deploy = Field(default_factory=Deploy)
    run: Run = Field(default_factory=Run)
    metrics: list[MetricSpec] = Field(
        default_factory=lambda: [MetricSpec(name="cpu_time", required=True), MetricSpec(name="npu_cycles")],
        description="What to measure: built-in names (plain strings) or "
        "{name, regex, unit, scale, per, required}.",
    )
    compare: Compare | None = None
    report: Report = Field(default_factory=Report)

    @field_validator("metrics", mode="before")
    @classmethod
    def _names_are_builtins(cls, value: Any) -> Any:
        """``- cpu_time`` is short for ``- {name: cpu_time}``."""
        if isinstance(value, list):
            return [{"name": item} if isinstance(item, str) else item for item in value]
        return value

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> Scenario:
        if info.context and info.context.get(LOADER_CONTEXT):
            return self  # the loader runs these checks itself so it can point at file positions
        problems = cross_field_problems(self)
        if problems:
            raise ValueError("; ".join(f"{format_path(path)}: {message}" for path, message, _ in problems))
        return self

    def metric(self, name: str) -> MetricSpec | None:
        """The metric spec of that name, or None."""
        return next((spec for spec in self.metrics if spec.name == name), None)


def cross_field_problems(scenario: Scenario) -> list[tuple[tuple[str | int, ...], str, bool]]:
    """Checks that span sections: ``(path, message, at_key)``; ``at_key`` points the message at the key
    itself."""
    problems: list[tuple[tuple[str | int, ...], str, bool]] = []
    for section in ("builds", "models"):
        for name in getattr(scenario, section):
            if not NAME_PATTERN.match(name):
                problems.append(
                    (
                        (section, name),
                        f"name {name!r} must start with a letter or digit and use only "
                        "letters, digits, '_', '.' and '-' (it becomes part of unit ids and file names)",
                        True,
                    )
                )
    seen: dict[str, int] = {}
    for index, spec in enumerate(scenario.metrics):
        if spec.name in seen:
            problems.append(
                (
                    ("metrics", index, "name"),
                    f"metric {spec.name!r} is listed twice (first at metrics[{seen[spec.name]}])",
                    False,
                )
            )
        seen.setdefault(spec.name, index)
        if spec.regex is None and spec.name not in BUILTIN_METRICS:
            problems.append(
                (
                    ("metrics", index, "name"),
                    f"{spec.name!r} is not a built-in metric"
                    f"{did_you_mean(spec.name, BUILTIN_METRICS)} (built-in: {', '.join(BUILTIN_METRICS)}; "
                    "for a custom metric give a regex)",
                    False,
                )
            )
    compare = scenario.compare
    if compare is not None:
        builds = list(scenario.builds)
        for field in ("baseline", "candidate"):
            name = getattr(compare, field)
            if name not in scenario.builds:
                problems.append(
                    (
                        ("compare", field),
                        f"no build named {name!r}{did_you_mean(name, builds)} (builds: {', '.join(builds)})",
                        False,
                    )
                )
        if compare.baseline == compare.candidate:
            problems.append(
                (
                    ("compare", "candidate"),
                    f"candidate is the same build as baseline ({compare.baseline!r});"
                    " expected two different builds",
                    False,
                )
            )
        metric_names = list(dict.fromkeys(spec.name for spec in scenario.metrics))
        listed = isinstance(compare.primary, list)
        for index, name in enumerate(compare.primary_candidates):
            if name not in metric_names:
                problems.append(
                    (
                        ("compare", "primary", index) if listed else ("compare", "primary"),
                        f"unknown metric {name!r}{did_you_mean(name, metric_names)} (this scenario measures: "
                        f"{', '.join(metric_names)})",
                        False,
                    )
                )
        for index, name in enumerate(compare.expect_identical):
            if name != "outputs" and name not in metric_names:
                problems.append(
                    (
                        ("compare", "expect_identical", index),
                        f"unknown metric {name!r}"
                        f"{did_you_mean(name, [*metric_names, 'outputs'])}; expected 'outputs' or one of "
                        f"the measured metrics ({', '.join(metric_names)})",
                        False,
                    )
                )
    return problems


def scenario_json_schema() -> dict[str, Any]:
    """JSON Schema of scenario files, for editors (yaml-language-server) and ``fvp-harness schema``.

    Adds what the models cannot say themselves: ``extends`` (consumed by the loader) and metrics given as
    plain built-in names.

    A file with ``extends`` is only a layer: its bases may give ``name``, ``builds``, ``models`` or any field of
    a build or model (mappings merge key by key), so such a file must not be held to ``required``. The top-level
    ``properties`` are therefore the lenient ones (``<Def>Partial`` definitions without ``required`` wherever a
    mapping merges; list items stay complete, since a list replaces the base's), and an ``if``/``else`` applies
    the complete rules to files without ``extends``. The loader checks the merged scenario in full either way.
    """
    schema = Scenario.model_json_schema(mode="validation")
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
    schema["title"] = "fvp-harness scenario"
    properties = schema["properties"]
    properties["extends"] = {
        "description": "Base scenario file(s), relative to this file, deep-merged under this one "
        "(lists replace). A file with extends may leave out whatever its bases provide.",
        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
    }
    properties["metrics"]["items"] = {
        "anyOf": [
            {"type": "string", "enum": sorted(BUILTIN_METRICS), "description": "A built-in metric by name."},
            {"$ref": "#/$defs/MetricSpec"},
        ]
    }
    return _lenient_under_extends(schema)


_DEF_PREFIX = "#/$defs/"


def _lenient_under_extends(schema: dict[str, Any]) -> dict[str, Any]:
    """See ``scenario_json_schema``: top level without ``required`` (strict rules in ``else``)."""
    defs: dict[str, Any] = schema["$defs"]
    partial_defs: dict[str, Any] = {}

    def lenient(node: Any) -> Any:
        if isinstance(node, list):
            return [lenient(item) for item in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "required":
                continue
            if key in ("items", "prefixItems"):  # a list replaces the base's list: its items are complete
                out[key] = value
            elif key == "$ref" and value.startswith(_DEF_PREFIX):
                out[key] = _DEF_PREFIX + partial_name(value[len(_DEF_PREFIX) :])
            elif key == "properties":
                out[key] = {name: lenient(sub) for name, sub in value.items()}
            else:
                out[key] = lenient(value)
        return out

    def partial_name(name: str) -> str:
        """The lenient twin of a definition, made once; the definition itself when nothing differs."""
        twin = f"{name}Partial"
        if twin not in partial_defs:
            partial_defs[twin] = None  # recursion guard
            partial_defs[twin] = lenient(defs[name])
        return name if partial_defs[twin] == defs[name] else twin

    strict = dict(schema["properties"])
    required = schema.pop("required", [])
    schema["properties"] = {name: lenient(sub) for name, sub in strict.items()}
    defs.update({name: body for name, body in sorted(partial_defs.items()) if body != defs[name[: -len("Partial")]]})
    schema["if"] = {"required": ["extends"]}
    schema["else"] = {
        "required": required,
        "properties": {name: sub for name, sub in strict.items() if schema["properties"][name] != sub},
    }
    return schema
