"""Restoring an index from changelog messages (`neardup_stream.worker.restore.restore_index`): only this
pipeline's records (and legacy ones) are applied; another pipeline's are refused. No broker:
the one changelog reader runs over real `ConsumerRecord`s held in memory."""

from __future__ import annotations

import logging

import pytest
from kafka import TopicPartition
from prometheus_client import CollectorRegistry

from neardup_stream import DedupConfig, Deduplicator, Document
from neardup_stream.worker import changelog, restore
from neardup_stream.worker.changelog import Pipeline
from neardup_stream.worker.metrics import build_metrics
from tests.unit.worker.runtime.memory_log import MemoryLog

OURS = Pipeline("documents", "neardup")
THEIRS = Pipeline("documnets", "typo")
TP = TopicPartition("shared.changelog", 0)
TEXTS = [
    f"document number {i} about a topic of its own, {'word' * (i + 1)} and more" for i in range(6)
]


def records(prefix: str) -> list[bytes]:
    docs = [Document(id=f"{prefix}{i}", text=t * 3) for i, t in enumerate(TEXTS)]
    outcomes = Deduplicator().process(docs, records=True)
    return [o.record.encode() for o in outcomes if o.record is not None]


def skipped(registry: CollectorRegistry, reason: str) -> float:
    value = registry.get_sample_value("neardup_restore_skipped_records_total", {"reason": reason})
    return value or 0.0


def replay(
    values: list[bytes], committed: int | None = None, config: DedupConfig | None = None
) -> tuple[Deduplicator, CollectorRegistry]:
    registry = CollectorRegistry()
    restored = restore.restore_index(
        MemoryLog({TP: list(values)}),  # type: ignore[arg-type]
        lambda: False,
        topic=TP.topic,
        partition=TP.partition,
        config=config or DedupConfig(),
        pipeline=OURS,
        metrics=build_metrics(registry),
        committed=committed,
    )
    assert restored.state is not None and restored.stopped is None
    return restored.state, registry


def test_this_pipelines_records_are_applied() -> None:
    dedup, registry = replay(list(changelog.pack(records("a"), OURS, max_bytes=600)))
    assert len(dedup) == len(TEXTS)
    assert registry.get_sample_value("neardup_restored_records_total") == len(TEXTS)


def test_records_of_earlier_versions_are_applied_as_ours_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ours = records("a")
    v1 = b"NP\x01" + len(ours[1:]).to_bytes(4, "little")
    v1 += b"".join(len(r).to_bytes(4, "little") + r for r in ours[1:])
    with caplog.at_level(logging.WARNING, logger="neardup_stream.worker.restore"):
        dedup, _ = replay([ours[0], v1])  # a bare record, then a version-1 pack
    assert len(dedup) == len(TEXTS)
    assert f"{len(TEXTS)} changelog records of shared.changelog name no pipeline" in caplog.text


def test_a_record_of_another_pipeline_is_refused_never_applied() -> None:
    theirs = list(changelog.pack(records("b"), THEIRS))
    with pytest.raises(restore.OtherPipeline) as refused:
        replay([*changelog.pack(records("a")[:2], OURS), *theirs])
    text = str(refused.value)
    for name in ("'documents'", "'neardup'", "'documnets'", "'typo'", "shared.changelog"):
        assert name in text
    assert "--changelog-topic" in text and "NEARDUP_TOPICS__CHANGELOG" in text
    assert refused.value.theirs == THEIRS and refused.value.ours == OURS


def test_refused_records_are_counted_and_none_applied() -> None:
    registry = CollectorRegistry()
    dedup = Deduplicator()
    apply = restore.IndexReplay(dedup, DedupConfig(), OURS)
    (message,) = changelog.pack(records("b"), THEIRS)
    done = apply(0, message)
    assert done.applied == 0 and len(dedup) == 0 and apply.foreign == THEIRS
    assert [(r.reason, r.records) for r in done.refused] == [("other_pipeline", len(TEXTS))]
    with pytest.raises(restore.OtherPipeline):
        replay_into(registry, [message])
    assert skipped(registry, "other_pipeline") == len(TEXTS)


def replay_into(registry: CollectorRegistry, values: list[bytes]) -> None:
    restore.restore_index(
        MemoryLog({TP: list(values)}),  # type: ignore[arg-type]
        lambda: False,
        topic=TP.topic,
        partition=TP.partition,
        config=DedupConfig(),
        pipeline=OURS,
        metrics=build_metrics(registry),
    )


def test_corrupt_records_and_other_settings_are_skipped_and_counted() -> None:
    good = records("a")
    other = DedupConfig(sketch_bits=2048)
    with_other = (
        Deduplicator(other).process([Document(id="x", text=TEXTS[0] * 3)], records=True)[0].record
    )
    assert with_other is not None
    packs = list(changelog.pack([*good[:3], b"\x00garbage", with_other.encode()], OURS))
    dedup, registry = replay([*packs, b"not a pack at all", *changelog.pack(good[3:], OURS)])
    assert len(dedup) == len(TEXTS)
    assert skipped(registry, "corrupt") == 2 and skipped(registry, "other_config") == 1


def test_an_empty_changelog_after_committed_input_is_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="neardup_stream.worker.restore"):
        replay([], committed=120)
    (warning,) = caplog.records
    assert "shared.changelog" in warning.getMessage() and "partitions [0]" in warning.getMessage()
    assert "committed input offsets {0: 120}" in warning.getMessage()
    assert "NEARDUP_TOPICS__CHANGELOG" in warning.getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="neardup_stream.worker.restore"):
        replay([], committed=None)
    assert not caplog.records  # a new group: nothing was decided before
