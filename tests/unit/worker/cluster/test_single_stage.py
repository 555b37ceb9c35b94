"""The single-stage hand-over between a replica's role threads (`SingleStage`): asked, both
roles park, then it is on; a group that moves while parked keeps it off (or ends it); the
edge gives up after `ASK_S`; a log record not written where the log ended fails the
transaction before its commit."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from neardup_stream.worker.cluster import single_stage as module
from neardup_stream.worker.cluster.ingest import Ingested, LogAppend
from neardup_stream.worker.cluster.single_stage import LogMoved, SingleStage
from neardup_stream.worker.codec import OutMessage
from neardup_stream.worker.metrics import build_metrics
from neardup_stream.worker.settings import Settings
from tests.unit.clock import Clock, frozen


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return frozen(monkeypatch, module)


def stage() -> SingleStage:
    return SingleStage(Settings(), build_metrics(CollectorRegistry()))


def test_asked_both_roles_park_then_it_is_on_until_a_group_moves(clock: Clock) -> None:
    s = stage()
    s.park("shard")  # not asked: nothing
    assert not s.parked("shard") and s.may_ask()
    s.ask()
    assert not s.may_ask()
    s.park("shard")
    assert s.parked("shard") and not s.answered()
    s.park("gather")
    assert s.answered()
    s.enter({"shard": "g1", "gather": "g2"}, {0: 12})
    assert s.on and s.metrics.single_stage._value.get() == 1 and not s.must_leave()
    s.moved("gather")
    assert s.must_leave()
    s.leave()
    assert not s.on and not s.parked("shard") and not s.parked("gather")
    assert s.metrics.single_stage._value.get() == 0 and s.may_ask()


def test_a_group_that_moves_before_entering_keeps_it_off_for_a_while(clock: Clock) -> None:
    s = stage()
    s.ask()
    s.park("shard")
    s.park("gather")
    s.moved("shard")
    assert not s.answered() and not s.parked("shard") and not s.asking
    assert not s.may_ask()
    clock.now += module.RETRY_S
    assert s.may_ask()


def test_the_edge_gives_up_when_a_role_does_not_park(clock: Clock) -> None:
    s = stage()
    s.ask()
    s.park("shard")
    clock.now += module.ASK_S / 2
    assert not s.answered() and s.asking
    clock.now += module.ASK_S
    assert not s.answered() and not s.asking and not s.parked("shard")
    s.park("gather")  # too late: not asked any more
    assert not s.parked("gather")


def test_a_log_record_not_written_where_the_log_ended_fails_the_transaction() -> None:
    """Records are decided where their log partition ends, one after another; `verify`
    (run by the publisher once all are delivered, before the commit) refuses any elsewhere."""
    s = stage()
    c = s.settings.cluster
    s.enter({"shard": None, "gather": None}, {0: 10, 1: 4})
    ingested = Ingested(
        messages=[
            OutMessage(s.settings.topics.dlq, None, b"dead"),
            OutMessage(c.fingerprints, None, b"log", partition=1),
            OutMessage(c.payloads, None, b"payloads", partition=1),
            OutMessage(c.fingerprints, None, b"log", partition=1),
            OutMessage(c.fingerprints, None, b"log", partition=0),
        ],
        sources=[None] * 5,
        appends=[LogAppend(1, [], b""), LogAppend(3, [], b""), LogAppend(4, [], b"")],
    )
    placed = s.placements(ingested)
    assert placed == [4, 5, 10]
    verify = s.check(ingested, placed)
    verify([0, 4, 5, 10])  # the dead letter, then the three log records where placed
    with pytest.raises(
        LogMoved, match="partition 1: a record was written at 6, the log ended at 5"
    ):
        verify([0, 4, 6, 11])  # another producer appended to log partition 1 in between
    s.enter({}, {0: 10})
    with pytest.raises(LogMoved, match="log partition 1: where it ends is not known"):
        s.placements(ingested)


def given_up(s: SingleStage, clock: Clock) -> float:
    """Ask, let `ASK_S` pass unanswered, then how long until it may ask again (whole s)."""
    s.ask()
    clock.now += module.ASK_S + 1
    assert not s.answered()
    start = clock.now
    while not s.may_ask():
        clock.now += 1
    return clock.now - start


def test_giving_up_again_and_again_waits_longer_each_time_until_it_enters(clock: Clock) -> None:
    s = stage()
    waits = [given_up(s, clock) for _ in range(7)]
    assert waits == [10, 20, 40, 80, 160, 300, 300]
    s.ask()
    s.park("shard")
    s.park("gather")
    assert s.answered()
    s.enter({}, {})
    s.leave()
    assert given_up(s, clock) == module.RETRY_S  # entering reset it
