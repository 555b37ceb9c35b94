"""The indexes of the input partitions this worker owns, and their restores.

`PartitionIndexes` maps an owned input partition to its complete `Deduplicator`. After each
poll `follow()` brings it in line with the assignment (`runtime.following`): indexes of
partitions gone are dropped and their restores cancelled; partitions gained (or whose index
was dropped after a failed batch) are restored in the background, one restore per partition
(`runtime.restore.Restores`, paused until complete), and installed when complete. `ready` is
set once every owned partition has its index (the /healthz answer).

A restore that met another pipeline's records (`restore.OtherPipeline`) is final: the worker
logs that error once, drops every index, keeps every owned partition paused and stays
unready (it decides nothing) until it is stopped and given its own changelog.
"""

from __future__ import annotations

import functools
import logging
import threading
import time

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from neardup_stream.deduplicator import Deduplicator
from worker import changelog, clients, topics
from worker.metrics import Metrics, index_gauges
from worker.partitions import Assignment
from worker.restore import OtherPipeline, restore_index
from worker.runtime import following
from worker.runtime.restore import Finished, PauseTopic, Restores
from worker.settings import Settings

log = logging.getLogger(__name__)


class PartitionIndexes(dict[int, Deduplicator]):
    """Owned input partition -> its complete index."""

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        consumer: KafkaConsumer,
        assignment: Assignment,
        ready: threading.Event,
        stop: threading.Event,
        changelog_partitions: int,
    ) -> None:
        super().__init__()
        self.settings, self.metrics = settings, metrics
        self.consumer, self.assignment = consumer, assignment
        self.ready, self._stop = ready, stop
        self._changelog_partitions = changelog_partitions
        self.restores: Restores[Deduplicator] = Restores(
            "worker",
            stop,
            metrics,
            lambda: clients.make_reader(settings),
            PauseTopic(consumer, settings.topics.input),
        )
        self._retry_after = 0.0  # monotonic time before which no restore is started again
        self.refused: OtherPipeline | None = None  # set for good: this worker decides nothing

    def drop(self, partitions: set[int]) -> None:
        """Forget indexes that ran ahead of what Kafka committed; `follow` restores them."""
        for p in partitions & set(self):
            del self[p]

    def follow(self) -> None:
        """Drop indexes of partitions gone, pause and restore the ones gained."""
        if self.assignment.rebalancing:
            return  # revoked, not yet reassigned: what stays is not known yet
        owned, dropped = self.assignment.take()
        gone = following.leaving(set(self), self.restores.pending(), owned, dropped)
        self.drop(gone.release)
        for p in gone.cancel:
            self.restores.cancel(p)
        for done in self.restores.finished():
            self._install(done, owned)
        if self.refused is not None:
            self.drop(set(self))
            for p in self.restores.pending():
                self.restores.cancel(p)
            topic = self.settings.topics.input
            self.consumer.pause(*[TopicPartition(topic, p) for p in owned])
        elif not self._stop.is_set() and time.monotonic() >= self._retry_after:
            self._start(following.to_restore(owned, set(self), self.restores.pending()))
        restored = self.assignment.seen_assignment and not owned - set(self)
        if restored != self.ready.is_set():
            (self.ready.set if restored else self.ready.clear)()
            self.metrics.ready.set(int(restored))

    def close(self) -> None:
        """Stop the restores in progress; nothing of them is used."""
        self.restores.close()

    def _start(self, pending: list[int]) -> None:
        if not pending:
            return
        s, topic = self.settings, self.settings.topics.input
        name = changelog.topic_of(s)
        if max(pending) >= self._changelog_partitions:  # input partitions added at runtime
            try:
                topics.grow_changelog_for(s, max(pending) + 1)
            except KafkaError as exc:  # transient: a later `follow` tries again
                self._retry_after = time.monotonic() + s.worker.retry_backoff_max_s
                log.warning("could not grow changelog %s yet: %r", name, exc)
                return
            self._changelog_partitions = max(pending) + 1
        log.info("restoring partitions %s from %s", pending, name)
        pipeline = changelog.pipeline_of(s)
        for p in pending:
            # read_committed: waits until no transaction holds its offsets
            committed = self.consumer.committed(TopicPartition(topic, p))
            restore = functools.partial(
                restore_index,
                topic=name,
                partition=p,
                config=s.dedup,
                pipeline=pipeline,
                metrics=self.metrics,
                snapshot_dir=s.worker.snapshot_dir,
                committed=committed,
            )
            self.restores.start(p, restore)

    def _install(self, done: Finished[Deduplicator], owned: set[int]) -> None:
        if isinstance(done.error, OtherPipeline):
            if self.refused is None:
                log.error("refusing the changelog: %s", done.error)
            self.refused = done.error
            return
        if done.error is not None or done.state is None:
            log.error(
                "restoring partition %d failed; retrying", done.partition, exc_info=done.error
            )
            self._retry_after = time.monotonic() + 1.0
            return
        if done.partition in owned:
            self[done.partition] = done.state
            index_gauges(self.metrics, self)
