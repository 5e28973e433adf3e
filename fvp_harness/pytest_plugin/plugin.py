"""The active plugin: its state for one pytest process (``FvpState``) and its hooks (``FvpHooks``).

``activate`` runs in ``pytest_configure`` of a run that asked for the plugin: it checks the options
(a bad one is a usage error before anything runs), registers the ``fvp`` marker, the hooks and the
fixtures (``fixtures``). Before that nothing is registered, so a run that did not ask has no
``fvp_*`` fixture and no ``fvp`` marker.

What the hooks do, and why there:

- **collection**: a test that uses an FVP fixture or carries the ``fvp`` marker gets its scenario
  from the options and its markers; it is *skipped* with the reason when there is no scenario, or
  when the scenario would run on the embedded simulator and the simulator was not chosen (``--fvp
  sim``) or allowed (``--fvp-allow-sim``): a simulated run must never pass for a measurement on a
  model nobody configured. A test whose marker names another scenario is parametrized with it
  (indirectly, at the fixtures' scope), so tests of one scenario share one instance.
- **setup** (after the fixtures): the shared instance is booted again if an earlier test lost it,
  and the deployed artifacts are put into a new instance, so a boot that fails is an *error* of the
  test that needed it.
- **reports**: each ``fvp_ab`` run's markdown report is attached to the test as user properties
  (``fvp_ab_report``, ``fvp_ab_results``, ``fvp_ab_verdict``: ``--junit-xml`` writes them) and
  printed in a terminal summary section with every boot of the run; pytest-xdist workers send their
  boots to the controller (``workeroutput``).
- **unconfigure**: any instance still open is closed (fixture teardown normally did it).
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from fvp_harness.errors import HarnessError
from fvp_harness.pytest_plugin import fixtures
from fvp_harness.pytest_plugin.ab import AbResult, AbRunner
from fvp_harness.pytest_plugin.deployed import BUILD_LOCK, DeployedArtifacts, build_locked
from fvp_harness.pytest_plugin.options import OPTIONS_PLUGIN
from fvp_harness.pytest_plugin.settings import (
    MARKER,
    MARKER_HELP,
    MarkerError,
    PluginSettings,
    ScenarioSpec,
    SpecTable,
)
from fvp_harness.pytest_plugin.target import BootLog, BootRecord, SharedTarget
from fvp_harness.scenario.load import LoadedScenario, load_scenario

__all__ = [
    "AB_REPORT",
    "AB_RESULTS",
    "AB_VERDICT",
    "FVP_FIXTURES",
    "TAIL_LINES",
    "WORKER_OUTPUT",
    "FvpHooks",
    "FvpState",
    "activate",
    "failure_text",
    "needs_fvp",
    "state_of",
]

log = logging.getLogger(__name__)

FVP_FIXTURES = frozenset({"fvp_target", "fvp_deployed", "fvp_ab", "fvp_scenario"})
"""A test using any of these needs an FVP (and is skipped when none is configured)."""

AB_RESULTS = "fvp_ab_results"
AB_VERDICT = "fvp_ab_verdict"
AB_REPORT = "fvp_ab_report"
"""User property names of an A/B run (results folder, run verdict, the markdown report), in this
order per run."""

WORKER_OUTPUT = "fvp_harness"
"""Key of a pytest-xdist worker's ``workeroutput`` with its boots."""

HOOKS_NAME = "fvp_harness.pytest_plugin.hooks"
FIXTURES_NAME = "fvp_harness.pytest_plugin.fixtures"

_STATE: pytest.StashKey[FvpState] = pytest.StashKey()
"""The plugin's state in ``config.stash`` (``fixtures.STATE`` holds the same object for the
fixtures)."""


def state_of(config: pytest.Config) -> FvpState:
    return config.stash[_STATE]


def needs_fvp(item: pytest.Item) -> bool:
    """True for a test that uses an FVP fixture (directly or through its own fixtures) or is marked
    ``fvp``."""
    return (bool(FVP_FIXTURES & set(getattr(item, "fixturenames", ()))) or
            item.get_closest_marker(MARKER) is not None)


TAIL_LINES = 12
"""Log lines a failure shows in a test report (the log itself has them all)."""


