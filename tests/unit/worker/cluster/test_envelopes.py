"""The fingerprint-log and payload records: round trips, versions, the join of the two."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from neardup_stream import Document
from neardup_stream.config import DedupConfig
from neardup_stream.sharded.deduplicator import DocumentFingerprinter
from worker.cluster.envelope import POSITION_BITS, Envelope, JoinKey, sources_of
from worker.cluster.payloads import (
    Passage,
    PayloadCheckpoint,
    PayloadJoin,
    PayloadRecord,
)
from worker.records import Source

CONFIG = DedupConfig()


def src(partition: int, offset: int) -> Source:
    return Source("docs", partition, offset)


def envelope(sources: list[Source]) -> Envelope:
    docs = [Document(id=f"d{s.offset}", text=f"text number {s.offset} " * 5) for s in sources]
    n = len(docs)
    fb = DocumentFingerprinter(CONFIG).batch(docs, [""] * n, np.arange(n), 1.7e9, [-1] * n)
    return Envelope(fb, sources)


def payloads(sources: list[Source]) -> PayloadRecord:
    return PayloadRecord(
        [
            Passage(s, 1_700_000_000_000 + s.offset, f"k{s.offset}".encode(), b"v" * s.offset)
            for s in sources
        ]
    )


def test_a_log_record_carries_fingerprints_and_inputs_but_no_payload() -> None:
    sources = [src(0, 8), src(2, 9)]
    packed = envelope(sources).pack()
    back = Envelope.unpack(packed, CONFIG.fingerprint_id, "docs", 5)
    assert back.sources == sources and back.join_key == JoinKey(0, 8)
    assert back.fingerprints.ids == ["d8", "d9"]
    assert list(back.fingerprints.positions) == [5 << POSITION_BITS, (5 << POSITION_BITS) + 1]
    assert sources_of(packed, "docs") == sources
    with pytest.raises(ValueError, match="truncated"):
        Envelope.unpack(packed[:-1], CONFIG.fingerprint_id, "docs", 5)
    with pytest.raises(ValueError, match="format 3"):
        Envelope.unpack(packed[:2] + b"\x03" + packed[3:], CONFIG.fingerprint_id, "docs", 5)


def v1_record(sources: list[Source], values: list[bytes]) -> bytes:
    """A record as the previous release wrote it: fingerprints, then the payloads inline."""
    fb = envelope(sources).fingerprints.pack()
    parts = [struct.pack("<2sBI", b"NE", 1, len(fb)), fb]
    for s, v in zip(sources, values, strict=True):
        parts += [struct.pack("<iqqii", s.partition, s.offset, 0, -1, len(v)), v]
    return b"".join(parts)


def test_the_inline_format_of_the_previous_release_is_refused_but_its_inputs_are_read() -> None:
    old = v1_record([src(0, 3), src(1, 4)], [b"abc", b"de"])
    with pytest.raises(ValueError, match=r"format 1 .*payloads inline.*handover_from"):
        Envelope.unpack(old, CONFIG.fingerprint_id, "docs", 0)
    assert sources_of(old, "docs") == [src(0, 3), src(1, 4)]  # a handover from it works
    with pytest.raises(ValueError, match="truncated"):
        sources_of(old[:-1], "docs")


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
