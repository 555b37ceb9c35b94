"""`neardup_stream.worker.authorization`: an ACL denial found in an exception, its chain or a delivery, and
worded with what was denied and the ACL that grants it; `retry` does not retry one."""

from __future__ import annotations

import threading

import pytest
from kafka.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    KafkaError,
    NotLeaderForPartitionError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)

from neardup_stream.worker import retry
from neardup_stream.worker.authorization import denial_among, denial_in, denied
from neardup_stream.worker.settings import Settings

SETTINGS = Settings().with_overrides(
    {
        "worker": {"group_id": "crawl", "instance_id": "w7", "scope": "partition"},
        "topics": {"input": "pages"},
    }
)


class Future:
    def __init__(self, error: Exception | None) -> None:
        self.is_done, self.exception = True, error


def test_a_denied_transactional_id_names_it_and_the_acl_that_grants_it() -> None:
    failure = denied(TransactionalIdAuthorizationFailedError(), SETTINGS)
    assert failure is not None
    assert "'crawl-w7'" in str(failure) and "WRITE and DESCRIBE on TransactionalId" in str(failure)


def test_a_denied_topic_names_the_topics_the_broker_named() -> None:
    failure = denied(TopicAuthorizationFailedError({"pages.unique"}), SETTINGS)
    assert failure is not None and "(pages.unique)" in str(failure)
    assert "READ on the input 'pages'" in str(failure)


def test_group_and_cluster_denials_name_their_acls() -> None:
    group = denied(GroupAuthorizationFailedError(), SETTINGS)
    assert group is not None and "READ and DESCRIBE on Group 'crawl'" in str(group)
    cluster = denied(ClusterAuthorizationFailedError(), SETTINGS)
    assert cluster is not None and "IDEMPOTENT_WRITE on the Cluster" in str(cluster)


def test_a_denial_is_found_in_the_chain_and_in_deliveries_and_nothing_else_is_one() -> None:
    try:
        try:
            raise GroupAuthorizationFailedError()
        except KafkaError as inner:
            raise RuntimeError("scale-out role failed") from inner
    except RuntimeError as outer:
        assert isinstance(denial_in(outer), GroupAuthorizationFailedError)
    in_error_state = KafkaError("Cannot execute transactional method: error state")
    refused = TopicAuthorizationFailedError({"pages.unique"})
    assert denial_among(in_error_state, [Future(None), Future(refused)]) is refused
    assert denial_among(in_error_state, [Future(NotLeaderForPartitionError())]) is None
    assert denied(NotLeaderForPartitionError(), SETTINGS) is None


def test_retrying_stops_at_a_denial_and_goes_on_at_anything_else() -> None:
    stop, calls = threading.Event(), []

    def denied_once_then_down() -> None:
        calls.append(1)
        raise GroupAuthorizationFailedError()

    with pytest.raises(GroupAuthorizationFailedError):
        retry.until_stopped(stop, lambda attempt: 0.0, denied_once_then_down)
    with pytest.raises(GroupAuthorizationFailedError):
        retry.until_done(stop, 0.0, denied_once_then_down)
    assert len(calls) == 2  # one attempt each: no retry

    def down_then_up() -> str:
        calls.append(1)
        if len(calls) < 4:
            raise NotLeaderForPartitionError()
        return "up"

    assert retry.until_stopped(stop, lambda attempt: 0.0, down_then_up) == "up"


def test_a_cluster_replica_is_told_its_role_ids_and_groups() -> None:
    cluster = SETTINGS.with_overrides({"worker": {"scope": "topic"}})
    txn = denied(TransactionalIdAuthorizationFailedError(), cluster)
    assert txn is not None and "'crawl-<edge|shards|gather>-w7'" in str(txn)
    group = denied(GroupAuthorizationFailedError(), cluster)
    assert group is not None and "prefix 'crawl-' (PREFIXED)" in str(group)