def failure_text(what: str, exc: BaseException) -> str:
    """A harness failure for a test report: what failed, the message with its log, the log's last
    lines."""
    text = f"{what}: {exc}" if isinstance(exc,
                                          HarnessError) else f"{what}: {type(exc).__name__}: {exc}"
    tail = exc.last_lines[-TAIL_LINES:] if isinstance(exc, HarnessError) else []
    if tail:
        text += f"\nlast {len(tail)} log lines:\n" + "\n".join(f"  | {line}" for line in tail)
    return text


def _fail(text: str) -> NoReturn:
    """End the test's setup as an error showing ``text`` only (no traceback of the plugin). Called
    outside ``except`` blocks so that no 'during handling of the above exception' chain is shown."""
    pytest.fail(text, pytrace=False)


def activate(config: pytest.Config) -> None:
    """Make the plugin active in this run (see the module docstring)."""
    if not config.pluginmanager.hasplugin(OPTIONS_PLUGIN):
        raise pytest.UsageError("fvp_harness.pytest_plugin needs its options: do not block "
                                f"{OPTIONS_PLUGIN}")
    settings = PluginSettings.from_config(config)
    state = FvpState(settings, config.invocation_params.dir)
    if settings.scenario is not None:  # a wrong --fvp-scenario is a usage error, before any test
        try:
            state.load(state.default_spec, check_files=False)
        except HarnessError as exc:
            raise pytest.UsageError(failure_text("--fvp-scenario / fvp_scenario "
                                                 f"{settings.scenario}", exc)) from exc
    config.addinivalue_line("markers", MARKER_HELP)
    config.stash[_STATE] = state
    config.stash[fixtures.STATE] = state
    config.pluginmanager.register(FvpHooks(state, config), HOOKS_NAME)
    config.pluginmanager.register(fixtures, FIXTURES_NAME)
    log.debug("fvp-harness pytest plugin active: %s", settings)


