from datetime import datetime, timedelta, timezone

import pytest

from neardup_stream import DedupConfig, Deduplicator, Document
from neardup_stream.fingerprint.shingles import char_shingles, jaccard
from tests.unit.conftest import mutate, random_text


def doc(i: str, text: str, **kw: object) -> Document:
    return Document(id=i, text=text, **kw)


def test_unique_exact_and_near_duplicates(text: str) -> None:
    dedup = Deduplicator()
    out = dedup.check_batch(
        [
            doc("a", text),
            doc("b", random_text(2)),
            doc("c", "  " + text.upper() + "\n"),
            doc("d", mutate(text, 0.01, 5)),
        ]
    )
    assert [d.decision for d in out] == ["unique", "unique", "duplicate", "duplicate"]
    assert out[2].method == "exact" and out[2].similarity == 1.0 and out[2].duplicate_of == "a"
    assert out[3].method in {"simhash", "minhash"} and out[3].duplicate_of in {"a", "c"}
    assert out[3].representative == "a"
    assert 0.8 <= out[3].similarity <= 1.0


def test_below_threshold_is_unique(text: str) -> None:
    other = mutate(text, 0.5, 9)
    assert jaccard(char_shingles(text, 5), char_shingles(other, 5)) < 0.6
    out = Deduplicator().check_batch([doc("a", text), doc("b", other)])
    assert out[1].decision == "unique"


def test_drifting_chain_is_caught_through_indexed_duplicates() -> None:
    a = random_text(10, 1200)
    b = mutate(a, 0.04, 11)
    c = mutate(b, 0.04, 12)
    assert jaccard(char_shingles(a, 5), char_shingles(c, 5)) < jaccard(
        char_shingles(b, 5), char_shingles(c, 5)
    )
    out = Deduplicator().check_batch([doc("a", a), doc("b", b), doc("c", c)])
    assert out[2].decision == "duplicate"
    assert out[2].duplicate_of == "b" and out[2].representative == "a"


def test_duplicate_of_is_the_most_similar_earlier_document() -> None:
    base = random_text(20, 1500)
    far = mutate(base, 0.03, 21)
    out = Deduplicator().check_batch([doc("far", far), doc("base", base), doc("q", base + " x")])
    assert out[2].duplicate_of == "base"


def test_same_id_returns_the_original_decision(text: str) -> None:
    dedup = Deduplicator()
    first = dedup.check_batch([doc("a", text), doc("b", text)])
    again = dedup.check_batch([doc("b", " " + text.upper()), doc("a", text)])  # same content
    assert again == first[::-1]
    assert again[1].decision == "unique" and not again[0].update
    assert len(dedup) == 2


def test_index_duplicates_off_stores_but_does_not_index(text: str) -> None:
    b = mutate(text, 0.02, 1)
    on, off = Deduplicator(), Deduplicator(DedupConfig(index_duplicates=False))
    for d in (on, off):
        d.check_batch([doc("a", text), doc("b", b)])
    assert off.index.entries < on.index.entries
    found = off.lookup("b")
    assert found is not None and found.duplicate_of == "a"


def test_max_docs_evicts_the_oldest(text: str) -> None:
    dedup = Deduplicator(DedupConfig(max_docs=3))
    docs = [doc(f"u{i}", random_text(100 + i)) for i in range(3)]
    dedup.check_batch([doc("a", text), *docs])
    assert len(dedup) == 3 and dedup.lookup("a") is None
    assert dedup.check(doc("again", text)).decision == "unique"


def test_max_age_uses_document_time() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    text = random_text(5)
    dedup = Deduplicator(DedupConfig(max_age_seconds=3600))
    dedup.check(doc("a", text, timestamp=t0))
    assert dedup.check(doc("b", text, timestamp=t0 + timedelta(minutes=30))).is_duplicate
    dedup.check(doc("c", random_text(6), timestamp=t0 + timedelta(hours=3)))
    assert dedup.lookup("a") is None and dedup.lookup("b") is None
    assert not dedup.check(doc("d", text, timestamp=t0 + timedelta(hours=3))).is_duplicate


