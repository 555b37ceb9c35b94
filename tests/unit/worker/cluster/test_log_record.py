"""The fingerprint-log record (format 2): round trip, versions, the inputs a handover reads."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from neardup_stream import Document
from neardup_stream.config import DedupConfig
from neardup_stream.sharded import votes
from neardup_stream.sharded.deduplicator import DocumentFingerprinter
from neardup_stream.worker.cluster import ingest
from neardup_stream.worker.cluster.log_record import (
    POSITION_BITS,
    Envelope,
    JoinKey,
    decided_record,
    is_decided,
    sources_of,
)
from neardup_stream.worker.records import Source

CONFIG = DedupConfig()


def src(partition: int, offset: int) -> Source:
    return Source("docs", partition, offset)


def envelope(sources: list[Source]) -> Envelope:
    docs = [Document(id=f"d{s.offset}", text=f"text number {s.offset} " * 5) for s in sources]
    n = len(docs)
    fb = DocumentFingerprinter(CONFIG).batch(docs, [""] * n, np.arange(n), 1.7e9, [-1] * n)
    return Envelope(fb, sources)


def test_a_log_record_carries_fingerprints_and_inputs_but_no_payload() -> None:
    sources = [src(0, 8), src(2, 9)]
    packed = envelope(sources).pack()
    back = Envelope.unpack(packed, CONFIG.fingerprint_id, "docs", 5, 2)
    assert back.sources == sources and back.join_key == JoinKey(0, 8)
    assert back.fingerprints.ids == ["d8", "d9"] and back.fingerprints.stream == 2
    assert list(back.fingerprints.positions) == [5 << POSITION_BITS, (5 << POSITION_BITS) + 1]
    assert sources_of(packed, "docs") == sources
    with pytest.raises(ValueError, match="truncated"):
        Envelope.unpack(packed[:-1], CONFIG.fingerprint_id, "docs", 5, 2)
    with pytest.raises(ValueError, match="format 3"):
        Envelope.unpack(packed[:2] + b"\x03" + packed[3:], CONFIG.fingerprint_id, "docs", 5, 2)


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
        Envelope.unpack(old, CONFIG.fingerprint_id, "docs", 0, 0)
    assert sources_of(old, "docs") == [src(0, 3), src(1, 4)]  # a handover from it works
    with pytest.raises(ValueError, match="truncated"):
        sources_of(old[:-1], "docs")


def test_a_log_record_holds_as_many_documents_as_a_votes_record_may_name() -> None:
    """The edge cuts log records at the documents positions can number; the votes reader
    refuses a record claiming more: one bound, stated in the worker and in the core."""
    assert ingest.MAX_DOCUMENTS == 1 << POSITION_BITS == votes.MAX_DOCUMENTS


def test_a_decided_record_carries_inputs_only_and_no_role_reads_it() -> None:
    sources = [src(0, 8), src(2, 9), src(1, 3)]
    full = envelope(sources).pack()
    decided = decided_record(sources)
    assert is_decided(decided) and not is_decided(full) and not is_decided(b"XX")
    assert len(decided) == 7 + 12 * len(sources)  # the head and each input's coordinates
    assert sources_of(decided, "docs") == sources_of(full, "docs") == sources  # a handover's
    with pytest.raises(ValueError, match=r"single-stage replica .* checkpoint went back"):
        Envelope.unpack(decided, CONFIG.fingerprint_id, "docs", 5, 0)
    with pytest.raises(ValueError, match="truncated"):
        sources_of(decided[:-1], "docs")
