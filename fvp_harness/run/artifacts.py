"""Make the files a run needs: run the scenario's ``build`` commands when an output is missing or stale, then
hash every artifact.

Why here and not in ``targets/``: ``targets/`` spawns the model and talks to guests; these are the *user's* host
commands (cross-compile a runner, export a model), run before any model starts. This is the one other place in
the harness that starts processes, and it starts nothing else (docs/architecture.md says so).

Rules:

- An artifact is built when its file is missing, or older than any of its declared ``sources`` (make's rule,
  by modification time), or when its ``build`` command changed since the file was built, or always with ``force``
  (``make -B``, ``run --rebuild``). A file without a ``build`` command is never touched. The command a file was
  built with is kept beside it in ``.<name>.build`` (the scenario's text, before ``{output}``/``{fvp_harness}`` are
  filled in, so another virtual environment does not look like a change).
- The command is the user's shell text, so it runs under ``/bin/sh -c`` (``{output}`` and ``{fvp_harness}``
  are filled in and quoted by ``scenario.expand_build_command``) in the scenario's folder, in its own process
  group so a timeout kills the whole tree, with its output captured to a log file the caller chooses (the
  results folder's ``logs/build/``).
- Failures name the artifact, the command, the exit status and the log: a command that cannot start (126/127)
  or that "succeeds" without writing its output is a ``ConfigurationError`` (the scenario is wrong); a command
  that fails or times out is a ``UnitFailure`` (the code being built is broken).
- Independent builds run in parallel threads (each waits on its own subprocess), because a scenario's ten
  simulator artifacts are ten Python start-ups.
- After building, every artifact is hashed (``plan.artifact_hashes``); the caller re-plans with those states so
  unit content keys are final, and the manifest records the same hashes.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from fvp_harness.errors import ConfigurationError, UnitFailure
from fvp_harness.files import atomic_write
from fvp_harness.run.plan import ArtifactState, artifact_hashes
from fvp_harness.scenario.load import LoadedScenario
from fvp_harness.scenario.model import Scenario, expand_build_command

__all__ = [
    "BUILD_TIMEOUT_S",
    "FORCED",
    "BuildResult",
    "BuildStep",
    "artifact_digests",
    "build_artifacts",
    "build_record_path",
    "declared_artifacts",
    "pending_builds",
    "stale_reason",
]

log = logging.getLogger(__name__)

BUILD_TIMEOUT_S = 1800.0
"""Longest one build command may take (times ``--timeout-scale``): a cross-compile, not a hang."""

_LOG_TAIL = 20


@dataclass(frozen=True)
class BuildStep:
    """One artifact to (re)build: its declared name (``builds.before.runner``), file, command and why."""

    name: str
    path: Path
    command: str
    sources: tuple[Path, ...]
    reason: str
    template: str = ""
    """The scenario's build text (before ``{output}``/``{fvp_harness}``): what ``.<name>.build`` records."""

    @property
    def log_name(self) -> str:
        """A plain file name for the build's log (the declared name with brackets removed)."""
        return self.name.replace("[", "_").replace("]", "") + ".log"


@dataclass(frozen=True)
class BuildResult:
    """A finished build: what ran, how long, where its output went."""

    step: BuildStep
    seconds: float
    log_path: Path | None


def build_record_path(path: Path) -> Path:
    """Where the command that built ``path`` is kept: ``.<name>.build`` beside it."""
    return path.with_name(f".{path.name}.build")


