"""The gather's pure halves, free of any Kafka client: which joined records one batch decides
(`assemble`), what each votes partition commits with it (`commits`: the first votes record
still needed, and the checkpoint, the next log offset to decide) and how far each log
partition is behind (`progress`). `neardup_stream.worker.cluster.gather.role` publishes, `gather.reading` reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar

from neardup_stream.sharded.join import Joined, VoteJoin
from neardup_stream.worker.cluster import checkpoint
from neardup_stream.worker.cluster.payloads import PayloadCheckpoint

T = TypeVar("T")


def assemble(
    joins: Mapping[int, VoteJoin[T]],
    max_records: int,
    max_bytes: int,
    size: Callable[[], int],
    decide: Callable[[int, Joined[T]], bool],
) -> int:
    """Decide the ready records: partition by partition, each in log order, stopping at a
    partition's first record still waiting for votes, or that `decide` could not decide yet
    (it returns False: e.g. its payloads are not read), once `max_records` are decided or
    the batch's `size()` reached `max_bytes` (the record that crosses it is the last). Each
    record decided is popped from its join; returns how many were decided."""
    decided = 0
    for p, join in list(joins.items()):
        while decided < max_records and size() < max_bytes:
            ready = join.ready()
            if ready is None:
                break
            if not decide(p, ready):
                break
            join.pop()
            decided += 1
    return decided


class VotesCommit(NamedTuple):
    """What the transaction commits for one votes partition."""

    offset: int  # the first votes record still needed: read again after a restart
    metadata: str  # the checkpoint: the next log offset to decide (`checkpoint.encode`)


def commits(
    joins: Mapping[int, VoteJoin[Any]],
    positions: Mapping[int, int],
    payloads: Mapping[int, PayloadCheckpoint],
) -> dict[int, VotesCommit]:
    """Per owned log partition, given the votes consumer's read `positions` and where each
    partition resumes reading its payloads."""
    return {
        p: VotesCommit(
            join.first_needed(positions[p]),
            checkpoint.encode({p: join.next}, {p: payloads[p]}),
        )
        for p, join in joins.items()
    }


class Progress(NamedTuple):
    """How far one log partition is behind."""

    lag: int  # log records not decided yet: held undecided, plus not read yet
    oldest_age_s: float  # age of the oldest undecided record held (0: none)
    waiting_for: int | None  # the first shard whose vote the oldest record needs


def progress(
    join: VoteJoin[Any], end: int | None, position: int | None, stopped: bool, now_ms: float
) -> Progress:
    """`end`: the log's end offset (None: not known yet); `position`: the reader's (None: not
    positioned yet). On a stopped partition the reader ran ahead of the stop, so the lag
    counts from the next offset to decide."""
    unread = 0 if end is None or position is None else max(0, end - position)
    lag = len(join.records) + unread
    if stopped and end is not None:
        lag = max(0, end - join.next)
    oldest = join.oldest_ms()
    age = 0.0 if oldest is None else max(0.0, (now_ms - oldest) / 1000)
    missing = join.waiting_for()
    return Progress(lag, age, missing[0] if missing else None)
