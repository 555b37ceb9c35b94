"""Start-up topic checks that need no broker: a missing input topic is refused, naming the
closest existing topics, unless it is to be created."""

from __future__ import annotations

import logging

import pytest
from kafka.errors import KafkaTimeoutError

from neardup_stream.worker import topics
from neardup_stream.worker.codec import bare_dead_letter_bytes
from neardup_stream.worker.settings import Settings
from neardup_stream.worker.topics import TopicsUnusable, _report_small


def test_a_mistyped_input_topic_is_refused_with_the_nearest_names() -> None:
    existing = {"documents", "documents.unique", "orders", "__consumer_offsets"}
    with pytest.raises(TopicsUnusable) as refused:
        topics.report_missing_input("documnets", existing, create=False)
    text = str(refused.value)
    assert text.startswith("input topic 'documnets' does not exist; did you mean 'documents'")
    assert "'orders'" not in text and "\n" not in text
    assert "--input-topic" in text and "--create-input-topic" in text


def test_a_missing_input_is_created_when_asked_and_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    existing = {"documents", "orders"}
    with caplog.at_level(logging.WARNING, logger="neardup_stream.worker.topics"):
        close = topics.report_missing_input("documnets", existing, create=True)
    assert close == ["documents"]
    (record,) = caplog.records
    assert "input topic 'documnets' does not exist (creating it)" in record.getMessage()


def test_no_suggestion_when_nothing_is_close_and_internal_topics_are_never_offered() -> None:
    with pytest.raises(TopicsUnusable) as refused:
        topics.report_missing_input("__consumer_offset", {"__consumer_offsets"}, False)
    assert "did you mean" not in str(refused.value)


def test_the_input_is_created_only_when_asked() -> None:
    assert Settings().topics.create_input is False
    assert Settings.model_validate({"topics": {"create_input": True}}).topics.create_input


class SlowBroker:
    """An admin client's two calls `_partition_count` makes: the topics listed, and a
    description that has no partitions yet for those not in `described`."""

    def __init__(self, listed: set[str], described: dict[str, int]) -> None:
        self.listed, self.described = listed, described

    def list_topics(self) -> list[str]:
        return sorted(self.listed)

    def describe_topics(self, names: list[str]) -> list[dict[str, object]]:
        return [
            {"topic": n, "error_code": 0, "partitions": [{}] * self.described.get(n, 0)}
            for n in names
        ]


def test_a_topic_the_broker_has_not_described_yet_is_retried_not_fatal() -> None:
    """A freshly started broker under load lists a topic it just created before it describes
    its partitions: start-up retries (a KafkaError), it does not stop on a false 'does not
    exist'."""
    broker = SlowBroker({"docs"}, {})
    with pytest.raises(KafkaTimeoutError, match="has not described its partitions"):
        topics._partition_count(broker, "docs", create=False, wait_s=0)  # type: ignore[arg-type]
    with pytest.raises(KafkaTimeoutError):  # just created by this worker: not listed yet
        topics._partition_count(SlowBroker(set(), {}), "docs", create=True, wait_s=0)  # type: ignore[arg-type]
    ready = SlowBroker({"docs"}, {"docs": 3})
    assert topics._partition_count(ready, "docs", create=False, wait_s=0) == 3  # type: ignore[arg-type]


def test_a_missing_topic_with_creation_off_stays_a_configuration_error() -> None:
    with pytest.raises(topics.TopicsUnusable, match="does not exist and topic creation is off"):
        topics._partition_count(SlowBroker(set(), {}), "docs", create=False, wait_s=0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("configs", "age", "said"),
    [
        ({"cleanup.policy": "compact"}, None, None),
        ({"cleanup.policy": "compact,delete", "retention.ms": "1000"}, None, None),
        ({"cleanup.policy": "delete", "retention.ms": "15000"}, None, "ERROR"),
        ({"cleanup.policy": "delete", "retention.ms": "15000"}, 60, "ERROR"),
        ({"cleanup.policy": "delete", "retention.ms": "86400000"}, 3600, None),
        ({"cleanup.policy": "delete", "retention.ms": "-1"}, None, "WARNING"),
        ({}, None, None),  # not readable: nothing said
    ],
)
def test_a_changelog_that_is_not_compacted_is_said(
    configs: dict[str, str], age: int | None, said: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings.model_validate({"dedup": {"max_age_seconds": age}})
    with caplog.at_level(logging.WARNING, logger="neardup_stream.worker.topics"):
        topics.report_uncompacted(configs, "g.changelog", settings)
    assert [r.levelname for r in caplog.records] == ([said] if said else [])
    if said:
        assert "g.changelog" in caplog.text and "--add-config cleanup.policy=compact" in caplog.text


def test_a_dead_letter_topic_too_small_for_a_bare_dead_letter_is_unusable(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = Settings(topics={"input": "in", "dlq": "in.dlq"})
    bare, full = bare_dead_letter_bytes(), s.worker.output_max_message_bytes
    with pytest.raises(TopicsUnusable, match=r"dead-letter topic 'in.dlq' has max.message.bytes"):
        _report_small({"in.dlq": bare - 1}, s)
    with caplog.at_level(logging.ERROR):
        _report_small({"in.dlq": bare}, s)  # bare ones fit: those with payload may not
    assert "dead letters that do not fit are written without their payload" in caplog.text
    caplog.clear()
    _report_small({"in.dlq": full}, s)
    assert not caplog.text


def test_a_group_id_that_makes_no_valid_internal_topic_name_is_refused_before_any_broker() -> None:
    # (the bootstrap servers are never asked: the check comes first)
    s = Settings.model_validate(
        {"worker": {"group_id": "team/dedup"}, "kafka": {"bootstrap_servers": "192.0.2.1:1"}}
    )
    assert s.topic_scope
    with pytest.raises(TopicsUnusable) as refused:
        topics.ensure_topics(s)
    text = str(refused.value)
    assert "the internal topic 'team/dedup.fingerprints'" in text  # the first of them
    assert "derived from group id 'team/dedup'" in text
    assert "--group-id" in text and "NEARDUP_CLUSTER__FINGERPRINTS" in text


def test_an_internal_topic_named_invalid_is_refused_naming_the_setting() -> None:
    s = Settings.model_validate(
        {"cluster": {"votes": "my votes"}, "kafka": {"bootstrap_servers": "192.0.2.1:1"}}
    )
    with pytest.raises(
        TopicsUnusable, match=r"cluster.votes = 'my votes' \(NEARDUP_CLUSTER__VOTES\)"
    ):
        topics.ensure_topics(s)
