"""The shard role: owning partition s of the shards topic means owning shard s.

It reads the fingerprint log in order; each owned shard votes on every record and stores its
home documents. In one transaction per batch it publishes the votes (votes topic, partition
= log partition, key = log offset), its changes (shard changelog, partition s: what it
stored, and its watermark) and its position in the fingerprint log (the metadata of its
committed offset on the shards topic). A shard it gains is rebuilt from its changelog (its
retention follows the dedup window) and resumes at that position; when a transaction fails,
every owned shard is rebuilt that way, since their state ran ahead of what committed.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from kafka import OffsetAndMetadata, TopicPartition

from neardup_stream.sharded.changes import ShardChange
from neardup_stream.sharded.voter import ShardVoter
from worker import clients
from worker.cluster import checkpoint
from worker.cluster.envelope import Envelope
from worker.cluster.replay import replay
from worker.cluster.txn import RoleTransactions, role_settings
from worker.codec import OutMessage
from worker.metrics import Metrics
from worker.settings import Settings

log = logging.getLogger(__name__)
GROUP_POLL_MS = 50


@dataclass
class OwnedShard:
    """An owned shard: its voter and the next fingerprint-log offset per log partition."""

    voter: ShardVoter
    next: dict[int, int] = field(default_factory=dict)


class ShardRole:
    """Votes of the shards this replica owns (see the module docstring)."""

    def __init__(self, settings: Settings, metrics: Metrics, stop: threading.Event) -> None:
        self.settings, self.metrics, self._stop = settings, metrics, stop
        self.role = role_settings(settings, "shards")
        self.consumer = clients.make_consumer(self.role)
        self.reader = clients.make_reader(settings)
        self.restorer = clients.make_reader(settings)
        self.txn = RoleTransactions(self.role, self.consumer, "shard")
        self.owned: dict[int, OwnedShard] = {}
        self.by_age = settings.dedup.max_age_seconds is not None  # watermarks matter
        c = settings.cluster
        self.log_partitions = [TopicPartition(c.fingerprints, p) for p in range(c.log_partitions)]

    def run(self) -> None:
        c = self.settings.cluster
        self.consumer.subscribe([c.shards])
        self.reader.assign(self.log_partitions)
        while not self._stop.is_set():
            # No records on the shards topic: this poll only keeps the membership. Never 0 ms:
            # kafka-python then never completes a rejoin, and a moved shard has no owner.
            wait = self.settings.worker.poll_timeout_ms
            self.consumer.poll(timeout_ms=min(wait, GROUP_POLL_MS) if self.owned else wait)
            self._follow({tp.partition for tp in self.consumer.assignment()})
            self.metrics.role_partitions.labels("shard").set(len(self.owned))
            if not self.owned:
                continue
            polled = self.reader.poll(
                timeout_ms=self.settings.worker.poll_timeout_ms, max_records=c.max_records
            )
            if not polled:
                continue
            try:
                self._commit(self._vote(polled))
            except Exception:
                log.exception("shard transaction failed; rebuilding shards %s", sorted(self.owned))
                self.metrics.role_failures.labels("shard").inc()
                self.owned.clear()
                self._stop.wait(1.0)

    def close(self) -> None:
        self.txn.close()
        self.reader.close()
        self.restorer.close()
        self.consumer.close()

    def _follow(self, assigned: set[int]) -> None:
        """Drop shards no longer assigned; rebuild gained ones from their changelogs."""
        for s in set(self.owned) - assigned:
            del self.owned[s]
        gained = assigned - set(self.owned)
        if not gained:
            return
        c = self.settings.cluster
        for s in sorted(gained):
            voter = ShardVoter(self.settings.dedup, s)
            start = checkpoint.read(self.consumer, TopicPartition(c.shards, s))
            replay(
                self.restorer,
                TopicPartition(c.shard_changelog, s),
                lambda data: voter.apply(ShardChange.unpack(data)),  # noqa: B023 - used at once
                self._stop.is_set,
                self.metrics,
            )
            self.owned[s] = OwnedShard(voter, start)
            log.info("shard %d: %d documents, resuming at %s", s, len(voter), start)
        for tp in self.log_partitions:  # back to where the least advanced shard is
            self.reader.seek(tp, min(o.next.get(tp.partition, 0) for o in self.owned.values()))

    def _vote(self, polled: dict) -> list[OutMessage]:
        c, config_id = self.settings.cluster, self.settings.dedup.fingerprint_id
        messages: list[OutMessage] = []
        for tp in sorted(polled, key=lambda t: t.partition):
            for rec in polled[tp]:
                try:
                    env = Envelope.unpack(
                        rec.value, config_id, self.settings.topics.input, rec.offset
                    )
                except ValueError as exc:  # the gather step skips it too
                    log.error("skipping fingerprint record %s@%d: %s", tp, rec.offset, exc)
                    for shard in self.owned.values():
                        shard.next[tp.partition] = rec.offset + 1
                    continue
                for s, shard in self.owned.items():
                    if rec.offset < shard.next.get(tp.partition, 0):
                        continue
                    votes, changes = shard.voter.vote_and_record(env.fingerprints)
                    shard.next[tp.partition] = rec.offset + 1
                    key = str(rec.offset).encode()
                    messages.append(OutMessage(c.votes, key, votes.pack(), partition=tp.partition))
                    messages += [
                        OutMessage(c.shard_changelog, key, ch.pack(), partition=s)
                        for ch in changes
                        if ch.records or self.by_age  # else an empty change changes nothing
                    ]
        return messages

    def _commit(self, messages: list[OutMessage]) -> None:
        shards = self.settings.cluster.shards
        offsets = {
            TopicPartition(shards, s): OffsetAndMetadata(0, checkpoint.encode(o.next), -1)
            for s, o in self.owned.items()
        }
        self.txn.commit(messages, offsets)
        m = self.metrics
        m.role_transactions.labels("shard").inc()
        m.index_documents.set(sum(len(o.voter) for o in self.owned.values()))
        m.index_bytes.set(sum(o.voter.index_bytes() for o in self.owned.values()))
