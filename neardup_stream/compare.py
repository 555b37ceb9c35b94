"""Explain one pair of texts: every similarity measure the engine knows, and its verdict."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.fingerprint.fingerprinter import Fingerprinter, Fingerprints
from neardup_stream.fingerprint.shingles import jaccard, shingles
from neardup_stream.index.columns import Rules
from neardup_stream.index.similarity import pair_similarity
from neardup_stream.models import Document
from neardup_stream.tfidf import tfidf_cosine


@dataclass(frozen=True)
class PairReport:
    """Similarity measures of a pair and what the Deduplicator decides for B after A."""

    exact_jaccard: float
    estimated_jaccard: float
    simhash_hamming: int
    tfidf_cosine: float
    exact_duplicate: bool
    lsh_candidate: bool
    decision: str
    method: str | None
    similarity: float | None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _estimate(rules: Rules, prints: Fingerprints) -> float:
    """The engine's estimate for B checked against A stored (what verification computes, from
    what the batch keeps of B: its sorted hashes, all, its smallest or none, and its sketches)."""
    feats = prints.feats[prints.feat_offsets[1] : prints.feat_offsets[2]]
    return float(
        pair_similarity(
            prints.nfeat[1],
            prints.sketch[1],
            prints.other[1],
            feats,
            prints.sketch[0],
            prints.nfeat[0],
            rules,
        )
    )


def compare(a: str, b: str, config: DedupConfig | None = None) -> PairReport:
    """Compare two raw texts under `config` (defaults apply when omitted)."""
    config = config or DedupConfig()
    fp = Fingerprinter(config)
    na, nb = fp.normalize(a), fp.normalize(b)
    prints = fp.batch([a, b])
    sa = shingles(na, config.shingle, config.shingle_size)
    sb = shingles(nb, config.shingle, config.shingle_size)
    dedup = Deduplicator(config)
    verdict = dedup.check_batch([Document(id="A", text=a), Document(id="B", text=b)])[1]
    return PairReport(
        exact_jaccard=round(jaccard(sa, sb), 6),
        estimated_jaccard=round(_estimate(dedup.rules, prints), 6),
        simhash_hamming=int(bin(int(prints.simhash[0]) ^ int(prints.simhash[1])).count("1")),
        tfidf_cosine=round(tfidf_cosine(sa, sb), 6),
        exact_duplicate=bool((prints.exact[0] == prints.exact[1]).all()),
        lsh_candidate=bool((prints.lsh_keys[0] == prints.lsh_keys[1]).any()),
        decision=verdict.decision,
        method=verdict.method,
        similarity=verdict.similarity,
    )
