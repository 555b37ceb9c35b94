"""`neardup_stream.worker.kafka_join`: a group join that completes while its consumer is away from `poll`
is applied on the next poll, not thrown away for another rebalance (kafka-python 3.0.x).

The scene is made deterministic with three members: A (the leader) and C share the input;
C stops polling; B joins. A's join then waits for C, so it is still in flight when A goes
away. C's poll completes the rebalance (A's task sends the leader's SyncGroup on A's I/O
thread) while A is away. Unpatched, A's next poll starts another rebalance that waits on C,
which no longer polls, and A keeps all it held."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

from neardup_stream.worker import kafka_join, topics
from tests.integration.faults import wait_for

pytestmark = pytest.mark.integration
PARTITIONS = 6


def member(bootstrap: str, topic: str, name: str, *, first: bool = False) -> KafkaConsumer:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id="g-" + topic,
        group_instance_id=name,
        partition_assignment_strategy=(StickyPartitionAssignor,),
        enable_auto_commit=False,
        session_timeout_ms=10_000,
        heartbeat_interval_ms=500,
        metadata_max_age_ms=1_000,  # a topic unknown at the first join is seen within 1 s
    )
    if first:  # the group's first join assigns from what the leader knows: let it know all
        wait_for(f"{name} knowing {topic}", lambda: consumer.partitions_for_topic(topic), 30)
    consumer.subscribe([topic])
    return consumer


def generation(consumer: KafkaConsumer) -> int:
    return int(consumer.group_metadata().generation_id)


@pytest.fixture
def topic(kafka_admin: KafkaAdminClient, unique_topic) -> Iterator[str]:  # type: ignore[no-untyped-def]
    name = unique_topic("join")
    kafka_admin.create_topics([NewTopic(name, PARTITIONS, 1)])
    # described before anyone joins: a first join that sees no partitions assigns none
    assert topics._partition_count(kafka_admin, name, create=True, wait_s=60) == PARTITIONS
    yield name


def test_a_join_completed_between_polls_is_applied_not_joined_again(
    kafka_bootstrap: str, topic: str
) -> None:
    assert kafka_join.install()
    a = member(kafka_bootstrap, topic, "a", first=True)  # alone first: the leader
    try:
        wait_for("A holding the input", lambda: _holds(a, PARTITIONS), 60, every=0)
    except AssertionError as timeout:
        raise AssertionError(f"{timeout}: A at {_where(a, topic)}") from None
    c = member(kafka_bootstrap, topic, "c")
    stop = threading.Event()
    b: KafkaConsumer | None = None
    try:
        wait_for("A and C sharing the input", lambda: _both(a, c), 60, every=0)
        b = member(kafka_bootstrap, topic, "b")  # C polls no more from here
        joiner = b

        def poll_b() -> None:
            while not stop.is_set():
                joiner.poll(100)

        threading.Thread(target=poll_b, daemon=True).start()
        before = generation(a)
        wait_for("A's join in flight", lambda: _joining(a), 60, every=0)
        # A is away from poll: C's poll completes the rebalance, A's task with it
        wait_for("C in the next generation", lambda: _moved_on(c, before), 60, every=0)
        task = a._coordinator._join_task
        assert task is not None and task.is_done, "the scene needs A's join done while away"
        settled = generation(c)

        def holding() -> list[set[TopicPartition]]:
            return [a.assignment(), joiner.assignment(), c.assignment()]

        def applied() -> bool:  # polled until then, not a fixed number of polls: under load
            a.poll(200)  # A's I/O thread may take longer than a few polls to hand it over
            return sorted(tp.partition for h in holding() for tp in h) == list(range(PARTITIONS))

        # Unpatched, A rejoins instead: that rebalance waits on C, which no longer polls
        # (its poll interval is 300 s), so A keeps what it held past this wait.
        try:
            wait_for("A applying the join completed while it was away", applied, 30, every=0)
        except AssertionError as timeout:
            raise AssertionError(
                f"{timeout}: A kept what it held before: {holding()}; A at {_where(a, topic)}"
            ) from None
        held = holding()
        assert all(held), held
        assert generation(a) == settled
    finally:
        stop.set()
        for consumer in (a, b, c):
            if consumer is not None:
                consumer.close(autocommit=False)


def _holds(a: KafkaConsumer, n: int) -> bool:
    a.poll(100)
    return len(a.assignment()) == n


def _where(consumer: KafkaConsumer, topic: str) -> str:
    """A member's group state, for a failure message."""
    coordinator = consumer._coordinator
    task = coordinator._join_task
    return (
        f"generation {generation(consumer)}, state {coordinator.state}, "
        f"holding {sorted(tp.partition for tp in consumer.assignment())}, "
        f"join task {'none' if task is None else ('done' if task.is_done else 'in flight')}, "
        f"rejoin needed {coordinator.need_rejoin()}, "
        f"partitions known {consumer.partitions_for_topic(topic)}"
    )


def _both(a: KafkaConsumer, c: KafkaConsumer) -> bool:
    a.poll(100)
    c.poll(100)
    return (
        bool(a.assignment())
        and bool(c.assignment())
        and len(a.assignment()) + len(c.assignment()) == PARTITIONS
    )


def _moved_on(c: KafkaConsumer, before: int) -> bool:
    c.poll(100)
    return generation(c) > before


def _joining(a: KafkaConsumer) -> bool:
    a.poll(50)
    task = a._coordinator._join_task
    return task is not None and not task.is_done
