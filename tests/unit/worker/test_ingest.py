"""The edge step without a broker: every input one outcome, log records within the limit."""

from __future__ import annotations

import json

import numpy as np

from neardup_stream.config import DedupConfig
from neardup_stream.fingerprint.compact_set import compact_limit
from neardup_stream.mapping import InputMapping
from neardup_stream.sharded.deduplicator import DocumentFingerprinter
from neardup_stream.sharded.home import domain_partition
from neardup_stream.worker.cluster.ingest import LogTopics, ingest
from neardup_stream.worker.cluster.log_record import Envelope, is_decided, packed, sources_of
from neardup_stream.worker.cluster.payloads import PayloadRecord
from neardup_stream.worker.decide import DecideRules, InputRecord, Source
from neardup_stream.worker.records import Rejection

CONFIG = DedupConfig(home_shards=4)
LOG = LogTopics("fp", "pl")


def rules(limit: int = 1 << 20) -> DecideRules:
    return DecideRules("u", "d", "q", InputMapping(domain_field="site"), limit, 64, 1 << 22)


def record(offset: int, value: bytes | None, partition: int = 0) -> InputRecord:
    return InputRecord(Source("in", partition, offset), None, value, 1_700_000_000_000)


def doc(i: int, site: str = "a", size: int = 200) -> bytes:
    return json.dumps({"id": f"d{i}", "text": f"text {i} " + "x" * size, "site": site}).encode()


def envelopes(out: object) -> list[Envelope]:
    return [
        Envelope.unpack(m.value, CONFIG.fingerprint_id, "in", 7, 0)
        for m in out.messages  # type: ignore[attr-defined]
        if m.topic == "fp"
    ]


def payload_records(out: object) -> list[PayloadRecord]:
    return [
        PayloadRecord.unpack(m.value, "in")
        for m in out.messages  # type: ignore[attr-defined]
        if m.topic == "pl"
    ]


def test_every_input_is_either_fingerprinted_once_or_dead_lettered_once() -> None:
    records = [record(0, doc(0)), record(1, b"{not json"), record(2, None), record(3, doc(3))]
    out = ingest(records, rules(), DocumentFingerprinter(CONFIG), LOG, 1, 1.8e9)
    assert sorted(out.dead) == ["invalid_json", "tombstone"]
    assert [m.topic for m in out.messages].count("q") == 2
    [env] = envelopes(out)
    assert env.fingerprints.ids == ["d0", "d3"]
    assert [s.offset for s in env.sources] == [0, 3]
    [payload] = payload_records(out)
    assert payload.join_key == env.join_key
    assert [p.source for p in payload.passages] == env.sources
    assert [p.value for p in payload.passages] == [doc(0), doc(3)]
    assert out.offsets == {("in", 0): 4}


def test_domains_go_to_their_log_partition_in_input_order() -> None:
    records = [record(i, doc(i, site=f"s{i % 5}")) for i in range(40)]
    out = ingest(records, rules(), DocumentFingerprinter(CONFIG), LOG, 3, 1.8e9)
    seen, partitions = [], set()
    payloads = iter(out.messages[1::2])
    for m in out.messages[::2]:
        partitions.add(m.partition)
        env = Envelope.unpack(m.value, CONFIG.fingerprint_id, "in", 0, 0)
        assert set(env.fingerprints.domains) <= {f"s{i}" for i in range(5)}
        assert all(domain_partition(d, 3) == m.partition for d in env.fingerprints.domains)
        offsets = [s.offset for s in env.sources]
        assert offsets == sorted(offsets)
        seen += offsets
        payload = next(payloads)  # in the same partition, with the same inputs
        assert payload.topic == "pl" and payload.partition == m.partition
        assert [p.source for p in PayloadRecord.unpack(payload.value, "in").passages] == (
            env.sources
        )
    assert sorted(seen) == list(range(40))
    assert len(partitions) > 1


