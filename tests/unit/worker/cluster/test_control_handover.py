"""Handover between generations: which inputs the new generation publishes (pure parts)."""

from __future__ import annotations

import numpy as np

from neardup_stream import Document
from neardup_stream.config import DedupConfig
from neardup_stream.sharded.deduplicator import DocumentFingerprinter
from worker.cluster import control
from worker.cluster.envelope import Envelope, sources_of
from worker.cluster.handover import Handover, PartitionHandover, pending_sources
from worker.decide import Source
from worker.settings import Settings

H = Handover(
    "old", {0: PartitionHandover(100, frozenset({97, 98})), 1: PartitionHandover(5, frozenset())}
)


def src(partition: int, offset: int) -> Source:
    return Source("documents", partition, offset)


def test_inputs_below_the_frontier_are_not_published_except_pending_ones() -> None:
    assert not H.publishes(src(0, 0)) and not H.publishes(src(0, 99))
    assert H.publishes(src(0, 97)) and H.publishes(src(0, 98))
    assert H.publishes(src(0, 100)) and H.publishes(src(1, 5)) and not H.publishes(src(1, 4))
    assert H.publishes(src(2, 0))  # a partition the old generation never read


def test_no_handover_publishes_everything() -> None:
    assert Handover.from_json(None).publishes(src(0, 0))
    assert Handover("", {}).publishes(src(3, 7))


def test_json_round_trip_through_the_settings_record() -> None:
    assert Handover.from_json(H.to_json()) == H
    record = control.settings_record(Settings())._replace(handover=H.to_json())
    back = control.decode(control.encode(record)[1])
    assert Handover.from_json(back.handover) == H
    assert control.encode(record)[0] == control.encode(record._replace(handover=None))[0]


def test_pending_sources_are_the_undecided_inputs_below_the_frontier() -> None:
    fingerprinter = DocumentFingerprinter(DedupConfig())
    docs = [Document(id=f"d{i}", text=f"text number {i} " * 5) for i in range(3)]
    fb = fingerprinter.batch(docs, ["", "", ""], np.arange(3), 1.7e9, [-1, -1, -1])
    env = Envelope(fb, [src(0, 8), src(0, 9), src(1, 3)])
    record = sources_of(env.pack(), "documents")  # as the handover reads the old log
    assert pending_sources([record], {0: 9, 1: 10}) == {0: frozenset({8}), 1: frozenset({3})}
    assert pending_sources([], {0: 9}) == {}
