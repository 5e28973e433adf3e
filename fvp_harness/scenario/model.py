"""The scenario language: pydantic models of a scenario YAML file, its template rules and its JSON
schema.

A scenario says which platform to boot, which builds of the runner to compare, on which models, how
to run them and what to measure. It is parsed once, at the edge, into these validated, immutable
objects; nothing downstream sees a raw dict.

``scenario.load.load_scenario(path, overrides)`` returns a :class:`LoadedScenario` (the
``Scenario``, its file, its resolved ``Profile``). On the way it resolves ``extends`` (deep merge,
lists replace), ``--set`` overrides, ``${...}`` variables and relative paths (made absolute,
relative to the file they were written in), and reports every problem as ``file:line:col:
field.path: what is wrong, what was expected`` in one ``ScenarioError``. The loader lives in
``scenario.load``; this module keeps the models and the template rules.
"""

from __future__ import annotations

import re
import shlex
import string
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from fvp_harness.located import closest, did_you_mean, format_path
from fvp_harness.scenario.baseline import DriftCheck
from fvp_harness.scenario.metrics import BUILTIN_METRICS, validate_regex
from fvp_harness.scenario.secrets import (
    DEFAULT_SECRET_PATTERNS,
    redact_scenario,
    secret_problems,
    secret_values,
)
from fvp_harness.scenario.vela import VelaEstimates

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "BUILD_PLACEHOLDERS",
    "CROSS_FIELD_CHECKS",
    "DEFAULT_CMD_LINE",
    "DEFAULT_EXPECT_IDENTICAL",
    "DEFAULT_GUEST_DIR",
    "RUN_PLACEHOLDERS",
    "Artifact",
    "Build",
    "BuildSource",
    "Compare",
    "ComparePair",
    "Deploy",
    "FvpConfig",
    "Gate",
    "IdentityTolerance",
    "Library",
    "MetricSpec",
    "Model",
    "Report",
    "Run",
    "Scenario",
    "ScenarioParts",
    "StrictModel",
    "Timeouts",
    "Until",
    "cross_field_problems",
    "expand_build_command",
    "is_local_repository",
    "render_template",
    "scenario_json_schema",
    "template_fields",
]

ParamValue = str | int | float | bool

RUN_PLACEHOLDERS: dict[str, str] = {
    "runner": "guest path of the deployed runner",
    "model": "guest path of the deployed model file",
    "inputs": "guest paths of the model's input files, comma-separated",
    "input_args": "the input files as `-i FILE` each (how arm_executor_runner takes them)",
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
    "fvp_harness": "the running Python interpreter (quoted) + ' -m fvp_harness' (no console script "
                   "needed)",
    "source": "builds.X.source in a local repository: the harness's checkout of the commit "
    "(quoted; the build runs there)",
}
"""Placeholders of ``build`` commands of builds, models and inputs."""

DEFAULT_CMD_LINE = "{runner} -m {model} -o {output} {input_args}"
"""The semihosting command line of a bare-metal unit unless ``run.cmd_line`` says otherwise: what
upstream's ``backends/arm/test/runner_utils.py`` gives ``arm_executor_runner`` (``executor_runner -m
program.pte -o out -i i0.bin``), with the harness's file names."""

DEFAULT_GUEST_DIR = "/tmp/fvp-harness"
"""Where artifacts go in the guest unless ``deploy.guest_dir`` says otherwise (under
``<sha256[:16]>/<name>``)."""

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
"""Build and model names end up in unit ids and file names: keep them plain."""

LOADER_CONTEXT = "fvp_harness.scenario.load"
"""Validation context flag: the loader runs the cross-field checks itself, with file positions."""