class FvpState:
    """What the plugin knows in one pytest process: settings, interned scenario specs, loaded
    scenarios, every boot, the open instances and the test running now."""

    def __init__(self, settings: PluginSettings, here: Path | None = None) -> None:
        self.settings = settings
        self.here = here
        """Where pytest was started: the summary shows paths relative to it."""
        self.specs = SpecTable()
        self.default_spec = self.specs.get(settings.scenario, settings.overrides, settings.binary)
        self.boots = BootLog()
        self.handles: list[SharedTarget] = []
        self.current_item: pytest.Item | None = None
        self._loaded: dict[tuple[ScenarioSpec, bool], LoadedScenario | HarnessError] = {}
        self.worker_boots: dict[str, list[BootRecord]] = {}
        self.ab_runs: list[tuple[str, dict[str, str]]] = []
        """(test id, {property: value}) of every A/B run reported (also by xdist workers), in report
        order."""

    # -- folders -----------------------------------------------------------------------------------

    @property
    def instances_dir(self) -> Path:
        return self.settings.results / "instances"

    @property
    def ab_dir(self) -> Path:
        return self.settings.results / "ab"

    # -- scenarios ---------------------------------------------------------------------------------

    def spec_for(self, node: Any) -> ScenarioSpec:
        return self.settings.marker_spec(self.specs, node, self.default_spec)

    def load(self, spec: ScenarioSpec, *, check_files: bool = True) -> LoadedScenario:
        """The loaded scenario of ``spec`` (once per process); raises its ``ScenarioError`` (every
        time)."""
        key = (spec, check_files)
        found = self._loaded.get(key)
        if found is None:
            if spec.path is None:
                raise pytest.UsageError("no FVP scenario configured")
            try:
                found = load_scenario(spec.path, spec.overrides, fvp_binary=spec.binary,
                                      check_files=check_files)
            except HarnessError as exc:
                found = exc
            self._loaded[key] = found
        if isinstance(found, HarnessError):
            raise found
        return found

    def skip_reason(self, spec: ScenarioSpec) -> str | None:
        """Why a test of ``spec`` cannot run here (no scenario; the simulator neither chosen nor
        allowed), or None. A scenario that does not load is no reason to skip: the test errors with
        the problems."""
        if spec.path is None:
            return ("no FVP scenario configured: pass --fvp-scenario PATH (ini fvp_scenario) or "
                    "mark the test @pytest.mark.fvp(scenario=PATH)")
        try:
            scenario = self.load(spec, check_files=False).scenario
        except HarnessError:
            return None
        if scenario.target == "host" or not scenario.fvp.is_sim or self.settings.allow_sim:
            return None
        chosen = (spec.binary == "sim" or
                  any(text.split("=", 1)[0].strip() == "fvp.binary" for text in spec.overrides))
        if chosen:
            return None
        return (f"no FVP configured for {spec.label}: its fvp.binary is the embedded simulator, "
                "which is not allowed here; pass --fvp PATH (ini fvp_binary) to use a model, or "
                "--fvp sim / --fvp-allow-sim (ini fvp_allow_sim = true) to run on the simulator")

    def fixture_scenario(self, spec: ScenarioSpec) -> LoadedScenario:
        """``load`` for a fixture: a scenario that does not load fails the fixture (an error of its
        tests)."""
        reason = self.skip_reason(spec)
        if reason is not None:
            pytest.skip(reason)
        try:
            return self.load(spec)
        except HarnessError as exc:
            failure = failure_text(f"scenario {spec.label}", exc)
        _fail(failure)

    # -- instances, builds, A/B --------------------------------------------------------------------

    def boot(self, scenario: LoadedScenario) -> SharedTarget:
        handle = SharedTarget(scenario, instances_dir=self.instances_dir, boots=self.boots,
                              timeout_scale=self.settings.timeout_scale)
        self.handles.append(handle)
        try:
            handle.boot()
        except HarnessError as exc:
            tries = scenario.scenario.run.retries + 1
            failure = failure_text(f"the FVP instance of {scenario.stem} did not boot "
                                   f"({tries} {'try' if tries == 1 else 'tries'}, run.retries + 1)",
                                   exc)
        else:
            return handle
        handle.close()
        _fail(failure)

    def build(self, scenario: LoadedScenario) -> None:
        build_locked(scenario, lock=self.settings.results_base / BUILD_LOCK,
                     logs=self.settings.results / "builds" / scenario.stem,
                     timeout_scale=self.settings.timeout_scale)

    def deployed(self, target: SharedTarget) -> DeployedArtifacts:
        try:
            self.build(target.scenario)
            deployed = DeployedArtifacts(target)
            deployed.refresh()
        except HarnessError as exc:
            failure = failure_text(f"the artifacts of {target.scenario.stem} could not be built "
                                   "and deployed", exc)
        else:
            return deployed
        _fail(failure)

    def ab_runner(self, spec: ScenarioSpec, target: SharedTarget) -> AbRunner:
        return AbRunner(spec, target, load=self.load, respec=self.specs.get, build=self.build,
                        results=self.ab_dir,
                        timeout_scale=self.settings.timeout_scale, boots=self.boots,
                        on_result=self.record_ab)

    def record_ab(self, result: AbResult) -> None:
        """Attach an A/B run to the test running now: user properties (junit-xml) and so the
        terminal summary."""
        item = self.current_item
        if item is None:
            log.warning("A/B run outside a test: its report is only in %s", result.results_dir)
            return
        item.user_properties.extend([(AB_RESULTS, str(result.results_dir)),
                                     (AB_VERDICT, result.verdict), (AB_REPORT, result.markdown)])

    def close_all(self) -> None:
        for handle in self.handles:
            handle.close()

    # -- the summary -------------------------------------------------------------------------------

    def all_boots(self) -> Iterator[tuple[str, BootRecord]]:
        own = self.settings.worker or ""
        for record in self.boots.records:
            yield own, record
        for worker, records in sorted(self.worker_boots.items()):
            for record in records:
                yield worker, record

    def shown(self, path: str) -> str:
        """``path`` relative to where pytest was started, when it is below it."""
        if self.here is not None:
            try:
                return str(Path(path).relative_to(self.here))
            except ValueError:
                pass
        return path

    def summary_lines(self) -> list[str]:
        boots = list(self.all_boots())
        if not boots and not self.ab_runs:
            return []
        ok = [(worker, record) for worker, record in boots if record.error is None]
        failed = len(boots) - len(ok)
        workers = sorted({worker for worker, _ in ok if worker})
        per_worker = (f" ({', '.join(f'{w}: {sum(1 for x, _ in ok if x == w)}' for w in workers)})"
                      if workers else "")
        lines = [f"{len(ok)} FVP instance{'' if len(ok) == 1 else 's'} booted{per_worker}"
                 + (f", {failed} boot attempt{'' if failed == 1 else 's'} failed" if failed
                    else "")]
        for worker, record in boots:
            where = f"{worker}: " if worker else ""
            if record.error is None:
                logs = self.shown(record.log_dir)
                lines.append(f"  {where}{record.name} booted in {record.seconds:.1f} s (logs: "
                             f"{logs})")
            else:
                first = record.error.strip().splitlines()[0] if record.error.strip() else "failed"
                lines.append(f"  {where}{record.name} FAILED after {record.seconds:.1f} s: {first}")
        for nodeid, properties in self.ab_runs:
            lines += ["", f"A/B run in {nodeid}: {properties.get(AB_VERDICT, '?')} "
                          f"(results: {self.shown(properties.get(AB_RESULTS, '?'))})", "",
                      properties.get(AB_REPORT, "").rstrip()]
        return lines


