"""The driver's scale-out path (`cluster.enabled`): edge, shards and gather in one process.

It runs what the three roles of `neardup_stream.worker.cluster` run, without their topics: the edge step
(`neardup_stream.worker.cluster.ingest.ingest`: admission, dead letters, one fingerprint-log record per
batch and log partition, packed as an `Envelope`, with its payload record), every home shard's
`neardup_stream.sharded.voter.ShardVoter` on each log record (unpacked from its bytes at its
log offset, as the shard role reads it), and one `neardup_stream.sharded.gather.Gatherer` per
log partition deciding each record once all shards voted, joined with its payload record
(unpacked from its bytes, as the gather role reads it) and published with `neardup_stream.worker.codec` as
the gather role does. Those are the `ShardedDeduplicator` parts `neardup-stream dedup
--home-shards` runs, so the decisions are offline dedup's.

Order: a batch's dead letters come first (the edge publishes them), then its decisions per
log partition in log order. A failing engine is not bisected here: the edge role retries such
a batch forever, so the driver raises instead.
"""

from __future__ import annotations

import time
from typing import NamedTuple

from neardup_stream.sharded.deduplicator import DocumentFingerprinter
from neardup_stream.sharded.gather import Gatherer
from neardup_stream.sharded.voter import ShardVoter
from neardup_stream.worker import codec
from neardup_stream.worker.cluster.ingest import LogTopics, ingest
from neardup_stream.worker.cluster.log_record import Envelope
from neardup_stream.worker.cluster.payloads import PayloadRecord
from neardup_stream.worker.decide import DecideRules, InputRecord, Source
from neardup_stream.worker.settings import Settings


class Published(NamedTuple):
    """One published message and the input it answers."""

    message: codec.OutMessage
    source: Source


class ClusterPipeline:
    """Edge -> fingerprint log -> shard votes -> gather, one batch at a time."""

    def __init__(self, settings: Settings, rules: DecideRules) -> None:
        self.settings, self.rules = settings, rules
        self.fingerprinter = DocumentFingerprinter(settings.dedup)
        self.voters = [ShardVoter(settings.dedup, s) for s in range(settings.dedup.home_shards)]
        self.gatherers: dict[int, Gatherer] = {}  # per log partition
        self.log_offsets: dict[int, int] = {}  # next offset per log partition

    def batch(self, records: list[InputRecord]) -> list[Published]:
        """What the edge, then the gather, publish for one polled batch."""
        s, c = self.settings, self.settings.cluster
        logs = LogTopics(c.fingerprints, c.payloads)
        edge = ingest(records, self.rules, self.fingerprinter, logs, c.log_partitions, time.time())
        logged = [m for m in edge.messages if m.topic == c.fingerprints]
        records_out = [
            PayloadRecord.unpack(m.value, s.topics.input)
            for m in edge.messages
            if m.topic == c.payloads
        ]
        payloads = {r.join_key: r for r in records_out}
        dead = [m for m in edge.messages if m.topic not in logs]
        envelopes = []
        for m in logged:
            assert m.partition is not None  # the edge places every log record
            offset = self.log_offsets.get(m.partition, 0)
            self.log_offsets[m.partition] = offset + 1
            env = Envelope.unpack(
                m.value, s.dedup.fingerprint_id, s.topics.input, offset, m.partition
            )
            envelopes.append((m.partition, env))
        in_log = {src for _, env in envelopes for src in env.sources}
        unlogged = [r.source for r in records if r.source not in in_log]
        out = [Published(m, src) for m, src in zip(dead, unlogged, strict=True)]
        for partition, env in envelopes:
            votes = [voter.vote_and_record(env.fingerprints)[0] for voter in self.voters]
            gatherer = self.gatherers.setdefault(partition, Gatherer(s.dedup))
            decisions, _ = gatherer.decide_and_record(env.fingerprints, votes)
            passages = payloads[env.join_key].passages
            for d, passage in zip(decisions, passages, strict=True):
                m = (
                    codec.duplicate_message(s.topics.duplicate, d)
                    if d.is_duplicate
                    else codec.unique_message(s.topics.unique, d, passage.value)
                )
                out.append(Published(m, passage.source))
        return out
