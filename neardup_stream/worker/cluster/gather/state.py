"""What the gather holds for one log partition it owns, and its decide step: Kafka-free.

`LogPartition` keeps, for log partition p: the join of its fingerprint-log records with the
S shard votes on each (`VoteJoin`), the payload records read but not used yet
(`PayloadJoin`), its first decisions (`Gatherer`) and, while its oldest record waits for
payloads that may have been deleted, where the payloads must have been read up to
(`Blocked`). `decide` decides one joined record: its payloads are taken, checked against the
record's inputs, and its documents decided. `payload_checkpoint` gives where the partition
resumes reading payloads, sweeping stale payloads once it is known to be caught up.
`neardup_stream.worker.cluster.gather.reading` fills it from Kafka; `neardup_stream.worker.cluster.gather.role` publishes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from neardup_stream.models import Decision
from neardup_stream.sharded.changes import FirstDecisions
from neardup_stream.sharded.gather import Gatherer
from neardup_stream.sharded.join import Joined, VoteJoin
from neardup_stream.worker.cluster.log_record import Envelope
from neardup_stream.worker.cluster.payloads import Passage, PayloadCheckpoint, PayloadJoin
from neardup_stream.worker.records import Source

SWEEP_USED = 64  # used payload offsets in a checkpoint above which stale payloads are swept


class Blocked(NamedTuple):
    """The oldest record of a log partition, voted on but without its payloads read: they
    are below `end`, the payloads' high watermark after it was committed, or deleted."""

    offset: int
    end: int


class RestoredLog(NamedTuple):
    """A log partition's first decisions, restored, and its checkpoint."""

    gatherer: Gatherer
    start: int


class Decided(NamedTuple):
    """The outcome of one log record: its decisions, the payloads they go out with (None:
    deleted by retention, so decided, to keep the state, but nothing is published) and the
    first decisions that replay the gatherer's change."""

    decisions: list[Decision]
    passages: list[Passage] | None
    firsts: list[FirstDecisions]


def _span(sources: list[Source]) -> str:
    """Inputs as `n inputs of partition p, offsets a..b` (for an error message)."""
    parts = sorted({s.partition for s in sources})
    offsets = [s.offset for s in sources]
    return f"{len(sources)} inputs of partitions {parts}, offsets {offsets[0]}..{offsets[-1]}"


class PayloadMismatch(ValueError):
    """The payloads found for a log record are for other inputs than the record's."""


@dataclass
class LogPartition:
    """The state of one owned log partition (see the module docstring)."""

    join: VoteJoin[Envelope]
    gatherer: Gatherer
    payloads: PayloadJoin
    blocked: Blocked | None = None

    @property
    def held_bytes(self) -> int:
        """Bytes of undecided records, votes and payloads held."""
        return self.join.held_bytes + self.payloads.held_bytes

    def waits_for_payload(self) -> bool:
        """Whether the oldest undecided record waits for its payloads."""
        records = self.join.records
        return bool(records) and records[0].payload.join_key not in self.payloads.held

    def waits_for_reader(self) -> bool:
        """Whether what decides next is the log reader's to bring: votes arrived for records
        not read yet, or the oldest record waits for its payloads."""
        return self.join.ahead_bytes() > 0 or self.waits_for_payload()

    def decide(self, ready: Joined[Envelope], payloads_gone: Callable[[], bool]) -> Decided | None:
        """Decide `ready` (None: its payloads are not read yet, and `payloads_gone()` says
        they were not deleted either). Raises `PayloadMismatch` if its payloads are for other
        inputs: the record is then not decided."""
        env = ready.payload
        held = self.payloads.held.get(env.join_key)  # checked before `take`: refused, it stays
        if held is not None and (sources := [x.source for x in held.passages]) != env.sources:
            raise PayloadMismatch(
                f"payloads of log record {ready.offset} are for other inputs: the record holds "
                f"{_span(env.sources)}, the payload record at offset {held.offset} "
                f"{_span(sources)}"
            )
        passages = self.payloads.take(env.join_key)
        if passages is None and not payloads_gone():
            return None
        decisions, firsts = self.gatherer.decide_and_record(env.fingerprints, ready.votes)
        return Decided(decisions, passages, firsts)

    def payload_checkpoint(self, caught_up: Callable[[], bool]) -> PayloadCheckpoint:
        """Where the partition resumes reading payloads. When many used offsets pile up
        behind a held payload (one whose log record retention deleted, of an input partition
        that sent nothing since), and `caught_up()` (the log was read up to its last
        stable offset taken now, so every held payload's log record was read), the payloads of
        no undecided record are dropped."""
        at = self.payloads.checkpoint()
        if len(at.used) <= SWEEP_USED:
            return at
        if caught_up() and self.payloads.keep_only({r.payload.join_key for r in self.join.records}):
            at = self.payloads.checkpoint()
        return at
