"""``fvp_deployed``: the scenario's builds and models built on the host and deployed into the shared
instance once, their guest paths by name; and the build step every fixture shares.

Builds run through ``run.artifacts.build_artifacts`` (missing or stale files only, logs in
``builds/<stem>/``) under a lock file in the plugin's results folder shared by all pytest-xdist
workers: two workers must not run the same build command into the same file at once, and the second
finds the files up to date. Deploys go through ``run.deploy.Deployer`` (content-addressed,
sha256-checked), so what ``fvp_deployed`` put into an instance is skipped by an A/B run on the same
instance. An instance booted again (after a lost console) is deployed to again before the next test
that uses ``fvp_deployed`` (``refresh``).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from fvp_harness.errors import ConfigurationError
from fvp_harness.pytest_plugin.target import SharedTarget
from fvp_harness.run.artifacts import (
    BUILD_TIMEOUT_S,
    BuildStep,
    build_artifacts,
    declared_artifacts,
)
from fvp_harness.run.deploy import Deployer
from fvp_harness.scenario.load import LoadedScenario

# POSIX; elsewhere builds of parallel workers are not serialised (xdist on Windows is not supported)
try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["BUILD_LOCK", "DeployedArtifacts", "build_locked", "shared_lock"]

log = logging.getLogger(__name__)

BUILD_LOCK = ".fvp-build.lock"
"""The lock file (in the plugin's results folder, above the per-worker folders) that serialises
builds."""

_POLL_S = 0.2


@contextlib.contextmanager
def shared_lock(path: Path, *, timeout: float, what: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created), waiting at most ``timeout`` seconds for
    another process that holds it; the timeout's error says what waited and which file to look
    at."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:  # pragma: no cover
        yield
        return
    with open(path, "a+") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ConfigurationError(
                        f"{what}: waited {timeout:.0f} s for another pytest process holding {path} "
                        "(a build in another xdist worker?); raise --fvp-timeout-scale, or remove "
                        "the lock file if no process uses it") from None
                time.sleep(_POLL_S)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def build_locked(scenario: LoadedScenario, *, lock: Path, logs: Path, timeout_scale: float) -> None:
    """Build the scenario's missing or stale artifacts under the shared build lock; the output of
    each build command goes to ``logs/<artifact>.log``."""
    timeout = BUILD_TIMEOUT_S * timeout_scale

    def log_for(step: BuildStep) -> Path:
        logs.mkdir(parents=True, exist_ok=True)
        return logs / step.log_name

    with shared_lock(lock, timeout=timeout, what=f"building the artifacts of {scenario.stem}"):
        results, _ = build_artifacts(scenario, log_path_for=log_for, timeout=timeout)
    for result in results:
        log.info("built %s in %.1f s", result.step.name, result.seconds)


class DeployedArtifacts:
    """The scenario's artifacts in the shared instance: ``runner(build)``, ``model(name)``,
    ``inputs(model)`` give guest paths; ``paths`` maps every declared name (``builds.after.runner``,
    ``models.ds_cnn.file``, ``models.ds_cnn.inputs[0].file``) to its guest path, and
    ``deployed[name]`` reads it."""

    def __init__(self, target: SharedTarget) -> None:
        self.target = target
        self.scenario = target.scenario
        self.paths: dict[str, str] = {}
        self.local: dict[str, Path] = {}
        """Declared name -> host file."""
        self.guest_dir = ""
        self.generation = 0

    def __repr__(self) -> str:
        return f"<DeployedArtifacts {self.scenario.stem}: {', '.join(self.paths) or 'nothing yet'}>"

    def refresh(self) -> None:
        """Deploy into the current instance unless that was done already (a new instance gets
        everything)."""
        if self.generation == self.target.generation and self.paths:
            return
        scenario = self.scenario.scenario
        deployer = Deployer(self.target.target, method=scenario.deploy.method,
                            guest_dir=scenario.deploy.guest_dir)
        runners = {f"builds.{name}.runner" for name in scenario.builds}
        began = time.monotonic()
        paths: dict[str, str] = {}
        local: dict[str, Path] = {}
        for name, file, _, _ in declared_artifacts(scenario):
            path = Path(file)
            paths[name] = deployer.deploy(path, executable=name in runners).guest_path
            local[name] = path
        self.paths, self.local, self.guest_dir = paths, local, deployer.guest_dir
        self.generation = self.target.generation
        log.info("deployed %d artifact(s) of %s into %s in %.1f s", len(paths), self.scenario.stem,
                 self.target.name, time.monotonic() - began)

    def __getitem__(self, name: str) -> str:
        try:
            return self.paths[name]
        except KeyError:
            raise KeyError(f"no artifact named {name!r} in {self.scenario.stem}; known: "
                           f"{', '.join(self.paths)}") from None

    def runner(self, build: str) -> str:
        """The guest path of a build's runner."""
        self._known("build", build, self.scenario.scenario.builds)
        return self.paths[f"builds.{build}.runner"]

    def model(self, name: str) -> str:
        """The guest path of a model's file."""
        self._known("model", name, self.scenario.scenario.models)
        return self.paths[f"models.{name}.file"]

    def inputs(self, model: str) -> list[str]:
        """The guest paths of a model's input files, in the scenario's order."""
        self._known("model", model, self.scenario.scenario.models)
        count = len(self.scenario.scenario.models[model].inputs)
        return [self.paths[f"models.{model}.inputs[{index}].file"] for index in range(count)]

    def _known(self, kind: str, name: str, known: Mapping[str, object]) -> None:
        if name not in known:
            raise KeyError(f"{self.scenario.stem} has no {kind} named {name!r} (it has: "
                           f"{', '.join(known)})")