def _recorded_command(path: Path) -> str | None:
    try:
        data = json.loads(build_record_path(path).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    command = data.get("command") if isinstance(data, dict) else None
    return command if isinstance(command, str) else None


def stale_reason(path: Path, sources: tuple[Path, ...] | list[Path], command: str | None = None) -> str | None:
    """Why ``path`` must be rebuilt (``missing``, ``older than <source>``, ``build command changed``), or None when
    it is up to date. ``command`` is the scenario's build text; without it the command is not compared."""
    if not path.is_file():
        return "missing"
    built = path.stat().st_mtime_ns
    for source in sources:
        try:
            if source.stat().st_mtime_ns > built:
                return f"older than {source}"
        except FileNotFoundError:
            return f"source {source} is missing"
    if command is not None:
        recorded = _recorded_command(path)
        if recorded is None:
            return "no record of the command that built it"
        if recorded != command:
            return "build command changed"
    return None


def declared_artifacts(scenario: Scenario) -> list[tuple[str, str, str | None, list[str]]]:
    """``(name, file, build command, sources)`` for every buildable artifact, in scenario order."""
    items: list[tuple[str, str, str | None, list[str]]] = []
    for name, build in scenario.builds.items():
        items.append((f"builds.{name}.runner", build.runner, build.build, build.sources))
        for model_name, own in build.models.items():
            items.append((f"builds.{name}.models.{model_name}.file", own.file, own.build, own.sources))
    for name, model in scenario.models.items():
        items.append((f"models.{name}.file", model.file, model.build, model.sources))
        for index, item in enumerate(model.inputs):
            items.append((f"models.{name}.inputs[{index}].file", item.file, item.build, item.sources))
    return items


FORCED = "forced"
"""The reason of a build that ran only because it was forced (``make -B``, ``run --rebuild``)."""


def pending_builds(scenario: Scenario | LoadedScenario, *, force: bool = False,
                   already_built: Collection[Path] = ()) -> list[BuildStep]:
    """The artifacts whose ``build`` command must run now (missing or stale), each once per output file.

    ``force``: every artifact with a build command, up to date or not (reason ``forced`` when it was), except
    the files in ``already_built`` (rebuilt earlier by the same batch), which follow the normal rule."""
    scenario = scenario.scenario if isinstance(scenario, LoadedScenario) else scenario
    done = {Path(path) for path in already_built}
    steps: list[BuildStep] = []
    seen: set[Path] = set()
    for name, file, command, sources in declared_artifacts(scenario):
        path = Path(file)
        if command is None or path in seen:
            continue
        source_paths = tuple(Path(source) for source in sources)
        reason = stale_reason(path, source_paths, command)
        if reason is None and force and path not in done:
            reason = FORCED
        if reason is not None:
            seen.add(path)
            steps.append(BuildStep(name, path, expand_build_command(command, path), source_paths, reason, command))
    return steps


def _tail(path: Path | None) -> list[str]:
    if path is None or not path.is_file():
        return []
    return path.read_text(encoding="utf-8", errors="replace").splitlines()[-_LOG_TAIL:]


def _build_environment() -> dict[str, str]:
    """Our environment, with this fvp_harness importable: ``{fvp_harness}`` promises the running harness, also
    from a source checkout that was never installed (the command runs in the scenario's folder, not ours)."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parent.parent)
    parts = [part for part in env.get("PYTHONPATH", "").split(os.pathsep) if part]
    if package_root not in parts:
        env["PYTHONPATH"] = os.pathsep.join([package_root, *parts])
    return env


def _run_step(step: BuildStep, cwd: Path, log_path: Path | None, timeout: float) -> BuildResult:
    """Run one build command to completion; raise with the log when it fails."""
    step.path.parent.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    log.info("building %s (%s): %s", step.name, step.reason, step.command)
    sink = log_path.open("w", encoding="utf-8") if log_path is not None else None
    try:
        if sink is not None:
            sink.write(f"$ {step.command}\n# cwd: {cwd}\n# reason: {step.reason}\n")
            sink.flush()
        try:
            proc = subprocess.Popen(  # the user's own build command: a shell string by design
                step.command,
                shell=True,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=sink if sink is not None else subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=_build_environment(),
            )
        except OSError as exc:
            raise ConfigurationError(
                f"cannot run the build command of {step.name} ({exc}): {step.command}",
                log_path=log_path, stage="build",
            ) from exc
        try:
            status = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            _kill_group(proc)
            raise UnitFailure(
                f"the build command of {step.name} did not finish in {timeout:.0f} s and was killed: "
                f"{step.command}; pass --timeout-scale to allow more time",
                log_path=log_path, last_lines=_tail(log_path), stage="build",
            ) from exc
        finally:
            if proc.poll() is None:
                _kill_group(proc)
    finally:
        if sink is not None:
            sink.close()
    seconds = time.monotonic() - began
    if status in (126, 127):
        raise ConfigurationError(
            f"the build command of {step.name} could not run (exit {status}: command not found or not "
            f"executable): {step.command}; fix the scenario's build command",
            log_path=log_path, last_lines=_tail(log_path), stage="build",
        )
    if status != 0:
        raise UnitFailure(
            f"the build command of {step.name} failed with exit status {status}: {step.command}",
            log_path=log_path, last_lines=_tail(log_path), stage="build",
        )
    if not step.path.is_file():
        raise ConfigurationError(
            f"the build command of {step.name} succeeded but did not write {step.path}; make it write "
            "{output}",
            log_path=log_path, last_lines=_tail(log_path), stage="build",
        )
    if step.template:
        atomic_write(build_record_path(step.path), json.dumps({"command": step.template}) + "\n")
    return BuildResult(step, seconds, log_path)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def build_artifacts(
    loaded: LoadedScenario,
    *,
    log_path_for: Callable[[BuildStep], Path] | None = None,
    timeout: float = BUILD_TIMEOUT_S,
    jobs: int | None = None,
    on_built: Callable[[BuildResult], None] | None = None,
    force: bool = False,
    already_built: Collection[Path] = (),
) -> tuple[list[BuildResult], dict[str, ArtifactState]]:
    """Build what is missing or stale (with ``force``: every artifact that has a build command, except the
    files in ``already_built``), then hash every artifact.

    ``log_path_for(step)`` says where each command's output goes (None: discarded). ``jobs`` caps parallel
    builds (default: CPU count, at most 4). ``on_built`` is called after each success (progress). Returns the
    builds that ran and ``artifact_hashes`` of the scenario afterwards. The first failure is raised after the
    builds already running have finished; builds not yet started are not started.
    """
    steps = pending_builds(loaded, force=force, already_built=already_built)
    results: list[BuildResult] = []
    if steps:
        workers = max(1, min(jobs or min(4, os.cpu_count() or 1), len(steps)))
        failures: list[BaseException] = []

        def one(step: BuildStep) -> BuildResult | None:
            if failures:
                return None
            target = log_path_for(step) if log_path_for is not None else None
            try:
                result = _run_step(step, loaded.directory, target, timeout)
            except BaseException as exc:
                failures.append(exc)
                raise
            if on_built is not None:
                on_built(result)
            return result

        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="build") as pool:
            futures = [pool.submit(one, step) for step in steps]
            for future in futures:
                try:
                    done = future.result()
                except BaseException:  # collected in failures; the first one is raised below
                    continue
                if done is not None:
                    results.append(done)
        if failures:
            raise failures[0]
    states = artifact_hashes(loaded)
    missing = [state for state in states.values() if not state.built]
    if missing:
        names = ", ".join(f"{state.name} ({state.path})" for state in missing)
        raise ConfigurationError(f"artifacts missing and without a build command: {names}")
    return results, states


def artifact_digests(states: Mapping[str, ArtifactState]) -> dict[str, str | None]:
    """``name -> sha256`` of every artifact, for the manifest (``store.KEY_METADATA`` compares them)."""
    return {name: state.sha256 for name, state in sorted(states.items())}

