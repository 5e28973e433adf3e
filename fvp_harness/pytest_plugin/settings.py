"""What a test run asked of the plugin: options and ini keys read once into ``PluginSettings``, and
which scenario each test runs on (``ScenarioSpec``, from the settings and the ``fvp`` marker).

Rules, and why:

- The command line wins over the ini file; ``--fvp-set`` adds to ``fvp_set`` (later overrides win,
  as with ``fvp-harness run --set``). Paths from the command line are relative to the folder pytest
  was started in, paths in the ini file to that file's folder, a marker's ``scenario`` to the test
  file's folder: each where its author wrote it.
- A bad value is a ``pytest.UsageError`` naming the option and what is wrong, before any test runs.
- Specs are interned (one object per distinct scenario, overrides and binary): pytest keeps a
  higher-scoped fixture between tests whose parameter is the *same object*, so equal specs share one
  booted instance.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import pytest
import yaml

__all__ = [
    "MARKER",
    "MARKER_HELP",
    "SCOPES",
    "MarkerError",
    "PluginSettings",
    "ScenarioSpec",
    "Scope",
    "SpecTable",
    "override_text",
]

Scope = Literal["session", "package", "module", "class", "function"]
SCOPES: tuple[Scope, ...] = ("session", "package", "module", "class", "function")

MARKER = "fvp"
MARKER_HELP = ("fvp(scenario=None, set=None): this test's own FVP scenario (path relative to the "
               "test file) and overrides ({'run.iterations': 5}); the test is skipped when no FVP "
               "is configured (fvp-harness)")

DEFAULT_RESULTS = Path("results") / "pytest"
"""Under the rootdir, unless --fvp-results or fvp_results says otherwise."""


class MarkerError(ValueError):
    """An ``fvp`` marker with arguments it does not take: an error of the tests it marks."""


def override_text(path: str, value: Any) -> str:
    """``PATH=VALUE`` for the scenario loader, the value written as one line of YAML so that it
    reads back as the same value (``'5'`` stays a string, ``5`` a number, lists and mappings keep
    their shape)."""
    if not isinstance(path, str) or not path.strip():
        raise TypeError("override field names must be dotted paths like 'run.iterations', not "
                        f"{path!r}")
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 30, allow_unicode=True)
    if text.endswith("\n...\n"):  # a plain scalar ends its document explicitly
        text = text[: -len("\n...\n")]
    return f"{path}={text.strip()}"


@dataclass(frozen=True)
class ScenarioSpec:
    """A scenario file with overrides and an FVP binary: what a test's FVP fixtures boot and run.
    ``path`` None: no scenario was configured."""

    path: Path | None
    overrides: tuple[str, ...] = ()
    binary: str | None = None

    @property
    def label(self) -> str:
        """Short text for test ids and messages: ``smoke`` or ``smoke,run.iterations=5`` (no spaces,
        so a test id made of it can be given on the command line)."""
        name = self.path.stem if self.path is not None else "no-scenario"
        return ",".join([name, *(text.replace(" ", "") for text in self.overrides)])


class SpecTable:
    """Interns specs: equal (path, overrides, binary) give the same object (see the module
    docstring)."""

    def __init__(self) -> None:
        self._specs: dict[tuple[Path | None, tuple[str, ...], str | None], ScenarioSpec] = {}

    def get(self, path: Path | None, overrides: Iterable[str] = (),
            binary: str | None = None) -> ScenarioSpec:
        key = (path, tuple(overrides), binary)
        spec = self._specs.get(key)
        if spec is None:
            spec = self._specs[key] = ScenarioSpec(*key)
        return spec


def _ini_folder(config: pytest.Config) -> Path:
    return config.inipath.parent if config.inipath is not None else config.rootpath


def _absolute(text: str, base: Path) -> Path:
    return Path(os.path.normpath(base / Path(text).expanduser()))


@dataclass(frozen=True)
class PluginSettings:
    """Everything the options and ini keys say, checked. ``results`` is this process's folder: under
    xdist each worker gets ``<results>/<worker id>`` so workers never share a results folder or a
    log."""

    scenario: Path | None
    binary: str | None
    overrides: tuple[str, ...]
    results_base: Path
    worker: str | None
    timeout_scale: float
    allow_sim: bool
    scope: Scope

    @property
    def results(self) -> Path:
        return self.results_base / self.worker if self.worker else self.results_base

    @classmethod
    def from_config(cls, config: pytest.Config) -> PluginSettings:
        """Read and check the options (raises ``pytest.UsageError`` naming the bad one)."""
        here = config.invocation_params.dir
        ini_dir = _ini_folder(config)
        option = config.getoption
        scenario_text = option("fvp_scenario", None)
        scenario = (_absolute(scenario_text, here) if scenario_text
                    else _absolute(config.getini("fvp_scenario"), ini_dir)
                    if config.getini("fvp_scenario") else None)
        binary = option("fvp_binary", None) or config.getini("fvp_binary") or None
        if binary is not None and binary != "sim" and ("/" in binary or binary.startswith(".")):
            base = here if option("fvp_binary", None) else ini_dir
            binary = str(_absolute(binary, base))  # a path, not a name looked up on PATH
        overrides = (*config.getini("fvp_set"), *(option("fvp_set", None) or ()))
        for text in overrides:
            if "=" not in text or not text.split("=", 1)[0].strip():
                raise pytest.UsageError(f"--fvp-set / fvp_set {text!r}: expected PATH=VALUE, e.g. "
                                        "run.iterations=5")
        results_text = option("fvp_results", None)
        results = (_absolute(results_text, here) if results_text
                   else _absolute(config.getini("fvp_results"), ini_dir)
                   if config.getini("fvp_results") else config.rootpath / DEFAULT_RESULTS)
        scale = option("fvp_timeout_scale", None)
        if scale is None and config.getini("fvp_timeout_scale"):
            text = config.getini("fvp_timeout_scale")
            try:
                scale = float(text)
            except ValueError:
                raise pytest.UsageError(f"ini fvp_timeout_scale = {text!r}: not a number") from None
            if not scale > 0:
                raise pytest.UsageError(f"ini fvp_timeout_scale = {text!r}: must be positive")
        scope_text = (config.getini("fvp_target_scope") or "session").strip()
        if scope_text not in SCOPES:
            raise pytest.UsageError(f"ini fvp_target_scope = {scope_text!r}: expected one of "
                                    f"{', '.join(SCOPES)}")
        # set by pytest-xdist in its workers only
        worker_input = getattr(config, "workerinput", None)
        worker = str(worker_input["workerid"]) if isinstance(worker_input, Mapping) else None
        return cls(scenario=scenario, binary=binary, overrides=tuple(overrides),
                   results_base=results, worker=worker, timeout_scale=float(scale or 1.0),
                   allow_sim=bool(option("fvp_allow_sim", None) or config.getini("fvp_allow_sim")),
                   scope=cast(Scope, scope_text))

    def marker_spec(self, table: SpecTable, node: pytest.Item | Any,
                    default: ScenarioSpec) -> ScenarioSpec:
        """The spec of a test: ``default`` changed by its ``fvp`` markers (closest first: the
        nearest ``scenario`` wins, ``set`` entries merge with the nearest winning). Raises
        ``MarkerError`` for a bad marker."""
        markers = list(node.iter_markers(MARKER))
        if not markers:
            return default
        scenario: Path | None = None
        merged: dict[str, Any] = {}
        node_path = getattr(node, "path", None)
        test_dir = Path(node_path).parent if node_path is not None else Path.cwd()
        for mark in reversed(markers):  # farthest first, so the nearest one is applied last
            path, values = _marker_arguments(mark, getattr(node, "nodeid", "?"))
            if path is not None:
                scenario = _absolute(path, test_dir)
            merged.update(values)
        extra = [override_text(name, value) for name, value in merged.items()]
        if scenario is None and not extra:
            return default
        return table.get(scenario or default.path, (*default.overrides, *extra), default.binary)


def _marker_arguments(mark: pytest.Mark, where: str) -> tuple[str | None, dict[str, Any]]:
    known = {"scenario", "set"}
    unknown = sorted(set(mark.kwargs) - known)
    if unknown or len(mark.args) > 1:
        raise MarkerError(f"{where}: @pytest.mark.fvp takes scenario=PATH and set={{FIELD: VALUE}} "
                          f"(got {', '.join(unknown) or f'{len(mark.args)} positional arguments'})")
    path = mark.kwargs.get("scenario", mark.args[0] if mark.args else None)
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise MarkerError(f"{where}: @pytest.mark.fvp scenario must be a path, not {path!r}")
    values = mark.kwargs.get("set") or {}
    if not isinstance(values, Mapping):
        raise MarkerError(f"{where}: @pytest.mark.fvp set must be a mapping like "
                          "{'run.iterations': 5}, "
                                f"not {values!r}")
    bad = [key for key in values if not isinstance(key, str) or not key.strip()]
    if bad:
        raise MarkerError(f"{where}: @pytest.mark.fvp set keys must be dotted field names, not "
                          f"{bad!r}")
    return (os.fspath(path) if path is not None else None), dict(values)
