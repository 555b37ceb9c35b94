"""Admission of one input (`neardup_stream.worker.admission.admit`): a document, or its one dead letter."""

from __future__ import annotations

import dataclasses
import json

from neardup_stream.mapping import InputMapping
from neardup_stream.models import Document, PlainDocument
from neardup_stream.parsing import ParseError, parse_document
from neardup_stream.worker.admission import MAX_DLQ_KEY_BYTES, DecideRules, admit
from neardup_stream.worker.records import BatchOutput, InputRecord, Rejection, Source

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


INPUTS = [
    {"id": "a", "text": "hello"},
    {"id": "b", "text": "x", "title": "t", "url": None, "extra": 3},
    {"id": "c", "text": "y", "timestamp": "2026-01-01T00:00:00Z"},  # a time to parse
    {"id": "d", "text": "z", "metadata": {"k": 1}},  # nested
    {"id": "e", "text": "   "},  # empty_text
    {"id": " ", "text": "z"},  # invalid_id
    {"id": "f", "text": "z", "lang": 3},  # invalid_field
    {"id": "g"},  # missing_text
]


def test_plain_objects_are_admitted_as_parse_document_gives_them() -> None:
    """Under the default mapping a plain object comes in without a `Document`, with the id
    and text (and no time) `parse_document` gives; every other input as before."""
    for i, obj in enumerate(INPUTS):
        raw = json.dumps(obj).encode()
        out, parsed = BatchOutput(), admit(BatchOutput(), rec(i, raw), RULES, {})
        expected = parse_document(raw, RULES.max_message_bytes)
        if isinstance(expected, ParseError):
            assert parsed is None
            admit(out, rec(i, raw), RULES, {})
            assert out.dead == [expected.reason]
            continue
        assert parsed is not None
        assert (parsed.id, parsed.text, parsed.timestamp) == (
            expected.id,
            expected.text,
            expected.timestamp,
        )
        assert isinstance(parsed, PlainDocument) == (i < 2)


def test_a_mapping_of_its_own_admits_documents() -> None:
    """A domain field (any mapping other than the default) reads the `Document`: never plain."""
    scoped = dataclasses.replace(RULES, mapping=InputMapping(domain_field="site"))
    raw = json.dumps({"id": "a", "text": "hello", "site": "x.org"}).encode()
    parsed = admit(BatchOutput(), rec(0, raw), scoped, {})
    assert isinstance(parsed, Document) and parsed.model_extra == {"site": "x.org"}
    assert isinstance(admit(BatchOutput(), rec(0, raw), RULES, {}), PlainDocument)