def test_long_eviction_run_compacts_tables() -> None:
    dedup = Deduplicator(DedupConfig(max_docs=50))
    dedup.check_batch([doc(str(i), random_text(i, 60)) for i in range(10_000)])
    assert len(dedup) == 50
    assert dedup.index.entries < 50 * 20 + 4096 * 20
    assert dedup.lookup("9999") is not None and dedup.lookup("0") is None


def test_chinese_near_duplicates() -> None:
    base = "近似重复检测是搜索引擎和新闻聚合中的关键步骤。" * 3 + "".join(
        chr(0x4E00 + (i * 7919) % 20000) for i in range(600)
    )
    edited = base[:300] + "新增一句话。" + base[300:]
    out = Deduplicator().check_batch([doc("zh1", base), doc("zh2", edited)])
    assert out[1].decision == "duplicate" and out[1].duplicate_of == "zh1"


def test_precise_mode_uses_exact_jaccard_near_threshold() -> None:
    cfg = DedupConfig(precise=True)
    dedup = Deduplicator(cfg)
    pairs = []
    for seed in range(40):
        a = random_text(1000 + seed, 600)
        b = mutate(a, 0.035 + 0.002 * (seed % 10), seed)
        pairs.append((a, b, jaccard(char_shingles(a, 5), char_shingles(b, 5))))
    for seed, (a, b, true) in enumerate(pairs):
        out = dedup.check_batch([doc(f"a{seed}", a), doc(f"b{seed}", b)])
        assert out[1].is_duplicate == (true >= cfg.threshold)
        if out[1].is_duplicate and out[1].method != "exact":
            assert out[1].similarity == pytest.approx(true, abs=1e-6)
    assert dedup.index_bytes() > Deduplicator().index_bytes()


def test_config_validation_messages() -> None:
    with pytest.raises(ValueError, match=r"threshold must be in \(0, 1\]"):
        DedupConfig(threshold=1.5)
    with pytest.raises(ValueError, match="num_perm must be a power of two"):
        DedupConfig(num_perm=100)
    with pytest.raises(ValueError, match="set both bands and rows"):
        DedupConfig(bands=4)
    with pytest.raises(ValueError, match="bands \\* rows must be <= num_perm"):
        DedupConfig(bands=20, rows=10)
    with pytest.raises(ValueError, match=r"sketch_bits must be a multiple of 64 in \[64, 65536\]"):
        DedupConfig(sketch_bits=3000)
    with pytest.raises(
        ValueError, match=r"sketch_bits \(3136\) must be a multiple of num_perm \(128\)"
    ):
        DedupConfig(sketch_bits=3136)
    assert DedupConfig(sketch_bits=3072 + 128).sketch_bits == 3200


# --- every accepted configuration works -----------------------------------------------------


@pytest.mark.timeout(120, method="thread")
def test_many_shards_and_bands_decide_without_stalling() -> None:
    cfg = DedupConfig(shards=1024, bands=64, rows=2)
    docs = [doc(str(i), random_text(i, 40)) for i in range(5)]
    out = Deduplicator(cfg).check_batch([*docs, doc("copy", docs[2].text + " x")])
    assert [d.decision for d in out] == ["unique"] * 5 + ["duplicate"]


@pytest.mark.timeout(300, method="thread")
def test_a_shard_filling_up_between_batches_gets_room() -> None:
    # 68 keys per document over 64 shards: every shard passes through "almost full" often.
    dedup = Deduplicator(DedupConfig(shards=64, bands=64, rows=2))
    for i in range(3000):
        dedup.check(doc(str(i), random_text(i, 12)))
    assert len(dedup) == 3000


def _shares_first_block(seed: int) -> bool:
    fp = Deduplicator().fingerprinter.batch(
        [random_text(seed, 400), mutate(random_text(seed, 400), 0.03, seed + 100)]
    )
    return bool(fp.simhash_keys[0, 0] == fp.simhash_keys[1, 0])


def test_a_full_probe_buffer_keeps_every_live_candidate() -> None:
    # Dead entries of evicted copies pile up under the first SimHash block key that `m` shares
    # with `t`; `m` itself sits only under its other keys (the shared ones are at their cap).
    seed = next(s for s in range(100) if _shares_first_block(s))
    t = random_text(seed, 400)
    m = mutate(t, 0.03, seed + 100)
    dedup = Deduplicator(DedupConfig(bucket_cap=1, max_docs=3))
    dedup.check_batch([doc(f"t{i}", t) for i in range(400)])
    assert dedup.check(doc("m", m)).duplicate_of in {"t398", "t399"}
    again = dedup.check(doc("q", m))
    assert (again.duplicate_of, again.method) == ("m", "exact")


