"""Handover between generations: which inputs the new generation publishes (pure parts)."""

from __future__ import annotations

import numpy as np
import pytest

from neardup_stream import Document
from neardup_stream.config import DedupConfig
from neardup_stream.sharded.deduplicator import DocumentFingerprinter
from neardup_stream.worker.cluster import agreement, control
from neardup_stream.worker.cluster import handover as handover_
from neardup_stream.worker.cluster.handover import (
    Handover,
    HandoverRefused,
    PartitionHandover,
    pending_sources,
    runs,
)
from neardup_stream.worker.cluster.log_record import Envelope, sources_of
from neardup_stream.worker.decide import Source
from neardup_stream.worker.settings import Settings

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


def test_pending_inputs_travel_as_runs_and_records_of_one_number_each_still_read() -> None:
    backlog = Handover("old", {0: PartitionHandover(250_000, frozenset(range(50_000, 250_000)))})
    record = control.settings_record(Settings())._replace(handover=backlog.to_json())
    value = control.encode(record)[1]
    assert len(value) < 5_000  # one run, not 200,000 numbers (1.49 MB: never sent)
    assert Handover.from_json(control.decode(value).handover) == backlog
    assert runs(frozenset({3, 4, 5, 9, 11, 12})) == [[3, 5], [9, 9], [11, 12]]
    legacy = {"old_group": "old", "partitions": {"0": {"frontier": 100, "pending": [97, 98]}}}
    assert Handover.from_json(legacy) == Handover("old", {0: H.partitions[0]})
    assert "partition 0: frontier 250000, 200000 pending in 1 runs" in backlog.summary()


def _agree(
    monkeypatch: pytest.MonkeyPatch,
    handover_from: str | None,
    cluster: control.SettingsRecord | None,
) -> agreement.Agreement:
    """`agreement.agree` against a control topic holding `cluster` (None: empty), with the
    old generation's handover computed as a backlog of scattered inputs."""
    written: list[bytes | None] = [] if cluster is None else [control.encode(cluster)[1]]
    scattered = Handover("g1", {0: PartitionHandover(400_000, frozenset(range(0, 400_000, 2)))})
    monkeypatch.setattr(agreement, "ensure_control_topic", lambda s: None)
    monkeypatch.setattr(agreement, "read_values", lambda s: written)
    monkeypatch.setattr(agreement, "append", lambda s, r: written.append(control.encode(r)[1]))
    monkeypatch.setattr(handover_, "compute", lambda s: scattered)
    settings = Settings.model_validate({"cluster": {"handover_from": handover_from}})
    return agreement.agree(settings)


def test_a_replica_whose_handover_is_not_the_clusters_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the cluster's first replica started without --handover-from: a later one that names
    # a generation must not be ignored (the first publishes again what g1 decided)
    first = control.settings_record(Settings.model_validate({}))
    found = _agree(monkeypatch, "g1", first)
    assert not found.comparison.ok
    assert found.comparison.differences == [control.Difference("cluster.handover_from", None, "g1")]
    assert 'cluster.handover_from: cluster null, this replica "g1"' in found.explain("c")
    handed = first._replace(handover=Handover("g1", {}).to_json())
    assert _agree(monkeypatch, "g1", handed).comparison.ok  # the same generation: agreed
    assert not _agree(monkeypatch, "g0", handed).comparison.ok  # another one: refused
    assert _agree(monkeypatch, None, handed).comparison.ok  # later replicas need not name it


def test_a_handover_too_large_for_one_record_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(
        HandoverRefused,
        match=r"too many runs for one control record .*200000 pending in 200000 runs",
    ):
        _agree(monkeypatch, "g1", None)
