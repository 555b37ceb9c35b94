"""Quiet domains are forgotten: memory follows the active domains, decisions stay put."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import numpy as np
import pytest

from neardup_stream.config import DedupConfig
from neardup_stream.models import Decision, Document
from neardup_stream.sharded.changes import FirstDecisions, ShardChange
from neardup_stream.sharded.deduplicator import DocumentFingerprinter, ShardedDeduplicator
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.gather import Gatherer
from neardup_stream.sharded.quiet import StreamClocks
from neardup_stream.sharded.replica import ReplicaVoter
from neardup_stream.sharded.voter import ShardVoter

T0 = 1_700_000_000
NOW = 1_800_000_000
AGE, SKEW = 300, 60  # quiet once the stream's clock is 360 s past a domain's last document


def config(**extra: object) -> DedupConfig:
    base: dict = {"home_shards": 3, "max_age_seconds": AGE, "max_future_skew_seconds": SKEW}
    return DedupConfig(**(base | extra))


def doc(doc_id: str, text: str, ts: float) -> Document:
    return Document(id=doc_id, text=text, timestamp=datetime.fromtimestamp(ts, UTC))


def bursts(n: int, seed: int, late: int) -> list[tuple[Document, str]]:
    """Documents of 30 domains that publish in bursts and fall quiet for long stretches:
    near-copies and replayed ids within a domain, the clock mostly creeping on and now and
    then jumping past every domain's window; event times up to `late` s behind the clock."""
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghij") for _ in range(5)) for _ in range(800)]
    by_domain: dict[str, list[Document]] = {}
    out: list[tuple[Document, str]] = []
    clock, active = float(T0), "site0"
    for i in range(n):
        clock += 700 if rng.random() < 0.03 else rng.choice([0, 1, 5, 20])
        if rng.random() < 0.15:
            active = f"site{rng.randrange(30)}"
        domain = active if rng.random() < 0.8 else f"site{rng.randrange(30)}"
        earlier = by_domain.setdefault(domain, [])
        if earlier and rng.random() < 0.5:
            tokens = rng.choice(earlier).text.split()
            tokens[rng.randrange(len(tokens))] = rng.choice(words)
            text = " ".join(tokens)
        else:
            text = " ".join(rng.choice(words) for _ in range(rng.randint(20, 80)))
        doc_id = f"d{i}"
        if earlier and rng.random() < 0.06:  # an id seen before: as it was, or changed
            again = rng.choice(earlier)
            doc_id, text = again.id, again.text if rng.random() < 0.5 else text
        d = doc(doc_id, text, clock - rng.randint(0, late))
        earlier.append(d)
        out.append((d, domain))
    return out


def expired_repeats(stream: list[tuple[Document, str]]) -> set[int]:
    """Indexes of the repeated ids whose last occurrence is older than the window of their
    domain by then: the engine decides those afresh once the state that answered them is
    evicted, and a forgotten domain has evicted it (docs/engine-semantics.md)."""
    last: dict[tuple[str, str], float] = {}
    newest: dict[str, float] = {}
    out = set()
    for i, (d, domain) in enumerate(stream):
        ts = d.timestamp.timestamp()
        newest[domain] = max(newest.get(domain, ts), ts)
        if (domain, d.id) in last and last[domain, d.id] < newest[domain] - AGE:
            out.add(i)
        last[domain, d.id] = ts
    return out


def decide(dedup: ShardedDeduplicator, stream: list[tuple[Document, str]], size: int) -> list:
    out: list[Decision] = []
    for k in range(0, len(stream), size):
        chunk = stream[k : k + size]
        out += dedup.process([d for d, _ in chunk], [dom for _, dom in chunk], now=NOW)
    return out