def test_precise_is_part_of_the_fingerprint_settings() -> None:
    assert DedupConfig(precise=True).fingerprint_id != DedupConfig().fingerprint_id
    record = Deduplicator().process([doc("x", "hello there")], records=True)[0].record
    assert record is not None
    with pytest.raises(ValueError, match="fingerprint config"):
        Deduplicator(DedupConfig(precise=True)).apply_record(record)


def _near_threshold_pairs(n: int) -> tuple[list[Document], list[Document]]:
    firsts, seconds = [], []
    for seed in range(n):
        a = random_text(3000 + seed, 600)
        firsts.append(doc(f"a{seed}", a))
        seconds.append(doc(f"b{seed}", mutate(a, 0.035 + 0.002 * (seed % 10), seed)))
    return firsts, seconds


def test_precise_mode_rebuilt_from_records_decides_on_exact_jaccard() -> None:
    cfg = DedupConfig(precise=True)
    firsts, seconds = _near_threshold_pairs(30)
    live = Deduplicator(cfg)
    records = [o.record for o in live.process(firsts, records=True)]
    rebuilt = Deduplicator(cfg)
    rebuilt.apply_records(r for r in records if r is not None)
    assert rebuilt.check_batch(seconds) == live.check_batch(seconds)


def test_precise_mode_with_age_retention_names_the_right_match() -> None:
    # The ring grows in the middle of the second batch after its first documents were evicted.
    cfg = DedupConfig(precise=True, max_age_seconds=10)
    a = random_text(77, 300)
    dedup = Deduplicator(cfg)
    dedup.check_batch([doc(f"p{i}", random_text(500 + i, 30)) for i in range(5)], now=0)
    dedup.check(doc("m0", a), now=0)
    later = [doc(f"u{i}", random_text(900 + i, 20)) for i in range(1100)]
    outcomes = dedup.process(
        [doc("d", mutate(a, 0.01, 1)), *later], now=0, times=[1] + [100] * 1100
    )
    first = outcomes[0].decision
    assert (first.duplicate_of, first.representative) == ("m0", "m0")


def test_a_full_bucket_keeps_its_newest_documents_so_retention_never_hides_a_match() -> None:
    # With one ref per key and the oldest documents evicted, the table must hold the newest.
    text = random_text(8, 300)
    out = Deduplicator(DedupConfig(bucket_cap=1, max_docs=3)).check_batch(
        [doc(f"c{i}", text) for i in range(30)]
    )
    assert [d.decision for d in out] == ["unique"] + ["duplicate"] * 29
    assert {d.duplicate_of for d in out[1:]} == {f"c{i}" for i in range(29)}


@pytest.mark.parametrize("max_docs", [None, 7])
def test_decisions_do_not_depend_on_how_the_stream_is_cut_into_batches(
    max_docs: int | None,
) -> None:
    # Chains within a batch (a copy of a copy decided in the same batch), repeats of ids,
    # updates, and with max_docs documents evicted by later ones of the same batch: the ids a
    # duplicate names come from the batch or the store, and must be the same either way.
    docs: list[Document] = []
    for i in range(60):
        if i % 5 == 4:
            text = mutate(str(docs[i - 1].text), 0.02, i)  # near-copy of the previous one
        elif i % 11 == 10:
            text = str(docs[i - 3].text)  # exact copy
        else:
            text = random_text(9_000 + i, 150)
        doc_id = f"d{i - 2}" if i % 17 == 16 else f"d{i}"  # an id seen before: update
        docs.append(doc(doc_id, text))
    docs.append(docs[3])  # a replay
    config = DedupConfig(max_docs=max_docs)
    whole = Deduplicator(config).check_batch(docs, now=1e9)
    one_by_one = Deduplicator(config)
    singles = [one_by_one.check(d, now=1e9) for d in docs]
    assert whole == singles
    dups = [d for d in whole if d.decision == "duplicate"]
    assert len(dups) >= 10 and any(d.duplicate_of != d.representative for d in dups)
    assert any(d.update for d in whole)
