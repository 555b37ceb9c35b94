"""The within-partition warning of a plain worker: when it is said, and what it says."""

from __future__ import annotations

import logging

import pytest

from neardup_stream.worker.scope import WithinPartitionWarning, within_partition_message


def test_it_warns_when_an_assignment_grows_past_one_partition_and_only_then(
    caplog: pytest.LogCaptureFixture,
) -> None:
    scope = WithinPartitionWarning("documents")
    with caplog.at_level(logging.WARNING, logger="neardup_stream.worker.scope"):
        said = [scope.observe(owned) for owned in ({0}, {0, 1}, {0, 1}, {1}, set(), {0, 2, 3})]
    assert said == [False, True, False, False, False, True]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings] == [
        within_partition_message("documents", {0, 1}),
        within_partition_message("documents", {0, 2, 3}),
    ]


def test_a_worker_that_starts_with_several_partitions_warns_once() -> None:
    scope = WithinPartitionWarning("documents")
    assert scope.observe({0, 1, 2}) is True
    assert scope.observe({0, 1, 2}) is False  # a rebalance that keeps them


def test_the_message_names_the_partitions_and_how_to_compare_across_them() -> None:
    message = within_partition_message("docs", {3, 1})
    assert "2 partitions of 'docs' ([1, 3])" in message
    assert "within each partition only" in message
    assert "drop --scope partition" in message and "NEARDUP_WORKER__SCOPE" in message
