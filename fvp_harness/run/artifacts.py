"""Make the files a run needs: run the scenario's ``build`` commands when an output is missing or
stale, then hash every artifact.

Why it is shaped so: docs/architecture.md, "Inside `run/`"."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from fvp_harness.errors import (
    ConfigurationError,
    InfrastructureError,
    Interrupted,
    UnitFailure,
    storage_error,
)
from fvp_harness.files import atomic_write
from fvp_harness.run.plan import ArtifactState, artifact_hashes, library_artifact
from fvp_harness.run.source_build import (
    CachedBuild,
    default_cache_dir,
    resolve_commit,
    source_checkout,
    tree_of,
)
from fvp_harness.scenario.load import LoadedScenario
from fvp_harness.scenario.model import Scenario, expand_build_command, is_local_repository
from fvp_harness.targets.children import END_GRACE_S, ProcessTree
from fvp_harness.targets.leftovers import Owner, collect, write_owner

__all__ = [
    "BUILD_TIMEOUT_S",
    "FORCED",
    "NOT_OURS",
    "STAGING_PATTERN",
    "WRITER_WAIT_S",
    "BuildResult",
    "BuildStep",
    "artifact_digests",
    "build_artifacts",
    "build_at_commit",
    "build_record_path",
    "built_from_commit",
    "check_replaceable",
    "declared_artifacts",
    "outside_tree",
    "pending_builds",
    "source_builds",
    "source_repository",
    "stale_reason",
]

log = logging.getLogger(__name__)

BUILD_TIMEOUT_S = 1800.0
"""Longest one build command may take (times ``--timeout-scale``): a cross-compile, not a hang."""

_LOG_TAIL = 20

WRITER_WAIT_S = 10.0
"""Longest wait for the supervisor of an earlier, unfinished build of the same file (it is ending
its processes)."""

STAGING_PATTERN = ".*.building-*"

NOT_OURS = ("no record of the command that built it: not made by fvp-harness, a run refuses it "
            "without --rebuild")
"""The stale reason of a file the harness did not make (``plan`` shows it; ``check_replaceable``
refuses it)."""


@dataclass(frozen=True)
class BuildStep:
    """One artifact to (re)build: its declared name (``builds.before.runner``), file, command and
    why."""

    name: str
    path: Path
    command: str
    sources: tuple[Path, ...]
    reason: str
    template: str = ""
    """The scenario's build text (before ``{output}``/``{fvp_harness}``): what ``.<name>.build``
    records."""
    source: Path | None = None
    """The harness's checkout of the commit it builds (``{source}``; ``run.source_build``), else
    None."""

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


def _record(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(build_record_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _recorded_command(path: Path) -> str | None:
    data = _record(path)
    command = data.get("command") if data is not None and not data.get("building") else None
    return command if isinstance(command, str) else None


def stale_reason(path: Path, sources: tuple[Path, ...] | list[Path],
                 command: str | None = None) -> str | None:
    """Why ``path`` must be rebuilt (``missing``, ``older than <source>``, ``build command
    changed``), or None when it is up to date. ``command`` is the scenario's build text; without it
    the command is not compared."""
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
        data = _record(path)
        if data is not None and data.get("building"):
            return "an earlier build of it did not finish"
        recorded = _recorded_command(path)
        if recorded is None:
            return NOT_OURS
        if recorded != command:
            return "build command changed"
    return None


def _made_by_harness(path: Path) -> bool:
    """True when ``path`` is missing or has a build record of ours beside it (the harness built it,
    or began to)."""
    try:
        if not os.path.lexists(path):
            return True
        return build_record_path(path).is_file()
    except OSError:
        return False


def check_replaceable(scenario: Scenario | LoadedScenario, *, force: bool = False) -> None:
    """Refuse (``ConfigurationError``, exit 2) every artifact with a build command whose file exists
    but was not made by the harness (no ``.<name>.build`` beside it): its build would replace a file
    that is not ours. With ``force`` (``--rebuild``, ``make -B``) the user said to replace it.
    Called before anything builds or boots."""
    if force:
        return
    loaded = scenario if isinstance(scenario, LoadedScenario) else None
    model = scenario.scenario if isinstance(scenario, LoadedScenario) else scenario
    where = f"{loaded.path}: " if loaded is not None else ""
    problems = []
    seen: set[Path] = set()
    for name, file, command, _sources in declared_artifacts(model):
        path = Path(file)
        if command is None or path in seen or _made_by_harness(path):
            continue
        seen.add(path)
        problems.append(
            f"{where}{name}: {path} exists and was not built by fvp-harness (no "
            f"{build_record_path(path).name} beside it), so its build command would replace it; "
            f"point {name} at a file of the build's own (in the scenario's folder), remove the "
            "file if it is an old build, or pass --rebuild to replace it")
    if problems:
        raise ConfigurationError("refusing to replace files the harness did not make; nothing was "
                                 "built:\n  " + "\n  ".join(problems))


def _project_roots(loaded: LoadedScenario) -> list[Path]:
    """The folders a scenario's build outputs belong under: its own folder, the git checkout holding
    it, and the folder the harness runs in (``scenarios/x.yaml`` writing
    ``${scenario_dir}/../.artifacts`` is at home)."""
    roots = [loaded.directory.resolve(), Path.cwd().resolve()]
    for folder in loaded.directory.resolve().parents:
        if (folder / ".git").exists():
            roots.append(folder)
            break
    return roots


def outside_tree(loaded: LoadedScenario) -> list[str]:
    """Warnings for artifacts with a build command whose file is outside the scenario's tree (its
    folder, its git checkout, the folder the harness runs in): a ``../../..`` path, an ``/etc``
    file. The build writes there; ``validate`` prints them, and ``check_replaceable`` still refuses
    a file the harness did not make."""
    roots = _project_roots(loaded)
    warnings = []
    for name, file, command, _sources in declared_artifacts(loaded.scenario):
        if command is None:
            continue
        resolved = Path(file).resolve()
        if not any(resolved.is_relative_to(root) for root in roots):
            warnings.append(f"{loaded.path}: {name}: warning: {file} is outside the scenario's "
                            f"tree ({loaded.directory}); its build command writes there")
    return warnings


def declared_artifacts(scenario: Scenario) -> list[tuple[str, str, str | None, list[str]]]:
    """``(name, file, build command, sources)`` for every buildable artifact, in scenario order."""
    items: list[tuple[str, str, str | None, list[str]]] = []
    for name, build in scenario.builds.items():
        items.append((f"builds.{name}.runner", build.runner, build.build, build.sources))
        for index, library in enumerate(build.libraries):
            items.append((library_artifact(name, index), library.file, library.build,
                          library.sources))
        for model_name, own in build.models.items():
            items.append((f"builds.{name}.models.{model_name}.file", own.file, own.build,
                          own.sources))
    for name, model in scenario.models.items():
        items.append((f"models.{name}.file", model.file, model.build, model.sources))
        for index, item in enumerate(model.inputs):
            items.append((f"models.{name}.inputs[{index}].file", item.file, item.build,
                          item.sources))
    return items


FORCED = "forced"
"""The reason of a build that ran only because it was forced (``make -B``, ``run --rebuild``)."""


def pending_builds(scenario: Scenario | LoadedScenario, *, force: bool = False,
                   already_built: Collection[Path] = ()) -> list[BuildStep]:
    """The artifacts whose ``build`` command must run now (missing or stale), each once per output
    file.

    ``force``: every artifact with a build command, up to date or not (reason ``forced`` when it
    was), except the files in ``already_built`` (rebuilt earlier by the same batch), which follow
    the normal rule."""
    scenario = scenario.scenario if isinstance(scenario, LoadedScenario) else scenario
    done = {Path(path) for path in already_built}
    steps: list[BuildStep] = []
    seen: set[Path] = set()
    from_commit = {f"builds.{name}.runner" for name in source_builds(scenario)}
    for name, file, command, sources in declared_artifacts(scenario):
        path = Path(file)
        if command is None or path in seen or name in from_commit:
            continue
        source_paths = tuple(Path(source) for source in sources)
        reason = stale_reason(path, source_paths, command)
        if reason is None and force and path not in done:
            reason = FORCED
        if reason is not None:
            seen.add(path)
            steps.append(BuildStep(name, path, expand_build_command(command, path), source_paths,
                                   reason, command))
    return steps


def _tail(path: Path | None) -> list[str]:
    if path is None or not path.is_file():
        return []
    return path.read_text(encoding="utf-8", errors="replace").splitlines()[-_LOG_TAIL:]


def _build_environment() -> dict[str, str]:
    """Our environment, with this fvp_harness importable: ``{fvp_harness}`` promises the running
    harness, also from a source checkout that was never installed (the command runs in the
    scenario's folder, not ours)."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parent.parent)
    parts = [part for part in env.get("PYTHONPATH", "").split(os.pathsep) if part]
    if package_root not in parts:
        env["PYTHONPATH"] = os.pathsep.join([package_root, *parts])
    return env


def _staging(step: BuildStep) -> tuple[Path, str] | None:
    """Where a build writes before its output is renamed into place, and the command that writes
    there: a fresh hidden folder beside the artifact holding a file of the same name (a tool that
    looks at the name or the suffix sees the real one; the rename stays on one file system). None
    when the command does not take ``{output}`` (it writes the artifact itself)."""
    if not step.template or "{output}" not in step.template:
        return None
    folder = Path(tempfile.mkdtemp(prefix=f".{step.path.name}.building-", dir=step.path.parent))
    write_owner(folder)
    staged = folder / step.path.name
    return staged, expand_build_command(step.template, staged, step.source)


def _run_step(step: BuildStep, cwd: Path, log_path: Path | None, timeout: float,
              cancelled: threading.Event | None = None,
              running: dict[BuildStep, ProcessTree] | None = None) -> BuildResult:
    """Run one build command to completion; raise with the log when it fails.

    The command writes a staged file (``_staging``) renamed over the artifact only when it
    succeeded, and the artifact's ``.<name>.build`` record is removed first and written last: a
    build killed halfway (timeout, stop, the harness's death) never leaves a file that looks built.
    ``cancelled`` set (the harness's stop): the build was ended on purpose (``running`` holds the
    live trees for that); ``_BuildCancelled`` is raised."""
    _wait_for_earlier_build(step)
    try:
        step.path.parent.mkdir(parents=True, exist_ok=True)
        _mark_building(step, None)
        staging = _staging(step)
    except OSError as exc:
        raise storage_error(exc.filename or step.path.parent, exc) from exc
    command = staging[1] if staging is not None else step.command
    began = time.monotonic()
    log.info("building %s (%s): %s", step.name, step.reason, step.command)
    try:
        try:
            sink = log_path.open("w", encoding="utf-8") if log_path is not None else None
            if sink is not None:
                sink.write(f"$ {command}\n# cwd: {cwd}\n# reason: {step.reason}\n")
                if staging is not None:
                    sink.write(f"# writes {staging[0]}, renamed to {step.path} when it succeeds\n")
                sink.flush()
        except OSError as exc:
            raise storage_error(log_path, exc) from exc
        try:
            status = _wait_build(step, command, cwd, sink, log_path, timeout, cancelled, running)
        finally:
            if sink is not None:
                with contextlib.suppress(OSError):
                    sink.close()
        seconds = time.monotonic() - began
        if status in (126, 127):
            raise ConfigurationError(
                f"the build command of {step.name} could not run (exit {status}: command not found "
                f"or not executable): {step.command}; fix the scenario's build command",
                log_path=log_path, last_lines=_tail(log_path), stage="build",
            )
        if status != 0:
            raise UnitFailure(
                f"the build command of {step.name} failed with exit status {status}: "
                f"{step.command}", log_path=log_path, last_lines=_tail(log_path), stage="build",
            )
        written = staging[0] if staging is not None else step.path
        if not written.is_file():
            raise ConfigurationError(
                f"the build command of {step.name} succeeded but did not write {step.path}; make "
                "it write {output}",
                log_path=log_path, last_lines=_tail(log_path), stage="build",
            )
        try:
            if staging is not None:
                os.replace(staging[0], step.path)
            if step.template:
                atomic_write(build_record_path(step.path),
                             json.dumps({"command": step.template}) + "\n")
        except OSError as exc:
            raise storage_error(step.path, exc) from exc
    except BaseException:
        # the command wrote the artifact itself: what it left is not a finished build
        if staging is None:
            with contextlib.suppress(OSError):
                step.path.unlink(missing_ok=True)
        if not os.path.lexists(step.path):  # nothing of ours is left to mark
            with contextlib.suppress(OSError):
                build_record_path(step.path).unlink(missing_ok=True)
        raise
    finally:
        if staging is not None:
            shutil.rmtree(staging[0].parent, ignore_errors=True)
    return BuildResult(step, seconds, log_path)


def _mark_building(step: BuildStep, writer: int | None) -> None:
    """The record of a build in flight: this harness and (once started) the build's supervisor.
    Raises OSError."""
    owner = Owner.of()
    process = Owner.of(writer) if writer is not None else None
    building = {"owner": owner.as_json() if owner else None,
                "writer": process.as_json() if process else None}
    atomic_write(build_record_path(step.path),
                 json.dumps({"command": step.template, "building": building}) + "\n")


def _wait_for_earlier_build(step: BuildStep) -> None:
    """An earlier build of this file did not finish (its harness was SIGKILLed, or another harness
    builds it now): wait until its supervisor, and so every process that may still write, is gone
    (``WRITER_WAIT_S``)."""
    data = _record(step.path)
    building = data.get("building") if data is not None else None
    if not isinstance(building, dict):
        return
    owner = Owner.from_json(building.get("owner"))
    writer = Owner.from_json(building.get("writer"))
    if writer is None or (owner is not None and owner.pid == os.getpid()):
        return
    deadline = time.monotonic() + WRITER_WAIT_S
    while writer.alive():
        if time.monotonic() >= deadline:
            by = f" of fvp-harness pid {owner.pid}" if owner is not None else ""
            raise InfrastructureError(
                f"an earlier build of {step.name}{by} still runs (its supervisor, pid "
                f"{writer.pid}, after {WRITER_WAIT_S:.0f} s): {step.path} may still be written; "
                "let it end and run again", stage="build")
        time.sleep(0.05)


class _BuildCancelled(Exception):
    """A build ended because the harness stopped (``build_artifacts`` turns it into
    ``Interrupted``)."""


def _wait_build(step: BuildStep, command: str, cwd: Path, sink: IO[str] | None,
                log_path: Path | None, timeout: float, cancelled: threading.Event | None,
                running: dict[BuildStep, ProcessTree] | None) -> int:
    """Start the command as a ``ProcessTree`` and wait for it (at most ``timeout``); its exit
    status."""
    try:
        tree = ProcessTree.start(  # the user's own build command: a shell string by design
            ["/bin/sh", "-c", command], label=f"build {step.name}", cwd=cwd,
            env=_build_environment(),
            stdout=sink if sink is not None else subprocess.DEVNULL, stderr=subprocess.STDOUT)
    except OSError as exc:
        raise ConfigurationError(
            f"cannot run the build command of {step.name} ({exc}): {step.command}",
            log_path=log_path, stage="build",
        ) from exc
    if running is not None:
        running[step] = tree
    try:
        try:
            _mark_building(step, tree.pid)
        except OSError as exc:
            raise storage_error(build_record_path(step.path), exc) from exc
        if cancelled is not None and cancelled.is_set():  # stopped while it was starting
            raise _BuildCancelled(step.name)
        status = tree.wait(timeout)
        if cancelled is not None and cancelled.is_set():
            raise _BuildCancelled(step.name)
        if status is None:
            raise UnitFailure(
                f"the build command of {step.name} did not finish in {timeout:.0f} s and was ended "
                f"with every process it started: {step.command}; pass --timeout-scale to allow "
                "more time", log_path=log_path, last_lines=_tail(log_path), stage="build",
            )
        return status
    finally:
        tree.end()  # also a finished build's strays: nothing it started writes on after it
        if running is not None:
            running.pop(step, None)


def build_artifacts(
    loaded: LoadedScenario,
    *,
    log_path_for: Callable[[BuildStep], Path] | None = None,
    timeout: float = BUILD_TIMEOUT_S,
    jobs: int | None = None,
    on_built: Callable[[BuildResult], None] | None = None,
    force: bool = False,
    already_built: Collection[Path] = (),
    stop: threading.Event | None = None,
) -> tuple[list[BuildResult], dict[str, ArtifactState]]:
    """Build what is missing or stale (with ``force``: every artifact that has a build command,
    except the files in ``already_built``), then hash every artifact.

    ``log_path_for(step)`` says where each command's output goes (None: discarded). ``jobs`` caps
    parallel builds (default: CPU count, at most 4). ``on_built`` is called after each success
    (progress). Returns the builds that ran and ``artifact_hashes`` of the scenario afterwards. The
    first failure is raised after the builds already running have finished; builds not yet started
    are not started. ``stop`` set (the harness's first Ctrl-C or SIGTERM) or a KeyboardInterrupt
    ends the builds in flight at once (their artifacts are left as they were before) and raises
    ``Interrupted`` (resp. the KeyboardInterrupt).
    """
    check_replaceable(loaded, force=force)
    results: list[BuildResult] = []
    for name in source_builds(loaded.scenario):  # one at a time: each is a whole tree's build
        if stop is not None and stop.is_set():
            raise Interrupted("stopped before the builds from commits")
        built = build_at_commit(loaded, name, log_path_for=log_path_for, timeout=timeout,
                                force=force)
        if built is not None:
            results.append(built)
            if on_built is not None:
                on_built(built)
    steps = pending_builds(loaded, force=force, already_built=already_built)
    if steps:
        collect({step.path.parent for step in steps}, STAGING_PATTERN)
        workers = max(1, min(jobs or min(4, os.cpu_count() or 1), len(steps)))
        failures: list[BaseException] = []

        cancelled = threading.Event()
        running: dict[BuildStep, ProcessTree] = {}

        def one(step: BuildStep) -> BuildResult | None:
            if failures or cancelled.is_set():
                return None
            target = log_path_for(step) if log_path_for is not None else None
            try:
                result = _run_step(step, loaded.directory, target, timeout, cancelled, running)
            except BaseException as exc:
                failures.append(exc)
                raise
            if on_built is not None:
                on_built(result)
            return result

        def cancel(grace: float) -> None:
            cancelled.set()
            for tree in list(running.values()):
                tree.end(grace)

        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="build")
        try:
            futures = [pool.submit(one, step) for step in steps]
            while not all(future.done() for future in futures):
                if stop is not None and stop.is_set():
                    cancel(END_GRACE_S)  # the harness's stop: end the builds, do not wait for them
                    break
                # woken by the next build to end, or after 0.05 s at the latest: a Ctrl-C reaches
                # this (main) thread at once, and a build's end is seen when it happens, not at the
                # next tick of a sleep
                wait([future for future in futures if not future.done()], timeout=0.05,
                     return_when=FIRST_COMPLETED)
        except KeyboardInterrupt:
            cancel(0.5)
            raise
        finally:
            pool.shutdown(wait=True)  # bounded: every build is done or was ended above
        if cancelled.is_set():
            raise Interrupted("stopped during the builds; the builds in flight were ended and left "
                              "no artifact (run again to build them)")
        for future in futures:
            # collected in failures; the first one is raised below
            with contextlib.suppress(BaseException):
                done = future.result()
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


