"""Precise mode: decide candidates near the threshold on exact Jaccard of shingle-hash sets.

Every stored document's sorted set of feature hashes is kept (in memory, in snapshots, and in
its changelog record), so a candidate whose sketch estimate falls within `precise_margin` of
the threshold is verified exactly, and the reported similarity is the exact one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from neardup_stream.config import DedupConfig
from neardup_stream.fingerprint.shingles import sorted_jaccard
from neardup_stream.index.columns import EXACT, MINHASH, SIMHASH, Candidates


class FeatureSets:
    """The shingle-hash sets of stored documents, by ref."""

    def __init__(self, config: DedupConfig) -> None:
        self.config = config
        self.sets: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.sets)

    def choose(self, feats: np.ndarray, cands: Candidates) -> tuple[int, float, int] | None:
        """(ref, similarity, method) of the best candidate at or above the threshold."""
        if cands.exact.any():
            return int(cands.refs[int(np.argmax(cands.exact))]), 1.0, EXACT
        if cands.refs.size == 0:
            return None
        exact = np.array([sorted_jaccard(feats, self.sets[int(r)]) for r in cands.refs])
        j = int(np.argmax(exact))
        if exact[j] < self.config.threshold:
            return None
        method = SIMHASH if cands.hamming[j] <= self.config.simhash_k else MINHASH
        return int(cands.refs[j]), float(exact[j]), method

    def add(self, ref: int, feats: np.ndarray) -> None:
        self.sets[ref] = feats

    def forget(self, alive: Callable[[int], bool]) -> None:
        """Drop the sets of documents that are no longer `alive`."""
        for ref in [r for r in self.sets if not alive(r)]:
            del self.sets[ref]

    @property
    def nbytes(self) -> int:
        return sum(f.nbytes for f in self.sets.values())

    def state(self) -> dict[str, np.ndarray]:
        refs = np.array(sorted(self.sets), dtype=np.uint32)
        sets = [self.sets[int(r)] for r in refs]
        return {
            "features_refs": refs,
            "features_sizes": np.array([f.size for f in sets], dtype=np.int64),
            "features": np.concatenate(sets) if sets else np.empty(0, dtype=np.uint64),
        }

    @classmethod
    def from_state(cls, config: DedupConfig, state: dict[str, np.ndarray]) -> FeatureSets:
        out = cls(config)
        offsets = np.concatenate(([0], np.cumsum(state["features_sizes"])))
        for j, r in enumerate(state["features_refs"]):
            out.sets[int(r)] = state["features"][offsets[j] : offsets[j + 1]]
        return out
