"""``compare.baseline_from`` at run time: choose the stored run once, check it can serve, and pin it.

Why pin: ``x@main`` or ``results/x`` name whichever run is newest *now*; the report of this run (and a later
``fvp-harness report DIR``) must keep comparing with the run that was chosen when it was measured. So the run's
manifest stores the name that finds exactly that run again (``<absolute scenario folder>@<run id>``, which still
works after the run moved into ``runs/<id>/``) in its resolved scenario; the report reads it from there
(``report.stored_compare``). ``--resume`` keeps the pin the interrupted run chose.

Why check here: a stored run that measured another platform, other model bytes or other run settings would make
the whole run worthless, and on a real FVP the units cost minutes. So the refusal (exit 2) comes before the first
unit, with every difference named (``report.stored_compare.comparable``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from fvp_harness.errors import ConfigurationError
from fvp_harness.events import Event, Listener, null_listener
from fvp_harness.report.stored.stored_compare import comparable, dotted_get, load_run
from fvp_harness.run.manifest import Manifest
from fvp_harness.store.folder import RUNS_DIR, ResultStore, StoredRun
from fvp_harness.store.locate import describe_run, find_run, pinned_spec

__all__ = ["pin_stored_baseline"]


def _stored_pin(store: ResultStore) -> str | None:
    """The pin an earlier start of this run wrote (``--resume``), if any."""
    try:
        previous = store.read_manifest()
    except ConfigurationError:
        return None
    compare = dotted_get(previous or {}, "scenario.resolved.compare")
    value = compare.get("baseline_from") if isinstance(compare, Mapping) else None
    return value if isinstance(value, str) and value else None


def pin_stored_baseline(manifest: Manifest, store: ResultStore, results_base: Path, *, resume: bool = False,
                        listener: Listener = null_listener) -> StoredRun | None:
    """For a scenario with ``compare.baseline_from``: find the stored run (``store.locate.find_run``; ``@REF`` is
    this scenario's folder), refuse one that is this very run, has no record of the baseline build, or measured
    something else, and write its pinned name into ``manifest`` (not yet to disk: the caller writes the manifest).
    Emits a ``baseline`` event naming the run (and one per soft difference). None without ``baseline_from``."""
    compare = dotted_get(manifest.scenario.resolved, "compare")
    spec = compare.get("baseline_from") if isinstance(compare, Mapping) else None
    if not isinstance(spec, str) or not spec:
        return None
    if resume:
        spec = _stored_pin(store) or spec
    run = find_run(spec, results_base=results_base, scenario_folder=store.root)
    if run.run_id == manifest.run.id:
        raise ConfigurationError(f"compare.baseline_from {spec!r} is this very run ({run.run_id}); name the run to "
                                 "take the baseline from (e.g. SCENARIO@main, or a runs/<id> folder)")
    stored = load_run(run)
    baseline = str(compare.get("baseline") or "") if isinstance(compare, Mapping) else ""
    if not any(record.build == baseline for record in stored.records):
        raise ConfigurationError(f"compare.baseline_from {spec!r}: {describe_run(run)} in {run.path} has no record "
                                 f"of build {baseline!r} (it measured: {', '.join(stored.builds) or 'nothing'}); "
                                 "pick a run that measured the baseline")
    models = list(dotted_get(manifest.scenario.resolved, "models") or {})
    primary = dotted_get(manifest.scenario.resolved, "compare.primary")
    metrics = [primary] if isinstance(primary, str) else list(primary or [])
    check = comparable(stored.manifest, manifest.to_json(), models=models, metrics=[*metrics, "npu_cycles"],
                       sides=("stored", "this run"))
    check.raise_if_refused(f"compare.baseline_from {spec!r} ({run.path})")
    folder = run.path.parent.parent if run.path.parent.name == RUNS_DIR else run.path
    assert isinstance(compare, dict)
    compare["baseline_from"] = pinned_spec(run, folder)
    stem = store.root.name  # make runs several scenarios at once: each line names its own
    listener(Event("baseline", name=baseline, detail=f"from stored {describe_run(run)} in {run.path}", scenario=stem))
    for warning in check.warnings:
        listener(Event("baseline", name=baseline, status="warning", detail=warning, scenario=stem))
    return run