def source_builds(scenario: Scenario) -> list[str]:
    """The builds whose runner is built from a commit: a build command and a ``source`` in a local
    repository."""
    return [
        name
        for name, build in scenario.builds.items()
        if build.build and build.source is not None and is_local_repository(build.source.repository)
    ]


def source_repository(loaded: LoadedScenario, name: str) -> Path:
    """The local repository of ``builds.<name>.source`` (relative to the scenario's folder, ``~``
    expanded)."""
    source = loaded.scenario.builds[name].source
    assert source is not None
    path = Path(source.repository).expanduser()
    return path if path.is_absolute() else (loaded.directory / path).resolve()


def build_at_commit(
    loaded: LoadedScenario,
    name: str,
    *,
    log_path_for: Callable[[BuildStep], Path] | None = None,
    timeout: float = BUILD_TIMEOUT_S,
    force: bool = False,
    cache: Path | None = None,
) -> BuildResult | None:
    """Make ``builds.<name>.runner`` the build of its ``source`` commit (``run.source_build``):
    built once per (tree, command) in the cache, then copied to the runner path with a build record
    naming the tree. Returns the build when one ran, None when the cache had it. A failed build is
    cached and raised again (``UnitFailure``) until ``force``."""
    build = loaded.scenario.builds[name]
    assert build.source is not None and build.build is not None
    repository = source_repository(loaded, name)
    commit = resolve_commit(repository, build.source.commit, what=f"builds.{name}.source.commit")
    tree = tree_of(repository, commit)
    runner = Path(build.runner)
    cached = CachedBuild.of(cache or default_cache_dir(), tree, build.build, runner.name)
    if force:
        cached.forget()
        with contextlib.suppress(OSError):
            cached.artifact.unlink(missing_ok=True)
    failure = cached.failure()
    if failure is not None:
        raise UnitFailure(
            f"builds.{name}: commit {commit[:12]} (tree {tree[:12]}) did not build (cached in "
            f"{cached.folder}; --rebuild builds it again): {failure}",
            stage="build",
        )
    result: BuildResult | None = None
    if not cached.artifact.is_file():
        checkout = source_checkout(repository, commit, cache or default_cache_dir())
        step = BuildStep(
            f"builds.{name}.runner",
            cached.artifact,
            expand_build_command(build.build, cached.artifact, checkout),
            (),
            f"commit {commit[:12]} (tree {tree[:12]}) not built yet",
            build.build,
            checkout,
        )
        target = log_path_for(step) if log_path_for is not None else None
        try:
            result = _run_step(step, checkout, target, timeout)
        except UnitFailure as exc:
            cached.remember_failure(exc)
            raise
    record = {"command": build.build, "source": {"commit": commit, "tree": tree}}
    if force or _record(runner) != record or not runner.is_file():
        try:
            runner.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(
                dir=runner.parent, prefix=f".{runner.name}.", delete=False
            ) as tmp:
                staged = Path(tmp.name)
            shutil.copy2(cached.artifact, staged)
            os.replace(staged, runner)
            atomic_write(build_record_path(runner), json.dumps(record) + "\n")
        except OSError as exc:
            raise storage_error(runner, exc) from exc
    return result


def built_from_commit(runner: Path) -> tuple[str, str] | None:
    """``(commit, tree)`` a runner was built from (its build record, ``build_at_commit``), or
    None."""
    data = _record(runner)
    source = data.get("source") if data is not None else None
    if (
        isinstance(source, dict)
        and isinstance(source.get("commit"), str)
        and isinstance(source.get("tree"), str)
    ):
        return source["commit"], source["tree"]
    return None


def artifact_digests(states: Mapping[str, ArtifactState]) -> dict[str, str | None]:
    """``name -> sha256`` of every artifact, for the manifest (``store.KEY_METADATA`` compares
    them)."""
    return {name: state.sha256 for name, state in sorted(states.items())}

