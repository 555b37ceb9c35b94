"""Quiet domains: the clock of each stream, and when a domain is forgotten.

With `max_age_seconds`, a domain's documents expire by the domain's own clock (the newest
event time of its documents). A domain that stops publishing would then keep its last
documents, and every shard and gather its state, for good: memory would grow with the
domains ever seen. So each *stream* (a fingerprint-log partition; `dedup` has one) keeps a
clock, the newest event time of its documents in log order, and each domain the clock of its
stream just after its latest document (*seen*). Once the stream's clock passes
`seen + max_age_seconds + max_future_skew_seconds`, the domain is *quiet*: its documents,
watermark and first decisions are forgotten on every shard and gather alike (they all follow
the same log), and its next document starts it afresh. Without `max_age_seconds` nothing is
forgotten.

A document at most `max_future_skew_seconds` behind its stream's clock is decided as if
nothing were forgotten: every document of a quiet domain is out of its window anyway. A
domain that keeps publishing is never quiet, however old its event times (a backfill beside
live domains). The rule is applied per document, with the clock just before it, so decisions
do not depend on how documents are batched (`segments`); sweeping quiet domains between
batches only frees memory sooner, since a quiet domain stays quiet until its next document.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from neardup_stream.config import DedupConfig


class Timeline(NamedTuple):
    """A batch's stream clock around each of its documents, in batch order."""

    stream: int
    before: np.ndarray  # int64[n]: the clock just before document i
    after: np.ndarray  # int64[n]: the clock just after it


class Segment(NamedTuple):
    """Consecutive documents of one domain in a batch, decided without forgetting between."""

    rows: np.ndarray  # int64: their rows of the batch, in order
    reset: bool  # the domain starts afresh before them (quiet, or unknown; never without a margin)
    seen: int  # the stream's clock just after the last of them


SWEEP_EVERY = 256  # batches (calls of `sweep_due`) between two sweeps at most


class StreamClocks:
    """The clock of each stream, and the quiet rule (see the module docstring)."""

    def __init__(self, config: DedupConfig) -> None:
        age = config.max_age_seconds
        self.margin = None if age is None else int(age + config.max_future_skew_seconds)
        self.clocks: dict[int, int] = {}
        self._swept: dict[int, int] = {}  # the clocks at the last sweep
        self._calls = 0

    def sweep_due(self) -> bool:
        """Whether to sweep quiet domains now: a clock moved an eighth of the margin since
        the last sweep, or `SWEEP_EVERY` calls passed (never without a margin)."""
        if self.margin is None:
            return False
        self._calls += 1
        step = max(1, self.margin // 8)
        moved = any(c - self._swept.setdefault(s, c) >= step for s, c in self.clocks.items())
        return moved or self._calls >= SWEEP_EVERY  # the sweep then calls `swept`

    def swept(self) -> None:
        """Quiet domains were just swept: `sweep_due` counts from the clocks as they are."""
        self._calls, self._swept = 0, dict(self.clocks)

    def quiet(self, stream: int | None, seen: int) -> bool:
        """Whether a domain of `stream` last seen at `seen` is quiet by now."""
        if stream is None or stream not in self.clocks:
            return False
        return self.quiet_at(seen, self.clocks[stream])

    def quiet_at(self, seen: int, clock: int) -> bool:
        """Whether a domain last seen at `seen` is quiet when its stream's clock is `clock`."""
        return self.margin is not None and seen < clock - self.margin

    def timeline(self, stream: int, ts: np.ndarray) -> Timeline:
        """The clock around each document of a batch with event times `ts` (not yet seen)."""
        start = self.clocks.get(stream)
        after = np.maximum.accumulate(np.asarray(ts, dtype=np.int64))
        if start is not None:
            np.maximum(after, start, out=after)
        before = np.empty_like(after)
        if after.size:
            before[0] = after[0] if start is None else start
            before[1:] = after[:-1]
        return Timeline(stream, before, after)

    def segments(self, line: Timeline, rows: np.ndarray, seen: int | None) -> list[Segment]:
        """`rows` (one domain's, in order) split where the domain goes quiet; `seen` is the
        domain's mark before the batch (None: nothing is known of it)."""
        after = line.after[rows]
        if self.margin is None:  # nothing is ever forgotten: no reset, even of the unknown
            return [Segment(rows, False, int(after[-1]))]
        previous = np.empty_like(after)
        previous[0] = line.before[rows[0]] if seen is None else seen
        previous[1:] = after[:-1]
        quiet = previous < line.before[rows] - self.margin
        quiet[0] |= seen is None
        starts = np.flatnonzero(quiet).tolist()
        if not starts or starts[0] != 0:
            starts.insert(0, 0)
        ends = [*starts[1:], rows.size]
        return [
            Segment(rows[a:b], bool(quiet[a]), int(after[b - 1]))
            for a, b in zip(starts, ends, strict=True)
        ]

    def advance(self, line: Timeline) -> None:
        """The batch of `line` was decided: its stream's clock moves on."""
        if line.after.size:
            self.advance_to(line.stream, int(line.after[-1]))

    def advance_to(self, stream: int | None, clock: int) -> None:
        """Move `stream`'s clock to `clock` if later (a restore replaying a recorded mark)."""
        if stream is not None and clock > self.clocks.get(stream, clock - 1):
            self.clocks[stream] = clock
