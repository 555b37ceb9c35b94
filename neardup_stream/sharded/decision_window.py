"""One domain's first decisions at the gather step, kept where the cycle collector never looks.

The gather step keeps the first decision of each live document of a domain (`gather`): a
replayed id gets its first decision again, a duplicate's match gives its representative,
and the oldest leave first by the engine's retention rules (age from the event-time
watermark, then count). Until 2026-11-28 these were tuples in a `dict` and a `deque`: a
deque is traversed item by item by every full collection, and the dict again whenever a
new tuple made it tracked. At a million live documents that was 25-50 ms a full
collection, one every few thousand documents, so the collector's cost per document grew
with the index (the plain engine keeps its decisions in numpy columns and pays nothing).

Here each decision is a row, numbered in log order. Its numbers live in `array`s and its
strings in dicts from row numbers to strings, and `first` maps an id to the number of its
latest row: containers of numbers and strings only, which the collector does not track.
"""

from __future__ import annotations

import math
from array import array

from neardup_stream.config import DedupConfig
from neardup_stream.engine.outcomes import stored_decision
from neardup_stream.index.columns import UNIQUE
from neardup_stream.index.doc_store import StoredDecision
from neardup_stream.models import METHODS, Decision

_COMPACT_AT = 4096  # dropped rows kept at the head of the columns before they are cut


class DecisionWindow:
    """First decisions of one domain's live documents, oldest first (module docstring)."""

    def __init__(self, stream: int | None) -> None:
        self.first: dict[str, int] = {}  # id -> the number of its latest row
        self.watermark = -(2**62)
        self.stream = stream
        self.seen = -(2**62)  # the stream's clock after its last document (`sharded.quiet`)
        self._base = 0  # number of the row at index 0 of the columns
        self._head = 0  # index of the oldest row kept
        self._ts = array("q")
        self._method = array("b")  # UNIQUE, or 1 + the index of its name in METHODS
        self._similarity = array("d")  # nan: none
        self._update = array("b")
        self._ids: dict[int, str] = {}
        self._duplicate_of: dict[int, str] = {}
        self._representative: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self.first)

    def rows(self) -> int:
        """Rows kept, an id's superseded ones included (what `max_docs` counts)."""
        return len(self._ts) - self._head

    def remember(self, ts: int, decision: Decision, config: DedupConfig) -> None:
        """Keep `decision` (an update replaces its id's earlier one), then expire."""
        n = self._base + len(self._ts)
        self._ts.append(ts)
        method = decision.method
        self._method.append(UNIQUE if method is None else 1 + METHODS.index(method))
        similarity = decision.similarity
        self._similarity.append(math.nan if similarity is None else similarity)
        self._update.append(decision.update)
        self._ids[n] = decision.id
        if decision.duplicate_of is not None:
            self._duplicate_of[n] = decision.duplicate_of
        if decision.representative is not None:
            self._representative[n] = decision.representative
        self.first[decision.id] = n
        self.expire(config)

    def decision(self, doc_id: str) -> Decision | None:
        """The first decision of live `doc_id` (its latest version's), if kept."""
        n = self.first.get(doc_id)
        if n is None:
            return None
        i = n - self._base
        return stored_decision(
            StoredDecision(
                doc_id,
                self._duplicate_of.get(n),
                self._representative.get(n),
                self._similarity[i],
                self._method[i],
                bool(self._update[i]),
            )
        )

    def representative(self, match: str) -> str:
        """The representative of a duplicate of `match`: `match`'s own, or `match`."""
        n = self.first.get(match)
        rep = None if n is None else self._representative.get(n)
        return match if rep is None else rep

    def expire(self, config: DedupConfig) -> None:
        if config.max_age_seconds is not None:
            cutoff = self.watermark - config.max_age_seconds
            while self.rows() and self._ts[self._head] < cutoff:
                self._drop_oldest()
        if config.max_docs is not None:
            while self.rows() > config.max_docs:
                self._drop_oldest()
        if self._head >= _COMPACT_AT and 2 * self._head >= len(self._ts):
            self._compact()

    def _drop_oldest(self) -> None:
        n = self._base + self._head
        doc_id = self._ids.pop(n)
        if self.first.get(doc_id) == n:  # not replaced by an update since
            del self.first[doc_id]
        self._duplicate_of.pop(n, None)
        self._representative.pop(n, None)
        self._head += 1

    def _compact(self) -> None:
        """Cut the dropped rows from the head of the columns (row numbers stay)."""
        head = self._head
        for column in (self._ts, self._method, self._similarity, self._update):
            del column[:head]
        self._base += head
        self._head = 0