def test_a_domain_is_split_where_it_goes_quiet_inside_a_batch() -> None:
    clocks = StreamClocks(config())
    ts = np.array([100, 110, 900, 905, 2000, 2001], dtype=np.int64)
    line = clocks.timeline(0, ts)
    got = clocks.segments(line, np.array([0, 3, 5]), None)  # 0 at 100; 3 at 905; 5 at 2001
    assert [(s.rows.tolist(), s.reset, s.seen) for s in got] == [
        ([0], True, 100),
        ([3], True, 905),  # 110 (seen after row 0) < 900 - 360
        ([5], True, 2001),
    ]
    got = clocks.segments(line, np.array([1, 2]), 50)  # known: not quiet at 100 + 10
    assert [(s.rows.tolist(), s.reset) for s in got] == [([1, 2], False)]
    clocks.advance(line)
    assert clocks.clocks == {0: 2001}
    assert clocks.quiet(0, 1640) and not clocks.quiet(0, 1641) and not clocks.quiet(1, 0)
    never = StreamClocks(config(max_age_seconds=None))
    assert not [s for s in never.segments(line, np.array([1, 5]), 0) if s.reset]


@pytest.mark.parametrize("size", [1, 17, 64])
def test_documents_at_most_the_skew_behind_are_decided_as_if_nothing_were_forgotten(
    size: int,
) -> None:
    """One engine per domain never forgets anything (its clock is the domain's own): the
    reference for documents that are not late."""
    stream = bursts(1500, seed=3, late=SKEW)
    dedup = ShardedDeduplicator(config())
    got = decide(dedup, stream, size)
    want: dict[str, list[Decision]] = {}
    alone: dict[str, ShardedDeduplicator] = {}
    for d, domain in stream:
        one = alone.setdefault(domain, ShardedDeduplicator(config()))
        want.setdefault(domain, []).extend(one.process([d], [domain], now=NOW))
    expected = [want[domain].pop(0) for _, domain in stream]
    differ = [i for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b]
    assert set(differ) <= expired_repeats(stream) and len(differ) < 10
    assert sum(x.is_duplicate for x in got) > 200 and sum(x.update for x in got) > 5
    dedup.replica.sweep()
    dedup.gatherer.sweep()
    assert 0 < dedup.gatherer.domains() < 30  # the quiet ones went


