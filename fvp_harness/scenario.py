"""The scenario language: pydantic models of a scenario YAML file.

A scenario says which platform to boot, which builds of the runner to compare, on which models, how to run them and
what to measure. It is parsed once, at the edge, into these validated, immutable objects; nothing downstream sees a
raw dict.

(Loader with file:line errors, variables, ``extends`` and ``--set`` overrides: see ``load_scenario`` below.)
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
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
    "Timeouts",
]

ParamValue = str | int | float | bool


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
        description="`sim` for the embedded simulator, an executable name on PATH, or a path to the FVP binary.",
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
    timeout_scale: float = Field(1.0, gt=0, description="Multiplies every timeout (slow hosts, parallel load).")


class Artifact(StrictModel):
    """A file the run needs, optionally produced by a command when missing or stale."""

    file: str = Field(description="Host path of the file (relative paths are relative to the scenario file).")
    build: str | None = Field(
        None, description="Command that writes the file; `{output}` is replaced by its path. Run when missing or "
        "older than any of `sources`."
    )
    sources: list[str] = Field(default_factory=list, description="Files the build command reads (staleness).")


class Build(StrictModel):
    """One variant of the runner (e.g. `before`, `after`)."""

    runner: str = Field(description="Host path of the runner executable.")
    build: str | None = Field(None, description="Command that produces the runner; `{output}` is its path.")
    sources: list[str] = Field(default_factory=list, description="Files the build command reads (staleness).")
    env: dict[str, str] = Field(default_factory=dict, description="Environment set for this build's runs.")
    args: list[str] = Field(default_factory=list, description="Extra runner arguments for this build.")
    id: str | None = Field(
        None, description="Text the runner prints to identify itself; a unit whose output lacks it fails as a "
        "provenance error (the wrong build ran)."
    )


class Model(StrictModel):
    """One model file and the input files it is run with."""

    file: str = Field(description="Host path of the model file.")
    build: str | None = Field(None, description="Command that produces the model; `{output}` is its path.")
    sources: list[str] = Field(default_factory=list, description="Files the build command reads (staleness).")
    inputs: list[Artifact] = Field(default_factory=list, description="Input tensor files, passed as {inputs}.")


class Deploy(StrictModel):
    """How artifacts get into the guest."""

    method: Literal["console", "ssh", "preloaded"] = "console"
    guest_dir: str = Field("/tmp/fvp-harness", description="Guest folder for content-addressed artifacts.")


class Run(StrictModel):
    """How each unit runs the runner."""

    command: str = Field(
        "{runner} --model_path={model} --num_executions={iterations} --output_file={output}",
        description="Command template. Placeholders: {runner} {model} {inputs} {iterations} {output} {unit_dir} "
        "{build} {model_name} {unit}. {iterations} is warmup + iterations (what the runner executes).",
    )
    warmup: int = Field(1, ge=0, description="Executions at the start of each unit whose samples are discarded.")
    iterations: int = Field(10, ge=1, description="Measured executions per unit.")
    repetitions: int = Field(3, ge=1, description="Separate runner processes per build x model.")
    order: Literal["interleaved", "blocked"] = Field(
        "interleaved", description="interleaved: builds alternate and models rotate; blocked: one build at a time."
    )
    timeout: float | None = Field(None, gt=0, description="Per-unit timeout (default: fvp.timeouts.unit).")
    env: dict[str, str] = Field(default_factory=dict, description="Environment for every unit.")
    fetch: list[str] = Field(
        default_factory=list, description="Guest files to copy back after each unit (templates like command)."
    )
    retries: int = Field(1, ge=0, description="Retries of a unit after an infrastructure failure (fresh instance).")


class MetricSpec(StrictModel):
    """A metric: either a built-in parser (only `name`) or a custom regex with one capture group."""

    name: str
    regex: str | None = Field(None, description="Regex with one group capturing the number; omit for built-ins.")
    unit: str = ""
    scale: float = Field(1.0, description="Multiplier applied to every captured value.")
    per: Literal["inference", "run"] = "inference"
    required: bool = False


class Compare(StrictModel):
    """Which builds to compare and what to expect."""

    baseline: str = "before"
    candidate: str = "after"
    primary: str = Field("cpu_time", description="The metric whose saving the report headlines.")
    expect_identical: list[str] = Field(
        default_factory=lambda: ["outputs", "npu_cycles"],
        description="Metrics (or `outputs`) that must be identical between baseline and candidate.",
    )
    min_effect: float = Field(1.0, ge=0, description="Smallest change in percent that counts as a change.")


class Report(StrictModel):
    """What the report looks like and which files it writes."""

    title: str | None = None
    outputs: list[Literal["markdown", "csv", "json", "png"]] = Field(
        default_factory=lambda: ["markdown", "csv", "json", "png"]
    )


class Scenario(StrictModel):
    """A whole scenario file, after variables, `extends` and overrides are resolved."""

    name: str = Field(description="Short name; results go to results/<scenario file stem>/.")
    description: str = ""
    platform: str = Field("corstone1000-a320", description="Built-in profile name or path to a profile YAML.")
    target: Literal["fvp", "host"] = Field("fvp", description="fvp: boot a model; host: run on this machine.")
    vars: dict[str, Any] = Field(default_factory=dict, description="Values for ${vars.NAME} substitution.")
    fvp: FvpConfig = Field(default_factory=FvpConfig)
    builds: dict[str, Build]
    models: dict[str, Model]
    deploy: Deploy = Field(default_factory=Deploy)
    run: Run = Field(default_factory=Run)
    metrics: list[MetricSpec] = Field(
        default_factory=lambda: [MetricSpec(name="cpu_time", required=True), MetricSpec(name="npu_cycles")]
    )
    compare: Compare | None = None
    report: Report = Field(default_factory=Report)
