"""The steps ``run`` and ``make`` share around a scenario's units: the preflight, keeping the
folder's run, and starting the manifest (docs/architecture.md, "One scheduler")."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from fvp_harness.events import Event, Listener
from fvp_harness.run.artifacts import BuildResult
from fvp_harness.run.baseline import pin_stored_baseline
from fvp_harness.run.doctor import preflight
from fvp_harness.run.manifest import BatchInfo, Manifest, RunSettings
from fvp_harness.run.plan import Plan, Unit
from fvp_harness.scenario.fit import refuse_misfits
from fvp_harness.scenario.load import LoadedScenario
from fvp_harness.store.folder import LOGS_DIR, ResultStore, StoredRun

__all__ = ["archive_current", "check_before_building", "keep_one_key_set", "start_manifest"]


def check_before_building(loaded: LoadedScenario, probe_timeout: float | None = None) -> None:
    """``doctor``'s checks of the model this scenario starts (``run.doctor.preflight``), or for
    ``target: host`` whether its programs fit this host: a configuration error (exit 2) before
    anything builds or boots."""
    if loaded.scenario.target == "host":
        refuse_misfits(loaded.scenario, loaded.profile, when="nothing was built or run")
    elif probe_timeout is None:
        preflight(loaded.scenario, loaded.profile, base_dir=loaded.directory)
    else:
        preflight(
            loaded.scenario, loaded.profile, base_dir=loaded.directory, probe_timeout=probe_timeout
        )


def archive_current(store: ResultStore, listener: Listener, scenario: str | None = None) -> Path:
    """Keep the folder's current run, whole, in ``runs/<its id>/`` (the folder is then empty for a
    new run)."""
    archived = store.archive(StoredRun.of(store.root, current=True).run_id)
    listener(Event("archived", name=str(archived), scenario=scenario))
    return archived


def keep_one_key_set(
    store: ResultStore,
    plan: Plan,
    listener: Listener,
    *,
    scenario: str | None = None,
    keep_build_logs: bool = False,
) -> Path | None:
    """``make`` continues the folder's run only when every record of it was made under this plan's
    keys (a real resume: units left over). Records of other keys (a changed setting, other
    artifacts) belong to another run: it is kept whole in ``runs/<id>/`` as ``run`` keeps it, so no
    run's records hold two key sets and no stored run's history point moves. The records still valid
    (same key), with their logs and fetched files, are copied into the new run, so ``make`` still
    re-runs only what changed. Returns the archive, or None."""
    if not store.records_path.is_file():
        return None
    keys = {unit.id: unit.key for unit in plan.units}
    records = store.records()
    if all(keys.get(record.unit_id) == record.key for record in records):
        return None
    archived = archive_current(store, listener, scenario)
    kept = [record for record in records if keys.get(record.unit_id) == record.key]
    copies = {record.log for record in kept if record.log}
    copies |= {f"{store.fetched_dir.name}/{record.unit_id}" for record in kept}
    if keep_build_logs:  # written by this make's builds, before the keys were final
        copies.add(f"{LOGS_DIR}/build")
    for relative in sorted(copies):
        source, target = archived / relative, store.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        elif source.is_file():
            shutil.copy2(source, target)
    for record in kept:
        store.append(record)
    return archived


def start_manifest(
    loaded: LoadedScenario,
    plan: Plan,
    store: ResultStore,
    *,
    version: str | None,
    banner: str,
    settings: RunSettings,
    builds: Sequence[BuildResult],
    started: str,
    units: Sequence[Unit],
    results_base: Path,
    listener: Listener,
    previous: Manifest | None = None,
    resume: bool = False,
    keep_pin: bool = False,
    batch: BatchInfo | None = None,
) -> Manifest:
    """The run's manifest, written before any unit runs (a killed run still says what it was): the
    run of ``previous`` carried on (its id; with ``resume`` also its start, once the folder's key
    metadata are found to agree), the stored baseline pinned (``compare.baseline_from``;
    ``keep_pin``: the one an earlier start of the run pinned) and room kept for its final status."""
    manifest = Manifest.start(loaded, plan, version, banner, settings, builds, started, units=units)
    if resume:
        store.check_compatible(manifest.to_json())
    manifest.continue_from(previous, keep_start=resume)
    if previous is not None:
        manifest.run = previous.run  # one run brought up to date keeps its id
    manifest.batch = batch
    pin_stored_baseline(manifest, store, results_base, resume=resume or keep_pin, listener=listener)
    store.reserve_space(manifest.to_json())  # released by the final write, or by the caller
    manifest.write(store)
    return manifest
