"""Replaying changelog messages: only this pipeline's records (and legacy ones) are applied;
another pipeline's are refused. No broker: real `ConsumerRecord`s built in memory."""

from __future__ import annotations

import logging
import re

import pytest
from kafka import TopicPartition
from kafka.consumer.fetcher import ConsumerRecord
from prometheus_client import CollectorRegistry, generate_latest

from neardup_stream import DedupConfig, Deduplicator, Document
from worker import changelog, restore
from worker.changelog import Pipeline
from worker.metrics import build_metrics

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


def messages(values: list[bytes]) -> list[ConsumerRecord]:
    return [
        ConsumerRecord(TP.topic, TP.partition, -1, i, 0, 0, b"k", v, [], None, 1, len(v), -1)
        for i, v in enumerate(values)
    ]


def skipped(registry: CollectorRegistry, reason: str) -> float:
    text = generate_latest(registry).decode()
    match = re.search(rf'neardup_restore_skipped_records_total{{reason="{reason}"}} (\S+)', text)
    return float(match.group(1)) if match else 0.0


def replay(values: list[bytes]) -> tuple[Deduplicator, int, CollectorRegistry, restore._Skips]:
    registry = CollectorRegistry()
    skip = restore._Skips(build_metrics(registry), OURS)
    dedup = Deduplicator()
    applied = restore._apply(dedup, TP, messages(values), DedupConfig(), skip)
    return dedup, applied, registry, skip


def test_this_pipelines_records_are_applied() -> None:
    dedup, applied, _, skip = replay(list(changelog.pack(records("a"), OURS, max_bytes=600)))
    assert applied == len(TEXTS) == len(dedup) and skip.legacy == 0


def test_records_of_earlier_versions_are_applied_as_ours_and_counted() -> None:
    ours = records("a")
    v1 = b"NP\x01" + len(ours[1:]).to_bytes(4, "little")
    v1 += b"".join(len(r).to_bytes(4, "little") + r for r in ours[1:])
    dedup, applied, _, skip = replay([ours[0], v1])  # a bare record, then a version-1 pack
    assert applied == len(dedup) == len(TEXTS) and skip.legacy == len(TEXTS)


def test_a_record_of_another_pipeline_is_refused_never_applied() -> None:
    theirs = list(changelog.pack(records("b"), THEIRS))
    with pytest.raises(restore.OtherPipeline) as refused:
        replay([*changelog.pack(records("a")[:2], OURS), *theirs])
    text = str(refused.value)
    for name in ("'documents'", "'neardup'", "'documnets'", "'typo'", "shared.changelog"):
        assert name in text
    assert "--changelog-topic" in text and "NEARDUP_TOPICS__CHANGELOG" in text
    assert refused.value.theirs == THEIRS and refused.value.ours == OURS


def test_refused_records_are_counted() -> None:
    registry = CollectorRegistry()
    skip = restore._Skips(build_metrics(registry), OURS)
    dedup = Deduplicator()
    with pytest.raises(restore.OtherPipeline):
        restore._apply(
            dedup, TP, messages(list(changelog.pack(records("b"), THEIRS))), DedupConfig(), skip
        )
    assert skipped(registry, "other_pipeline") == len(TEXTS) and len(dedup) == 0


def test_an_empty_changelog_after_committed_input_is_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tps = {0: TopicPartition("g.changelog", 0), 1: TopicPartition("g.changelog", 1)}
    starts = {tps[0]: 0, tps[1]: 0}
    ends = {tps[0]: 0, tps[1]: 5}
    with caplog.at_level(logging.WARNING, logger="worker.restore"):
        restore._warn_if_empty("g.changelog", OURS, {0: 120, 1: 40}, starts, ends, tps)
    (warning,) = caplog.records
    assert "g.changelog" in warning.getMessage() and "[0]" in warning.getMessage()
    assert "NEARDUP_TOPICS__CHANGELOG" in warning.getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="worker.restore"):
        restore._warn_if_empty("g.changelog", OURS, {0: None, 1: 40}, starts, ends, tps)
    assert not caplog.records  # a new group: nothing was decided before