def test_memory_follows_the_domains_active_in_the_window_not_those_ever_seen() -> None:
    stream = []  # 400 sites of three copies each, one after the other, 10 s apart
    for k in range(400):
        text = f"site {k} " + " ".join(f"w{k}x{j}" for j in range(40))
        for c in range(3):
            stream.append((doc(f"s{k}c{c}", text, T0 + 30 * k + 10 * c), f"site{k}"))
    kept = ShardedDeduplicator(config(max_age_seconds=None))
    dedup = ShardedDeduplicator(config())
    assert decide(dedup, stream, 9) == decide(kept, stream, 9)
    assert sum(d.is_duplicate for d in decide(ShardedDeduplicator(config()), stream, 9)) == 800
    swept_lately = (360 + 360 // 8) // 30 + 1  # sweeps come as the clock moves 1/8 margin
    assert dedup.replica.domain_engines() <= 3 * swept_lately  # without an explicit sweep
    assert dedup.gatherer.domains() <= swept_lately
    dedup.replica.sweep()
    dedup.gatherer.sweep()
    active = 360 // 30 + 1  # sites with a document within the last max_age + skew
    assert dedup.replica.domain_engines() <= 3 * active  # one engine per shard storing
    assert dedup.gatherer.domains() <= active
    assert sum(len(dedup.replica.voter(s).seen) for s in range(3)) <= 3 * active
    assert kept.gatherer.domains() == 400 and kept.replica.domain_engines() >= 400


def test_a_backfill_that_keeps_publishing_is_never_forgotten() -> None:
    """A domain whose event times are years old, started beside a live one: never quiet,
    since it keeps publishing in the log, and its copies are found as if it were alone."""
    stream = []
    for i in range(300):
        text = " ".join(f"t{i % 40}w{j}" for j in range(30))
        stream.append((doc(f"new{i}", f"live {i} " + text[:50], T0 + 5 * i), "live"))
        stream.append((doc(f"old{i}", text, T0 - 5 * 365 * 86400 + 5 * i), "archive"))
    got = decide(ShardedDeduplicator(config()), stream, 25)
    archive = [d for d, (_, dom) in zip(got, stream, strict=True) if dom == "archive"]
    alone = decide(ShardedDeduplicator(config()), [x for x in stream if x[1] == "archive"], 25)
    assert archive == alone and sum(d.is_duplicate for d in archive) > 250


def test_a_late_document_of_a_quiet_domain_starts_the_domain_afresh() -> None:
    """The one change of decision: a document more than the skew behind its stream's clock,
    of a domain gone quiet, is no longer matched with the domain's forgotten documents."""
    text = " ".join(f"w{j}" for j in range(40))
    stream = [(doc("a1", text, T0), "a")]
    stream += [(doc(f"b{i}", f"b {i} {text}"[:30], T0 + 100 * i), "b") for i in range(1, 6)]
    stream.append((doc("a2", text, T0 + 10), "a"))  # 490 s behind the clock: late
    got = decide(ShardedDeduplicator(config()), stream, 1)
    assert got[-1].decision == "unique"
    kept = decide(ShardedDeduplicator(config(max_age_seconds=None)), stream, 1)
    assert kept[-1].duplicate_of == "a1"


def _one(cfg: DedupConfig, items: list[tuple[Document, str]], at: int) -> FingerprintBatch:
    """`items` as one fingerprint batch at log positions at.., packed and unpacked."""
    positions = np.arange(at, at + len(items), dtype=np.int64)
    docs, domains = [d for d, _ in items], [m for _, m in items]
    packed = DocumentFingerprinter(cfg).batch(docs, domains, positions, NOW).pack()
    return FingerprintBatch.unpack(packed, cfg.fingerprint_id)


def batches(cfg: DedupConfig, stream: list[tuple[Document, str]]) -> list[FingerprintBatch]:
    """Packed and unpacked fingerprint batches of uneven sizes, on stream 4."""
    out, k = [], 0
    rng = random.Random(9)
    while k < len(stream):
        chunk = stream[k : k + rng.choice([1, 7, 40, 90])]
        out.append(_one(cfg, chunk, k))
        k += len(chunk)
    return [FingerprintBatch(**{**vars(fb), "stream": 4, "_homes": {}}) for fb in out]


def _restored(cfg: DedupConfig, logs: dict[int, list[bytes]]) -> ReplicaVoter:
    """A replica of the shards in `logs`, rebuilt from their recorded changes (swept as each
    is added)."""
    replica = ReplicaVoter(cfg)
    for s, log in logs.items():
        voter = ShardVoter(cfg, s)
        for data in log:
            voter.apply(ShardChange.unpack(data))
        replica.add(voter)
    return replica


def _regathered(cfg: DedupConfig, firsts: list[bytes]) -> Gatherer:
    """A gatherer rebuilt from its recorded first decisions, then swept."""
    gatherer = Gatherer(cfg)
    for data in firsts:
        gatherer.apply(FirstDecisions.unpack(data))
    return gatherer.swept()


def test_a_restore_from_the_changelogs_forgets_as_the_live_state_did() -> None:
    """Shards and a gather rebuilt from their recorded changes (resets mid-batch included)
    vote and decide like those that never stopped, and know no quiet domain."""
    cfg = config()
    fbs = batches(cfg, bursts(1800, seed=11, late=SKEW))
    never = ReplicaVoter(cfg, range(3)), Gatherer(cfg)  # never restored: the reference
    live, gatherer = ReplicaVoter(cfg, range(3)), Gatherer(cfg)
    logs: dict[int, list[bytes]] = {s: [] for s in range(3)}
    firsts: list[bytes] = []
    resets = twice = 0  # twice: a domain reset inside a batch (two changes of it)
    for b, fb in enumerate(fbs):
        if b in (20, 41, 70):
            restored, regathered = _restored(cfg, logs), _regathered(cfg, firsts)
            live.sweep()
            gatherer.sweep()
            for s in range(3):
                assert set(restored.voter(s).seen) == set(live.voter(s).seen), (b, s)
            assert regathered.domains() == gatherer.domains() < 30
            live, gatherer = restored, regathered
        voted = live.vote_and_record(fb)
        decisions, changes = gatherer.decide_and_record(fb, [v for v, _ in voted.values()])
        assert decisions == never[1].decide(fb, list(never[0].vote(fb).values())), b
        for s, (_, recorded) in voted.items():
            logs[s] += [c.pack() for c in recorded]
            resets += sum(c.reset for c in recorded)
        firsts += [c.pack() for c in changes]
        twice += len(changes) - len({c.domain for c in changes})
    assert resets > 60 and twice > 10


def test_a_restore_never_forgets_a_domain_in_the_middle_of_a_record() -> None:
    """A change carries its domain's last mark, so while one record's changes replay the
    clock runs ahead of the live one: a backfill domain read after a live one must not be
    swept there (it never was quiet live), only once the restore is complete."""
    cfg, old = config(home_shards=2), T0 - 10**7
    text = " ".join(f"w{j}" for j in range(40))
    first = _one(cfg, [(doc("z0", "zz a b c d e", T0), "z"), (doc("y1", text, old), "y")], 0)
    second = _one(
        cfg,
        [
            (doc("z1", "zz 1 2 3 4 5", T0 + 300), "z"),
            (doc("y2", "other " * 5 + "x1", old + 1), "y"),
            (doc("z2", "zz q r s t u", T0 + 600), "z"),
            (doc("y3", "other2 " * 5 + "x2", old + 2), "y"),
        ],
        2,
    )
    live, gatherer = ReplicaVoter(cfg, range(2)), Gatherer(cfg)
    logs: dict[int, list[bytes]] = {0: [], 1: []}
    firsts: list[bytes] = []
    for fb in (first, second):
        voted = live.vote_and_record(fb)
        firsts += [
            c.pack() for c in gatherer.decide_and_record(fb, [v for v, _ in voted.values()])[1]
        ]
        for s, (_, recorded) in voted.items():
            logs[s] += [c.pack() for c in recorded]
    restored, regathered = _restored(cfg, logs), _regathered(cfg, firsts)
    again = _one(cfg, [(doc("y4", text, old + 3), "y")], 6)
    got = regathered.decide(again, list(restored.vote(again).values()))
    assert got == gatherer.decide(again, list(live.vote(again).values()))
    assert got[0].duplicate_of == "y1"


def test_a_shard_restored_without_a_domain_does_not_make_the_others_forget_it() -> None:
    """Without max_age the shard role writes no change that stores nothing, so a restored
    shard may not know a domain its neighbour in the replica holds documents of."""
    cfg = config(home_shards=2, max_age_seconds=None)
    text = " ".join(f"w{j}" for j in range(40))
    at = 0
    while True:  # an id whose home is shard 1
        first = _one(cfg, [(doc(f"a{at}", text, T0), "d")], at)
        if first.homes(2)[0] == 1:
            break
        at += 1
    live = ReplicaVoter(cfg, range(2))
    logs: dict[int, list[bytes]] = {0: [], 1: []}
    for s, (_, recorded) in live.vote_and_record(first).items():
        logs[s] += [
            c.pack() for c in recorded if c.records
        ]  # as neardup_stream/worker/cluster/shard.py
    assert not logs[0] and logs[1]
    again = _one(cfg, [(doc("again", text, T0 + 1), "d")], at + 1)
    assert _restored(cfg, logs).vote(again)[1].match_ids == [f"a{at}"]
