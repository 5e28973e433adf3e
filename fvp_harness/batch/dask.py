"""The Dask executor of the batch engine: lanes as tasks on a Dask cluster (``--executor
dask|dask-local``).

Each lane (``run.lanes.LaneSpec``) is one task; it carries the resolved scenarios and, by default,
the artifact bytes (``ship_artifacts``), so a worker needs only fvp-harness and the FVP (or the
simulator) installed, not the scenario files or a shared filesystem. With ``ship_artifacts=False``
the workers read the same paths as the coordinator (a shared filesystem); either way a worker
re-hashes what it runs and refuses a key mismatch.

The task returns its records and unit logs; only the coordinating process writes the results
folders.

**Stop requests** travel as three named ``distributed.Event``s per batch: *drain* (start no further
job), *stop* (finish the unit in flight, then start nothing) and *abort* (close the instance now). A
thread in the coordinator forwards the local events; in each task a watcher thread polls the named
events and mirrors them into the lane's local ones. The task looks up its worker and the worker's
client (``get_worker()``, ``get_client()``) in its own thread and hands both to the watcher: those
lookups read a context variable of the task's thread, which a thread started from it does not
inherit, so an ``Event`` resolved inside the watcher has no client in a worker *process* ("object
not properly initialized"; in-process workers hid this, finding the coordinator's client instead).

**A lost scheduler is not any exception.** The watcher calls the scheduler lost only when the worker
itself says so (it is closing: a worker closes when its scheduler connection breaks), when the
worker's client is no longer running, or when connection errors (``OSError``, which
``CommClosedError`` is, and timeouts) last ``LOST_AFTER_S``; then it aborts the lane (an FVP must
not run unsupervised; the coordinator has lost the lane anyway). Any other exception while the
scheduler is there is a bug: it is logged with its traceback, the lane is aborted and its result
says why (its units are reported as not run). On the coordinator a lane's future can end in: its
result; a cancellation because the client lost the scheduler (every pending lane is then reported
not run, cause infrastructure); ``KilledWorker`` (its worker died
``distributed.scheduler.allowed-failures`` + 1 times; a worker that dies once just gets the lane
re-run elsewhere from its start, and as a lane returns its records only when it ends, nothing of the
dead attempt is counted); or an exception the task raised (logged with the remote traceback, the
lane's units reported not run).

Why lanes and not units as tasks: a unit needs a booted instance, and a boot costs seconds
(simulator) to minutes (real FVP); a lane keeps one instance for all its jobs. Tasks are submitted
``pure=False`` with unique keys, so Dask never merges two; a queued lane may move to an idle worker,
a running one is never split, and one re-run after its worker died starts from its beginning (only
the result of the attempt that finishes is kept).
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import threading
import time
import traceback
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from fvp_harness.errors import ConfigurationError, HarnessError, InfrastructureError
from fvp_harness.run.lanes import (
    LaneControl,
    LaneResult,
    LaneSpec,
    default_jobs,
    restore_secrets,
    run_lane,
    withhold_secrets,
)

__all__ = ["DaskExecutor", "remote_lane"]

log = logging.getLogger(__name__)

POLL_S = 0.5
"""How often a task asks the scheduler for the batch's stop events, and the coordinator forwards its
own."""
LOST_AFTER_S = 10.0
"""Connection errors for this long (while the worker still looks connected) count as a lost
scheduler."""
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (OSError, TimeoutError)
"""What a broken or slow connection raises (``distributed.comm.CommClosedError`` is an
``OSError``)."""
CONNECT_TIMEOUT_S = 30
"""How long the coordinator tries to reach ``--scheduler`` before giving up (exit 3)."""
_WORKER_GONE = frozenset({"closing", "closed", "failed", "stopping", "stopped"})


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:  # pragma: no cover - the extra is not installed
        raise ConfigurationError("the Dask executor needs dask.distributed: pip install "
                                 "'fvp-harness[distributed]'" ) from exc
    return distributed


def _status(thing: Any) -> str:
    status = getattr(thing, "status", None)
    return str(getattr(status, "value", status))


class _RemoteEvents:
    """The batch's named events as a task sees them, through its worker's client. Build it in the
    task's own thread (``get_worker``/``get_client`` read that thread's context); the watcher thread
    may then use it."""

    def __init__(self, distributed: Any, names: Mapping[str, str]) -> None:
        self.worker = distributed.get_worker()
        self.client = distributed.get_client()
        self.events = {kind: distributed.Event(name, client=self.client)
                       for kind, name in names.items()}

    def poll(self) -> set[str]:
        """The kinds (drain, stop, abort) that are set."""
        return {kind for kind, event in self.events.items() if event.is_set()}

    def lost(self) -> str | None:
        """Why this task has lost its scheduler, or None while the worker and its client are
        connected."""
        worker = _status(self.worker)
        if worker in _WORKER_GONE:
            return f"the worker is {worker}"
        client = _status(self.client)
        if client != "running":
            return f"the worker's client is {client}"
        return None


def _watch(remote: _RemoteEvents, index: int, drain: threading.Event, stop: threading.Event,
           abort: threading.Event, finished: threading.Event, trouble: list[str]) -> None:
    """Mirror the named events into the lane's until ``finished``; abort the lane when the scheduler
    is lost or watching fails (``trouble`` says why)."""
    failing_since: float | None = None
    while not finished.wait(POLL_S):
        gone = remote.lost()
        if gone is None:
            try:
                seen = remote.poll()
            except CONNECTION_ERRORS as exc:
                gone = remote.lost()
                if gone is None:
                    failing_since = failing_since or time.monotonic()
                    if time.monotonic() - failing_since < LOST_AFTER_S:
                        log.info("lane %s: no answer from the Dask scheduler yet: %s", index, exc)
                        continue
                    gone = f"no answer for {LOST_AFTER_S:.0f} s: {type(exc).__name__}: {exc}"
            except Exception as exc:
                gone = remote.lost()
                # the scheduler is there: this is a bug, say so instead of blaming the network
                if gone is None:
                    log.exception("lane %s: reading the batch's stop events failed; aborting the "
                                  "lane", index)
                    trouble.append("reading the batch's stop events failed on the worker: "
                                   f"{type(exc).__name__}: {exc}")
                    drain.set()
                    abort.set()
                    return
            else:
                failing_since = None
                if "abort" in seen:
                    drain.set()
                    abort.set()
                    return
                if "drain" in seen:
                    drain.set()
                if "stop" in seen:
                    stop.set()
                continue
        log.warning("lane %s: lost the Dask scheduler (%s); closing its instance", index, gone)
        trouble.append(f"lost the Dask scheduler ({gone})")
        drain.set()
        abort.set()
        return


def remote_lane(spec: LaneSpec, drain_name: str, abort_name: str,
                stop_name: str | None = None) -> LaneResult:
    """The task body on a worker: run the lane, mirroring the batch's named stop events into local
    ones."""
    distributed = _import_distributed()
    names = {"drain": drain_name, "abort": abort_name}
    if stop_name:
        names["stop"] = stop_name
    remote = _RemoteEvents(distributed, names)
    # once in the task's thread: a misuse fails the task here, loudly, before anything boots
    remote.poll()
    spec = restore_secrets(spec, os.environ)  # withheld secrets come from this worker's environment
    drain, abort, stop, finished = (threading.Event(), threading.Event(), threading.Event(),
                                    threading.Event())
    trouble: list[str] = []
    watcher = threading.Thread(target=_watch,
                               args=(remote, spec.index, drain, stop, abort, finished, trouble),
                               name=f"lane{spec.index}-dask-watch", daemon=True)
    watcher.start()
    try:
        result = run_lane(spec, drain=drain, abort=abort, stop=stop)
    finally:
        finished.set()
        watcher.join()
    if trouble:
        result.error, result.error_class = "; ".join(trouble), "infrastructure"
    return result


class DaskExecutor:
    """Lanes as tasks on ``scheduler`` (``tcp://HOST:PORT``), or on a LocalCluster started here when
    ``scheduler`` is None (``workers`` single-threaded workers; ``processes=False`` keeps them in
    this process). ``log_level``: the level of dask.distributed's own loggers here and in the
    LocalCluster's workers (its INFO lines are noise next to the progress view; the CLI passes INFO
    for ``-v``)."""

    name = "dask"

    def __init__(self, *, scheduler: str | None = None, workers: int | None = None,
                 ship_artifacts: bool = True,
                 processes: bool = True, log_level: int = logging.WARNING) -> None:
        self.scheduler = scheduler
        self.workers = workers
        self.ships_artifacts = ship_artifacts
        self.processes = processes
        self.log_level = log_level
        self._client: Any = None
        self._cluster: Any = None

    def _connect(self) -> Any:
        if self._client is None:
            distributed = _import_distributed()
            # importing distributed set it to INFO
            logging.getLogger("distributed").setLevel(self.log_level)
            if self.scheduler is None:
                self._cluster = distributed.LocalCluster(
                    n_workers=self.workers or default_jobs(), threads_per_worker=1,
                    processes=self.processes, dashboard_address=None, silence_logs=self.log_level)
                self._client = distributed.Client(self._cluster)
            else:
                try:
                    self._client = distributed.Client(self.scheduler, timeout=CONNECT_TIMEOUT_S)
                except (OSError, TimeoutError) as exc:
                    raise InfrastructureError(f"cannot reach the Dask scheduler {self.scheduler}: "
                                              f"{exc}") from exc
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
            client_log = logging.getLogger("distributed.client")
            level = client_log.level
            # it logs its cancelled reconnection with a traceback
            if _status(self._client) != "running":
                client_log.setLevel(logging.CRITICAL)
            try:
                self._client.close()
            finally:
                client_log.setLevel(level)
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    @property
    def ships_secrets(self) -> bool:
        """Whether lanes may carry secret values: on a ``tls://`` scheduler (encrypted, with
        distributed's security settings) or the LocalCluster this executor starts (its own child
        processes on this machine). On any other address (``tcp://``) the values are withheld and
        each worker reads them from its environment."""
        return self.scheduler is None or self.scheduler.startswith("tls://")

    def shipped(self, lane: LaneSpec) -> LaneSpec:
        """The lane as it is sent to the scheduler (see ``ships_secrets``)."""
        return lane if self.ships_secrets else withhold_secrets(lane)

    def _where(self) -> str:
        return self.scheduler or "the LocalCluster's scheduler"

    def run(self, lanes: Sequence[LaneSpec], control: LaneControl) -> None:
        """Submit every lane and hand results back as they complete (records and logs go through
        ``control.on_lane_done``, in this thread); a lane that did not come back is handed back as a
        ``LaneResult`` with ``error`` set. Ctrl-C: abort every lane, collect what they measured,
        re-raise."""
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
            forwarder = threading.Thread(target=self._forward, args=(control, remote, finished),
                                         name="dask-stop-forward", daemon=True)
            forwarder.start()
            futures = {client.submit(remote_lane, self.shipped(lane), names["drain"],
                                     names["abort"], names["stop"],
                                     pure=False, key=f"fvp-harness-{batch}-lane{lane.index}"): lane
                       for lane in lanes}
            pending = dict(futures)
            try:
                for future in distributed.as_completed(list(futures)):
                    lane = pending.pop(future)
                    result, lost = self._lane_result(future, lane, distributed)
                    control.on_lane_done(result)
                    if lost is not None:  # no other lane can come back either
                        for other in pending.values():
                            control.on_lane_done(LaneResult(other.index, error=lost))
                        pending.clear()
                        break
            except KeyboardInterrupt:
                control.drain.set()
                control.abort.set()
                self._set_remote(remote["abort"], "abort")
                try:
                    for future in distributed.as_completed(list(pending), timeout=60):
                        if future.status == "finished":
                            control.on_lane_done(future.result())
                except (TimeoutError, OSError, concurrent.futures.CancelledError) as exc:
                    log.warning("not every aborted lane came back: %s", exc)
                raise
        finally:
            finished.set()
            if forwarder is not None:
                forwarder.join()
            self.close()

    def _lane_result(self, future: Any, lane: LaneSpec,
                     distributed: Any) -> tuple[LaneResult, str | None]:
        """The lane's result, or a ``LaneResult`` saying why it has none; the second item is set
        when the scheduler is lost (every other pending lane is lost with it)."""
        try:
            return future.result(), None
        # CONNECTION_ERRORS
        except (concurrent.futures.CancelledError, OSError, TimeoutError) as exc:
            if "scheduler-connection-lost" in str(exc) or _status(self._client) != "running":
                why = f"lost the Dask scheduler {self._where()}"
                log.info("lane %s: %s (%s: %s)", lane.index, why, type(exc).__name__, exc)
                return LaneResult(lane.index, error=why), why
            log.error("lane %s: its Dask task ended without a result: %s: %s", lane.index,
                      type(exc).__name__, exc)
            return LaneResult(lane.index,
                              error=f"its Dask task ended without a result: {type(exc).__name__}: "
                                                f"{exc}"), None
        except distributed.KilledWorker as exc:
            log.info("lane %s: %s", lane.index, exc)
            return LaneResult(lane.index, error=f"its workers kept dying ({exc})"), None
        except HarnessError as exc:
            return LaneResult(lane.index, error=str(exc), error_class=exc.failure_class), None
        # the task raised on the worker: a bug or a broken worker environment
        except Exception as exc:
            log.error("lane %s failed on its Dask worker:\n%s", lane.index,
                      "".join(traceback.format_exception(exc)).rstrip())
            return (LaneResult(lane.index,
                              error=f"its task failed on the worker: {type(exc).__name__}: {exc}"),
                    None)

    def _forward(self, control: LaneControl, remote: Mapping[str, Any],
                 finished: threading.Event) -> None:
        """The local drain / stop requests, to the tasks' watchers (each once)."""
        sent: set[str] = set()
        while not finished.wait(POLL_S):
            for kind in ("drain", "stop"):
                if (kind not in sent and getattr(control, kind).is_set() and
                    self._set_remote(remote[kind], kind)):
                    sent.add(kind)

    def _set_remote(self, event: Any, kind: str) -> bool:
        """Set a named event; False when the scheduler cannot be reached (the lanes are then lost
        anyway)."""
        try:
            event.set()
            return True
        except Exception as exc:
            if not isinstance(exc, CONNECTION_ERRORS) and _status(self._client) == "running":
                raise  # connected, yet it failed: a bug
            log.warning("could not forward the %s request to the Dask workers: %s: %s", kind,
                        type(exc).__name__, exc)
            return False
