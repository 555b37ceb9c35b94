"""Per-domain engines live only while they store something, and freeing them changes no vote."""

from __future__ import annotations

import random

import numpy as np
import pytest

from neardup_stream.config import DedupConfig
from neardup_stream.models import Document
from neardup_stream.sharded.changes import ShardChange
from neardup_stream.sharded.deduplicator import DocumentFingerprinter
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.replica import ReplicaVoter
from neardup_stream.sharded.voter import ShardVoter
from tests.unit.sharded.test_sharded import corpus


class KeepingVoter(ShardVoter):
    """A shard that never frees an engine: the reference."""

    def release_if_empty(self, domain: str) -> bool:
        return False


def many_domains(docs: list[Document], config: DedupConfig, domains: int) -> list[FingerprintBatch]:
    """Batches of 40 over `domains` domains, skewed (a few busy, a long tail of rare ones)."""
    rng = random.Random(5)
    fingerprinter = DocumentFingerprinter(config)
    names = [f"site{min(int(rng.paretovariate(0.7)), domains)}" for _ in docs]
    out = []
    for k in range(0, len(docs), 40):
        chunk = docs[k : k + 40]
        positions = np.arange(k, k + len(chunk), dtype=np.int64)
        packed = fingerprinter.batch(chunk, names[k : k + 40], positions, 1.8e9).pack()
        out.append(FingerprintBatch.unpack(packed, config.fingerprint_id))
    return out


@pytest.mark.parametrize("retention", [{"max_age_seconds": 1500}, {"max_docs": 240}, {}])
def test_freed_engines_vote_like_engines_kept_forever(retention: dict) -> None:
    config = DedupConfig(home_shards=6, **retention)
    docs = corpus(2400, seed=43, replays=0.06, timed=True, jitter=900)
    kept = {s: KeepingVoter(config, s) for s in range(6)}
    replica = ReplicaVoter(config, range(6))
    alone = ShardVoter(config, 2)  # frees its engines too, without a merged table
    log4: list[bytes] = []  # shard 4's recorded changes
    matches = 0
    for b, fb in enumerate(many_domains(docs, config, 400)):
        if b == 30:  # move a shard out and back in, rebuilt from its changes
            replica.remove(4)
            rebuilt = ShardVoter(config, 4)
            for data in log4:
                rebuilt.apply(ShardChange.unpack(data))
            replica.add(rebuilt)
        got = replica.vote_and_record(fb)
        assert alone.vote_and_record(fb)[0].pack() == got[2][0].pack()
        for s, voter in kept.items():
            votes, changes = voter.vote_and_record(fb)
            assert got[s][0].pack() == votes.pack(), (b, s)
            assert [c.pack() for c in got[s][1]] == [c.pack() for c in changes], (b, s)
            matches += int((votes.match_position >= 0).sum())
        log4 += [c.pack() for c in got[4][1]]
    assert matches > 20
    held = sum(len(v.domains()) for v in kept.values())
    assert replica.domain_engines() <= min(len(replica), held - 1)  # none without documents


def test_an_engine_left_empty_is_freed_and_its_watermark_kept() -> None:
    config = DedupConfig(home_shards=3, max_age_seconds=100)
    fingerprinter = DocumentFingerprinter(config)
    replica = ReplicaVoter(config, range(3))

    def vote(i: int, domain: str, t: float) -> None:
        doc = Document(id=f"x{i}", text=f"some words of document {i} " * 4)
        fb = fingerprinter.batch([doc], [domain], np.array([i]), 1.8e9, [t])
        replica.vote_and_record(fb)

    vote(0, "a", 1_700_000_000)
    assert replica.domain_engines() == 1 and len(replica) == 1  # only the home shard's
    vote(1, "a", 1_700_000_500)  # the first expires: its shard's engine goes unless home again
    assert len(replica) == 1 and replica.domain_engines() == 1
    watermarks = [replica.voter(s).idle.get("a") for s in range(3)]
    assert all(w in (None, 1_700_000_500) for w in watermarks) and 1_700_000_500 in watermarks
    before = replica.index_bytes()
    for i in range(2, 200):
        vote(i, f"d{i}", 1_700_000_000 + i)
    assert replica.domain_engines() == len(replica) == 199
    assert replica.index_bytes() - before < 199 * 64_000  # engines and tables grow with use
