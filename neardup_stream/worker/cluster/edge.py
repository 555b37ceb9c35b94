"""The edge role: input -> fingerprint log (and dead letters), one transaction per batch.

A `runtime.role.Role`: the runner polls, steps, publishes and applies the failure policy. A
failed transaction replays from the committed input offsets with a halved batch (the rewind
retried until it succeeds); a dead letter the broker rejects for good is blamed on its
input, which the replay dead-letters as `unpublishable` (then without payload), as the single
worker and the gather do, instead of retrying the same rejection forever; an input the
engine fails on is bisected down to and dead-lettered as `internal_error` (`step_failed`). The
consumer lag of the input partitions is exported as the single worker does
(`neardup_consumer_lag_messages`) and as the edge's `neardup_role_lag_messages`. Inputs
retention deleted before the edge read them are reported as lost (`input_start`).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time

from kafka.errors import KafkaError

from neardup_stream.sharded.deduplicator import DocumentFingerprinter
from neardup_stream.worker import clients, failpoints, retry
from neardup_stream.worker.admission import DecideRules
from neardup_stream.worker.cluster.handover import Handover
from neardup_stream.worker.cluster.ingest import Ingested, LogTopics, ingest
from neardup_stream.worker.cluster.single_stage import RETRY_S, SingleStage, Staged
from neardup_stream.worker.input_start import InputStart
from neardup_stream.worker.metrics import Metrics
from neardup_stream.worker.partitions import behind, rewind_to_committed, update_lag
from neardup_stream.worker.records import InputRecord, Source
from neardup_stream.worker.rejections import Rejections
from neardup_stream.worker.runtime.health import RoleHealth, forget_series
from neardup_stream.worker.runtime.publisher import Transaction
from neardup_stream.worker.runtime.role import Limits, Output, Verdict, isolate, role_settings
from neardup_stream.worker.settings import Settings

log = logging.getLogger(__name__)
HOLD_POLL_MS = 50  # the edge's membership polls while the others park


class EdgeRole:
    """Reads the input partitions this replica is assigned (group `<group>-edge`)."""

    name = "edge"
    max_bytes = 0  # not capped in bytes: a batch is `max_records` inputs

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        stop: threading.Event,
        rules: DecideRules,
        handover: Handover | None = None,
    ) -> None:
        self.settings, self.metrics, self._stop, self.rules = settings, metrics, stop, rules
        # Inputs a previous generation decided: fingerprinted again, never dead-lettered twice.
        self.handover = handover or Handover("", {})
        self.role = role_settings(settings, "edge")
        self.consumer = clients.make_consumer(self.role, reset="none")
        self.input = InputStart(self.consumer, "edge", metrics)
        self.fingerprinter = DocumentFingerprinter(settings.dedup)
        self.health = RoleHealth("edge", metrics)
        self._lagging: set[int] = set()
        self._lags: dict[int, int] = {}  # input partition -> records behind its end
        self.rejections = Rejections(settings.topics.dlq)
        self.max_records = settings.worker.max_batch
        self.stage: SingleStage | None = None  # `single_stage`: with the parked roles
        self._starting = True  # until the shard and gather roles first settle
        self._start_deadline: float | None = None

    def start(self) -> None:
        self.consumer.subscribe([self.settings.topics.input])

    def single_stage(self, stage: SingleStage) -> None:
        """Run single-stage transactions with this replica's shard and gather roles (the
        stage's) while it is the whole cluster (`cluster.single_stage`)."""
        self.stage = stage

    def poll(self, limits: Limits) -> list[InputRecord]:
        """The next input records (the edge holds no state: no restores to follow); none
        while it waits for the shard and gather roles to park for single stage."""
        if self.stage is not None and not self._single_stage():
            return self._hold()
        wait = self.settings.worker.poll_timeout_ms
        polled = self.input.poll(timeout_ms=wait, max_records=limits.records)
        self.metrics.role_partitions.labels("edge").set(len(self.consumer.assignment()))
        self._export_lag()
        return [
            InputRecord(
                Source(tp.topic, tp.partition, m.offset),
                m.key,
                m.value,
                m.timestamp if m.timestamp is not None else -1,
                tuple(m.headers or ()),
            )
            for tp, messages in polled.items()
            for m in messages
        ]

    def step(self, polled: list[InputRecord], limits: Limits) -> Output[Ingested | Staged] | None:
        """The fingerprint-log records and dead letters of `polled`, and the next offsets."""
        if not polled:
            return None
        single = self.stage is not None and self.stage.on
        out = self._ingest(polled, single_stage=single)
        offsets = self.input.offsets(out.offsets)
        if single:
            assert self.stage is not None
            txn, staged = self.stage.transaction(out, offsets)
            return Output(txn, staged)
        plain: Output[Ingested | Staged] = Output(
            Transaction(out.messages, out.sources, offsets), out
        )
        return plain

    def step_failed(self, polled: list[InputRecord], error: Exception) -> Verdict:
        """The step raised (`runtime.role.Judging`). A broker's error is retried; anything
        else is taken for the engine failing on an input: the batch is bisected down to it
        and the replay dead-letters it (`internal_error`), as the single worker does, so one
        input cannot hold its partition back for good."""
        if isinstance(error, (KafkaError, OSError)):
            return Verdict.RETRY
        return isolate([r.source for r in polled], error, self.rejections, "edge: ingesting")

    def committed(self, carried: Ingested | Staged, at: float) -> None:
        if isinstance(carried, Staged):  # a single-stage transaction: all three roles'
            assert self.stage is not None
            self.stage.committed(carried, at)
            carried = carried.ingested
        for reason in carried.dead:
            self.metrics.dlq.labels(reason).inc()

    def _single_stage(self) -> bool:
        """Leave, ask or enter single stage (`single_stage` module). False: read no input
        this round (the shard and gather roles are asked to park: nothing is appended)."""
        stage = self.stage
        assert stage is not None
        if stage.on:
            if stage.must_leave() or not self._owns_inputs():
                stage.shard.follow_single_stage()
                stage.gather.follow_single_stage()
                stage.leave()
            return True
        whole = stage.shard.holds_all() and stage.gather.holds_all()
        if stage.asking:
            if not stage.answered():
                if stage.asking and not (whole and self._owns_inputs()):
                    stage.leave(RETRY_S)  # a group moved while it waited
                return not stage.asking  # False: still waiting
            ends = stage.log_ends()
            if ends is None or not self._owns_inputs():
                stage.leave(RETRY_S)
                return True
            stage.enter(ends)
            return True
        if stage.may_ask() and whole and self._owns_inputs():
            stage.ask()
            return False
        return not self._waits_at_start(stage)

    def _waits_at_start(self, stage: SingleStage) -> bool:
        """At start, read no input until its own group assigned and the shard and gather
        roles settle (assigned, nothing restoring: `single_stage.settled`), at most
        `cluster.start_hold_s`: the edge then asks before its first append if this replica is the
        whole cluster, instead of appending for the three stages and handing over once they
        caught up. Once over, never again."""
        if not self._starting:
            return False
        now = time.monotonic()
        if self._start_deadline is None:
            self._start_deadline = now + self.settings.cluster.start_hold_s
        joined = self.consumer.group_metadata().generation_id >= 0
        settled = joined and stage.shard.settled and stage.gather.settled
        if settled or now > self._start_deadline:
            self._starting = False
            if not settled:
                log.warning(
                    "edge: the groups did not settle in %.0f s; appending for the three stages",
                    self.settings.cluster.start_hold_s,
                )
        return self._starting

    def _hold(self) -> list[InputRecord]:
        """While the shard and gather roles are asked to park: read nothing, but keep the
        membership (a poll with the input paused: a rebalance can complete). Records of a
        partition assigned meanwhile are read again later."""
        topic = self.settings.topics.input
        owned = [tp for tp in self.consumer.assignment() if tp.topic == topic]
        self.consumer.pause(*owned)
        try:  # through `input`: it places partitions with no committed offset, or lost ones
            polled = self.input.poll(timeout_ms=HOLD_POLL_MS)
        finally:
            self.consumer.resume(*[tp for tp in owned if tp in self.consumer.assignment()])
        for tp, records in polled.items():
            if records:
                self.consumer.seek(tp, records[0].offset)
        self.metrics.role_partitions.labels("edge").set(len(self.consumer.assignment()))
        self._export_lag()
        return []

    def _owns_inputs(self) -> bool:
        topic = self.settings.topics.input
        partitions = self.consumer.partitions_for_topic(topic)
        owned = {tp.partition for tp in self.consumer.assignment() if tp.topic == topic}
        return bool(partitions) and owned == set(partitions)

    def rebuild(self) -> None:
        """Stateless: replay from the committed input offsets. The rewind is retried until it
        succeeds (as the single worker's): reading on from the consumer's position would
        commit offsets past the failed batch's inputs, which were never logged. In single
        stage the shard and gather states ran ahead too: both are rebuilt, and it leaves."""
        topic = self.settings.topics.input
        if self.stage is not None and (self.stage.on or self.stage.asking):
            if self.stage.on:
                log.warning(
                    "single stage: a transaction failed; every shard and log "
                    "partition is restored again"
                )
                self.stage.shard.rebuild()
                self.stage.gather.rebuild()
            self.stage.leave(RETRY_S)

        def rewind() -> None:
            failpoints.hit("edge_rewind")
            owned = {tp.partition for tp in self.consumer.assignment()}
            rewind_to_committed(self.consumer, topic, owned)

        retry.until_done(self._stop, self.settings.worker.retry_backoff_max_s, rewind)

    def waiting_for(self) -> str | None:
        """`runtime.stall.Waits`: input behind the end of an owned partition."""
        return behind(self.settings.topics.input, self._lags)

    def _export_lag(self) -> None:
        topic = self.settings.topics.input
        owned = {tp.partition for tp in self.consumer.assignment()}
        for p in self._lagging - owned:
            forget_series(self.metrics.consumer_lag, topic, str(p))
            forget_series(self.metrics.role_lag, "edge", str(p))
        self._lagging = owned
        self._lags = update_lag(self.consumer, topic, owned, self.metrics)
        for p, lag in self._lags.items():
            self.metrics.role_lag.labels("edge", str(p)).set(lag)

    def _ingest(self, records: list[InputRecord], single_stage: bool) -> Ingested:
        """`ingest` (for a `single_stage` transaction or not), in input order; of inputs the
        previous generation decided, only the fingerprint-log and payload records are kept
        (their dead letters were published then)."""
        c, now = self.settings.cluster, time.time()
        out = Ingested()
        for published, run in itertools.groupby(
            records, lambda r: self.handover.publishes(r.source)
        ):
            part = ingest(
                list(run),
                self.rules,
                self.fingerprinter,
                LogTopics(c.fingerprints, c.payloads),
                c.log_partitions,
                now,
                self.rejections,
                single_stage,
            )
            kept = list(range(len(part.messages)))
            if not published:
                logs = (c.fingerprints, c.payloads)
                kept = [i for i, m in enumerate(part.messages) if m.topic in logs]
                part.messages = [part.messages[i] for i in kept]
                part.sources = [part.sources[i] for i in kept]
                part.dead = []
            at = {old: len(out.messages) + new for new, old in enumerate(kept)}
            out.appends += [a._replace(at=at[a.at]) for a in part.appends]
            out.messages += part.messages
            out.sources += part.sources
            out.dead += part.dead
            out.documents += part.documents
            for tp, offset in part.offsets.items():
                out.offsets[tp] = max(offset, out.offsets.get(tp, offset))
        return out

    def close(self) -> None:
        self.consumer.close()
