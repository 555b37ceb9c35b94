"""One log partition the gather holds (`neardup_stream.worker.cluster.gather.state`): its decide step, the
payloads it waits for, and where it resumes reading payloads."""

from __future__ import annotations

import numpy as np
import pytest

from neardup_stream import Document
from neardup_stream.config import DedupConfig
from neardup_stream.sharded.deduplicator import DocumentFingerprinter
from neardup_stream.sharded.gather import Gatherer
from neardup_stream.sharded.join import Joined, Pending, VoteJoin
from neardup_stream.sharded.votes import Votes
from neardup_stream.worker.cluster.gather.state import SWEEP_USED, LogPartition, PayloadMismatch
from neardup_stream.worker.cluster.log_record import Envelope
from neardup_stream.worker.cluster.payloads import (
    Passage,
    PayloadCheckpoint,
    PayloadJoin,
    PayloadRecord,
)
from neardup_stream.worker.records import Source

CONFIG = DedupConfig()


def src(partition: int, offset: int) -> Source:
    return Source("docs", partition, offset)


def envelope(sources: list[Source], text: str = "text number") -> Envelope:
    docs = [Document(id=f"d{s.offset}", text=f"{text} {s.offset} " * 5) for s in sources]
    n = len(docs)
    fb = DocumentFingerprinter(CONFIG).batch(docs, [""] * n, np.arange(n), 1.7e9, [-1] * n)
    return Envelope(fb, sources)


def payloads(sources: list[Source]) -> PayloadRecord:
    return PayloadRecord([Passage(s, 1_000 + s.offset, None, b"v") for s in sources])


def partition() -> LogPartition:
    join: VoteJoin[Envelope] = VoteJoin(CONFIG.home_shards, 0)
    return LogPartition(join, Gatherer(CONFIG), PayloadJoin())


def voted(part: LogPartition, offset: int, env: Envelope) -> Joined[Envelope]:
    """Hold log record `offset` with every shard's vote; return it ready to decide."""
    part.join.add_record(Pending(offset, env, 1_000, 10))
    for s in range(CONFIG.home_shards):
        part.join.add_votes(offset, Votes.none(s, len(env.sources)), offset * 10 + s, 5)
    ready = part.join.ready()
    assert ready is not None and ready.offset == offset
    return ready


def never() -> bool:
    raise AssertionError("asked whether the payloads are gone although they were read")


def test_a_record_with_its_payloads_read_is_decided_with_them() -> None:
    part, sources = partition(), [src(0, 3), src(0, 4)]
    part.payloads.add(0, payloads(sources), 40)
    done = part.decide(voted(part, 0, envelope(sources)), never)
    assert done is not None and [p.source for p in done.passages or []] == sources
    assert [d.id for d in done.decisions] == ["d3", "d4"]
    assert all(not d.is_duplicate for d in done.decisions) and len(part.gatherer) == 2
    assert done.firsts and part.payloads.held_bytes == 0


def test_a_record_waits_for_payloads_not_read_yet_and_is_decided_without_once_gone() -> None:
    part, sources = partition(), [src(1, 7)]
    ready = voted(part, 5, envelope(sources))
    assert part.waits_for_payload()
    assert part.decide(ready, lambda: False) is None and len(part.gatherer) == 0
    done = part.decide(ready, lambda: True)  # deleted by retention: the state still moves
    assert done is not None and done.passages is None and [d.id for d in done.decisions] == ["d7"]
    assert len(part.gatherer) == 1


def test_payloads_for_other_inputs_are_refused_and_nothing_is_decided() -> None:
    part = partition()
    part.payloads.add(0, payloads([src(0, 3), src(0, 9)]), 40)  # same first input, not the rest
    ready = voted(part, 2, envelope([src(0, 3), src(0, 4)]))
    for _ in range(2):  # refused each time it is asked, never taken for "gone"
        with pytest.raises(PayloadMismatch, match="log record 2 are for other inputs"):
            part.decide(ready, never)
    assert len(part.gatherer) == 0 and part.payloads.held_bytes == 40


def test_held_bytes_count_records_votes_and_payloads() -> None:
    part = partition()
    assert part.held_bytes == 0 and not part.waits_for_payload()
    part.payloads.add(0, payloads([src(0, 3)]), 40)
    voted(part, 0, envelope([src(0, 3)]))
    assert not part.waits_for_payload()
    assert part.held_bytes == part.join.held_bytes + 40 and part.join.held_bytes > 0


def test_stale_payloads_are_swept_only_past_the_threshold_and_once_caught_up() -> None:
    part = partition()
    part.payloads.add(0, payloads([src(5, 0)]), 10)  # its log record was deleted by retention
    asked: list[bool] = []

    def caught_up(answer: bool) -> bool:
        asked.append(answer)
        return answer

    for o in range(1, SWEEP_USED + 1):  # used, but behind the held one
        part.payloads.add(o, payloads([src(0, o)]), 10)
        assert part.payloads.take(envelope([src(0, o)]).join_key) is not None
    assert part.payload_checkpoint(lambda: caught_up(True)).start == 0 and asked == []
    part.payloads.add(SWEEP_USED + 1, payloads([src(0, SWEEP_USED + 1)]), 10)
    assert part.payloads.take(envelope([src(0, SWEEP_USED + 1)]).join_key) is not None
    part.payloads.add(SWEEP_USED + 2, payloads([src(3, 0)]), 10)  # an undecided record's
    voted(part, 0, envelope([src(3, 0)]))
    at = part.payload_checkpoint(lambda: caught_up(False))
    assert at.start == 0 and len(at.used) == SWEEP_USED + 1
    assert part.payload_checkpoint(lambda: caught_up(True)) == PayloadCheckpoint(SWEEP_USED + 2, ())
    assert asked == [False, True] and not part.waits_for_payload()


def test_waits_for_the_reader_when_votes_or_a_record_are_ahead_of_what_it_read() -> None:
    """The gather waits on its log reader (not on the next votes) exactly when the reader
    holds what decides next: votes for a record not read yet, or the oldest record's
    payloads."""
    part, sources = partition(), [src(0, 7)]
    assert not part.waits_for_reader()  # nothing held: the votes come next
    part.join.add_votes(0, Votes.none(0, 1), 100, 5)
    assert part.waits_for_reader()  # a vote on record 0, which is not read yet
    part.join.add_record(Pending(0, envelope(sources), 1_000, 10))
    assert part.waits_for_reader()  # record 0 read, its payloads not
    part.payloads.add(0, payloads(sources), 40)
    assert not part.waits_for_reader()  # all in: the other shards' votes come next
