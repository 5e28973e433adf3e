"""The Dask executor of the batch engine: lanes as tasks on a Dask cluster (``--executor dask|dask-local``).

Each lane (``batch.lanes.LaneSpec``) is one task; it carries the resolved scenarios and, by default, the artifact
bytes (``ship_artifacts``), so a worker needs only fvp-harness and the FVP (or the simulator) installed, not the
scenario files or a shared filesystem. With ``ship_artifacts=False`` the workers read the same paths as the
coordinator (a shared filesystem); either way a worker re-hashes what it runs and refuses a key mismatch.

The task returns its records and unit logs; only the coordinating process writes the results folders. Stop
requests travel as three named ``distributed.Event``s per batch: *drain* (start no further job), *stop* (finish the
unit in flight, then start nothing) and *abort* (close the instance now); a thread in the coordinator forwards the
local events, and a watcher thread in each task mirrors them into the lane's local events.

Why lanes and not units as tasks: a unit needs a booted instance, and a boot costs seconds (simulator) to
minutes (real FVP); a lane keeps one instance for all its jobs. Dask's own work stealing is disabled for the
same reason (``pure=False`` tasks are not duplicated, and a lane is never split).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Sequence
from typing import Any

from fvp_harness.batch.lanes import LaneControl, LaneResult, LaneSpec, default_jobs, run_lane
from fvp_harness.errors import ConfigurationError

__all__ = ["DaskExecutor", "remote_lane"]

log = logging.getLogger(__name__)

POLL_S = 0.5


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:  # pragma: no cover - the extra is not installed
        raise ConfigurationError("the Dask executor needs dask.distributed: pip install 'fvp-harness[distributed]'"
                                 ) from exc
    return distributed


def remote_lane(spec: LaneSpec, drain_name: str, abort_name: str, stop_name: str | None = None) -> LaneResult:
    """The task body on a worker: run the lane, mirroring the batch's named stop events into local ones."""
    distributed = _import_distributed()
    drain, abort, stop, finished = threading.Event(), threading.Event(), threading.Event(), threading.Event()
    remote_drain, remote_abort = distributed.Event(drain_name), distributed.Event(abort_name)
    remote_stop = distributed.Event(stop_name) if stop_name else None

    def watch() -> None:
        while not finished.wait(POLL_S):
            try:
                if remote_abort.is_set():
                    drain.set()
                    abort.set()
                    return
                if remote_drain.is_set():
                    drain.set()
                if remote_stop is not None and remote_stop.is_set():
                    stop.set()
            except Exception:  # the scheduler went away: stop rather than run unsupervised
                log.warning("lost the Dask scheduler; stopping lane %s", spec.index)
                abort.set()
                return

    watcher = threading.Thread(target=watch, name=f"lane{spec.index}-dask-watch", daemon=True)
    watcher.start()
    try:
        return run_lane(spec, drain=drain, abort=abort, stop=stop)
    finally:
        finished.set()
        watcher.join()


class DaskExecutor:
    """Lanes as tasks on ``scheduler`` (``tcp://HOST:PORT``), or on a LocalCluster started here when
    ``scheduler`` is None (``workers`` single-threaded workers; ``processes=False`` keeps them in this process,
    which tests use)."""

    name = "dask"

    def __init__(self, *, scheduler: str | None = None, workers: int | None = None, ship_artifacts: bool = True,
                 processes: bool = True) -> None:
        self.scheduler = scheduler
        self.workers = workers
        self.ships_artifacts = ship_artifacts
        self.processes = processes
        self._client: Any = None
        self._cluster: Any = None

    def _connect(self) -> Any:
        if self._client is None:
            distributed = _import_distributed()
            if self.scheduler is None:
                self._cluster = distributed.LocalCluster(
                    n_workers=self.workers or default_jobs(), threads_per_worker=1, processes=self.processes,
                    dashboard_address=None)
                self._client = distributed.Client(self._cluster)
            else:
                self._client = distributed.Client(self.scheduler, timeout="30s")
        return self._client

    def capacity(self) -> int:
        """Lanes that can run at once: the cluster's worker threads (``-j`` overrides)."""
        if self.workers:
            return self.workers
        threads = self._connect().nthreads()
        return max(1, sum(threads.values()))

    def close(self) -> None:
        """Disconnect (and stop the LocalCluster this executor started)."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def run(self, lanes: Sequence[LaneSpec], control: LaneControl) -> None:
        """Submit every lane and hand results back as they complete (records and logs go through
        ``control.on_lane_done``, in this thread). Ctrl-C: abort every lane, collect what they measured, re-raise."""
        if not lanes:
            self.close()
            return
        distributed = _import_distributed()
        finished = threading.Event()
        forwarder: threading.Thread | None = None
        try:
            client = self._connect()
            batch = uuid.uuid4().hex[:12]
            names = {kind: f"fvp-harness-{batch}-{kind}" for kind in ("drain", "abort", "stop")}
            remote = {kind: distributed.Event(name, client=client) for kind, name in names.items()}

            def forward() -> None:  # the local drain / stop requests, to the workers' watchers
                while not finished.wait(POLL_S):
                    for kind in ("drain", "stop"):
                        if getattr(control, kind).is_set():
                            with contextlib.suppress(Exception):
                                remote[kind].set()

            forwarder = threading.Thread(target=forward, name="dask-stop-forward", daemon=True)
            forwarder.start()
            futures = [client.submit(remote_lane, lane, names["drain"], names["abort"], names["stop"], pure=False,
                                     key=f"fvp-harness-{batch}-lane{lane.index}") for lane in lanes]
            pending = set(futures)
            try:
                for future in distributed.as_completed(futures):
                    pending.discard(future)
                    control.on_lane_done(future.result())
            except KeyboardInterrupt:
                control.drain.set()
                control.abort.set()
                remote["abort"].set()
                with contextlib.suppress(Exception):
                    for future in distributed.as_completed(list(pending), timeout=60):
                        if future.status == "finished":
                            control.on_lane_done(future.result())
                raise
        finally:
            finished.set()
            if forwarder is not None:
                forwarder.join()
            self.close()