def test_log_records_are_split_to_stay_within_the_message_limit() -> None:
    limit = 64 * 1024
    records = [record(i, doc(i, size=9000)) for i in range(30)]
    out = ingest(records, rules(limit), DocumentFingerprinter(CONFIG), LOG, 1, 1.8e9)
    envs = envelopes(out)
    assert len(envs) > 3
    assert all(len(m.value) <= limit + 64 * 1024 for m in out.messages)
    assert [s.offset for e in envs for s in e.sources] == list(range(30))
    assert [p.source.offset for r in payload_records(out) for p in r.passages] == list(range(30))


def test_a_single_stage_batch_is_one_decided_log_record_per_log_partition() -> None:
    """Nothing carries values in single stage (and the shard changelog splits its changes):
    the per-record work is done once per log partition and batch."""
    limit = 64 * 1024
    records = [record(i, doc(i, site=f"s{i % 2}", size=9000)) for i in range(30)]
    fingerprinter = DocumentFingerprinter(CONFIG)
    split = ingest(records, rules(limit), fingerprinter, LOG, 2, 1.8e9)
    out = ingest(records, rules(limit), fingerprinter, LOG, 2, 1.8e9, single_stage=True)
    assert len(split.appends) > 4 and len(out.appends) == 2
    logged = [m for m in out.messages if m.topic == "fp"]
    assert sorted(m.partition for m in logged) == [0, 1]
    inputs = [s.offset for m in logged for s in sources_of(m.value, "in")]
    assert sorted(inputs) == list(range(30))
    for m, a in zip(logged, out.appends, strict=True):
        assert [int(i[1:]) for i in a.fingerprints.ids] == [
            s.offset for s in sources_of(m.value, "in")
        ]


def test_small_documents_carrying_their_shingle_sets_stay_within_the_limit() -> None:
    # the worst case per byte of input: as many distinct 5-grams as a batch keeps whole
    # (4,096 bytes of hashes at the default sketch size) from ~500 characters of text
    rng = np.random.default_rng(1)
    alphabet = np.array(list("abcdefghijklmnopqrstuvwxyz0123456789"))
    size = compact_limit(CONFIG.sketch_bits) + 4
    texts = ["".join(rng.choice(alphabet, size)) for _ in range(300)]
    prints = DocumentFingerprinter(CONFIG).fingerprinter.batch(texts[:5])
    assert prints.feat_offsets[1] - prints.feat_offsets[0] > 0.95 * compact_limit(
        CONFIG.sketch_bits
    )
    raw = [
        json.dumps({"id": f"d{i}", "text": t, "site": "a"}).encode() for i, t in enumerate(texts)
    ]
    limit = 256 * 1024
    out = ingest(
        [record(i, r) for i, r in enumerate(raw)],
        rules(limit),
        DocumentFingerprinter(CONFIG),
        LOG,
        1,
        1.8e9,
    )
    assert len(envelopes(out)) > 3
    assert all(len(m.value) <= limit for m in out.messages)


def test_the_domain_survives_a_custom_mapping() -> None:
    mapping = InputMapping(text_fields=("title", "body"), domain_field="site")
    raw = json.dumps({"id": "x", "title": "t", "body": "b", "site": "news.example"}).encode()
    out = ingest(
        [record(0, raw)],
        DecideRules("u", "d", "q", mapping, 1 << 20, 64, 1 << 22),
        DocumentFingerprinter(CONFIG),
        LOG,
        3,
        1.8e9,
    )
    [env] = envelopes(out)
    assert env.fingerprints.domains == ["news.example"]


def test_each_dead_letter_names_its_input_for_blame_and_a_log_record_none() -> None:
    records = [record(0, doc(0)), record(1, b"{not json"), record(2, doc(2))]
    out = ingest(records, rules(), DocumentFingerprinter(CONFIG), LOG, 1, 1.8e9)
    assert len(out.sources) == len(out.messages)
    by_topic = {m.topic: s for m, s in zip(out.messages, out.sources, strict=True)}
    assert by_topic == {"q": Source("in", 0, 1), "fp": None, "pl": None}


