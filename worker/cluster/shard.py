"""The shard role: owning partition s of the shards topic means owning shard s.

It replays the fingerprint log in order; each owned shard votes on every record (and stores
its home documents); votes go to the votes topic, partition = log partition, key = the log
offset. A shard's votes and its position in the log commit in one transaction (the position
rides in the metadata of its committed offset on the shards topic). A shard it gains is
rebuilt from the start of the log, publishing only past its checkpoint; when a transaction
fails, every owned shard is rebuilt that way (their state ran ahead of what committed).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from kafka import OffsetAndMetadata, TopicPartition

from neardup_stream.sharded.voter import ShardVoter
from worker import clients
from worker.cluster import checkpoint
from worker.cluster.envelope import Envelope
from worker.cluster.txn import Message, RoleTransactions, role_settings
from worker.metrics import Metrics
from worker.settings import Settings

log = logging.getLogger(__name__)


@dataclass
class OwnedShard:
    """An owned shard: its voter, how far it has voted, and from where it publishes."""

    voter: ShardVoter
    publish_from: dict[int, int]
    next: dict[int, int] = field(default_factory=dict)

    def checkpoint(self) -> dict[int, int]:
        keys = set(self.next) | set(self.publish_from)
        return {p: max(self.next.get(p, 0), self.publish_from.get(p, 0)) for p in keys}


class ShardRole:
    """Votes of the shards this replica owns (see the module docstring)."""

    def __init__(self, settings: Settings, metrics: Metrics, stop: threading.Event) -> None:
        self.settings, self.metrics, self._stop = settings, metrics, stop
        self.role = role_settings(settings, "shards")
        self.consumer = clients.make_consumer(self.role)
        self.reader = clients.make_reader(settings)
        self.txn = RoleTransactions(self.role, self.consumer, "shard")
        self.owned: dict[int, OwnedShard] = {}
        c = settings.cluster
        self.log_partitions = [TopicPartition(c.fingerprints, p) for p in range(c.log_partitions)]

    def run(self) -> None:
        c = self.settings.cluster
        self.consumer.subscribe([c.shards])
        self.reader.assign(self.log_partitions)
        while not self._stop.is_set():
            self.consumer.poll(timeout_ms=0 if self.owned else self.settings.worker.poll_timeout_ms)
            self._follow({tp.partition for tp in self.consumer.assignment()})
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
        self.consumer.close()

    def _follow(self, assigned: set[int]) -> None:
        """Drop shards no longer assigned; start gained ones from their checkpoints."""
        for s in set(self.owned) - assigned:
            del self.owned[s]
        gained = assigned - set(self.owned)
        if not gained:
            return
        c = self.settings.cluster
        for s in sorted(gained):
            start = checkpoint.read(self.consumer, TopicPartition(c.shards, s))
            self.owned[s] = OwnedShard(ShardVoter(self.settings.dedup, s), start)
        log.info("shards %s gained; rebuilding them from the fingerprint log", sorted(gained))
        for tp in self.log_partitions:  # back to where the least advanced shard is
            self.reader.seek(tp, min(o.next.get(tp.partition, 0) for o in self.owned.values()))

    def _vote(self, polled: dict) -> list[Message]:
        c, config_id = self.settings.cluster, self.settings.dedup.fingerprint_id
        messages: list[Message] = []
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
                for shard in self.owned.values():
                    if rec.offset < shard.next.get(tp.partition, 0):
                        continue
                    votes = shard.voter.vote(env.fingerprints)
                    shard.next[tp.partition] = rec.offset + 1
                    if rec.offset >= shard.publish_from.get(tp.partition, 0):
                        key = str(rec.offset).encode()
                        messages.append(Message(c.votes, votes.pack(), key, tp.partition))
        return messages

    def _commit(self, messages: list[Message]) -> None:
        shards = self.settings.cluster.shards
        offsets = {
            TopicPartition(shards, s): OffsetAndMetadata(0, checkpoint.encode(o.checkpoint()), -1)
            for s, o in self.owned.items()
        }
        self.txn.commit(messages, offsets)
        m = self.metrics
        m.role_transactions.labels("shard").inc()
        m.shards_owned.set(len(self.owned))
        m.index_documents.set(sum(len(o.voter) for o in self.owned.values()))
        m.index_bytes.set(sum(o.voter.index_bytes() for o in self.owned.values()))
