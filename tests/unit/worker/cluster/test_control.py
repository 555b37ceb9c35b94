"""The cluster's settings record: contents, encoding, winner choice and the diff."""

from __future__ import annotations

import json

import pytest

from neardup_stream.worker.cluster import control
from neardup_stream.worker.cluster.control import Difference, SettingsRecord, Undecodable
from neardup_stream.worker.settings import Settings


def record(**dedup: object) -> SettingsRecord:
    return control.settings_record(
        Settings.model_validate({"dedup": dedup, "worker": {"instance_id": "r0"}})
    )


def test_the_record_holds_every_decision_and_layout_setting() -> None:
    flat = record().settings
    for name in (
        "dedup.threshold",
        "dedup.home_shards",
        "dedup.max_docs",
        "dedup.max_age_seconds",
        "dedup.index_duplicates",
        "dedup.fingerprint_id",
        "input.text_fields",
        "input.domain_field",
        "cluster.log_partitions",
        "cluster.fingerprints",
        "cluster.retention_ms",
        "topics.unique",
        "worker.max_message_bytes",
    ):
        assert name in flat, name
    assert record().identity == {"topics.input": "documents", "worker.group_id": "neardup"}


def test_encode_decode_round_trips_and_equal_settings_compare_equal() -> None:
    mine = record(threshold=0.7)
    key, value = control.encode(mine)
    back = control.decode(value)
    assert back == mine
    assert control.compare(back, mine).ok
    assert json.loads(value)["format"] == control.RECORD_FORMAT
    assert key.startswith(b"settings:v1:")


def test_keys_differ_with_the_settings_and_not_with_the_instance() -> None:
    a, b = record(threshold=0.8), record(threshold=0.7)
    assert control.encode(a)[0] != control.encode(b)[0]
    assert control.encode(a)[0] == control.encode(a._replace(instance="r9"))[0]


@pytest.mark.parametrize(
    "value", [None, b"not json", b"[1]", b'{"format": 99, "identity": {}, "settings": {}}']
)
def test_undecodable_records_are_refused_by_decode(value: bytes | None) -> None:
    with pytest.raises(Undecodable):
        control.decode(value)


def test_the_first_record_in_log_order_wins() -> None:
    first, second = record(threshold=0.8), record(threshold=0.7)
    assert control.winner([control.encode(first)[1], control.encode(second)[1]]) == first
    assert control.winner([control.encode(second)[1], control.encode(first)[1]]) == second
    assert control.winner([]) is None


def test_an_unreadable_first_record_is_refused_not_skipped() -> None:
    """Skipping it could let replicas of two versions follow different records."""
    newer = b'{"format": 2, "identity": {}, "settings": {}}'
    with pytest.raises(Undecodable, match="format 2"):
        control.winner([newer, control.encode(record())[1]])


def test_a_different_threshold_is_named_with_both_values() -> None:
    cluster, mine = record(threshold=0.8), record(threshold=0.7)
    v = control.compare(cluster, mine)
    assert not v.ok and not v.other_pipeline
    assert Difference("dedup.threshold", 0.8, 0.7) in v.differences
    text = control.explain(v, cluster, mine, "neardup.control")
    assert "dedup.threshold: cluster 0.8, this replica 0.7" in text
    assert control.SETTINGS_CHANGE_DOC in text


def test_a_setting_only_one_side_knows_is_a_difference() -> None:
    cluster, mine = record(), record()
    older = cluster._replace(settings={k: v for k, v in cluster.settings.items() if k != "x"})
    newer = mine._replace(settings={**mine.settings, "dedup.new_knob": 3})
    v = control.compare(older, newer)
    assert v.differences == [Difference("dedup.new_knob", "(absent)", 3)]


def test_another_pipeline_on_the_same_internal_topics_is_told_to_use_its_own() -> None:
    cluster = record()
    mine = cluster._replace(identity={**cluster.identity, "topics.input": "other-input"})
    v = control.compare(cluster, mine)
    assert v.other_pipeline and not v.ok
    text = control.explain(v, cluster, mine, "neardup.control")
    assert "another pipeline" in text and "'other-input'" in text and "--group-id" in text


def test_a_replica_of_a_build_that_capped_each_shard_at_bucket_cap_is_refused() -> None:
    # Builds before the per-shard cap kept `bucket_cap` per key in every shard: same
    # settings, other candidates. Their record has no `dedup.shard_bucket_cap`.
    mine = record(home_shards=24, bucket_cap=64)
    assert mine.settings["dedup.shard_bucket_cap"] == 3
    older = mine._replace(
        settings={k: v for k, v in mine.settings.items() if k != "dedup.shard_bucket_cap"}
    )
    v = control.compare(older, mine)
    assert not v.ok
    assert v.differences == [Difference("dedup.shard_bucket_cap", "(absent)", 3)]
