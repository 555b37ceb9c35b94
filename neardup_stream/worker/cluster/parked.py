"""The port between the single-stage edge and the shard and gather roles it parks.

While one replica is the whole cluster, the edge thread votes with the shard role's state and
decides with the gather role's (`single_stage`). `ParkedShard` and `ParkedGather` are all the
edge and `SingleStage` use of them: whether they could park, their group metadata once parked,
where their log readers stand, the vote or decision on one log record where it will be
written, and the checkpoints a single-stage transaction commits for them. The roles keep
their state behind it; each method runs on the edge's thread only while the role is parked
(its own thread then only polls its group), or, for the hints (`settled`, `holds_all`), is
read as a hint and checked again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kafka import OffsetAndMetadata, TopicPartition
from kafka.structs import ConsumerGroupMetadata

from neardup_stream.models import Decision
from neardup_stream.sharded.changes import FirstDecisions
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.votes import Votes
from neardup_stream.worker.cluster.handover import Handover
from neardup_stream.worker.cluster.shard_state import ShardVotes
from neardup_stream.worker.codec import OutMessage
from neardup_stream.worker.rejections import Rejections

if TYPE_CHECKING:
    from neardup_stream.worker.cluster.single_stage import SingleStage

Checkpoints = dict[TopicPartition, OffsetAndMetadata]


class ParkedRole(Protocol):
    """What the edge asks of the shard and the gather role alike."""

    stage: SingleStage | None  # set by the edge (`EdgeRole.single_stage`)
    settled: bool  # assigned, nothing restoring (`single_stage.settled`): a hint
    parked_as: ConsumerGroupMetadata | None  # its group metadata when it parked

    def holds_all(self) -> bool: ...  # could park: everything held, nothing restoring
    def log_position(self, partition: int) -> int: ...  # its log reader's position
    def follow_single_stage(self) -> None: ...  # read the log on past what was decided
    def rebuild(self) -> None: ...  # a single-stage transaction failed: restore again


class ParkedShard(ParkedRole, Protocol):
    def vote_in_place(self, partition: int, offset: int, fb: FingerprintBatch) -> list[ShardVotes]:
        """Every owned shard's votes on log record `offset` of `partition` (`fb`, placed
        there), as if read from the log: the shards move past it."""
        ...

    def changelog(self, offset: int, voted: list[ShardVotes]) -> list[OutMessage]: ...
    def checkpoints(self) -> Checkpoints: ...  # each owned shard's, for its group
    def committed(self, carried: None, at: float) -> None: ...  # its gauges


class ParkedGather(ParkedRole, Protocol):
    rejections: Rejections  # the dead letters of the inputs it decides
    handover: Handover  # inputs a previous generation decided

    def decide_in_place(
        self, partition: int, offset: int, fb: FingerprintBatch, votes: list[Votes]
    ) -> tuple[list[Decision], list[FirstDecisions]]:
        """The decisions on log record `offset` of `partition` with every shard's `votes`,
        recorded as decided (the join moves past it) with the changes that replay them."""
        ...

    def parked_checkpoints(self) -> Checkpoints: ...  # at the votes positions it parked at
