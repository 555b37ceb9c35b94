"""The gather's join of fingerprint-log records with the S shard votes on each, in log order.

`VoteJoin` holds one log partition's undecided records (in offset order) and the votes that
arrived for them, and says which record is next to decide: the oldest, once every shard voted
on it. It tracks the bytes it holds (the role pauses its reader above a budget), the oldest
record's append time, which shards the oldest record still waits for, and the first votes
record still needed (the committed position). Pure: no Kafka.

Memory is bounded on both sides without a circular wait. The role stops reading records over
its budget; votes on records not read yet are kept up to `ahead_budget`, those on the records
read first, and the others dropped (read again from `dropped_from`). A dropped vote can be on
a record that is read later and then waits for it, while the votes kept ahead stay over half
the budget: so `rewind` reads the votes again as soon as the oldest record held may need a
dropped one (not before: each rewind reads the votes from there again), not only once the
votes ahead shrank. Votes on records held are always kept, so each rewind completes every
record held that the shards voted on.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar

from neardup_stream.sharded.votes import Votes

T = TypeVar("T")


class Pending(NamedTuple, Generic[T]):
    """A log record waiting for its votes."""

    offset: int
    payload: T
    appended_ms: int  # the log record's timestamp (when the edge appended it)
    size: int  # bytes it holds


class Joined(NamedTuple, Generic[T]):
    """A log record with one vote per shard, next to decide."""

    offset: int
    payload: T
    votes: list[Votes]


@dataclass
class VoteJoin(Generic[T]):
    """One log partition's undecided records and their votes (see the module docstring)."""

    shards: int
    next: int  # first log offset not yet decided
    records: deque[Pending[T]] = field(default_factory=deque)
    votes: dict[int, dict[int, Votes]] = field(default_factory=dict)  # offset -> shard -> votes
    votes_at: dict[int, int] = field(default_factory=dict)  # offset -> first votes record
    vote_bytes: dict[int, int] = field(default_factory=dict)  # offset -> bytes of its votes
    record_bytes: int = 0
    ahead_budget: int | None = None  # bytes of votes on records not read yet; None: no bound
    dropped_from: int | None = None  # first votes record dropped over the budget: read again
    dropped_on: int | None = None  # the lowest log offset a dropped vote was on
    _ahead: int = 0  # bytes of the votes on offsets past `last_read` (`ahead_bytes`)
    _far: list[int] = field(default_factory=list)  # heap of -offset of the votes ahead

    def add_record(self, record: Pending[T]) -> None:
        """Append the next log record (offsets increase; already decided ones are ignored)."""
        if record.offset < self.next or (self.records and record.offset <= self.records[-1].offset):
            return
        last = self.last_read
        self.records.append(record)
        self.record_bytes += record.size
        if self._ahead:  # the votes on offsets up to this record are no longer ahead
            if record.offset - last <= len(self.vote_bytes):
                passed = (self.vote_bytes.get(o, 0) for o in range(last + 1, record.offset + 1))
            else:
                passed = (b for o, b in self.vote_bytes.items() if last < o <= record.offset)
            self._ahead -= sum(passed)

    def add_votes(self, offset: int, votes: Votes, at: int, size: int) -> None:
        """Votes of one shard on log `offset`, read from votes record `at`; the first per
        shard counts (a re-published vote is the same vote). Votes on records not read yet
        beyond `ahead_budget` are dropped, and `dropped_from` says where to read them again
        (`rewind`); votes on records held are always kept, so the oldest can complete."""
        if offset < self.next:
            return
        budget = self.ahead_budget
        ahead = offset > self.last_read
        by_shard = self.votes.get(offset, {})
        if votes.shard in by_shard:
            return
        if budget is not None and ahead and self._ahead + size > budget:
            self._make_room(offset, size, budget)
            if self._ahead + size > budget:
                self._dropped(offset, at)
                return
        if ahead and offset not in self.vote_bytes:
            heapq.heappush(self._far, -offset)
        self.votes[offset] = by_shard
        by_shard[votes.shard] = votes
        self.votes_at[offset] = min(self.votes_at.get(offset, at), at)
        self.vote_bytes[offset] = self.vote_bytes.get(offset, 0) + size
        if ahead:
            self._ahead += size

    def _make_room(self, offset: int, size: int, budget: int) -> None:
        """Drop the votes ahead on offsets past `offset`, farthest first, until `size` more
        bytes fit: the votes kept ahead are always those the reader comes to first."""
        far, last = self._far, self.last_read
        while far and self._ahead + size > budget:
            top = -far[0]
            if top not in self.vote_bytes or top <= last:  # decided, or read since
                heapq.heappop(far)
                continue
            if top <= offset:
                return
            heapq.heappop(far)
            self._dropped(top, self.votes_at.pop(top))
            self._ahead -= self.vote_bytes.pop(top)
            del self.votes[top]
        if len(far) > 2 * len(self.vote_bytes) + 16:  # offsets read since pile up below
            self._far = [-o for o in self.vote_bytes if o > last]
            heapq.heapify(self._far)

    def _dropped(self, offset: int, at: int) -> None:
        """Votes on `offset`, from votes record `at` on, are not held: read them again."""
        self.dropped_from = at if self.dropped_from is None else min(self.dropped_from, at)
        self.dropped_on = offset if self.dropped_on is None else min(self.dropped_on, offset)

    def ready(self) -> Joined[T] | None:
        """The oldest record, if every shard voted on it."""
        if not self.records:
            return None
        head = self.records[0]
        votes = self.votes.get(head.offset, {})
        if len(votes) < self.shards:
            return None
        return Joined(head.offset, head.payload, [votes[s] for s in sorted(votes)])

    def pop(self) -> None:
        """The oldest record is decided: forget it and its votes."""
        head = self.records.popleft()
        self.record_bytes -= head.size
        self.votes.pop(head.offset, None)
        self.votes_at.pop(head.offset, None)
        self.vote_bytes.pop(head.offset, None)
        self.next = head.offset + 1

    def decided(self, offset: int) -> None:
        """Record `offset` was decided without the join (a single-stage replica votes and
        decides each record as it appends it): the next to decide comes after it. Only
        with nothing held: the records before it were decided first."""
        if self.records or self.votes or offset < self.next:
            raise ValueError(f"record {offset} decided out of order (next {self.next})")
        self.next = offset + 1

    def waiting_for(self) -> list[int]:
        """Shards whose vote the oldest record still needs (empty: none buffered, or ready)."""
        if not self.records:
            return []
        have = self.votes.get(self.records[0].offset, {})
        return [s for s in range(self.shards) if s not in have]

    def oldest_ms(self) -> int | None:
        """Append time of the oldest undecided record held."""
        return self.records[0].appended_ms if self.records else None

    def first_needed(self, default: int) -> int:
        """The first votes record still needed: of the votes held, of those dropped, or
        `default` (the read position: nothing from there on was taken), whichever is first.
        (After a rewind, votes held were read past the position read from again.)"""
        needed = min([default, *self.votes_at.values()])
        return needed if self.dropped_from is None else min(needed, self.dropped_from)

    @property
    def last_read(self) -> int:
        """The offset of the newest record held (`next - 1` when none)."""
        return self.records[-1].offset if self.records else self.next - 1

    def ahead_bytes(self) -> int:
        """Bytes of votes on records not read yet."""
        return self._ahead

    def rewind(self) -> int | None:
        """Where to read votes again (None: not yet): once the oldest record held may need
        a vote that was dropped, or the votes ahead are under half the budget."""
        if self.dropped_from is None or self.ahead_budget is None:
            return None
        oldest = self.records[0].offset if self.records else self.next - 1
        needed = self.dropped_on is not None and self.dropped_on <= oldest
        if not needed and self._ahead * 2 > self.ahead_budget:
            return None
        at, self.dropped_from, self.dropped_on = self.dropped_from, None, None
        return at

    @property
    def held_bytes(self) -> int:
        return self.record_bytes + sum(self.vote_bytes.values())
