"""The single-stage hand-over between a replica's role threads (`SingleStage`): asked, both
roles park, then it is on; a group that moves while parked keeps it off (or ends it); the
edge gives up after `ASK_S`; a log record not written where the log ended fails the
transaction before its commit. And a whole single-stage transaction, without a broker:
the shard and gather roles' parked halves (`parked.ParkedShard`, `ParkedGather`) over the
real shard state and gatherers."""

from __future__ import annotations

import json

import pytest
from kafka import OffsetAndMetadata, TopicPartition
from kafka.structs import ConsumerGroupMetadata
from prometheus_client import CollectorRegistry

from neardup_stream.mapping import InputMapping
from neardup_stream.models import Decision
from neardup_stream.sharded.changes import FirstDecisions
from neardup_stream.sharded.deduplicator import DocumentFingerprinter
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.gather import Gatherer
from neardup_stream.sharded.voter import ShardVoter
from neardup_stream.sharded.votes import Votes
from neardup_stream.worker.cluster import single_stage as module
from neardup_stream.worker.cluster.handover import Handover
from neardup_stream.worker.cluster.ingest import Ingested, LogAppend, LogTopics, ingest
from neardup_stream.worker.cluster.shard_state import RestoredShard, ShardState, ShardVotes
from neardup_stream.worker.cluster.single_stage import LogMoved, SingleStage
from neardup_stream.worker.codec import OutMessage
from neardup_stream.worker.decide import DecideRules, InputRecord, Source
from neardup_stream.worker.metrics import build_metrics
from neardup_stream.worker.rejections import Rejections
from neardup_stream.worker.settings import Settings
from tests.unit.clock import Clock, frozen


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return frozen(monkeypatch, module)


class Parked:
    """A parked shard or gather role with nothing held (the hand-over tests)."""

    def __init__(self, name: str) -> None:
        self.stage: SingleStage | None = None
        self.settled = True
        self.parked_as = ConsumerGroupMetadata(name, 1, f"{name}-member", None)
        self.positions: dict[int, int] = {}

    def holds_all(self) -> bool:
        return True

    def log_position(self, partition: int) -> int:
        return self.positions[partition]

    def follow_single_stage(self) -> None: ...
    def rebuild(self) -> None: ...


class Shard(Parked):
    """A parked shard role over the real state of every home shard."""

    def __init__(self, settings: Settings) -> None:
        super().__init__("shard")
        self.settings, self.owned = settings, ShardState(settings.dedup)
        for s in range(settings.dedup.home_shards):
            self.owned.add(RestoredShard(ShardVoter(settings.dedup, s)))
        self.gauges = 0

    def vote_in_place(self, partition: int, offset: int, fb: FingerprintBatch) -> list[ShardVotes]:
        return self.owned.vote(partition, offset, fb)

    def changelog(self, offset: int, voted: list[ShardVotes]) -> list[OutMessage]:
        topic = self.settings.cluster.shard_changelog
        return [
            OutMessage(topic, str(offset).encode(), ch.pack(), partition=v.shard)
            for v in voted
            for ch in v.changes
        ]

    def checkpoints(self) -> dict[TopicPartition, OffsetAndMetadata]:
        topic = self.settings.cluster.shards
        return {
            TopicPartition(topic, s): OffsetAndMetadata(0, str(self.owned.next(s)), -1)
            for s in self.owned
        }

    def committed(self, carried: None, at: float) -> None:
        self.gauges += 1


class Gather(Parked):
    """A parked gather role over a real `Gatherer` per log partition."""

    def __init__(self, settings: Settings) -> None:
        super().__init__("gather")
        self.settings = settings
        self.rejections = Rejections(settings.topics.dlq)
        self.handover = Handover("", {})
        self.gatherers = {
            p: Gatherer(settings.dedup) for p in range(settings.cluster.log_partitions)
        }
        self.decided: list[tuple[int, int]] = []

    def decide_in_place(
        self, partition: int, offset: int, fb: FingerprintBatch, votes: list[Votes]
    ) -> tuple[list[Decision], list[FirstDecisions]]:
        self.decided.append((partition, offset))
        return self.gatherers[partition].decide_and_record(fb, votes)

    def parked_checkpoints(self) -> dict[TopicPartition, OffsetAndMetadata]:
        votes = self.settings.cluster.votes
        return {TopicPartition(votes, p): OffsetAndMetadata(9, "", -1) for p in self.gatherers}


