"""Start-up topic checks that need no broker: a missing input topic is named with the
closest existing topics."""

from __future__ import annotations

import logging

import pytest

from worker import topics


def test_a_mistyped_input_topic_is_said_with_the_nearest_names(
    caplog: pytest.LogCaptureFixture,
) -> None:
    existing = {"documents", "documents.unique", "orders", "__consumer_offsets"}
    with caplog.at_level(logging.WARNING, logger="worker.topics"):
        close = topics.report_missing_input("documnets", existing, create=True)
    assert close[0] == "documents" and "orders" not in close
    (record,) = caplog.records
    text = record.getMessage()
    assert "input topic 'documnets' does not exist (creating it)" in text
    assert "did you mean 'documents'" in text and "NEARDUP_TOPICS__INPUT" in text


def test_no_suggestion_when_nothing_is_close_and_internal_topics_are_never_offered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="worker.topics"):
        close = topics.report_missing_input("__consumer_offset", {"__consumer_offsets"}, False)
    assert close == []
    assert "topic creation is off" in caplog.records[0].getMessage()
    assert "did you mean" not in caplog.records[0].getMessage()
