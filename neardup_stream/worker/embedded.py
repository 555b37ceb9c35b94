"""The worker as a library: run a worker in a thread of your own process.

    from neardup_stream.worker.embedded import EmbeddedWorker
    with EmbeddedWorker(settings).start() as w:
        w.wait_ready(timeout=60)
        ...                       # produce to settings.topics.input, read the outputs
        w.health()                # Health(running, ready, consuming, error)
    # leaving the block stops it cleanly (the batch in flight commits)

What it owns, and what it leaves to its host: the worker (`neardup_stream.worker.loop.Worker`, or with
`cluster.enabled` the scale-out `neardup_stream.worker.cluster.replica.Replica`) runs in one named thread;
its metrics live on its own `prometheus_client.CollectorRegistry` (`registry`; pass one to
share it), so two embedded workers never collide on metric names; the `/metrics` and
`/healthz` listener runs only if `settings.metrics.enabled`, on `settings.metrics.port`
(0: a free port, see `metrics_port`). It installs no signal handlers and configures no
logging (that is `neardup_stream.worker.main`'s job for the command-line worker). Two workers running in
one process with the same transactional id (`worker.group_id` + `worker.instance_id`) would
fence each other: the second `start()` is refused.
"""

from __future__ import annotations

import threading
import time
from typing import NamedTuple

from prometheus_client import CollectorRegistry

from neardup_stream.worker.cluster.replica import Replica
from neardup_stream.worker.loop import Worker
from neardup_stream.worker.metrics import Metrics, MetricsServer, build_metrics
from neardup_stream.worker.settings import Settings

_running: set[tuple[str, str]] = set()  # (group_id, instance_id) of workers running here
_running_lock = threading.Lock()


class WorkerFailed(RuntimeError):
    """The embedded worker's thread ended with an error (the cause is chained)."""


class Health(NamedTuple):
    """What /healthz and the thread say about an embedded worker."""

    running: bool  # its thread is alive
    ready: bool  # every owned input partition has its index (/healthz answers 200)
    consuming: bool  # it joined the consumer group
    error: BaseException | None  # why its thread ended, if it failed


class EmbeddedWorker:
    """One worker in a thread of this process (see the module docstring)."""

    def __init__(self, settings: Settings, registry: CollectorRegistry | None = None) -> None:
        self.settings = settings
        self.registry = registry if registry is not None else CollectorRegistry()
        self.metrics: Metrics = build_metrics(self.registry)
        self.worker: Worker | Replica = (
            Replica(settings, self.metrics)
            if settings.topic_scope
            else Worker(settings, self.metrics)
        )
        self._identity = (settings.worker.group_id, settings.worker.instance_id)
        self._thread: threading.Thread | None = None
        self._server: MetricsServer | None = None
        self._error: BaseException | None = None

    @property
    def metrics_port(self) -> int | None:
        """The port of its /metrics and /healthz listener (None when metrics are disabled)."""
        return None if self._server is None else self._server.port

    def start(self) -> EmbeddedWorker:
        """Start the worker thread (and the metrics listener); returns self."""
        if self._thread is not None:
            raise RuntimeError("this embedded worker was already started")
        with _running_lock:
            if self._identity in _running:
                group, instance = self._identity
                raise ValueError(
                    f"worker.instance_id={instance!r}: a worker of group {group!r} with this "
                    "instance id already runs in this process (their transactions would fence "
                    "each other); give each embedded worker its own worker.instance_id"
                )
            _running.add(self._identity)
        m = self.settings.metrics
        try:
            if m.enabled:
                self._server = MetricsServer(
                    self.registry, self.worker.unready, m.host, m.port
                ).start()
        except OSError as exc:
            self._release()
            raise ValueError(f"metrics.port={m.port}: cannot listen on {m.host}: {exc}") from exc
        group, instance = self._identity
        self._thread = threading.Thread(
            target=self._run, name=f"neardup-worker-{group}-{instance}", daemon=True
        )
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self.worker.run()
        except BaseException as exc:
            self._error = exc

    def health(self) -> Health:
        """Its state now; never blocks."""
        running = self._thread is not None and self._thread.is_alive()
        ready = running and self.worker.healthy()
        return Health(running, ready, self.worker.consuming, self._error)

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Block until it is ready as /healthz says it (every owned partition has its index;
        a replica's roles have restored what they own); raises `WorkerFailed` if the worker
        ended first, `TimeoutError` after `timeout` seconds."""
        if self._thread is None:
            raise RuntimeError("start() the embedded worker first")
        deadline = time.monotonic() + timeout
        while not (self.worker.ready.is_set() and self.worker.healthy()):
            time.sleep(0.02)
            if not self._thread.is_alive():
                raise WorkerFailed(f"the worker stopped before it was ready: {self._error!r}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the worker was not ready within {timeout} s")
        if self._error is not None:
            raise WorkerFailed("the worker failed") from self._error

    def stop(self, timeout: float = 60.0) -> None:
        """Finish the batch in flight, leave the group, close the clients; raises
        `TimeoutError` if the thread is still running after `timeout` seconds."""
        self.worker.request_stop()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise TimeoutError(f"the worker did not stop within {timeout} s")
        if self._server is not None:
            self._server.stop()
            self._server = None
        self._release()

    def _release(self) -> None:
        with _running_lock:
            _running.discard(self._identity)

    def __enter__(self) -> EmbeddedWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
