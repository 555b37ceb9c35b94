"""Peer near-duplicate detectors with a common streaming interface.

Every peer exposes ``run(docs) -> list[(id, is_dup, duplicate_of)]`` in stream order, with
the semantics of "query, then insert every document": a document is a duplicate when a
verified candidate exists among *earlier* documents, and duplicates are indexed too so
chains are caught.  All peers use the same features as the ground truth and the engine: the
set of character 5-grams of the normalised text (:mod:`bench.textnorm`).

* ``datasketch``: ``MinHash(num_perm=128)`` fed with ``update_batch`` of UTF-8 encoded
  shingles, ``MinHashLSH(threshold=0.8, num_perm=128)``, candidates verified by estimated
  Jaccard >= 0.8.  All sketches share one permutation table (the same values the default
  constructor generates, built once).  datasketch's own "optimal" banding for 0.8 is 9 bands
  x 13 rows: a pair at Jaccard 0.8 / 0.85 / 0.9 becomes a candidate with probability only
  0.40 / 0.69 / 0.93, which bounds its recall near the threshold.
* ``rensa``: rensa 0.5.0 R-MinHash with 256 permutations built in batches with
  ``RMinHash.from_token_sets`` (shingle lists with repeats: full-set R-MinHash ignores
  duplicates, and skipping the Python ``set`` is faster), then
  ``RMinHashLSH(threshold=0.8, num_perm=256, num_bands=32)`` and verification by estimated
  Jaccard >= 0.8 (vectorised over the digests).  32 bands x 8 rows retrieve a pair at 0.75 /
  0.8 with probability 0.966 / 0.997.  (rensa's built-in default for threshold 0.8 is
  8 bands, i.e. 32 rows with 256 permutations: retrieval probability 0.006 at 0.8.)
  Inserting all sketches and calling ``query_all``, keeping only candidates with a smaller
  key, yields exactly the decisions of a query-then-insert loop (LSH candidates are
  band-hash equalities, independent of insertion order) in far fewer Python calls.

``time_peer`` measures a run end to end (normalisation, shingling, sketching, LSH,
verification) on documents already in memory.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from bench.textnorm import normalize, shingle_list

THRESHOLD = 0.8
Decision = tuple[str, bool, str | None]


class Peer(Protocol):
    """A streaming near-duplicate detector under test."""

    name: str

    def run(self, docs: Sequence[tuple[str, str]]) -> list[Decision]:
        """Decide every ``(id, text)`` in stream order."""
        ...

    def index_bytes(self) -> int | None:
        """Bytes the index holds after ``run`` if the system can tell, else None."""
        ...


def shingles(text: str) -> set[str]:
    """The 5-gram feature set shared by every system."""
    return set(shingle_list(normalize(text)))


def char_tokens(text: str) -> list[str]:
    """Character 5-grams of the normalised text, with repeats (the default features)."""
    return shingle_list(normalize(text))


def word_tokens(n: int) -> Callable[[str], list[str]]:
    """Word n-grams of the normalised text, with repeats (the engine's word shingles)."""

    def tokens(text: str) -> list[str]:
        norm = normalize(text)
        words = norm.split(" ") if norm else []
        if len(words) < n:
            return [norm] if norm else []
        return [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)]

    return tokens


