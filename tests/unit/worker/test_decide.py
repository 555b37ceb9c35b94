"""The worker's pure decide step, without a broker."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.mapping import InputMapping
from neardup_stream.records import FingerprintRecord
from neardup_stream.worker import changelog
from neardup_stream.worker.decide import (
    DecideRules,
    InputRecord,
    Rejection,
    Source,
    Unrecordable,
    decide,
)

TEXT = "the quick brown fox jumps over the lazy dog near the river bank " * 4


def rules(**kw: object) -> DecideRules:
    base: dict[str, object] = {
        "unique_topic": "u",
        "duplicate_topic": "d",
        "dlq_topic": "q",
        "mapping": InputMapping(),
        "max_message_bytes": 1 << 20,
        "dlq_payload_bytes": 64,
        "unique_limit": 1 << 21,
        "pipeline": changelog.Pipeline("in", "g"),
    }
    base.update(kw)
    return DecideRules(**base)  # type: ignore[arg-type]


def rec(
    offset: int, value: bytes | None, partition: int = 0, key: bytes | None = None
) -> InputRecord:
    return InputRecord(Source("in", partition, offset), key, value, 1_700_000_000_000)


def doc(i: str, text: str = TEXT) -> bytes:
    return json.dumps({"id": i, "text": text}).encode()


def indexes(*partitions: int) -> dict[int, Deduplicator]:
    return {p: Deduplicator(DedupConfig()) for p in partitions}


def test_every_input_gets_exactly_one_output_in_its_topic() -> None:
    records = [rec(0, doc("a")), rec(1, b"{bad"), rec(2, None), rec(3, doc("b"))]
    out = decide(records, indexes(0), rules(), {})
    assert [m.topic for m in out.messages] == ["q", "q", "u", "d"]
    assert [s.offset for s in out.message_sources] == [1, 2, 0, 3]
    assert out.dead == ["invalid_json", "tombstone"]
    assert out.decided == [("unique", "none"), ("duplicate", "exact")]
    assert out.offsets == {("in", 0): 4}
    (pack,) = out.changelog  # both stored documents, packed in one message
    assert pack.partition == 0 and len(changelog.unpack(pack.value).records) == 2
    assert changelog.unpack(pack.value).pipeline == changelog.Pipeline("in", "g")
    assert pack.key == changelog.key(changelog.Pipeline("in", "g"), 0, 0, 0)


def test_dead_letters_keep_a_bounded_prefix_with_length_and_digest() -> None:
    raw = b"{" + b"x" * 10_000
    out = decide([rec(7, raw, key=b"k")], indexes(0), rules(dlq_payload_bytes=64), {})
    (message,) = out.messages
    letter = json.loads(message.value)
    assert base64.b64decode(letter["raw_base64"]) == raw[:64]
    assert letter["raw_length"] == len(raw) and letter["raw_truncated"] is True
    assert letter["raw_sha256"] == hashlib.sha256(raw).hexdigest()
    assert letter["source"] == {
        "topic": "in",
        "partition": 0,
        "offset": 7,
        "timestamp": 1_700_000_000_000,
    }
    assert len(message.value) < 2048 and message.key == b"k"


def test_a_document_too_large_for_the_unique_topic_is_unpublishable_and_not_indexed() -> None:
    big = doc("big", "word " * 2000)
    idx = indexes(0)
    out = decide([rec(0, big), rec(1, doc("small"))], idx, rules(unique_limit=4096), {})
    assert out.dead == ["unpublishable"]
    assert len(idx[0]) == 1  # only the small one
    letter = json.loads(out.messages[0].value)
    assert "max.message.bytes" in letter["message"]


def test_rejected_inputs_become_dead_letters_and_bare_ones_lose_their_payload() -> None:
    records = [rec(0, doc("a")), rec(1, doc("b", "other text entirely " * 5))]
    rejected = {
        Source("in", 0, 0): Rejection("unpublishable", "too large"),
        Source("in", 0, 1): Rejection("unpublishable", "dlq too", keep_payload=False),
    }
    idx = indexes(0)
    out = decide(records, idx, rules(), rejected)
    assert out.dead == ["unpublishable", "unpublishable"] and len(idx[0]) == 0
    first, second = (json.loads(m.value) for m in out.messages)
    assert first["raw_base64"] and second["raw_base64"] == ""
    assert second["raw_length"] == len(records[1].value or b"")


def test_partitions_are_decided_against_their_own_index_only() -> None:
    records = [rec(0, doc("a"), partition=0), rec(0, doc("b"), partition=1)]
    idx = indexes(0, 1)
    out = decide(records, idx, rules(), {})
    assert out.decided == [("unique", "none"), ("unique", "none")]
    assert out.offsets == {("in", 0): 1, ("in", 1): 1} and out.partitions == {0, 1}
    assert len(idx[0]) == len(idx[1]) == 1


def test_text_values_take_their_id_from_the_key() -> None:
    mapping = InputMapping(value_format="text")
    records = [rec(0, TEXT.encode(), key=b"doc-1"), rec(1, TEXT.encode(), key=None)]
    out = decide(records, indexes(0), rules(mapping=mapping), {})
    assert out.dead == ["missing_id"]
    assert out.messages[1].key == b"doc-1"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b'{"id": "\\ud800", "text": "x"}', "invalid_field"),
        (b'{"id": "a", "text": "bad \\udc00 text"}', "invalid_field"),
        (b"[" * 100_000 + b"]" * 100_000, "invalid_json"),
        (b'{"id": "a", "text": "x", "n": ' + b"9" * 5000 + b"}", "invalid_json"),
        (json.dumps({"id": "x" * 600, "text": "t"}).encode(), "invalid_id"),
        (json.dumps({"id": "blank", "text": " \n "}).encode(), "empty_text"),
    ],
)
def test_hostile_values_are_dead_letters_not_crashes(value: bytes, reason: str) -> None:
    out = decide([rec(0, value)], indexes(0), rules(max_message_bytes=1 << 20), {})
    assert out.dead == [reason]


def test_an_index_record_beyond_the_changelog_limit_names_its_input() -> None:
    idx = {0: Deduplicator(DedupConfig(precise=True))}  # records carry the shingle set
    records = [
        rec(0, doc("small", "tiny text here")),
        rec(1, doc("big", " ".join(f"w{j}" for j in range(3000)))),
    ]
    with pytest.raises(Unrecordable) as raised:
        decide(records, idx, rules(changelog_limit=4096), {})
    assert raised.value.source == Source("in", 0, 1) and "changelog" in str(raised.value)


def test_empty_texts_are_dead_letters_not_duplicates_of_each_other() -> None:
    records = [rec(0, doc("e1", "")), rec(1, doc("e2", "   ")), rec(2, doc("a"))]
    idx = indexes(0)
    out = decide(records, idx, rules(), {})
    assert out.dead == ["empty_text", "empty_text"]
    assert [m.topic for m in out.messages] == ["q", "q", "u"]
    dead = json.loads(out.messages[1].value)
    assert dead["reason"] == "empty_text" and dead["source"]["offset"] == 1
    assert len(idx[0]) == 1  # only "a" was indexed


def test_an_update_is_published_afresh_and_says_so() -> None:
    other = "a completely different body of text about something else " * 4
    records = [
        rec(0, doc("a")),
        rec(1, doc("b", other)),
        rec(2, doc("a", other)),
        rec(3, doc("a", other)),
    ]
    out = decide(records, indexes(0), rules(), {})
    assert [m.topic for m in out.messages] == ["u", "u", "d", "d"]
    assert ("neardup.update", b"true") not in out.messages[0].headers
    update = json.loads(out.messages[2].value)
    assert update["update"] is True and update["duplicate_of"] == "b"
    assert ("neardup.update", b"true") in out.messages[2].headers
    assert out.messages[3].value == out.messages[2].value  # its replay: the same decision
    (pack,) = out.changelog
    assert [
        r.update for r in map(FingerprintRecord.decode, changelog.unpack(pack.value).records)
    ] == [
        False,
        False,
        True,
    ]
