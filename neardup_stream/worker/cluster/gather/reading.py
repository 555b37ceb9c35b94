"""The gather's reading: the votes (its group consumer), the fingerprint log and payloads.

`GatherInputs` owns the gather's Kafka clients and fills the `LogPartition` of each owned
log partition (`parts`, filled by `neardup_stream.worker.cluster.gather.following`): votes go into its
`VoteJoin`, fingerprint-log records too (`Pending`), payload records into its `PayloadJoin`.
A partition whose undecided records (or payloads read ahead, unless the oldest record waits
for its own) exceed `cluster.gather_buffer_bytes` is paused; votes dropped over their budget
are read again (`read_votes_again`, when `VoteJoin.rewind` says). An unreadable votes,
fingerprint or payload record halts its log partition there (`halt`, through `RoleHealth`):
its state and checkpoint stay, nothing more is read for it. `payloads_gone` tells whether a record's
payloads were deleted by retention (read up to the payloads' high watermark taken once the
record waited for them, not found).
"""

from __future__ import annotations

from kafka import KafkaConsumer, TopicPartition

from neardup_stream.sharded.join import Pending
from neardup_stream.sharded.votes import unpack_record
from neardup_stream.worker import clients, partitions
from neardup_stream.worker.cluster import checkpoint
from neardup_stream.worker.cluster.gather.state import Blocked, LogPartition
from neardup_stream.worker.cluster.log_record import Envelope
from neardup_stream.worker.cluster.payloads import PayloadCheckpoint, PayloadRecord
from neardup_stream.worker.runtime.health import RoleHealth, Stop
from neardup_stream.worker.runtime.role import role_settings
from neardup_stream.worker.settings import Settings