def test_an_input_whose_dead_letter_was_rejected_is_dead_lettered_as_unpublishable() -> None:
    bad = record(1, b"{not json" + b"x" * 500)
    rejected = {bad.source: Rejection("unpublishable", "rejected", keep_payload=False)}
    out = ingest([bad], rules(), DocumentFingerprinter(CONFIG), LOG, 1, 1.8e9, rejected)
    assert out.dead == ["unpublishable"] and out.sources == [bad.source]
    letter = json.loads(out.messages[0].value)
    assert letter["raw_base64"] == "" and letter["message"] == "rejected"


def test_a_single_stage_ingest_writes_decided_log_records_and_no_payload_records() -> None:
    """A single-stage transaction votes from memory and reads no payload record: its log
    records carry only their documents' sources, its appends the same fingerprints."""
    records = [record(i, doc(i, site=f"s{i % 3}")) for i in range(30)] + [record(30, b"[1]")]
    fingerprinter = DocumentFingerprinter(CONFIG)
    both = ingest(records, rules(), fingerprinter, LOG, 2, 1.8e9)
    alone = ingest(records, rules(), fingerprinter, LOG, 2, 1.8e9, single_stage=True)
    assert payload_records(both) and not payload_records(alone)
    assert [m.topic for m in alone.messages] == [m.topic for m in both.messages if m.topic != "pl"]
    full = [m for m in both.messages if m.topic == "fp"]
    decided = [m for m in alone.messages if m.topic == "fp"]
    assert [m.partition for m in decided] == [m.partition for m in full]
    for d, f, a, b in zip(decided, full, alone.appends, both.appends, strict=True):
        assert is_decided(d.value) and not is_decided(f.value)
        assert sources_of(d.value, "in") == sources_of(f.value, "in")
        assert len(d.value) < len(f.value) // 10  # no fingerprints
        assert a.fingerprints.pack() == b.fingerprints.pack()  # what the full record carries:
        assert packed(a.fingerprints.pack(), sources_of(f.value, "in")) == f.value
    assert alone.dead == both.dead == ["not_an_object"] and alone.offsets == both.offsets
    assert [alone.messages[a.at].topic for a in alone.appends] == ["fp"] * len(alone.appends)
    assert [a.passages for a in alone.appends] == [a.passages for a in both.appends]
    assert len(alone.sources) == len(alone.messages) and alone.documents == both.documents == 30


def test_a_single_stage_votes_on_what_a_shard_would_unpack_from_the_full_record() -> None:
    """In single stage the fingerprints are voted on as fingerprinted, never packed: every
    column (values, dtypes, shapes), id, domain and position equals what a shard role gets
    from the three stages' log record at the same place, over documents of every kind (a
    small one carrying its shingle set, an empty text, CJK, astral characters, a long one)."""
    texts = ["ok", "", "近似重复检测是关键步骤。" * 3, "𝒜𝒷 emoji 😀 " * 20, "long text " * 900]
    texts += [f"document {i} " * (i + 1) for i in range(25)]
    values = [
        json.dumps({"id": f"d{i}", "text": t, "site": f"s{i % 3}"}) for i, t in enumerate(texts)
    ]
    records = [record(i, v.encode()) for i, v in enumerate(values)]
    fingerprinter = DocumentFingerprinter(CONFIG)
    alone = ingest(records, rules(), fingerprinter, LOG, 2, 1.8e9, single_stage=True)
    both = ingest(records, rules(), fingerprinter, LOG, 2, 1.8e9)
    full = [m for m in both.messages if m.topic == "fp"]
    assert len(full) == len(alone.appends) == 2
    for offset, (m, a) in enumerate(zip(full, alone.appends, strict=True), start=40):
        unpacked = Envelope.unpack(m.value, CONFIG.fingerprint_id, "in", offset, m.partition)
        got, want = Envelope.placed(a.fingerprints, offset, m.partition), unpacked.fingerprints
        assert (got.ids, got.domains, got.blocks, got.stream) == (
            want.ids,
            want.domains,
            want.blocks,
            want.stream,
        )
        assert np.array_equal(got.positions, want.positions)
        for name in want.docs._fields:
            mine, theirs = getattr(got.docs, name), getattr(want.docs, name)
            assert mine.dtype == theirs.dtype and mine.shape == theirs.shape, name
            assert np.array_equal(mine, theirs), name