class DatasketchPeer:
    """datasketch MinHash + MinHashLSH, verification by estimated Jaccard."""

    name = "datasketch"

    def __init__(
        self,
        threshold: float = THRESHOLD,
        num_perm: int = 128,
        tokens: Callable[[str], list[str]] = char_tokens,
    ) -> None:
        self.threshold = threshold
        self.num_perm = num_perm
        self.tokens = tokens
        self.lsh: object | None = None
        self.sketches: dict[str, object] = {}

    def run(self, docs: Sequence[tuple[str, str]]) -> list[Decision]:
        """Query then insert each document."""
        from datasketch import MinHash, MinHashLSH

        template = MinHash(num_perm=self.num_perm)
        perms = template.permutations
        scheme = template.scheme
        lsh = MinHashLSH(threshold=self.threshold, num_perm=self.num_perm)
        sketches: dict[str, MinHash] = {}
        out: list[Decision] = []
        for doc_id, text in docs:
            m = MinHash(num_perm=self.num_perm, permutations=perms, scheme=scheme)
            m.update_batch([s.encode("utf-8") for s in set(self.tokens(text))])
            best: str | None = None
            best_j = -1.0
            for key in lsh.query(m):
                j = m.jaccard(sketches[key])
                if j >= self.threshold and (j > best_j or (j == best_j and key < best)):
                    best, best_j = key, j
            out.append((doc_id, best is not None, best))
            lsh.insert(doc_id, m)
            sketches[doc_id] = m
        self.lsh, self.sketches = lsh, sketches
        return out

    def index_bytes(self) -> int | None:
        """Not reported by datasketch (use RSS)."""
        return None


class RensaPeer:
    """rensa R-MinHash + RMinHashLSH, verification by estimated Jaccard."""

    name = "rensa"

    def __init__(
        self,
        threshold: float = THRESHOLD,
        num_perm: int = 256,
        num_bands: int = 32,
        seed: int = 42,
        batch: int = 1024,
        tokens: Callable[[str], list[str]] = char_tokens,
    ) -> None:
        self.tokens = tokens
        self.threshold = threshold
        self.num_perm = num_perm
        self.num_bands = num_bands
        self.seed = seed
        self.batch = batch
        self.lsh: object | None = None
        self.sketches: list[object] = []
        self.digests: np.ndarray | None = None

    def run(self, docs: Sequence[tuple[str, str]]) -> list[Decision]:
        """Sketch in batches, insert all, query all, keep earlier verified candidates."""
        from rensa import RMinHash, RMinHashLSH

        sketches: list[RMinHash] = []
        for b in range(0, len(docs), self.batch):
            token_sets = [self.tokens(text) for _, text in docs[b : b + self.batch]]
            sketches.extend(RMinHash.from_token_sets(token_sets, self.num_perm, self.seed))
        digests = np.array([m.digest() for m in sketches], dtype=np.uint32)
        lsh = RMinHashLSH(self.threshold, self.num_perm, self.num_bands)
        lsh.insert_many(sketches, 0)
        candidates = lsh.query_all(sketches)
        out: list[Decision] = []
        for i, (doc_id, _) in enumerate(docs):
            earlier = np.fromiter((c for c in candidates[i] if c < i), dtype=np.int64)
            best: str | None = None
            if earlier.size:
                est = (digests[earlier] == digests[i]).mean(axis=1)
                ok = est >= self.threshold
                if ok.any():
                    top = est[ok].max()
                    best = docs[int(earlier[ok][est[ok] == top].min())][0]
            out.append((doc_id, best is not None, best))
        self.lsh, self.sketches, self.digests = lsh, sketches, digests
        return out

    def index_bytes(self) -> int | None:
        """Not reported by rensa (use RSS)."""
        return None


PEERS: dict[str, type[DatasketchPeer] | type[RensaPeer]] = {
    "datasketch": DatasketchPeer,
    "rensa": RensaPeer,
}


@dataclass
class Timing:
    """Wall-clock throughput of one run."""

    seconds: float
    docs_per_s: float
    mchars_per_s: float


def time_peer(peer: Peer, docs: Sequence[tuple[str, str]]) -> tuple[list[Decision], Timing]:
    """Run ``peer`` on in-memory documents and measure its end-to-end throughput."""
    n_chars = sum(len(text) for _, text in docs)
    t0 = time.perf_counter()
    decisions = peer.run(docs)
    elapsed = time.perf_counter() - t0
    return decisions, Timing(elapsed, len(docs) / elapsed, n_chars / elapsed / 1e6)
