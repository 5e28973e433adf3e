"""Synthetic stored runs for the tests of ``compare``, ``baseline_from`` and ``history``: a manifest
and records written the way ``run`` writes them (``ResultStore``), with chosen values, commits and
differences, in milliseconds instead of a simulator boot."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from fvp_harness.scenario.model import Scenario
from fvp_harness.store.folder import ResultStore
from fvp_harness.store.records import Record

__all__ = ["SCENARIO", "manifest_for", "write_run"]

SCENARIO: dict[str, Any] = {
    "name": "demo",
    "fvp": {"binary": "sim"},
    "builds": {"before": {"runner": "/x/before"}, "after": {"runner": "/x/after"}},
    "models": {"m1": {"file": "/x/m1.model"}, "m2": {"file": "/x/m2.model"}},
    "metrics": ["cpu_time", "npu_cycles"],
    "run": {"iterations": 10, "repetitions": 3},
    "compare": {"baseline": "before", "candidate": "after", "min_effect": 5,
                "gates": {"cpu_time": {"max_regression": "10%"}}},
}


def _set(data: dict[str, Any], dotted: str | tuple[str, ...], value: Any) -> None:
    parts = dotted.split(".") if isinstance(dotted, str) else list(dotted)
    for part in parts[:-1]:
        data = data.setdefault(part, {})
    data[parts[-1]] = value


def manifest_for(scenario: Mapping[str, Any], *, run_id: str, commit: str | None,
                 branch: str | None, started: str, keys: Mapping[str, str]) -> dict[str, Any]:
    resolved = Scenario.model_validate(scenario).model_dump(mode="json")
    return {
        "format_version": 3,
        "scenario": {"name": resolved["name"], "file": "/x/demo.yaml", "resolved": resolved},
        "platform": "corstone1000-a320",
        "profile": {"name": "corstone1000-a320", "console": "host_terminal_0"},
        "fvp": {"binary": "sim", "version": "11.30.27",
                "identity": {"binary": "sim", "version": "0.9"},
                "params": {}, "args": [], "sim": {}},
        "artifacts": {f"models.{name}.file": f"sha-{name}" for name in resolved["models"]}
        | {f"builds.{name}.runner": f"sha-{name}-runner" for name in resolved["builds"]},
        "builds": {name: {"runner": build["runner"], "sha256": f"sha-{name}-runner"}
                   for name, build in resolved["builds"].items()},
        "harness_version": "0.9",
        "parsers_version": 2,
        "host": {"hostname": "ci-1", "platform": "Linux", "machine": "x86_64", "python": "3.11",
                 "cpus": 4},
        "started": started,
        "finished": started,
        "status": "complete",
        "options": {},
        "run": {"id": run_id, "commit": commit, "branch": branch},
        "plan": {"units": len(keys), "order": "interleaved", "sessions": {"s0": list(keys)},
                 "keys": dict(keys)},
    }


def write_run(folder: Path, values: Mapping[tuple[str, str], float], *, run_id: str,
              commit: str | None = None,
              branch: str | None = "main", started: str = "2026-03-01T10:00:00Z", seed: int = 0,
              spread: float = 0.01, reps: int = 3, iterations: int = 10, npu: float = 1000.0,
              changes: Mapping[str | tuple[str, ...], Any] | None = None,
              scenario: Mapping[str, Any] | None = None,
              archive: bool = True, failed: tuple[str, ...] = (),
              extra: Mapping[str, Any] | None = None,
              sizes: Mapping[tuple[str, str], float] | None = None) -> ResultStore:
    """Write one run into the scenario folder ``folder`` (the previous one archived into
    ``runs/<id>/`` first, as a plain ``run`` does): ``values`` maps (build, model) to the median
    ``cpu_time`` in ms, each unit gets ``iterations`` samples with relative noise ``spread``;
    ``changes`` sets manifest fields (a dotted path, or a tuple of keys for names with dots such as
    artifacts); ``failed`` unit ids are stored as failed; ``extra`` is every ok record's ``extra``
    (``{"etdump": "etdump.bin", ...}``: a traced unit, whose file the caller writes into
    ``fetched/<unit>/``); ``sizes`` maps (build, model) to a
``peak_rss`` in bytes, one value per unit, the same in every unit (an exact size)."""
    store = ResultStore(folder)
    if archive and store.has_run():
        previous = store.read_manifest() or {}
        store.archive(str(previous.get("run", {}).get("id", "old")))
    rng = np.random.default_rng(seed)
    keys: dict[str, str] = {}
    for rep in range(reps):
        for (build, model), median in values.items():
            unit = f"r{rep}-{build}-{model}"
            key = f"key-{unit}-{run_id}"
            keys[unit] = key
            if unit in failed:
                store.append(Record(scenario="demo", key=key, unit_id=unit, instance="s0",
                                    build=build, model=model,
                                    repetition=rep, status="failed", failure_class="test",
                                    failure="runner exited 1", log=f"logs/s0/{unit}.log",
                                    started=started))
                continue
            samples = (median * (1.0 + spread * rng.standard_normal(iterations))).round(4).tolist()
            size = (sizes or {}).get((build, model))
            memory = {"peak_rss": [float(size)]} if size is not None else {}
            timed = {"cpu_time": samples, "npu_cycles": [npu] * iterations}
            store.append(Record(scenario="demo", key=key, unit_id=unit, instance="s0", build=build,
                                model=model,
                                repetition=rep, status="ok", samples={**timed, **memory},
                                metric_units={"cpu_time": "ms", "npu_cycles": "cycles",
                                              **dict.fromkeys(memory, "bytes")},
                                outputs={"out.bin": "ab" * 32}, started=started,
                                extra=dict(extra or {})))
    manifest = manifest_for(scenario or SCENARIO, run_id=run_id, commit=commit, branch=branch,
                            started=started, keys=keys)
    for dotted, value in (changes or {}).items():
        _set(manifest, dotted, copy.deepcopy(value))
    store.write_manifest(manifest)
    return store
