"""Admission of one input (`worker.admission.admit`): a document, or its one dead letter."""

from __future__ import annotations

import json

from neardup_stream.mapping import InputMapping
from worker.admission import MAX_DLQ_KEY_BYTES, DecideRules, admit
from worker.records import BatchOutput, InputRecord, Rejection, Source

RULES = DecideRules("u", "d", "q", InputMapping(), 1 << 20, 64, 4096)


def rec(offset: int, value: bytes | None, key: bytes | None = b"k") -> InputRecord:
    return InputRecord(Source("in", 0, offset), key, value, 1_700_000_000_000)


def test_a_valid_input_is_admitted_and_its_offset_counted() -> None:
    out = BatchOutput()
    doc = admit(out, rec(7, json.dumps({"id": "a", "text": "hello"}).encode()), RULES, {})
    assert doc is not None and doc.id == "a"
    assert out.messages == [] and out.offsets == {("in", 0): 8}


def test_an_unparsable_input_gets_one_dead_letter_naming_its_reason() -> None:
    out = BatchOutput()
    assert admit(out, rec(0, b"{not json"), RULES, {}) is None
    assert len(out.messages) == 1 and out.messages[0].topic == "q"
    assert out.dead == [json.loads(out.messages[0].value)["reason"]]
    assert out.message_sources == [Source("in", 0, 0)] and out.offsets == {("in", 0): 1}


def test_a_pass_through_beyond_the_unique_limit_is_unpublishable() -> None:
    out = BatchOutput()
    big = json.dumps({"id": "a", "text": "word " * 1000}).encode()
    assert admit(out, rec(0, big), RULES, {}) is None
    letter = json.loads(out.messages[0].value)
    assert out.dead == ["unpublishable"] and "accepts 4096" in letter["message"]


def test_an_input_rejected_before_is_dead_lettered_without_parsing() -> None:
    out = BatchOutput()
    why = Rejection("unpublishable", "the broker rejected the output", keep_payload=False)
    valid = json.dumps({"id": "a", "text": "hello"}).encode()
    assert admit(out, rec(0, valid), RULES, {Source("in", 0, 0): why}) is None
    letter = json.loads(out.messages[0].value)
    assert letter["message"] == why.message and letter["raw_base64"] == ""
    assert out.messages[0].key is None  # a bare dead letter drops the key too


def test_a_dead_letter_keeps_only_a_small_key() -> None:
    out = BatchOutput()
    admit(out, rec(0, b"{", key=b"k" * (MAX_DLQ_KEY_BYTES + 1)), RULES, {})
    admit(out, rec(1, b"{", key=b"small"), RULES, {})
    assert [m.key for m in out.messages] == [None, b"small"]