class GatherInputs:
    """The gather's consumers and what they read into `parts` (see the module docstring)."""

    def __init__(self, settings: Settings, health: RoleHealth) -> None:
        self.settings, self.health = settings, health
        self.role = role_settings(settings, "gather")  # its group and transactional id
        self.consumer = clients.make_consumer(self.role)  # the votes, as a group member
        self.reader = clients.make_reader(self.role)  # fingerprint log and payloads
        self._watermarks: KafkaConsumer | None = None  # read_uncommitted, for `Blocked`
        self.parts: dict[int, LogPartition] = {}

    def close(self) -> None:
        self.reader.close()
        if self._watermarks is not None:
            self._watermarks.close()
        self.consumer.close()

    def logs(self) -> tuple[str, str]:
        """The topics the reader reads, per owned log partition."""
        c = self.settings.cluster
        return c.fingerprints, c.payloads

    def is_stopped(self, p: int) -> bool:
        c = self.settings.cluster
        return any(self.health.is_stopped(t, p) for t in (c.fingerprints, c.payloads, c.votes))

    def halt(self, stop: Stop) -> None:
        """Stop a log partition: its state and checkpoint stay, nothing more is read for it
        (the records before the stop are still decided once their votes are in)."""
        self.health.stop(stop)
        paused(self.consumer, TopicPartition(self.settings.cluster.votes, stop.partition), True)
        for topic in self.logs():
            paused(self.reader, TopicPartition(topic, stop.partition), True)

    def add_votes(self, partition: int, at: int, key: bytes | None, value: bytes) -> None:
        """The votes record at offset `at` of votes partition `partition`."""
        if self.is_stopped(partition):
            return
        try:
            offset, found = int(key or b""), unpack_record(value)
        except ValueError as exc:
            self.halt(Stop(self.settings.cluster.votes, partition, at, f"unreadable votes: {exc}"))
            return
        for votes in found:  # held unpacked: their size in memory counts, not the record's
            self.parts[partition].join.add_votes(offset, votes, at, votes.nbytes)

    def votes_position(self, p: int) -> int:
        """Where votes partition `p` stands for a commit: the votes consumer's position, or,
        stopped at an unreadable votes record, that record (the consumer read past it, and
        the rest of that poll was dropped): a restart meets the record again."""
        votes = self.settings.cluster.votes
        position = partitions.position(self.consumer, TopicPartition(votes, p))
        stopped = self.health.stopped_at(votes, p)
        return position if stopped is None else min(position, stopped)

    def read_log(self, wait_ms: int = 0) -> None:
        """Read the fingerprint log and payloads of the owned partitions not paused, waiting
        up to `wait_ms` for the first records."""
        c = self.settings.cluster
        budget = c.gather_buffer_bytes
        for p, part in self.parts.items():  # a full buffer pauses its partition's reader
            stopped = self.is_stopped(p)
            tp = TopicPartition(c.fingerprints, p)
            paused(self.reader, tp, part.join.record_bytes >= budget or stopped)
            full = part.payloads.held_bytes >= budget and not part.waits_for_payload()
            paused(self.reader, TopicPartition(c.payloads, p), full or stopped)
        if not self.parts:
            return
        polled = self.reader.poll(timeout_ms=wait_ms, max_records=500)
        config_id, topic = self.settings.dedup.fingerprint_id, self.settings.topics.input
        for tp, recs in polled.items():
            into = self.parts.get(tp.partition)
            for rec in recs:
                if into is None or self.is_stopped(tp.partition):
                    break
                try:
                    if tp.topic == c.payloads:
                        record = PayloadRecord.unpack(rec.value, topic)
                        into.payloads.add(rec.offset, record, len(rec.value))
                        continue
                    env = Envelope.unpack(rec.value, config_id, topic, rec.offset, tp.partition)
                except ValueError as exc:  # the shards stop there too (fingerprint log)
                    votes = TopicPartition(c.votes, tp.partition)
                    checkpoint.check_overtaken(self.consumer, [votes], rec)
                    self.halt(Stop(tp.topic, tp.partition, rec.offset, str(exc)))
                    break
                into.join.add_record(Pending(rec.offset, env, rec.timestamp, len(rec.value)))

    def read_votes_again(self) -> None:
        """Seek back to votes dropped over their budget, once the records caught up."""
        for p, part in self.parts.items():
            at = part.join.rewind()
            if at is not None:
                self.consumer.seek(TopicPartition(self.settings.cluster.votes, p), at)

    def payloads_gone(self, p: int, offset: int) -> bool:
        """Whether the payloads of log record `offset` were deleted (by retention): the edge
        appended them before committing the record, so they lie below the payloads' high
        watermark taken once the record was read; read up to there, they were not found.
        (The reader starts at the lowest payload offset still needed, so none is skipped.)"""
        if self.is_stopped(p):  # a halt drops what the reader had read past its stop
            return False
        tp = TopicPartition(self.settings.cluster.payloads, p)
        try:
            at = self.reader.position(tp)
        except Exception:  # not positioned yet after a seek
            return False
        if at < (self.reader.highwater(tp) or 0):
            return False  # still reading what was fetched: no need to ask the broker
        part = self.parts[p]
        blocked = part.blocked
        if blocked is None or blocked.offset != offset:
            part.blocked = blocked = Blocked(offset, self._high_watermark(tp))
        return at >= blocked.end

    def payload_checkpoint(self, p: int) -> PayloadCheckpoint:
        """Where log partition `p` resumes reading payloads (`LogPartition.payload_checkpoint`)."""
        return self.parts[p].payload_checkpoint(lambda: self._caught_up(p))

    def log_position(self, p: int) -> int | None:
        """The reader's position in log partition `p` (None: not positioned yet)."""
        try:
            return int(self.reader.position(TopicPartition(self.settings.cluster.fingerprints, p)))
        except Exception:  # not positioned yet after a seek
            return None

    def _caught_up(self, p: int) -> bool:
        """Whether the log partition was read up to its last stable offset taken now: every
        committed record, so the record of every payload read (both commit together). Not
        the high watermark: under steady input an edge transaction is nearly always open,
        and a sweep waiting for it would let the checkpoint's used offsets outgrow
        `offset.metadata.max.bytes` (the reader is read_committed: its end is the LSO)."""
        tp = TopicPartition(self.settings.cluster.fingerprints, p)
        try:
            return bool(self.reader.position(tp) >= self.reader.end_offsets([tp])[tp])
        except Exception:  # not positioned yet after a seek: sweep another time
            return False

    def _high_watermark(self, tp: TopicPartition) -> int:
        """The end of `tp`, records of open transactions included (the reader, being
        read_committed, sees the last stable offset)."""
        if self._watermarks is None:
            self._watermarks = KafkaConsumer(
                **clients.common_config(self.role.kafka),
                group_id=None,
                enable_auto_commit=False,
            )
        return int(self._watermarks.end_offsets([tp])[tp])


def paused(consumer: KafkaConsumer, tp: TopicPartition, pause: bool) -> None:
    """Pause or resume `tp` if `consumer` is assigned it (else there is nothing to do)."""
    if tp not in consumer.assignment():
        return
    if pause:
        consumer.pause(tp)
    else:
        consumer.resume(tp)