def stage(settings: Settings | None = None) -> SingleStage:
    s = settings or Settings()
    return SingleStage(s, build_metrics(CollectorRegistry()), Shard(s), Gather(s))


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
    s.enter({0: 12})
    assert s.on and s.metrics.single_stage._value.get() == 1 and not s.must_leave()
    assert [g.member_id for g in s.groups.values()] == ["shard-member", "gather-member"]
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
    s.enter({0: 10, 1: 4})
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
    s.enter({0: 10})
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
    s.enter({})
    s.leave()
    assert given_up(s, clock) == module.RETRY_S  # entering reset it


TEXT = (
    "Storm warnings were issued for the northern coast on Tuesday as forecasters expected "
    "gusts of up to ninety kilometres an hour, heavy rain and high tides through Thursday. "
    "Ferries between the islands were cancelled and schools in three districts closed early."
)


def record(offset: int, value: bytes) -> InputRecord:
    return InputRecord(Source("in", 0, offset), None, value, 1_700_000_000_000 + offset)


def ingested(settings: Settings, records: list[InputRecord]) -> Ingested:
    c, t = settings.cluster, settings.topics
    rules = DecideRules(t.unique, t.duplicate, t.dlq, InputMapping(), 1 << 20, 64, 1 << 22)
    log_topics = LogTopics(c.fingerprints, c.payloads)
    fingerprinter = DocumentFingerprinter(settings.dedup)
    return ingest(records, rules, fingerprinter, log_topics, c.log_partitions, 1.8e9, None, True)


def test_one_transaction_votes_decides_and_commits_for_all_three_roles() -> None:
    """The batch's log record is voted on by every home shard and decided where the log
    ends; the transaction holds the edge's dead letter and decided log record, the shard
    changelog, the output and the gather changelog, and commits the input offsets, each
    shard's checkpoint and the votes offsets in the parked roles' groups. The next batch's
    near-copy is a duplicate of the first, decided two offsets on (past the commit marker)."""
    settings = Settings(dedup={"home_shards": 4})
    s = stage(settings)
    shard, gather = s.shard, s.gather
    assert isinstance(shard, Shard) and isinstance(gather, Gather)
    c, t = settings.cluster, settings.topics
    s.ask()
    s.park("shard")
    s.park("gather")
    assert s.answered()
    shard.positions = gather.positions = {p: 10 for p in range(c.log_partitions)}
    ends = s.log_ends()
    assert ends is not None
    s.enter(ends)

    doc = {"id": "a", "text": TEXT}
    first = ingested(settings, [record(0, json.dumps(doc).encode()), record(1, b"{bad")])
    inputs = {TopicPartition("in", 0): OffsetAndMetadata(2, "", -1)}
    txn, staged = s.transaction(first, inputs)
    topics = [m.topic for m in txn.messages]
    assert topics[:2] == [t.dlq, c.fingerprints]  # the edge's messages first
    assert c.shard_changelog in topics and topics.count(t.unique) == 1
    assert topics[-1] == c.gather_changelog and c.payloads not in topics
    [log_at] = [a.at for a in first.appends]
    p = first.messages[log_at].partition
    assert p is not None and gather.decided == [(p, 10)]
    assert {v for v in shard.owned.next(0).values()} == {11}  # every shard moved past it
    assert set(txn.offsets) == {
        *inputs,
        *(TopicPartition(c.shards, n) for n in range(4)),
        *(TopicPartition(c.votes, n) for n in range(c.log_partitions)),
    }
    assert txn.groups == {c.shards: shard.parked_as, c.votes: gather.parked_as}
    assert txn.verify is not None
    txn.verify([0, 10])  # the dead letter anywhere, the log record where the log ended
    with pytest.raises(LogMoved):
        txn.verify([0, 11])
    s.committed(staged, 1.8e9)
    assert shard.gauges == 1 and s.ends[p] == 12

    copy = {"id": "b", "text": TEXT.replace("Tuesday", "Wednesday")}
    second = ingested(settings, [record(2, json.dumps(copy).encode())])
    txn, _ = s.transaction(second, {TopicPartition("in", 0): OffsetAndMetadata(3, "", -1)})
    [out] = [m for m in txn.messages if m.topic == t.duplicate]
    decision = json.loads(out.value)
    assert (decision["id"], decision["duplicate_of"]) == ("b", "a")
    assert gather.decided == [(p, 10), (p, 12)]
