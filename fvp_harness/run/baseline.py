"""``compare.baseline_from`` at run time: choose the stored run once, check it can serve, and pin
it.

Why it is shaped so: docs/architecture.md, "Inside `run/`"."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from fvp_harness.errors import ConfigurationError
from fvp_harness.events import Event, Listener, null_listener
from fvp_harness.report.stored.stored_compare import comparable, dotted_get, load_run
from fvp_harness.run.manifest import Manifest
from fvp_harness.scenario import LoadedScenario
from fvp_harness.store.folder import RUNS_DIR, ResultStore, StoredRun, results_dir_for
from fvp_harness.store.locate import describe_run, find_run, pinned_spec
from fvp_harness.store.state import ok_builds, run_state

__all__ = ["check_stored_baseline", "pin_stored_baseline"]


def _own_folder(scenario_file: str | Path, results_base: Path) -> Path:
    """The results folder ``@REF`` alone means: the scenario's own (``<base>/<file stem>``)."""
    try:
        return results_dir_for(scenario_file, results_base)
    except ConfigurationError:  # a stem a run cannot write to by default: only read from here
        return Path(results_base) / Path(scenario_file).stem


def _choose(spec: str, baseline: str, results_base: Path, own: Path,
            skipped: list[str]) -> StoredRun:
    """The stored run ``spec`` names, passing over runs without an ok ``baseline`` record (noted
    in ``skipped``); a run named exactly that has none is refused, naming it."""
    run = find_run(spec, results_base=results_base, scenario_folder=own, builds=[baseline],
                   skipped=skipped)
    where = f"compare.baseline_from {spec!r}: {describe_run(run)} in {run.path}"
    try:
        measured = ok_builds(run)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where} cannot be read: {exc}") from exc
    if baseline not in measured:
        raise ConfigurationError(
            f"{where} has no ok record of build {baseline!r} ({run_state(run)}; it measured "
            f"{', '.join(sorted(measured)) or 'nothing'} ok): there are no baseline samples to "
            "take; pick a run that measured the baseline (fvp-harness runs lists them)")
    return run


def check_stored_baseline(loaded: LoadedScenario, results_base: Path) -> StoredRun | None:
    """Before anything is built or booted: the run ``compare.baseline_from`` names exists and holds
    ok samples of the baseline build (a ConfigurationError, exit 2, naming the run otherwise).
    None without ``baseline_from``."""
    compare = loaded.scenario.compare
    if compare is None or not compare.baseline_from:
        return None
    own = _own_folder(loaded.path, results_base)
    return _choose(compare.baseline_from, compare.baseline, results_base, own, [])


def _stored_pin(store: ResultStore) -> str | None:
    """The pin an earlier start of this run wrote (``--resume``), if any."""
    try:
        previous = store.read_manifest()
    except ConfigurationError:
        return None
    compare = dotted_get(previous or {}, "scenario.resolved.compare")
    value = compare.get("baseline_from") if isinstance(compare, Mapping) else None
    return value if isinstance(value, str) and value else None


def pin_stored_baseline(manifest: Manifest, store: ResultStore, results_base: Path, *,
                        resume: bool = False,
                        listener: Listener = null_listener) -> StoredRun | None:
    """For a scenario with ``compare.baseline_from``: find the stored run
    (``store.locate.find_run``; ``@REF`` is this scenario's own results folder), refuse one that is
    this very run, has no ok record of the baseline build, or measured something else, and write its
    pinned name into ``manifest`` (not yet to disk: the caller writes the manifest).
    Emits a ``baseline`` event naming the run (and one per soft difference). None without
    ``baseline_from``."""
    compare = dotted_get(manifest.scenario.resolved, "compare")
    spec = compare.get("baseline_from") if isinstance(compare, Mapping) else None
    if not isinstance(spec, str) or not spec:
        return None
    if resume:
        spec = _stored_pin(store) or spec
    file = dotted_get(manifest.to_json(), "scenario.file")
    own = _own_folder(file, results_base) if isinstance(file, str) and file else store.root
    baseline = str(compare.get("baseline") or "") if isinstance(compare, Mapping) else ""
    skipped: list[str] = []
    run = _choose(spec, baseline, results_base, own, skipped)
    if run.run_id == manifest.run.id:
        raise ConfigurationError(f"compare.baseline_from {spec!r} is this very run ({run.run_id}); "
                                 "name the run to take the baseline from (e.g. SCENARIO@main, or a "
                                 "runs/<id> folder)")
    stored = load_run(run)
    models = list(dotted_get(manifest.scenario.resolved, "models") or {})
    primary = dotted_get(manifest.scenario.resolved, "compare.primary")
    metrics = [primary] if isinstance(primary, str) else list(primary or [])
    check = comparable(stored.manifest, manifest.to_json(), models=models,
                       metrics=[*metrics, "npu_cycles"], sides=("stored", "this run"))
    check.raise_if_refused(f"compare.baseline_from {spec!r} ({run.path})")
    folder = run.path.parent.parent if run.path.parent.name == RUNS_DIR else run.path
    assert isinstance(compare, dict)
    compare["baseline_from"] = pinned_spec(run, folder)
    stem = store.root.name  # make runs several scenarios at once: each line names its own
    for line in skipped:
        listener(Event("baseline", name=baseline, status="skipped", detail=line, scenario=stem))
    listener(Event("baseline", name=baseline,
                   detail=f"from stored {describe_run(run)} in {run.path}", scenario=stem))
    for warning in check.warnings:
        listener(Event("baseline", name=baseline, status="warning", detail=warning, scenario=stem))
    return run
