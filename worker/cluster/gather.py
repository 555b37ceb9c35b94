"""The gather role: owning partition p of the votes topic means deciding log partition p.

It reads the fingerprint log partition (documents, payloads) and the votes of all S shards
for it; a log record is decided, with `Gatherer`, once every shard has voted on it, in log
order. One transaction per batch publishes the decisions and pass-throughs, the first
decisions (gather changelog, partition p) and the checkpoint: the next log offset to decide,
in the metadata of the committed offset of votes partition p, which is the first votes
record still needed. A log partition it gains is rebuilt from its gather changelog (retention
follows the dedup window) and resumes at the checkpoint; a failed transaction rebuilds
every owned partition that way.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass, field

from kafka import OffsetAndMetadata, TopicPartition

from neardup_stream.sharded.changes import FirstDecisions
from neardup_stream.sharded.gather import Gatherer
from neardup_stream.sharded.votes import Votes
from worker import clients, codec
from worker.cluster import checkpoint
from worker.cluster.envelope import Envelope
from worker.cluster.handover import Handover
from worker.cluster.replay import replay
from worker.cluster.txn import RoleTransactions, role_settings
from worker.codec import OutMessage
from worker.metrics import Metrics
from worker.settings import Settings

log = logging.getLogger(__name__)
MAX_BUFFERED = 2000  # fingerprint records read ahead of their votes, per log partition


@dataclass
class LogPartition:
    """Decision state of one owned log partition."""

    gatherer: Gatherer
    next: int  # first log offset not yet decided
    records: deque[tuple[int, Envelope | None]] = field(default_factory=deque)
    votes: dict[int, dict[int, Votes]] = field(default_factory=dict)  # offset -> shard -> votes
    votes_at: dict[int, int] = field(default_factory=dict)  # offset -> first votes record


class GatherRole:
    """Decisions of the log partitions this replica owns (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        stop: threading.Event,
        handover: Handover | None = None,
    ) -> None:
        self.settings, self.metrics, self._stop = settings, metrics, stop
        # Inputs a previous generation decided: decided and indexed again, not published.
        self.handover = handover or Handover("", {})
        self.role = role_settings(settings, "gather")
        self.consumer = clients.make_consumer(self.role)
        self.reader = clients.make_reader(settings)
        self.restorer = clients.make_reader(settings)
        self.txn = RoleTransactions(self.role, self.consumer, "gather")
        self.owned: dict[int, LogPartition] = {}

    def run(self) -> None:
        c, w = self.settings.cluster, self.settings.worker
        self.consumer.subscribe([c.votes])
        while not self._stop.is_set():
            polled = self.consumer.poll(timeout_ms=w.poll_timeout_ms, max_records=w.max_batch)
            fresh = self._follow({tp.partition for tp in self.consumer.assignment()})
            self.metrics.role_partitions.labels("gather").set(len(self.owned))
            for tp, recs in polled.items():
                if tp.partition in fresh or tp.partition not in self.owned:
                    continue  # fetched before its rewind: read again
                part = self.owned[tp.partition]
                for rec in recs:
                    self._add_votes(part, tp.partition, rec.offset, rec.key, rec.value)
            self._read_log()
            messages, counts = self._decide()
            if not messages:
                continue
            try:
                self._commit(messages)
            except Exception:
                log.exception("gather transaction failed; rebuilding %s", sorted(self.owned))
                self.metrics.role_failures.labels("gather").inc()
                self.owned.clear()
                self._stop.wait(1.0)
                continue
            for decision, method in counts:
                self.metrics.documents.labels(decision, method).inc()

    def close(self) -> None:
        self.txn.close()
        self.reader.close()
        self.restorer.close()
        self.consumer.close()

    def _follow(self, assigned: set[int]) -> set[int]:
        """Drop partitions no longer assigned; rebuild gained ones from their changelogs."""
        c = self.settings.cluster
        for p in set(self.owned) - assigned:
            del self.owned[p]
        gained = assigned - set(self.owned)
        for p in sorted(gained):
            votes_tp = TopicPartition(c.votes, p)
            start = checkpoint.read(self.consumer, votes_tp).get(p, 0)
            gatherer = Gatherer(self.settings.dedup)
            replay(
                self.restorer,
                TopicPartition(c.gather_changelog, p),
                lambda data: gatherer.apply(FirstDecisions.unpack(data)),  # noqa: B023 - used at once
                self._stop.is_set,
                self.metrics,
            )
            self.owned[p] = LogPartition(gatherer, start)
            committed = self.consumer.committed(votes_tp)
            if committed is None:
                self.consumer.seek_to_beginning(votes_tp)
            else:
                self.consumer.seek(votes_tp, committed)
            log.info("log partition %d: resuming at offset %d", p, start)
        if gained or set(self.owned) != {tp.partition for tp in self.reader.assignment()}:
            tps = [TopicPartition(c.fingerprints, p) for p in sorted(self.owned)]
            self.reader.assign(tps)
            for tp in tps:
                if tp.partition in gained:
                    self.reader.seek(tp, self.owned[tp.partition].next)
        return gained

    def _add_votes(
        self, part: LogPartition, partition: int, at: int, key: bytes | None, value: bytes
    ) -> None:
        try:
            offset, votes = int(key or b""), Votes.unpack(value)
        except ValueError as exc:
            log.error("skipping unreadable votes record %d on partition %d: %s", at, partition, exc)
            return
        if offset >= part.next:
            part.votes.setdefault(offset, {}).setdefault(votes.shard, votes)
            part.votes_at[offset] = min(part.votes_at.get(offset, at), at)

    def _read_log(self) -> None:
        if not self.owned or all(len(p.records) >= MAX_BUFFERED for p in self.owned.values()):
            return
        polled = self.reader.poll(timeout_ms=0, max_records=500)
        config_id, topic = self.settings.dedup.fingerprint_id, self.settings.topics.input
        for tp, recs in polled.items():
            part = self.owned.get(tp.partition)
            if part is None:
                continue
            for rec in recs:
                try:
                    env: Envelope | None = Envelope.unpack(rec.value, config_id, topic, rec.offset)
                except ValueError as exc:  # the shards skip it too
                    log.error("skipping fingerprint record %s@%d: %s", tp, rec.offset, exc)
                    env = None
                part.records.append((rec.offset, env))

    def _decide(self) -> tuple[list[OutMessage], list[tuple[str, str]]]:
        c, t, shards = self.settings.cluster, self.settings.topics, self.settings.dedup.home_shards
        messages: list[OutMessage] = []
        counts: list[tuple[str, str]] = []
        for p, part in self.owned.items():
            while part.records:
                offset, env = part.records[0]
                if env is not None:
                    votes = part.votes.get(offset, {})
                    if len(votes) < shards:
                        break
                    decisions, firsts = part.gatherer.decide_and_record(
                        env.fingerprints, list(votes.values())
                    )
                    for d, passage in zip(decisions, env.passages, strict=True):
                        if not self.handover.publishes(passage.source):
                            continue
                        m = (
                            codec.duplicate_message(t.duplicate, d)
                            if d.is_duplicate
                            else codec.unique_message(t.unique, d, passage.value)
                        )
                        messages.append(m)
                        counts.append((d.decision, d.method or "none"))
                    key = str(offset).encode()
                    messages += [
                        OutMessage(c.gather_changelog, key, f.pack(), partition=p) for f in firsts
                    ]
                part.votes.pop(offset, None)
                part.votes_at.pop(offset, None)
                part.records.popleft()
                part.next = offset + 1
        return messages, counts

    def _commit(self, messages: list[OutMessage]) -> None:
        votes = self.settings.cluster.votes
        offsets = {}
        for p, part in self.owned.items():
            tp = TopicPartition(votes, p)
            first_needed = min(part.votes_at.values(), default=self.consumer.position(tp))
            offsets[tp] = OffsetAndMetadata(first_needed, checkpoint.encode({p: part.next}), -1)
        self.txn.commit(messages, offsets)
        self.metrics.role_transactions.labels("gather").inc()
