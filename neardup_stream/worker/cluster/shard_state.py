"""What the shard role holds: its owned shards, their engines and one merged probe table.

Kafka-free, so it is unit-tested without a broker. `ShardState` keeps the owned shards in one
`ReplicaVoter` (docs/design/scale-out.md, "One merged candidate table per replica": a
fingerprint costs one probe of one merged
candidate table per domain, whatever the number of owned shards; votes byte-identical to one
`ShardVoter` per shard) and, per owned shard, its next fingerprint-log offset per log
partition: the checkpoint committed with its votes.

A shard comes in already rebuilt (`RestoredShard`: a plain `ShardVoter` restored from its
changelog, on the restore thread, and where it resumes); `add` moves its table entries into
the merged table. `drop` lets one go (revoked, lost); `clear` lets all go (a failed
transaction: every shard is rebuilt from what committed). `vote` lets each owned shard vote on
a fingerprint record it has not voted on yet: a shard restored later resumes at an earlier
record than the others, and votes alone there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from neardup_stream.config import DedupConfig
from neardup_stream.sharded.changes import ShardChange
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.replica import ReplicaVoter
from neardup_stream.sharded.voter import ShardVoter
from neardup_stream.sharded.votes import Votes


@dataclass
class RestoredShard:
    """A shard rebuilt from its changelog, and its next offset per fingerprint-log partition."""

    voter: ShardVoter
    next: dict[int, int] = field(default_factory=dict)


class ShardVotes(NamedTuple):
    """One shard's votes on one fingerprint record, and the changes that replay what it stored."""

    shard: int
    votes: Votes
    changes: list[ShardChange]


class ShardState:
    """The owned shards of one replica (see the module docstring)."""

    def __init__(self, config: DedupConfig) -> None:
        self.config = config
        self._replica = ReplicaVoter(config)
        self._next: dict[int, dict[int, int]] = {}

    def __contains__(self, shard: object) -> bool:
        return shard in self._next

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self._next))

    def __len__(self) -> int:
        """The number of owned shards."""
        return len(self._next)

    def add(self, shard: RestoredShard) -> None:
        """Own `shard.voter`'s shard from now on, resuming at `shard.next`."""
        self._replica.add(shard.voter)
        self._next[shard.voter.shard] = dict(shard.next)

    def drop(self, shard: int) -> None:
        """Let `shard` go (its state is dropped); nothing happens if it is not owned."""
        if shard in self._next:
            self._replica.remove(shard)
            del self._next[shard]

    def clear(self) -> None:
        """Let every shard go (they are rebuilt from what committed)."""
        self._replica = ReplicaVoter(self.config)
        self._next.clear()

    def next(self, shard: int) -> dict[int, int]:
        """Where `shard` resumes in each log partition (its checkpoint), a copy."""
        return dict(self._next[shard])

    def resume_at(self, partition: int) -> int:
        """The least advanced owned shard's next offset in log `partition` (0 if none)."""
        return min((n.get(partition, 0) for n in self._next.values()), default=0)

    def skip_to(self, partition: int, offset: int) -> None:
        """No owned shard resumes before `offset` in `partition` (what lies before is gone)."""
        for n in self._next.values():
            n[partition] = max(n.get(partition, 0), offset)

    def vote(self, partition: int, offset: int, fb: FingerprintBatch) -> list[ShardVotes]:
        """Votes of every owned shard that has not voted on record `offset` of log
        `partition` yet (one probe for all of them), in shard order; they move past it."""
        voting = [s for s in sorted(self._next) if self._next[s].get(partition, 0) <= offset]
        if not voting:
            return []
        got = self._replica.vote_and_record(fb, shards=voting)
        for s in voting:
            self._next[s][partition] = offset + 1
        return [ShardVotes(s, *got[s]) for s in voting]

    def documents(self, shard: int | None = None) -> int:
        """Documents stored by `shard`, or by all owned shards."""
        if shard is None:
            return len(self._replica)
        return len(self._replica.voter(shard))

    def index_entries(self) -> int:
        """Entries of the merged candidate tables."""
        return self._replica.index_entries()

    def domain_engines(self) -> int:
        """Engines over the owned shards and domains (one per shard and domain it stores)."""
        return self._replica.domain_engines()

    def index_bytes(self) -> int:
        """Bytes of the stores, registries and merged tables of all owned shards."""
        return self._replica.index_bytes()
