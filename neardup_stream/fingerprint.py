"""Fingerprints of documents: normalisation, exact hash, SimHash, MinHash signature, sketch.

`Fingerprinter.batch(texts)` runs the fused compiled kernel over a whole batch and returns
column arrays (`Fingerprints`), which is what makes fingerprinting fast: one call per batch,
no per-shingle Python. The same text always yields the same fingerprint (see `hashing`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from neardup_stream import _kernels
from neardup_stream.config import DedupConfig
from neardup_stream.hashing import exact_hash
from neardup_stream.normalize import normalize
from neardup_stream.shingles import codepoints


@dataclass(frozen=True)
class Fingerprints:
    """Column-wise fingerprints of n documents."""

    exact: np.ndarray  # uint64[n, 2]: 128-bit hash of the normalised text
    simhash: np.ndarray  # uint64[n]: weighted 64-bit SimHash
    signature: np.ndarray  # uint64[n, num_perm]: MinHash (one-permutation, densified)
    sketch: np.ndarray  # uint64[n, sketch_bits // 64]: 1-bit MinHash sketch for verification
    nfeat: np.ndarray  # int64[n]: feature occurrences (0 for an empty text)
    lsh_keys: np.ndarray  # uint32[n, bands]
    simhash_keys: np.ndarray  # uint32[n, simhash_k + 1]

    def __len__(self) -> int:
        return int(self.simhash.size)


class Fingerprinter:
    """Computes `Fingerprints` under one `DedupConfig`."""

    def __init__(self, config: DedupConfig) -> None:
        self.config = config
        self.bands, self.rows = config.banding
        self._mode = _kernels.MODE_CHAR if config.shingle == "char" else _kernels.MODE_WORD

    def normalize(self, text: str) -> str:
        """The normalised form of `text` under this configuration."""
        return normalize(text, html_input=self.config.strip_html)

    def batch(self, texts: Sequence[str]) -> Fingerprints:
        """Fingerprint raw texts (normalised here)."""
        return self.batch_normalized([self.normalize(t) for t in texts])

    def batch_normalized(self, texts: Sequence[str]) -> Fingerprints:
        """Fingerprint texts that are already normalised."""
        cfg = self.config
        parts = [codepoints(t) for t in texts]
        offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([p.size for p in parts], out=offsets[1:])
        cps = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint32)
        simhash, sketch, signature, nfeat = _kernels.fingerprint_batch(
            cps, offsets, self._mode, cfg.shingle_size, cfg.seed, cfg.sketch_bits, cfg.num_perm
        )
        exact = np.array([exact_hash(t, cfg.seed) for t in texts], dtype=np.uint64)
        return Fingerprints(
            exact=exact.reshape(len(texts), 2),
            simhash=simhash,
            signature=signature,
            sketch=sketch,
            nfeat=nfeat,
            lsh_keys=_kernels.band_keys(signature, self.bands, self.rows, cfg.seed),
            simhash_keys=_kernels.simhash_block_keys(simhash, cfg.simhash_k, cfg.seed),
        )

    def features(self, normalized: str) -> np.ndarray:
        """Sorted unique feature hashes of a normalised text (for exact Jaccard)."""
        cps = codepoints(normalized)
        return np.unique(
            _kernels.feature_hashes(cps, self._mode, self.config.shingle_size, self.config.seed)
        )
