"""Internal topics checked against the settings (`neardup_stream.worker.cluster.internal_topics`)."""

from __future__ import annotations

from neardup_stream.worker.cluster.internal_topics import (
    TopicState,
    internal_specs,
    mismatches,
    short_retention,
)
from neardup_stream.worker.settings import Settings


def settings(home_shards: int = 6) -> Settings:
    return Settings.model_validate(
        {
            "dedup": {"home_shards": home_shards, "max_age_seconds": 3600},
            "cluster": {"log_partitions": 3},
        }
    )


def as_created(s: Settings) -> dict[str, TopicState]:
    return {t.name: TopicState(t.partitions, dict(t.configs)) for t in internal_specs(s)}


def test_topics_as_the_settings_create_them_pass() -> None:
    assert mismatches(internal_specs(settings()), as_created(settings())) == []


def test_partition_counts_follow_log_partitions_and_home_shards() -> None:
    counts = {t.name: t.partitions for t in internal_specs(settings())}
    assert counts == {
        "neardup.fingerprints": 3,
        "neardup.payloads": 3,
        "neardup.votes": 3,
        "neardup.gather-changelog": 3,
        "neardup.shards": 6,
        "neardup.shard-changelog": 6,
    }


def test_home_shards_changed_between_restarts_names_topic_setting_and_both_values() -> None:
    problems = mismatches(internal_specs(settings(12)), as_created(settings(6)))
    assert problems == [
        "topic neardup.shards: 6 partitions, expected 12 from dedup.home_shards = 12",
        "topic neardup.shard-changelog: 6 partitions, expected 12 from dedup.home_shards = 12",
    ]


def test_shorter_retention_or_smaller_messages_are_refused_larger_are_fine() -> None:
    specs = internal_specs(settings())
    actual = as_created(settings())
    actual["neardup.votes"] = TopicState(3, {"retention.ms": "1000", "max.message.bytes": "100"})
    actual["neardup.fingerprints"] = TopicState(
        3, {"retention.ms": "-1", "max.message.bytes": str(10**9)}
    )
    problems = mismatches(specs, actual)
    assert len(problems) == 2
    retention, size = sorted(problems, reverse=True)
    assert retention.startswith("topic neardup.votes: retention.ms = 1000, expected 10800000")
    assert size.startswith("topic neardup.votes: max.message.bytes = 100, expected")


def test_a_missing_topic_is_a_problem() -> None:
    actual = as_created(settings())
    del actual["neardup.votes"]
    assert mismatches(internal_specs(settings()), actual) == ["topic neardup.votes: missing"]


def test_short_retention_names_only_topics_below_the_floor() -> None:
    specs = internal_specs(settings())
    actual = as_created(settings())
    assert short_retention(specs, actual) == {}
    actual["neardup.votes"] = TopicState(3, {"retention.ms": "7200000"})
    actual["neardup.fingerprints"] = TopicState(3, {"retention.ms": "-1"})
    assert short_retention(specs, actual) == {"neardup.votes": "10800000"}
