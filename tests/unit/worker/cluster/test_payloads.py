"""The payload records and their join with the fingerprint-log records."""

from __future__ import annotations

import pytest

from neardup_stream.worker.cluster.log_record import JoinKey
from neardup_stream.worker.cluster.payloads import (
    Passage,
    PayloadCheckpoint,
    PayloadJoin,
    PayloadRecord,
)
from neardup_stream.worker.records import Source


def src(partition: int, offset: int) -> Source:
    return Source("docs", partition, offset)


def payloads(sources: list[Source]) -> PayloadRecord:
    return PayloadRecord(
        [
            Passage(s, 1_700_000_000_000 + s.offset, f"k{s.offset}".encode(), b"v" * s.offset)
            for s in sources
        ]
    )


def test_a_payload_record_round_trips_and_refuses_what_it_cannot_read() -> None:
    record = payloads([src(0, 1), src(0, 2)])
    record = PayloadRecord([*record.passages, Passage(src(0, 3), -1, None, b"")])
    packed = record.pack()
    assert PayloadRecord.unpack(packed, "docs") == record
    assert record.join_key == JoinKey(0, 1)
    for bad, why in [
        (packed[:-1], "truncated"),
        (packed + b"x", "trailing"),
        (b"NE" + packed[2:], "no 'NP' header"),
        (packed[:2] + b"\x02" + packed[3:], "format 2"),
        (PayloadRecord([]).pack(), "no document"),
    ]:
        with pytest.raises(ValueError, match=why):
            PayloadRecord.unpack(bad, "docs")


def test_payloads_read_in_another_order_than_their_log_records_join_by_their_inputs() -> None:
    join = PayloadJoin()
    a, b, c = payloads([src(0, 0)]), payloads([src(1, 0)]), payloads([src(0, 1)])
    join.add(10, b, 100)  # another edge's transaction appended its payloads first
    join.add(11, a, 50)
    assert join.take(JoinKey(0, 1)) is None  # not read yet: the record waits
    assert join.take(JoinKey(0, 0)) == a.passages
    assert join.checkpoint() == PayloadCheckpoint(10, (11,))  # b still needed, 11 used
    join.add(12, c, 10)
    assert join.take(JoinKey(0, 1)) == c.passages and join.held_bytes == 100
    assert join.take(JoinKey(1, 0)) == b.passages
    assert join.checkpoint() == PayloadCheckpoint(13, ()) and join.held_bytes == 0


def test_a_resumed_join_skips_the_payloads_it_used_before_the_restart() -> None:
    join = PayloadJoin(PayloadCheckpoint(10, (11,)))
    assert join.position == 10
    join.add(10, payloads([src(1, 0)]), 100)
    join.add(11, payloads([src(0, 0)]), 50)  # used before the restart: not held again
    join.add(11, payloads([src(0, 0)]), 50)  # read twice after a seek: ignored
    assert list(join.held) == [JoinKey(1, 0)]
    assert join.checkpoint() == PayloadCheckpoint(10, (11,))  # read again on a restart


def test_payloads_of_earlier_inputs_of_a_partition_are_dropped_once_a_later_one_is_used() -> None:
    join = PayloadJoin()
    join.add(0, payloads([src(0, 3)]), 10)  # its log record was deleted by retention
    join.add(1, payloads([src(1, 1)]), 10)
    join.add(2, payloads([src(0, 7)]), 10)
    assert join.take(JoinKey(0, 7)) is not None
    assert list(join.held) == [JoinKey(1, 1)] and join.held_bytes == 10
    assert join.checkpoint() == PayloadCheckpoint(1, (2,))


def test_payloads_of_no_undecided_record_can_be_dropped_so_the_checkpoint_stays_small() -> None:
    join = PayloadJoin()
    join.add(0, payloads([src(3, 5)]), 10)  # its log record was deleted; partition 3 is quiet
    for offset in range(1, 80):
        join.add(offset, payloads([src(0, offset)]), 10)
        join.take(JoinKey(0, offset))
    join.add(80, payloads([src(1, 0)]), 10)  # its log record is read, waiting for votes
    assert join.checkpoint().start == 0 and len(join.checkpoint().used) == 79
    assert join.keep_only({JoinKey(1, 0)}) == 1
    assert join.checkpoint() == PayloadCheckpoint(80, ()) and list(join.held) == [JoinKey(1, 0)]
