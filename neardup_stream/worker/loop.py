"""The single worker: start-up, the batch role on the role loop, and an orderly stop.

`Worker` makes sure the topics exist and that the changelog is this pipeline's (`claims`),
then runs `batch.BatchRole` (poll -> decide -> publish one transaction, committed in flight
while the next batch is decided) on the same loop as the cluster roles,
`runtime.runner.RoleRunner`, which owns the publisher and the failure policy. On stop it
cancels the restores, settles the last commit, snapshots the indexes if that commit
succeeded and closes the clients.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from neardup_stream.collector import freeze_start_up
from neardup_stream.worker import claims, retry, security_errors, topics
from neardup_stream.worker.batch import BatchRole
from neardup_stream.worker.changelog import topic_of
from neardup_stream.worker.metrics import Metrics
from neardup_stream.worker.records import BatchOutput, InputRecord
from neardup_stream.worker.runtime import shutdown
from neardup_stream.worker.runtime.runner import RoleRunner
from neardup_stream.worker.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")


class Worker:
    """One consumer-group member. `run()` blocks until `request_stop()`."""

    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self.settings = settings
        self.metrics = metrics
        self.ready = threading.Event()
        self.consuming = False
        self._stop = shutdown.Stop()
        self._runner: RoleRunner[list[InputRecord], BatchOutput] | None = None
        self._state = "connecting to the broker"  # until ready: what /healthz names

    def unready(self) -> str | None:
        """Why /healthz answers 503 (None: ready): an owned partition without its index yet,
        or what its runner says (`RoleRunner.unready`)."""
        runner = self._runner
        if not self.ready.is_set():
            return self._state
        return None if runner is None else runner.unready()

    def healthy(self) -> bool:
        return self.unready() is None

    def request_stop(self) -> None:
        """Ask the loop to finish its batch and shut down (safe in a signal handler:
        `shutdown.Stop.request` takes no lock)."""
        self._stop.request()

    def run(self) -> None:
        s = self.settings
        layout = self._until_stopped(lambda: topics.ensure_topics(s))
        if layout is None:
            return
        taken = self._until_stopped(lambda: claims.claim(s, [topic_of(s)], s.index_settings))
        if taken is None or taken:
            self._refuse(taken)
            return
        self._state = "restoring the indexes of its partitions"
        freeze_start_up()  # before its clients: what start-up built, collections skip
        role = BatchRole(
            s, self.metrics, self._stop, self.ready, layout.decide_rules(s), layout.input_partitions
        )
        runner: RoleRunner[list[InputRecord], BatchOutput] = RoleRunner(
            role, self.metrics, self._stop, in_flight=role
        )
        self._runner = runner
        self.consuming = True
        try:
            runner.run()
        finally:
            self._close(role, runner)

    def _refuse(self, taken: list[str] | None) -> None:
        """Another pipeline owns the changelog, or its index has another input mapping
        (`claims`): say so once, stay unready (as a cluster replica refuses), write nothing,
        until stopped."""
        if taken is None:  # stopped while claiming
            return
        lines = claims.hinted(taken, claims.CHANGELOG_HINT)
        what = "to start" if lines == taken else "the changelog"  # outputs only: to start
        log.error("refusing %s: %s", what, " | ".join(lines))
        self.metrics.settings_mismatch.set(1)
        self._state = "refused: the changelog or the outputs are another pipeline's, or of other settings (see its log)"
        self.consuming = True  # a signal now stops it the ordinary way
        shutdown.wait_for_stop(self._stop)

    def _backoff(self, attempt: int) -> float:
        return retry.backoff_s(self.settings.worker.retry_backoff_max_s, attempt)

    def _until_stopped(self, action: Callable[[], T]) -> T | None:
        checked = security_errors.checked(self.settings.kafka, action)
        return retry.until_stopped(
            self._stop,
            lambda attempt: self._backoff(attempt),
            checked,
            self.settings.kafka.give_up_after_s,
        )

    def _close(self, role: BatchRole, runner: RoleRunner[list[InputRecord], BatchOutput]) -> None:
        # A restore stuck on the broker must not hold up the stop (as a replica bounds it).
        deadline = shutdown.Deadline(self.settings.worker.shutdown_timeout_s)
        shutdown.within("closing the restores", role.indexes.close, deadline)
        if runner.publisher.settle() is None:
            role.snapshot()
        else:
            log.error("the last commit failed; it is replayed on restart")
        role.close()
        runner.publisher.close()
        runner.coverage.close()
        log.info("worker stopped")