def _ab_runs(properties: Iterable[tuple[str, object]]) -> list[dict[str, str]]:
    """Group a test's user properties into A/B runs (each starts with its results folder)."""
    runs: list[dict[str, str]] = []
    for name, value in properties:
        if name == AB_RESULTS:
            runs.append({})
        if name in (AB_RESULTS, AB_VERDICT, AB_REPORT) and runs:
            runs[-1][name] = str(value)
    return runs


class FvpHooks:
    """The plugin's hooks (see the module docstring); registered only when the plugin is active."""

    def __init__(self, state: FvpState, config: pytest.Config) -> None:
        self.state = state
        self.config = config

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "_fvp_spec" not in metafunc.fixturenames:
            return
        try:
            spec = self.state.spec_for(metafunc.definition)
        except MarkerError:
            return  # the test errors in its setup, with the message
        # the test's own scenario: its own instance, shared by its equals
        if spec is not self.state.default_spec:
            metafunc.parametrize("_fvp_spec", [spec], indirect=True, ids=[spec.label])

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            if needs_fvp(item):
                try:
                    reason = self.state.skip_reason(self.state.spec_for(item))
                except MarkerError:
                    continue  # the test errors in its setup, with the message
                if reason is not None:
                    item.add_marker(pytest.mark.skip(reason=reason))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, object, object]:
        self.state.current_item = item
        problem = None
        if needs_fvp(item):
            try:
                self.state.spec_for(item)
            except MarkerError as exc:
                problem = str(exc)
        if problem is not None:
            _fail(problem)  # before any fixture boots the options' scenario instead
        result = yield  # the fixtures (and the skip marks of collection) first
        if needs_fvp(item) and FVP_FIXTURES.isdisjoint(getattr(item, "fixturenames", ())):
            # marker only: a broken scenario still errors
            self.state.fixture_scenario(self.state.spec_for(item))
        values = getattr(item, "funcargs", {})
        failure = None
        target = values.get("fvp_target")
        deployed = values.get("fvp_deployed")
        try:
            if isinstance(target, SharedTarget):
                target.ensure_ready()
            if isinstance(deployed, DeployedArtifacts):
                deployed.refresh()
        except HarnessError as exc:
            failure = failure_text("the lost FVP instance could not be replaced (boot and deploy)",
                                   exc)
        if failure is not None:
            _fail(failure)
        return result

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":
            for run in _ab_runs(report.user_properties):
                self.state.ab_runs.append((report.nodeid, run))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        # a pytest-xdist worker: tell the controller
        output = getattr(self.config, "workeroutput", None)
        if isinstance(output, dict):
            output[WORKER_OUTPUT] = {"worker": self.state.settings.worker,
                                     "boots": [record.to_json()
                                               for record in self.state.boots.records]}

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", None) or {}
        mine = output.get(WORKER_OUTPUT)
        if isinstance(mine, dict):
            worker = str(mine.get("worker") or "?")
            self.state.worker_boots[worker] = [BootRecord.from_json(item)
                                               for item in mine.get("boots", [])]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        lines = self.state.summary_lines()
        if lines:
            terminalreporter.write_sep("=", "fvp-harness")
            for line in lines:
                terminalreporter.write_line(line)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.state.close_all()
