"""All home shards and the gather step in one process: `ShardedDeduplicator`.

This is what `neardup-stream dedup` runs when `home_shards` > 1, and the reference the
scale-out worker must match: the worker runs the same shards and `Gatherer` on the same
fingerprint batches, only spread over processes, so its decisions are these. All S shards
are held by one `ReplicaVoter` (one merged candidate table: one probe per document), which
votes exactly as S separate `ShardVoter`s do.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from neardup_stream.batch import Batch
from neardup_stream.config import DedupConfig
from neardup_stream.event_time import event_times
from neardup_stream.fingerprint.fingerprinter import Fingerprinter
from neardup_stream.models import Decision, Parsed
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.gather import Gatherer
from neardup_stream.sharded.replica import ReplicaVoter


class DocumentFingerprinter:
    """Documents -> a `FingerprintBatch` at the given positions (the log's ingest step)."""

    def __init__(self, config: DedupConfig) -> None:
        self.config = config
        self.fingerprinter = Fingerprinter(config)

    def batch(
        self,
        docs: Sequence[Parsed],
        domains: Sequence[str],
        positions: np.ndarray,
        now: float | None = None,
        times: Sequence[float | None] | None = None,
    ) -> FingerprintBatch:
        """Fingerprints of `docs`; event times follow `event_time.event_times`."""
        real = time.time() if now is None else now
        ts = event_times(
            [d.timestamp for d in docs], real, self.config.max_future_skew_seconds, times
        )
        fps = self.fingerprinter.batch([d.text for d in docs])
        batch = Batch.from_fingerprints([d.id for d in docs], fps, ts)
        return FingerprintBatch.of(self.config.fingerprint_id, batch, domains, positions)


class ShardedDeduplicator:
    """`home_shards` shards and the gather step, deciding documents in stream order."""

    def __init__(self, config: DedupConfig) -> None:
        self.config = config
        self.fingerprinter = DocumentFingerprinter(config)
        self.replica = ReplicaVoter(config, range(config.home_shards))
        self.voters = [self.replica.voter(s) for s in range(config.home_shards)]
        self.gatherer = Gatherer(config)
        self._next_position = 0

    def process(
        self,
        docs: Sequence[Parsed],
        domains: Sequence[str] | None = None,
        now: float | None = None,
        times: Sequence[float | None] | None = None,
    ) -> list[Decision]:
        """Decide documents in order (each sees all earlier ones of its domain)."""
        if not docs:
            return []
        positions = np.arange(self._next_position, self._next_position + len(docs))
        self._next_position += len(docs)
        fb = self.fingerprinter.batch(docs, domains or [""] * len(docs), positions, now, times)
        return self.gatherer.decide(fb, list(self.replica.vote(fb).values()))

    def check_batch(self, docs: Sequence[Parsed], now: float | None = None) -> list[Decision]:
        return self.process(docs, now=now)

    def __len__(self) -> int:
        return len(self.replica)

    def index_bytes(self) -> int:
        return self.replica.index_bytes()