def template_fields(template: str) -> list[str]:
    """Placeholder names used in a ``{name}`` template (``{{`` and ``}}`` are literal braces).

    Raises ``ValueError`` for unbalanced braces and for format specs or conversions, which templates
    do not support.
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
    """Fill a validated template. Each value is ``shlex.quote``-d unless ``quote`` is false (never
    build guest commands by plain string formatting of user values)."""
    prepared = {key: shlex.quote(str(value)) if quote else str(value)
                for key, value in values.items()}
    return template.format_map(prepared)


def expand_build_command(template: str, output: Path | str,
                         source: Path | str | None = None) -> str:
    """A host build command with ``{output}``, ``{fvp_harness}`` and ``{source}`` filled in (a
    shell-style string: split it with ``shlex.split``). ``{fvp_harness}`` is this interpreter plus
    ``-m fvp_harness``, so builds work from a fresh virtual environment without the console script
    on PATH. ``{source}`` is the harness's checkout of ``builds.X.source`` (``run.source_build``);
    without one it stays ``{source}`` (the command is not built from a commit)."""
    return template.format_map({
        "output": shlex.quote(str(output)),
        "fvp_harness": f"{shlex.quote(sys.executable)} -m fvp_harness",
        "source": shlex.quote(str(source)) if source is not None else "{source}",
    })


class StrictModel(BaseModel):
    """Base for every scenario section: unknown keys are errors, objects are immutable after
    validation, and a number field refuses NaN and infinities (YAML's ``.nan`` and ``.inf``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


MAX_REPETITIONS = 10_000
"""Upper bounds on the counts a scenario gives: far above any real benchmark, low enough that a typo
(``1e9``) is a validation error instead of a plan that never finishes enumerating or a run that
never ends."""
MAX_ITERATIONS = 10_000_000
MAX_WARMUP = 1_000_000
MAX_INSTANCES = 256
MAX_RETRIES = 100
MAX_UNITS = 10_000
"""Builds x models x repetitions: the plan enumerates (and hashes keys for) every unit up front."""
MAX_TIMEOUT_S = 30 * 24 * 3600.0
"""30 days: longer deadlines overflow the waits of ``threading`` and ``select``
(``OverflowError``)."""
MAX_TIMEOUT_SCALE = 1000.0


class Timeouts(StrictModel):
    """Deadlines in seconds, each multiplied by ``fvp.timeout_scale`` and ``--timeout-scale``."""

    boot: float = Field(600.0, gt=0, le=MAX_TIMEOUT_S,
        description="From launch until the login prompt (real models: minutes).")
    login: float = Field(60.0, gt=0, le=MAX_TIMEOUT_S,
                         description="From the login prompt until a shell answers.")
    command: float = Field(120.0, gt=0, le=MAX_TIMEOUT_S,
                           description="One framed guest command (setup, hash checks).")
    deploy: float = Field(900.0, gt=0, le=MAX_TIMEOUT_S,
                          description="Putting one artifact into the guest.")
    unit: float = Field(600.0, gt=0, le=MAX_TIMEOUT_S,
        description="One unit: one runner invocation with all its iterations.")
    session: float = Field(14400.0, gt=0, le=MAX_TIMEOUT_S,
                           description="One booted instance from launch to stop.")


class FvpConfig(StrictModel):
    """How to launch the model: which binary, which -C parameters, extra options, timeouts."""

    binary: str = Field(
        "sim",
        min_length=1,
        description="`sim` for the embedded simulator, an executable name on PATH, or a path to "
                    "the FVP "
        "binary.",
    )
    params: dict[str, ParamValue] = Field(
        default_factory=dict,
        description="-C parameters, added to (and overriding) the platform profile's."
    )
    args: list[str] = Field(
        default_factory=list,
        description="Extra command-line options as a list, so options can repeat."
    )
    firmware: dict[str, str] = Field(
        default_factory=dict,
        description="Files the platform profile requires from the user for a real model (e.g. bl1, "
                    "flash).",
    )
    sim: dict[str, ParamValue] = Field(
        default_factory=dict,
        description="Embedded-simulator knobs (boot time, speed, faults); passed as FVP_SIM_* "
                    "environment "
        "variables and ignored for a real FVP.",
    )
    instances: int = Field(1, ge=1, le=MAX_INSTANCES,
        description="How many instances to boot in parallel for this scenario.")
    timelimit: float | None = Field(
        None,
        gt=0,
        le=MAX_TIMEOUT_S,
        description="Bare-metal platforms: --timelimit seconds of every launch (default: the "
                    "profile's); the "
        "model stops itself there (a time-limit failure, retried like any infrastructure failure).",
    )
    timeouts: Timeouts = Field(default_factory=Timeouts)
    timeout_scale: float = Field(
        1.0, gt=0, le=MAX_TIMEOUT_SCALE,
        description="Multiplies every timeout (slow hosts, parallel load)."
    )

    @property
    def is_sim(self) -> bool:
        """True for the embedded simulator (the only switch between simulated and real: see the
        house rules)."""
        return self.binary == "sim"


class _BuildCommand(StrictModel):
    """Shared check: ``build`` commands may use only the build placeholders."""

    @field_validator("build", check_fields=False)
    @classmethod
    def _known_placeholders(cls, value: str | None) -> str | None:
        return None if value is None else _check_template(value, BUILD_PLACEHOLDERS)


def _env_text(value: Any) -> Any:
    """Environment values are text; YAML reads ``THREADS: 1`` as a number, so accept scalars and
    convert them."""
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


def _env_item(value: Any) -> Any:
    """One environment value: text (numbers and booleans become text). A mapping here is a secret
    entry that is not written ``{value: TEXT, secret: true}`` (``_secret_entries`` takes the
    well-formed ones out first)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict):
        raise ValueError(f"got {value!r}; expected text, or {{value: TEXT, secret: true}} for a "
                         "secret")
    return value


EnvValue = Annotated[
    str,
    BeforeValidator(_env_item),
    WithJsonSchema({"anyOf": [
        {"type": ["string", "number", "boolean"]},
        {"type": "object", "properties": {"value": {"type": ["string", "number", "boolean"]},
                                          "secret": {"type": "boolean"}},
         "required": ["value"], "additionalProperties": False},
    ]}),
]
"""An ``env`` value: text, a number or boolean (made text), or ``{value: ..., secret: true}``."""


def _secret_entries(data: Any) -> Any:
    """``env: {NAME: {value: TEXT, secret: true}}`` becomes ``env: {NAME: TEXT}`` plus NAME in
    ``secret_env`` (the model keeps plain text values: what the runner gets). Malformed entries stay
    for ``_env_item`` to report."""
    if not isinstance(data, dict) or not isinstance(data.get("env"), dict):
        return data
    listed = data.get("secret_env", [])
    if not isinstance(listed, list):
        return data
    env = dict(data["env"])
    marked = list(listed)
    for name, item in env.items():
        if (isinstance(item, dict) and "value" in item and set(item) <= {"value", "secret"}
                and isinstance(item.get("secret", False), bool) and
            not isinstance(item["value"], dict | list)):
            env[name] = item["value"]
            if item.get("secret", False) and name not in marked:
                marked.append(name)
    return {**data, "env": env,
            **({"secret_env": marked} if marked or "secret_env" in data else {})}


class Artifact(_BuildCommand):
    """A file the run needs, optionally produced by a command when missing or stale."""

    file: str = Field(description="Host path of the file (relative paths are relative to the "
                                  "scenario file).")
    build: str | None = Field(
        None,
        description="Command that writes the file; `{output}` is replaced by its path. Run when "
                    "missing or "
        "older than any of `sources`.",
    )
    sources: list[str] = Field(default_factory=list,
                               description="Files the build command reads (staleness).")


class Library(Artifact):
    """A shared library deployed with a build's runner (``builds.X.libraries``): its folder in the
    guest goes on the runner's ``LD_LIBRARY_PATH``. A bare path is short for ``{file: PATH}``."""

    @model_validator(mode="before")
    @classmethod
    def _bare_path(cls, data: Any) -> Any:
        return {"file": data} if isinstance(data, str) else data

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """The schema says what the validator accepts: a bare path is short for ``{file: PATH}``."""
        schema = handler(core_schema)
        return {"anyOf": [{"type": "string", "description": "Short for {file: PATH}."}, schema]}


def is_local_repository(repository: str) -> bool:
    """True when ``builds.X.source.repository`` names a git repository on this host (an absolute
    path, or one starting ``./``, ``../`` or ``~``): the harness builds the runner from it. A URL or
    ``owner/name`` is a record for the reviewer only (nothing is fetched)."""
    return repository.startswith(("/", "./", "../", "~"))


class BuildSource(StrictModel):
    """Where a build's runner came from (``builds.X.source``): the repository and commit a reviewer
    can check out. With a local repository path the harness builds the runner from that commit
    (``run.source_build``: its own checkout, ``{source}`` in the build command, the artifact cached
    by the commit's tree); with a URL or owner/name it is provenance only. Either way it is written
    to the manifest and shown in the report; the runner's sha256 (not the commit) is what content
    keys depend on."""

    repository: str = Field(
        min_length=1, max_length=500,
        description="The repository the runner was built from: a local git repository path "
        "(absolute, or starting ./, ../ or ~: the harness checks the commit out and builds it, "
        "{source} in the build command) or a URL or owner/name (recorded only, e.g. "
        "pytorch/executorch).",
    )
    commit: str = Field(
        description="The commit the runner was built from: 7 to 40 hexadecimal digits (or 64, "
        "SHA-256 repositories); with a local repository also a branch, tag or any git revision "
        "(resolved when the runner is built).",
    )

    @field_validator("repository")
    @classmethod
    def _one_word(cls, value: str) -> str:
        if value != value.strip() or any(c.isspace() for c in value):
            raise ValueError(f"got {value!r}; expected a URL or owner/name without spaces")
        return value

    @model_validator(mode="after")
    def _hex_commit(self) -> BuildSource:
        value = self.commit
        if re.fullmatch(r"[0-9a-fA-F]{7,40}|[0-9a-fA-F]{64}", value):
            object.__setattr__(self, "commit", value.lower())
            return self
        revision = re.fullmatch(r"[A-Za-z0-9._/~^@{}-]{1,200}", value) and not value.startswith("-")
        if is_local_repository(self.repository) and revision:
            return self
        raise ValueError(f"commit: got {value!r}; expected a commit of 7 to 40 hexadecimal digits "
                         "(git rev-parse HEAD), or a git revision when repository is a local path")


class Build(_BuildCommand):
    """One variant of the runner (e.g. `before`, `after`)."""

    runner: str = Field(description="Host path of the runner executable.")
    build: str | None = Field(None,
                              description="Command that produces the runner; `{output}` is its "
                                          "path.")
    sources: list[str] = Field(default_factory=list,
                               description="Files the build command reads (staleness).")
    env: dict[str, EnvValue] = Field(
        default_factory=dict,
        description="Environment set for this build's runs; {value: ..., secret: true} hides a "
                    "value in results "
        "and logs.",
    )
    secret_env: list[str] = Field(
        default_factory=list,
        description="Names in this build's env whose values are secret (hidden in results "
        "and logs; the runner gets them).",
    )
    args: list[str] = Field(default_factory=list,
                            description="Extra runner arguments for this build.")
    models: dict[str, Artifact] = Field(
        default_factory=dict,
        description="This build's own file of a model (e.g. compiled for this build's NPU "
                    "configuration), by model "
        "name; the model's inputs stay. Models not named use models.<name>.file.",
    )
    libraries: list[Library] = Field(
        default_factory=list,
        description="Linux guests and target: host: shared libraries deployed with this build's "
        "runner (each {file, build, sources} like a model, or a path), hashed into the unit's "
        "key; their folders go first on the runner's LD_LIBRARY_PATH. File names must differ "
        "(the loader finds a library by its name).",
    )
    fvp_params: dict[str, ParamValue] = Field(
        default_factory=dict,
        description="Bare-metal platforms: -C parameters of this build's launches, over fvp.params "
                    "(e.g. the NPU's "
        "MAC count: each unit is a launch of its own); part of the unit's content key.",
    )
    traced: bool = Field(
        False,
        description="This runner is built with ExecuTorch's event tracer "
                    "(ET_EVENT_TRACER_ENABLED): each unit's "
        "command gets --etdump_path=<unit folder>/etdump.bin, the file is kept in fetched/<unit>/ "
        "(hashed, not an output) and the report compares the builds' ETDump events. Bare-metal "
        "runners print or semihost theirs (run.sh --etdump); it is kept whether or not this is "
        "set.",
    )
    data_address: str | bool | None = Field(
        None,
        description="Bare-metal platforms: this runner reads its model from memory (built with "
                    "ET_MODEL_PTE_ADDR): "
        "the model file is placed there with --data FILE@ADDRESS. A hexadecimal address, or true "
        "for the profile's data_address.",
    )
    id: str | None = Field(
        None,
        description="Text the runner prints to identify itself; a unit whose output lacks it fails "
                    "as a "
        "provenance error (the wrong build ran).",
    )
    source: BuildSource | None = Field(
        None,
        description="Where the runner was built from ({repository, commit}); shown in the report "
                    "beside the build. "
        "Without it, the report names the git checkout holding the runner (git describe), when "
        "there is one.",
    )

    @model_validator(mode="before")
    @classmethod
    def _lift_secrets(cls, data: Any) -> Any:
        return _secret_entries(data)

    @field_validator("libraries")
    @classmethod
    def _distinct_names(cls, value: list[Library]) -> list[Library]:
        seen: dict[str, str] = {}
        for item in value:
            name = item.file.replace("\\", "/").rsplit("/", 1)[-1]
            if name in seen:
                raise ValueError(f"two libraries named {name!r} ({seen[name]} and {item.file}): "
                                 "the dynamic loader finds a library by its file name, so it "
                                 "would see only one; rename one")
            seen[name] = item.file
        return value

    @model_validator(mode="after")
    def _source_placeholder(self) -> Build:
        if self.build and "{source}" in self.build and (
                self.source is None or not is_local_repository(self.source.repository)):
            raise ValueError("build uses {source}, the checkout of builds.X.source: give source: "
                             "{repository: LOCAL_PATH, commit: REV} (a local git repository path)")
        return self

    @model_validator(mode="after")
    def _one_etdump_path(self) -> Build:
        if (self.traced and
            any(arg.startswith(("--etdump_path", "-etdump_path")) for arg in self.args)):
            raise ValueError("traced: true passes --etdump_path per unit (the unit's own file); "
                             "remove --etdump_path from args")
        return self

    @field_validator("data_address")
    @classmethod
    def _hex_address(cls, value: str | bool | None) -> str | bool | None:
        if isinstance(value, str) and not re.match(r"^0[xX][0-9a-fA-F]+$", value):
            raise ValueError(f"got {value!r}; expected a hexadecimal address like 0x70000000, or "
                             "true for the platform's")
        if value is False:
            return None
        return value

    @field_validator("env", mode="before")
    @classmethod
    def _env_is_text(cls, value: Any) -> Any:
        return _env_text(value)


class Model(_BuildCommand):
    """One model file and the input files it is run with."""

    file: str = Field(description="Host path of the model file.")
    build: str | None = Field(None,
                              description="Command that produces the model; `{output}` is its "
                                          "path.")
    sources: list[str] = Field(default_factory=list,
                               description="Files the build command reads (staleness).")
    inputs: list[Artifact] = Field(
        default_factory=list, description="Input tensor files, passed as {inputs}."
    )
    vela: VelaEstimates | None = Field(
        None,
        description="Vela's estimate (CSV) to show next to the measured NPU cycles "
                    "(scenario/vela.py)."
    )


class Deploy(StrictModel):
    """How artifacts get into the guest."""

    method: Literal["console", "ssh", "preloaded", "auto"] = Field(
        "console",
        description="console (typed base64, gzip when the guest has gunzip), ssh (the forwarded "
                    "port), "
        "preloaded (already in the image), or auto: ssh when the instance's sshd answers, else the "
        "console, chosen per instance and shown in the report.",
    )
    guest_dir: str = Field(DEFAULT_GUEST_DIR,
                           description="Guest folder for content-addressed artifacts.")


def _number_or_percent(schema: dict[str, Any]) -> None:
    """The schema of a percentage written ``2`` or ``2%``."""
    schema.pop("type", None)
    schema.pop("exclusiveMinimum", None)
    schema["anyOf"] = [{"type": "number", "exclusiveMinimum": 0},
                       {"type": "string", "pattern": r"^\s*[0-9.]+\s*%$"}]


class Until(StrictModel):
    """``run.until``: adaptive sampling (``run.adaptive``). Rounds of one unit per build x model run
    until each model's primary comparison is precise enough or decided; the report says how many
    repetitions each needed."""

    ci_width: float = Field(
        description="Stop a model once the CI of its primary saved % spans at most this many "
                    "points (full width: "
        "2 means about ±1 %); '2%' is accepted.", gt=0,
        json_schema_extra=lambda schema: _number_or_percent(schema),
    )
    min_repetitions: int = Field(2, ge=2, le=MAX_REPETITIONS,
                                 description="Rounds every model runs before it may stop.")
    max_repetitions: int = Field(10, ge=2, le=MAX_REPETITIONS,
        description="Rounds a model runs at most (the plan's size).")

    @field_validator("ci_width", mode="before")
    @classmethod
    def _percent(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().endswith("%"):
            return value.strip()[:-1].strip()
        return value

    @model_validator(mode="after")
    def _bounds(self) -> Until:
        if self.max_repetitions < self.min_repetitions:
            raise ValueError(f"max_repetitions ({self.max_repetitions}) is below min_repetitions "
                             f"({self.min_repetitions})")
        return self


class Run(StrictModel):
    """How each unit runs the runner."""

    command: str = Field(
        "{runner} --model_path={model} --num_executions={iterations} --output_file={output}",
        description="Command template. Placeholders: {runner} {model} {inputs} {iterations} "
                    "{output} "
        "{unit_dir} {build} {model_name} {unit}. {iterations} is warmup + iterations (what the "
        "runner executes). {{ and }} are literal braces.",
    )
    warmup: int = Field(
        1, ge=0, le=MAX_WARMUP,
        description="Executions at the start of each unit whose samples are discarded."
    )
    iterations: int = Field(10, ge=1, le=MAX_ITERATIONS,
                            description="Measured executions per unit.")
    repetitions: int = Field(3, ge=1, le=MAX_REPETITIONS,
                             description="Separate runner processes per build x model.")
    order: Literal["interleaved", "blocked"] = Field(
        "interleaved",
        description="interleaved: builds alternate and models rotate; blocked: one build at a "
                    "time.",
    )
    until: Until | None = Field(
        None,
        description="Adaptive sampling: repeat in rounds until each model's CI is narrow enough or "
                    "its "
        "verdict is settled (replaces repetitions; needs order: interleaved).",
    )
    timeout: float | None = Field(None, gt=0, le=MAX_TIMEOUT_S,
                                  description="Per-unit timeout (default: fvp.timeouts.unit).")
    max_output: int = Field(
        64 * 1024 * 1024, ge=1024,
        description="Bytes of output one host-runner command may print (target: host); more ends "
                    "the command and "
        "fails the unit.",
    )
    env: dict[str, EnvValue] = Field(
        default_factory=dict,
        description="Environment for every unit; {value: ..., secret: true} hides a value in "
                    "results and logs.",
    )
    secret_env: list[str] = Field(
        default_factory=list,
        description="Names in run.env whose values are secret (hidden in results and logs; "
        "the runner gets them).",
    )
    secret_patterns: list[str] = Field(
        default_factory=lambda: list(DEFAULT_SECRET_PATTERNS),
        description="Environment names (shell-style patterns, any case) whose values are secret, "
                    "in run.env and "
        "every build's env, when the value has at least 6 characters.",
    )
    fetch: list[str] = Field(
        default_factory=list,
        description="Guest files to copy back after each unit (templates like command)."
    )
    cmd_line: str | None = Field(
        None,
        description="Bare-metal platforms: the runner's semihosting command line "
                    "(semihosting-cmd_line; the "
        "model launches the runner with it), a template like command whose file placeholders are "
        "names in the unit's semihosting folder. Default: '{runner} -m {model} -o {output} "
        "{input_args}'; false: no semihosting (a runner that reads its model from "
        "builds.<name>.data_address). At most the platform's cmd_line_limit (256) characters once "
        "rendered.",
        json_schema_extra={"anyOf": [{"type": "string"}, {"const": False}, {"type": "null"}]},
    )
    retries: int = Field(
        1, ge=0, le=MAX_RETRIES,
        description="Retries of a unit after an infrastructure failure (fresh instance)."
    )

    @model_validator(mode="after")
    def _until_in_rounds(self) -> Run:
        if self.until is not None and self.order != "interleaved":
            raise ValueError("run.until measures in rounds (every build of a model, then the next "
                             "repetition): it needs order: interleaved")
        return self

    @property
    def planned_repetitions(self) -> int:
        """How many repetitions the plan holds: ``until.max_repetitions`` with ``until``, else
        ``repetitions``."""
        return self.until.max_repetitions if self.until is not None else self.repetitions

    @property
    def executions(self) -> int:
        """Executions the runner performs per unit (``{iterations}``): warmup + iterations."""
        return self.warmup + self.iterations

    @model_validator(mode="before")
    @classmethod
    def _lift_secrets(cls, data: Any) -> Any:
        return _secret_entries(data)

    @field_validator("env", mode="before")
    @classmethod
    def _env_is_text(cls, value: Any) -> Any:
        return _env_text(value)

    @field_validator("command")
    @classmethod
    def _command_placeholders(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the run command is empty; expected e.g. '{runner} "
                             "--model_path={model}'")
        return _check_template(value, RUN_PLACEHOLDERS)

    @field_validator("fetch")
    @classmethod
    def _fetch_placeholders(cls, value: list[str]) -> list[str]:
        for item in value:
            _check_template(item, RUN_PLACEHOLDERS)
        return value

    @field_validator("cmd_line", mode="before")
    @classmethod
    def _no_semihosting(cls, value: Any) -> Any:
        """``cmd_line: false`` turns semihosting off (kept as an empty line)."""
        return "" if value is False else value

    @field_validator("cmd_line")
    @classmethod
    def _cmd_line_placeholders(cls, value: str | None) -> str | None:
        if value:
            _check_template(value, RUN_PLACEHOLDERS)
        return value

    @property
    def semihosting(self) -> bool:
        """False when ``cmd_line: false`` switched semihosting off (bare-metal platforms)."""
        return self.cmd_line != ""

    @property
    def cmd_line_template(self) -> str:
        """The semihosting command line template in force (``DEFAULT_CMD_LINE`` when not given)."""
        return self.cmd_line if self.cmd_line is not None else DEFAULT_CMD_LINE


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
        problem = validate_regex(value)  # RE2 syntax, exactly one group (scenario.metrics)
        if problem is not None:
            raise ValueError(problem)
        return value

    @property
    def builtin(self) -> bool:
        """True when the built-in parser of that name measures it (no regex given)."""
        return self.regex is None


_PERCENT_TEXT = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*$")
"""A percentage written as text: ``10%``, ``2.5 %`` (YAML reads ``10%`` as text)."""


def _percent_of(text: str) -> float | None:
    """The number of a ``10%``-style text, or None when it is not one."""
    match = _PERCENT_TEXT.match(text)
    return float(match.group(1)) if match else None


def _finite_amount(value: float, what: str) -> float:
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{what} must be a finite number")
    if value < 0:
        raise ValueError(f"{what} must be 0 or more (a regression is an increase; give how much is "
                         "allowed)")
    return value


class IdentityTolerance(StrictModel):
    """An `expect_identical` entry with a tolerance: the metric may differ by `rel` (of the baseline
    median) or `abs` (in the metric's unit), judged on the confidence interval of the change.
    Without either it is exact."""

    metric: str = Field(min_length=1,
                        description="A measured metric (not `outputs`: files are compared byte for "
                        "byte).")
    rel: float | str | None = Field(
        None,
        description="Allowed difference relative to the baseline median: a fraction (0.05) or a "
                    "percentage "
        "('5%').",
        json_schema_extra={"anyOf": [{"type": "number", "minimum": 0, "exclusiveMaximum": 1},
                                     {"type": "string", "pattern": _PERCENT_TEXT.pattern},
                                     {"type": "null"}]},
    )
    abs: float | None = Field(
        None,
        description="Allowed difference in the metric's own unit (e.g. 0.1 for ms).",
        json_schema_extra={"anyOf": [{"type": "number", "minimum": 0}, {"type": "null"}]},
    )

    @field_validator("rel")
    @classmethod
    def _rel_is_a_share(cls, value: float | str | None) -> float | str | None:
        if value is None:
            return None
        if isinstance(value, str):
            if _percent_of(value) is None:
                raise ValueError(f"got {value!r}; expected a fraction (0.05) or a percentage "
                                 "('5%')")
            return value
        _finite_amount(value, "rel")
        if value >= 1:
            raise ValueError(f"rel is a fraction of the baseline (0.05 = 5%); got {value:g}: write "
                             f"'{value:g}%' if you meant percent")
        return value

    @field_validator("abs")
    @classmethod
    def _abs_is_an_amount(cls, value: float | None) -> float | None:
        return None if value is None else _finite_amount(value, "abs")

    @model_validator(mode="after")
    def _one_tolerance(self) -> IdentityTolerance:
        if self.rel is not None and self.abs is not None:
            raise ValueError("give rel or abs, not both")
        if self.metric == "outputs" and not self.exact:
            raise ValueError("outputs are compared byte for byte: a tolerance does not apply to "
                             "them")
        return self

    @property
    def exact(self) -> bool:
        """True without a tolerance (the entry means the same as its plain metric name)."""
        return self.rel is None and self.abs is None

    @property
    def relative(self) -> bool:
        """True when the tolerance is a share of the baseline median (``amount`` in percent)."""
        return self.rel is not None

    @property
    def amount(self) -> float:
        """The tolerance: percent of the baseline median when ``relative``, else in the metric's
        unit (0 exact)."""
        if isinstance(self.rel, str):
            return _percent_of(self.rel) or 0.0
        if self.rel is not None:
            return 100.0 * self.rel
        return self.abs or 0.0


def _tolerance_item(value: Any) -> Any:
    """A mapping in ``expect_identical`` is validated as an ``IdentityTolerance`` on its own, so a
    mistake inside it is reported at its key (a plain ``str | IdentityTolerance`` union would list
    both alternatives' complaints)."""
    return IdentityTolerance.model_validate(value) if isinstance(value, dict) else value


_IdentityItem = Annotated[str | IdentityTolerance, BeforeValidator(_tolerance_item)]
"""An ``expect_identical`` entry: a name (exact) or ``{metric, rel | abs}``."""


class Gate(StrictModel):
    """The largest regression (increase) a metric may show between baseline and candidate. Judged on
    the confidence interval of the change: violated when the whole interval lies above it, within
    when the whole interval lies at or below it, unverified (inconclusive) when the interval
    straddles it."""

    max_regression: float | str = Field(
        description="How much worse the candidate may be: a percentage of the baseline median "
                    "('10%'), 0 (no "
        "regression at all), or a number in `unit`.",
        json_schema_extra={"anyOf": [{"type": "number", "minimum": 0},
                                     {"type": "string", "pattern": _PERCENT_TEXT.pattern}]},
    )
    unit: str | None = Field(
        None,
        min_length=1,
        description="The unit of a numeric max_regression: '%', or the metric's unit (e.g. ms, "
                    "cycles) for an "
        "absolute amount. Required for a number other than 0.",
    )

    @field_validator("max_regression")
    @classmethod
    def _amount(cls, value: float | str) -> float | str:
        if isinstance(value, str):
            if _percent_of(value) is None:
                raise ValueError(f"got {value!r}; expected a percentage ('10%'), or a number with "
                                 "`unit`")
            return value
        return _finite_amount(value, "max_regression")

    @model_validator(mode="after")
    def _unit_given(self) -> Gate:
        if isinstance(self.max_regression, str):
            if self.unit not in (None, "%"):
                raise ValueError(f"max_regression {self.max_regression!r} is a percentage but unit "
                                 f"is {self.unit!r}; drop unit, or give a number in {self.unit}")
        elif self.max_regression != 0 and self.unit is None:
            raise ValueError(f"max_regression {self.max_regression:g} needs a unit: write "
                             f"'{self.max_regression:g}%' for a share of the baseline, or add "
                             "unit: <the metric's unit> (e.g. ms) for an absolute amount")
        return self

    @property
    def relative(self) -> bool:
        """True when the allowed regression is a share of the baseline median (``amount`` in
        percent)."""
        return isinstance(self.max_regression, str) or self.unit == "%"

    @property
    def amount(self) -> float:
        """The allowed regression: percent when ``relative``, else in ``unit`` (the metric's unit; 0
        in any)."""
        if isinstance(self.max_regression, str):
            return _percent_of(self.max_regression) or 0.0
        return float(self.max_regression)


class ComparePair(StrictModel):
    """One entry of ``compare.pairs``: a candidate build judged against a baseline build."""

    baseline: str = Field(min_length=1, description="The reference build of this pair.")
    candidate: str = Field(min_length=1,
                           description="The build judged against it; must differ from baseline.")


class Compare(StrictModel):
    """Which builds to compare and what to expect.

    Two builds: ``baseline`` and ``candidate``. More than two: ``baseline`` with ``candidates``
    (each judged against the one baseline, e.g. a sweep of NPU sizes), or ``pairs`` (any list of
    ``{baseline, candidate}``). Everything else (primary, expectations, gates, min_effect) applies
    to every pair. ``build_pairs`` lists the pairs in order; ``baseline`` and ``candidate`` always
    hold the first pair, so code that knows only one pair reads the first. A dump keeps only the
    keys the scenario used (``candidates`` drops ``candidate``, ``pairs`` drops both), so what
    ``manifest.json`` stores validates again as the same spec."""

    baseline: str = "before"
    candidate: str = "after"
    candidates: list[str] | None = Field(
        None,
        min_length=1,
        description="Several builds, each judged against `baseline` (instead of `candidate`): the "
                    "report has a "
        "section per candidate and a combined chart.",
    )
    pairs: list[ComparePair] | None = Field(
        None,
        min_length=1,
        description="Any list of {baseline, candidate} comparisons (instead of baseline and "
                    "candidate/candidates): "
        "the report has a section per pair.",
    )
    primary: str | list[str] = Field(
        "cpu_time",
        description="The metric whose saving the report headlines, or a list of them in order of "
                    "preference: the "
        "first one every unit produced is the primary (e.g. [cpu_time, iteration_time]: an "
        "instrumented runner's CPU time, else the stock runner's iteration time), and the report "
        "says which it was and why.",
    )
    expect_identical: list[_IdentityItem] = Field(
        default_factory=lambda: list[str | IdentityTolerance](["outputs", "npu_cycles"]),
        description="Metrics (or `outputs`) that must be identical between baseline and candidate: "
                    "a name (exact), "
        "or {metric, rel | abs} for a tolerance judged on the confidence interval of the change.",
    )
    gates: dict[str, Gate] = Field(
        default_factory=dict,
        description="Metric name -> {max_regression, unit}: the largest regression each metric may "
                    "show; a "
        "violated gate fails the run's expectations.",
    )
    min_effect: float = Field(1.0, ge=0,
                              description="Smallest change in percent that counts as a change.")
    baseline_from: str | None = Field(
        None,
        min_length=1,
        description="Take the baseline build's numbers from a stored run instead of measuring it: "
                    "a results folder "
        "(its newest run), a run folder, or SCENARIO@REF / @REF (REF: run id, latest, git commit "
        "or branch; docs/ci.md). The run then measures the other builds plus `drift_check`.",
    )
    drift_check: DriftCheck = Field(
        default_factory=DriftCheck,
        description="With baseline_from: baseline units re-run to prove the platform did not move "
        "({units, max_shift}).",
    )

    @field_validator("primary")
    @classmethod
    def _some_primary(cls, value: str | list[str]) -> str | list[str]:
        if isinstance(value, list):
            if not value:
                raise ValueError("give at least one metric (a name, or a list in order of "
                                 "preference)")
            if len(set(value)) != len(value):
                raise ValueError("a metric is listed twice")
        return value

    @field_validator("expect_identical")
    @classmethod
    def _each_once(cls, value: list[str | IdentityTolerance]) -> list[str | IdentityTolerance]:
        names = [item if isinstance(item, str) else item.metric for item in value]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"{', '.join(twice)} listed twice")
        return value

    @field_validator("candidates")
    @classmethod
    def _candidates_once(cls, value: list[str] | None) -> list[str] | None:
        names = value or []
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"{', '.join(twice)} listed twice; each candidate is compared once")
        return value

    @field_validator("pairs")
    @classmethod
    def _pairs_once(cls, value: list[ComparePair] | None) -> list[ComparePair] | None:
        seen: set[tuple[str, str]] = set()
        for pair in value or ():
            key = (pair.baseline, pair.candidate)
            if key in seen:
                raise ValueError(f"the pair {pair.candidate} vs {pair.baseline} is listed twice")
            seen.add(key)
        return value

    @model_validator(mode="after")
    def _one_way_to_pair(self) -> Compare:
        """``candidate``, ``candidates`` and ``pairs`` are three ways to say the same thing: one at
        a time. Then ``baseline``/``candidate`` take the first pair (frozen model: set once,
        here)."""
        given = self.model_fields_set
        if self.pairs is not None:
            written = [name for name in ("baseline", "candidate", "candidates") if name in given]
            if written:
                raise ValueError("pairs names the builds of every comparison; drop "
                                 f"{' and '.join(written)} (or drop pairs)")
        elif self.candidates is not None and "candidate" in given:
            raise ValueError("give candidate (one build) or candidates (several), not both")
        baseline, candidate = self.build_pairs[0]
        object.__setattr__(self, "baseline", baseline)
        object.__setattr__(self, "candidate", candidate)
        return self

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Leave out the keys the spec did not name its builds with (see the class docstring)."""
        data = handler(self)
        if isinstance(data, dict):
            if self.pairs is not None:
                dropped: tuple[str, ...] = ("baseline", "candidate", "candidates")
            elif self.candidates is not None:
                dropped = ("candidate", "pairs")
            else:
                dropped = ("candidates", "pairs")
            for name in dropped:
                data.pop(name, None)
        return data

    @property
    def build_pairs(self) -> list[tuple[str, str]]:
        """Every (baseline, candidate) pair to compare, in the scenario's order: one for plain
        ``baseline``/``candidate``."""
        if self.pairs is not None:
            return [(pair.baseline, pair.candidate) for pair in self.pairs]
        if self.candidates is not None:
            return [(self.baseline, name) for name in self.candidates]
        return [(self.baseline, self.candidate)]

    def build_references(self) -> list[tuple[tuple[str | int, ...], str, bool]]:
        """Where the spec names a build: ``(path, build name, written)``, ``written`` False for a
        default; the cross-field checks look each one up among the scenario's builds."""
        given = self.model_fields_set
        if self.pairs is not None:
            return [(("compare", "pairs", index, field), getattr(pair, field), True)
                    for index, pair in enumerate(self.pairs) for field in ("baseline", "candidate")]
        references: list[tuple[tuple[str | int, ...], str, bool]] = [
            (("compare", "baseline"), self.baseline, "baseline" in given)]
        if self.candidates is not None:
            references += [(("compare", "candidates", index), name, True)
                           for index, name in enumerate(self.candidates)]
        else:
            references.append((("compare", "candidate"), self.candidate, "candidate" in given))
        return references

    @property
    def primary_candidates(self) -> list[str]:
        """``primary`` as a list in order of preference (one name for a plain string)."""
        return [self.primary] if isinstance(self.primary, str) else list(self.primary)

    @property
    def identity_names(self) -> list[str]:
        """The names ``expect_identical`` checks (``outputs`` or metrics), in order."""
        return [item if isinstance(item, str) else item.metric for item in self.expect_identical]


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
    platform: str = Field("corstone1000-a320",
                          description="Built-in profile name or path to a profile YAML.")
    target: Literal["fvp", "host"] = Field(
        "fvp", description="fvp: boot a model; host: run on this machine."
    )
    vars: dict[str, Any] = Field(default_factory=dict,
                                 description="Values for ${vars.NAME} substitution.")
    fvp: FvpConfig = Field(default_factory=FvpConfig)
    builds: dict[str, Build] = Field(
        min_length=1, description="Runner variants by name (e.g. before, after)."
    )
    models: dict[str, Model] = Field(min_length=1, description="Models by name (e.g. resnet8).")
    deploy: Deploy = Field(default_factory=Deploy)
    run: Run = Field(default_factory=Run)
    metrics: list[MetricSpec] = Field(
        default_factory=lambda: [MetricSpec(name="cpu_time", required=True),
                                 MetricSpec(name="npu_cycles")],
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
        _settle_default_expectations(self)
        if info.context and info.context.get(LOADER_CONTEXT):
            return self  # the loader runs these checks itself so it can point at file positions
        problems = cross_field_problems(self)
        if problems:
            raise ValueError("; ".join(f"{format_path(path)}: {message}"
                                       for path, message, _ in problems))
        return self

    def metric(self, name: str) -> MetricSpec | None:
        """The metric spec of that name, or None."""
        return next((spec for spec in self.metrics if spec.name == name), None)

    def model_file(self, build: str, model: str) -> str:
        """The model file the units of ``build`` run: the build's own (``builds.<build>.models``),
        else the model's."""
        own = self.builds[build].models.get(model)
        return own.file if own is not None else self.models[model].file

    def model_artifact(self, build: str, model: str) -> str:
        """The declared name of that file (``builds.<build>.models.<model>.file`` or
        ``models.<model>.file``), as artifact states and the manifest spell it."""
        if model in self.builds[build].models:
            return f"builds.{build}.models.{model}.file"
        return f"models.{model}.file"

    def secret_values(self) -> tuple[str, ...]:
        """The secret environment values (and their quoted forms) to hide in results and logs
        (``scenario.secrets``)."""
        return secret_values(self)

    def redacted(self) -> dict[str, Any]:
        """This scenario as JSON data with every secret replaced by ``***`` (what ``manifest.json``
        keeps)."""
        return redact_scenario(self)


DEFAULT_EXPECT_IDENTICAL = ("outputs", "npu_cycles")
"""What ``compare.expect_identical`` checks when the scenario does not say: ``outputs``, and
``npu_cycles`` when the scenario measures it (a default entry the scenario cannot measure is
dropped, never reported)."""


def _settle_default_expectations(scenario: Scenario) -> None:
    """Drop the default ``expect_identical`` entries the scenario does not measure (a message must
    never name a default the user did not write). Runs inside validation, on the frozen model being
    built."""
    compare = scenario.compare
    if compare is None or "expect_identical" in compare.model_fields_set:
        return
    measured = {spec.name for spec in scenario.metrics}
    wanted = [name for name in DEFAULT_EXPECT_IDENTICAL if name == "outputs" or name in measured]
    object.__setattr__(scenario, "compare", compare.model_copy(update={"expect_identical": wanted}))


@dataclass(frozen=True)
class ScenarioParts:
    """The parts of a scenario that did validate when the whole did not, so the loader can run the
    cross-field checks over them in the same round as the structural ones. ``builds`` and ``models``
    keep every name written (whatever is wrong inside), ``metrics`` the entries with a usable name
    (a stand-in for one that failed validation), ``compare`` what validated of it. ``unknown`` names
    what could not be read (``builds``, ``metrics``, ``compare.<field>``): checks that need it are
    skipped rather than guessed."""

    builds: Mapping[str, Any]
    models: Mapping[str, Any]
    metrics: list[MetricSpec]
    compare: Compare | None
    unknown: frozenset[str] = frozenset()

    def metric(self, name: str) -> MetricSpec | None:
        """The metric spec of that name, or None."""
        return next((spec for spec in self.metrics if spec.name == name), None)


Problem = tuple[tuple[str | int, ...], str, bool]
"""A cross-field problem: ``(path, message, at_key)``; ``at_key`` points the message at the key
itself."""

Parts = Scenario | ScenarioParts


def cross_field_problems(scenario: Parts) -> list[Problem]:
    """Checks that span sections (``CROSS_FIELD_CHECKS``, in order). A field the user left out is
    named as a default at the key of the section that holds it."""
    return [problem for check in CROSS_FIELD_CHECKS for problem in check(scenario)]


def _unknown(scenario: Parts) -> frozenset[str]:
    """What did not validate (``ScenarioParts.unknown``): checks that need it are skipped rather
    than guessed."""
    return scenario.unknown if isinstance(scenario, ScenarioParts) else frozenset()


def _plan_fits(scenario: Parts) -> list[Problem]:
    """builds x models x repetitions within ``MAX_UNITS``."""
    if not isinstance(scenario, Scenario):
        return []
    reps = scenario.run.planned_repetitions
    units = len(scenario.builds) * len(scenario.models) * reps
    if units <= MAX_UNITS:
        return []
    field = "until" if scenario.run.until is not None else "repetitions"
    return [
        (
            ("run", field),
            f"{len(scenario.builds)} builds x {len(scenario.models)} models x {reps} "
            f"repetitions is {units} units; at most {MAX_UNITS} fit in one plan: run fewer "
            "repetitions or split the scenario",
            True,
        )
    ]


def _plain_names(scenario: Parts) -> list[Problem]:
    """Build and model names fit in unit ids and file names."""
    return [
        (
            (section, name),
            f"name {name!r} must start with a letter or digit and use only "
            "letters, digits, '_', '.' and '-' (it becomes part of unit ids and file names)",
            True,
        )
        for section in ("builds", "models")
        for name in getattr(scenario, section)
        if not NAME_PATTERN.match(name)
    ]


def _own_models_exist(scenario: Parts) -> list[Problem]:
    """A build's own model file (``builds.X.models.Y``) replaces one of the scenario's models."""
    if "models" in _unknown(scenario):
        return []
    problems: list[Problem] = []
    for build_name, build in scenario.builds.items():
        own = (
            build.models
            if isinstance(build, Build)
            else build.get("models")
            if isinstance(build, dict)
            else None
        )
        for model_name in own if isinstance(own, dict) else ():
            if model_name not in scenario.models:
                problems.append(
                    (
                        ("builds", build_name, "models", model_name),
                        f"no model named {model_name!r}"
                        f"{did_you_mean(str(model_name), list(scenario.models))} "
                        f"(models: {', '.join(scenario.models)}); "
                        "a build's own file replaces one of the models'",
                        True,
                    )
                )
    return problems


def _metrics_listed_once(scenario: Parts) -> list[Problem]:
    """Each metric name once in ``metrics``."""
    problems: list[Problem] = []
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
    return problems


def _metrics_known(scenario: Parts) -> list[Problem]:
    """A metric without a regex is a built-in one."""
    return [
        (
            ("metrics", index, "name"),
            f"{spec.name!r} is not a built-in metric"
            f"{did_you_mean(spec.name, BUILTIN_METRICS)} (built-in: {', '.join(BUILTIN_METRICS)}; "
            "for a custom metric give a regex)",
            False,
        )
        for index, spec in enumerate(scenario.metrics)
        if not _measurable(spec)
    ]


def _measurable(spec: MetricSpec) -> bool:
    return spec.regex is not None or spec.name in BUILTIN_METRICS


def _measured(scenario: Parts) -> list[str]:
    """The metric names the scenario can measure (a name ``_metrics_known`` refuses is not one of
    them)."""
    return list(dict.fromkeys(spec.name for spec in scenario.metrics if _measurable(spec)))


def _refused_metric(scenario: Parts, name: str) -> bool:
    """True when a reference to metric ``name`` is one ``_metrics_known`` already answers: ``name``
    is a refused metric entry, or the built-in such an entry's message suggests (the entry's typo,
    not the reference's)."""
    refused = [spec.name for spec in scenario.metrics if not _measurable(spec)]
    return name in refused or name in {closest(typo, BUILTIN_METRICS) for typo in refused}


def _listed(names: list[str]) -> str:
    return ", ".join(names) or "none"


def _compare_builds_exist(scenario: Parts) -> list[Problem]:
    """``compare``'s baseline, candidate(s) and pairs name builds of the scenario."""
    compare, unknown = scenario.compare, _unknown(scenario)
    if compare is None:
        return []
    problems: list[Problem] = []
    builds = list(scenario.builds)
    for (
        path,
        name,
        written,
    ) in compare.build_references():  # baseline/candidate, candidates[i], pairs[i].*
        field = str(path[1])
        if (
            "builds" in unknown
            or f"compare.{field}" in unknown
            or "compare.pairs" in unknown
            or ("compare.candidates" in unknown and field == "candidate")
        ):
            continue  # what named these builds did not validate: a default here would be a guess
        if name not in scenario.builds and not written:
            problems.append(
                (
                    path,
                    f"not given, so it is the default {name!r}, and there is no build named "
                    f"{name!r} (builds: {', '.join(builds)}); "
                    f"write compare.{field}: <one of the builds>",
                    True,
                )
            )
        elif name not in scenario.builds:
            problems.append(
                (
                    path,
                    f"no build named {name!r}{did_you_mean(name, builds)} "
                    f"(builds: {', '.join(builds)})",
                    False,
                )
            )
    return problems


def _compare_builds_differ(scenario: Parts) -> list[Problem]:
    """Each pair compares two different builds."""
    compare, unknown = scenario.compare, _unknown(scenario)
    if (
        compare is None
        or {"compare.baseline", "compare.candidate", "compare.candidates", "compare.pairs"}
        & unknown
    ):
        return []
    problems: list[Problem] = []
    for index, (baseline, candidate) in enumerate(compare.build_pairs):
        if baseline != candidate:
            continue
        if compare.candidates is not None:
            problems.append(
                (
                    ("compare", "candidates", index),
                    f"{candidate!r} is the baseline; each candidate must be another build",
                    False,
                )
            )
            continue
        path = (
            ("compare", "pairs", index, "candidate")
            if compare.pairs is not None
            else ("compare", "candidate")
        )
        problems.append(
            (
                path,
                f"candidate is the same build as baseline ({baseline!r});"
                " expected two different builds",
                False,
            )
        )
    return problems


def _primary_measured(scenario: Parts) -> list[Problem]:
    """``compare.primary`` names measured metrics."""
    compare, unknown = scenario.compare, _unknown(scenario)
    if compare is None or "metrics" in unknown or "compare.primary" in unknown:
        return []
    problems: list[Problem] = []
    metric_names = _measured(scenario)
    listed = isinstance(compare.primary, list)
    for index, name in enumerate(compare.primary_candidates):
        if name in metric_names or _refused_metric(scenario, name):
            continue
        if "primary" not in compare.model_fields_set:
            problems.append(
                (
                    ("compare", "primary"),
                    f"not given, so it is the default {name!r}, which this "
                    "scenario does not measure; "
                    f"write compare.primary: <one of {_listed(metric_names)}>",
                    True,
                )
            )
        else:
            problems.append(
                (
                    ("compare", "primary", index) if listed else ("compare", "primary"),
                    f"unknown metric {name!r}{did_you_mean(name, metric_names)} (this scenario "
                    f"measures: {_listed(metric_names)})",
                    False,
                )
            )
    return problems


def _identities_measured(scenario: Parts) -> list[Problem]:
    """``compare.expect_identical`` names ``outputs`` or measured metrics (the default drops what is
    not measured: ``_settle_default_expectations``)."""
    compare, unknown = scenario.compare, _unknown(scenario)
    if (
        compare is None
        or "metrics" in unknown
        or "compare.expect_identical" in unknown
        or "expect_identical" not in compare.model_fields_set
    ):
        return []
    problems: list[Problem] = []
    metric_names = _measured(scenario)
    for index, item in enumerate(compare.expect_identical):
        name = item if isinstance(item, str) else item.metric
        if name == "outputs" or name in metric_names or _refused_metric(scenario, name):
            continue
        problems.append(
            (
                ("compare", "expect_identical", index)
                + (() if isinstance(item, str) else ("metric",)),
                f"unknown metric {name!r}"
                f"{did_you_mean(name, [*metric_names, 'outputs'])}; expected "
                f"'outputs' or one of the measured metrics ({_listed(metric_names)})",
                False,
            )
        )
    return problems


def _gates_measured(scenario: Parts) -> list[Problem]:
    """``compare.gates`` are keyed by measured metrics."""
    compare, unknown = scenario.compare, _unknown(scenario)
    if compare is None or "metrics" in unknown or "compare.gates" in unknown:
        return []
    metric_names = _measured(scenario)
    return [
        (
            ("compare", "gates", name),
            f"unknown metric {name!r}{did_you_mean(name, metric_names)} (this "
            f"scenario measures: {_listed(metric_names)})",
            True,
        )
        for name in compare.gates
        if name not in metric_names and not _refused_metric(scenario, name)
    ]


def _gate_units(scenario: Parts) -> list[Problem]:
    """A gate's absolute ``max_regression`` is in its metric's declared unit."""
    compare, unknown = scenario.compare, _unknown(scenario)
    if compare is None or "metrics" in unknown or "compare.gates" in unknown:
        return []
    problems: list[Problem] = []
    for name, gate in compare.gates.items():
        measured = scenario.metric(name)
        declared = measured.unit if measured is not None and measured.regex is not None else ""
        if declared and not gate.relative and gate.unit is not None and gate.unit != declared:
            problems.append(
                (
                    ("compare", "gates", name, "unit"),
                    f"metric {name!r} is measured in {declared!r}, "
                    f"not {gate.unit!r}; give max_regression in {declared} (or as a percentage)",
                    False,
                )
            )
    return problems


def _secrets(scenario: Parts) -> list[Problem]:
    """``scenario.secrets.secret_problems``: secret names and values."""
    return secret_problems(scenario) if isinstance(scenario, Scenario) else []


CROSS_FIELD_CHECKS: tuple[Callable[[Parts], list[Problem]], ...] = (
    _plan_fits,
    _plain_names,
    _own_models_exist,
    _metrics_listed_once,
    _metrics_known,
    _compare_builds_exist,
    _compare_builds_differ,
    _primary_measured,
    _identities_measured,
    _gates_measured,
    _gate_units,
    _secrets,
)
"""The cross-field checks, each with one job, in the order their messages come (the loader then
sorts them by place)."""


def scenario_json_schema() -> dict[str, Any]:
    """JSON Schema of scenario files, for editors (yaml-language-server) and ``fvp-harness schema``.

    Adds what the models cannot say themselves: ``extends`` (consumed by the loader) and metrics
    given as plain built-in names.

    A file with ``extends`` is only a layer: its bases may give ``name``, ``builds``, ``models`` or
    any field of a build or model (mappings merge key by key), so such a file must not be held to
    ``required``. The top-level ``properties`` are therefore the lenient ones (``<Def>Partial``
    definitions without ``required`` wherever a mapping merges; list items stay complete, since a
    list replaces the base's), and an ``if``/``else`` applies the complete rules to files without
    ``extends``. The loader checks the merged scenario in full either way.
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
            {"type": "string", "enum": sorted(BUILTIN_METRICS),
             "description": "A built-in metric by name."},
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
            # a list replaces the base's list: its items are complete
            if key in ("items", "prefixItems"):
                out[key] = value
            elif key == "$ref" and value.startswith(_DEF_PREFIX):
                out[key] = _DEF_PREFIX + partial_name(value[len(_DEF_PREFIX) :])
            elif key == "properties":
                out[key] = {name: lenient(sub) for name, sub in value.items()}
            else:
                out[key] = lenient(value)
        return out

    def partial_name(name: str) -> str:
        """The lenient twin of a definition, made once; the definition itself when nothing
        differs."""
        twin = f"{name}Partial"
        if twin not in partial_defs:
            partial_defs[twin] = None  # recursion guard
            partial_defs[twin] = lenient(defs[name])
        return name if partial_defs[twin] == defs[name] else twin

    strict = dict(schema["properties"])
    required = schema.pop("required", [])
    schema["properties"] = {name: lenient(sub) for name, sub in strict.items()}
    defs.update({name: body for name, body in sorted(partial_defs.items())
                 if body != defs[name[: -len("Partial")]]})
    schema["if"] = {"required": ["extends"]}
    schema["else"] = {
        "required": required,
        "properties": {name: sub
                       for name, sub in strict.items() if schema["properties"][name] != sub},
    }
    return schema
