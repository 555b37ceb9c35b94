import json
from pathlib import Path

import pytest

from neardup_stream.mapping import InputMapping
from neardup_stream.models import Document, json_schemas
from neardup_stream.parsing import REASONS, ParseError, parse_document


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (None, "tombstone"),
        (b"\xff\xfe{}", "invalid_utf8"),
        (b"{not json", "invalid_json"),
        (b"[1, 2]", "not_an_object"),
        (b'"text"', "not_an_object"),
        (b'{"text": "x"}', "missing_id"),
        (b'{"id": "a"}', "missing_text"),
        (b'{"id": "a", "text": ""}', "empty_text"),
        (b'{"id": "a", "text": " \\n\\t "}', "empty_text"),
        (b'{"id": "a", "text": "\\u3000\\u00a0"}', "empty_text"),
        (b'{"id": "", "text": "x"}', "invalid_id"),
        (b'{"id": "  ", "text": "x"}', "invalid_id"),
        (b'{"id": 5, "text": "x"}', "invalid_field"),
        (b'{"id": "a", "text": ["x"]}', "invalid_field"),
        (b'{"id": "a", "text": "x", "timestamp": "yesterday"}', "invalid_field"),
        (b'{"id": "a", "text": "' + b"x" * 100 + b'"}', "too_large"),
    ],
)
def test_bad_inputs_get_precise_reasons(raw: bytes | None, reason: str) -> None:
    result = parse_document(raw, max_bytes=64)
    assert isinstance(result, ParseError)
    assert result.reason == reason and result.message


def test_an_integer_past_pythons_digit_limit_is_invalid_json_not_a_crash() -> None:
    result = parse_document(b'{"id": "a", "text": "x", "n": ' + b"1" * 5000 + b"}")
    assert isinstance(result, ParseError) and result.reason == "invalid_json"
    assert "4300 digits" in result.message


def test_valid_document_keeps_extra_fields() -> None:
    raw = json.dumps({"id": "a", "text": "t", "url": "http://x", "source": "crawl"}).encode()
    doc = parse_document(raw)
    assert isinstance(doc, Document)
    assert doc.url == "http://x" and doc.model_extra == {"source": "crawl"}


def test_json_schemas_export() -> None:
    schemas = json_schemas()
    assert set(schemas) == {"Document", "Decision", "ErrorRecord"}
    assert set(schemas["Document"]["required"]) == {"id", "text"}


def test_mapping_joins_text_fields_and_reads_another_id_field() -> None:
    mapping = InputMapping(id_field="url", text_fields=("title", "body"))
    raw = json.dumps({"url": "u1", "title": "Title", "body": "Body", "extra": 1}).encode()
    doc = parse_document(raw, mapping=mapping)
    assert isinstance(doc, Document)
    assert (doc.id, doc.text) == ("u1", "Title\n\nBody")
    only_body = parse_document(json.dumps({"url": "u2", "body": "B"}).encode(), mapping=mapping)
    assert isinstance(only_body, Document) and only_body.text == "B"


@pytest.mark.parametrize(
    ("obj", "key", "reason"),
    [
        ({"title": "t"}, None, "missing_id"),
        ({"url": "u"}, None, "missing_text"),
        ({"url": "u", "title": "", "body": "  "}, None, "empty_text"),
        ({"url": "u", "title": 5}, None, "invalid_field"),
        ({"url": 7, "title": "t"}, None, "invalid_field"),
        ({"url": "u", "title": "t", "published": "not a date"}, None, "invalid_field"),
    ],
)
def test_mapping_reasons(obj: dict[str, object], key: bytes | None, reason: str) -> None:
    mapping = InputMapping(
        id_field="url", text_fields=("title", "body"), timestamp_field="published"
    )
    result = parse_document(json.dumps(obj).encode(), mapping=mapping, key=key)
    assert isinstance(result, ParseError) and result.reason == reason


def test_ids_from_keys_and_plain_text_values() -> None:
    keyed = InputMapping(id_from_key=True)
    doc = parse_document(b'{"text": "hello"}', mapping=keyed, key=b"k1")
    assert isinstance(doc, Document) and doc.id == "k1"
    bad_key = parse_document(b'{"text": "hello"}', mapping=keyed, key=b"\xff")
    assert isinstance(bad_key, ParseError) and bad_key.reason == "invalid_id"
    plain = InputMapping(value_format="text")
    doc = parse_document(b"plain text, not JSON", mapping=plain, key=b"k2")
    assert isinstance(doc, Document) and (doc.id, doc.text) == ("k2", "plain text, not JSON")
    missing = parse_document(b"text", mapping=plain, key=None)
    assert isinstance(missing, ParseError) and missing.reason == "missing_id"


def test_mapping_is_validated_at_construction() -> None:
    with pytest.raises(ValueError, match="repeated"):
        InputMapping(text_fields=("a", "a"))
    with pytest.raises(ValueError, match="also a text field"):
        InputMapping(id_field="body", text_fields=("body",))
    assert InputMapping(text_fields="title, body").text_fields == ("title", "body")  # type: ignore[arg-type]


def test_empty_texts_are_refused_everywhere_and_text_values_too() -> None:
    plain = parse_document(b"  \r\n ", mapping=InputMapping(value_format="text"), key=b"k")
    assert isinstance(plain, ParseError) and plain.reason == "empty_text"
    assert "whitespace" in plain.message
    with pytest.raises(ValueError, match="empty or only whitespace"):
        Document(id="a", text=" ")
    assert Document(id="a", text=" x ").text == " x "  # kept as given, not stripped


def test_the_dead_letter_schema_names_every_parse_reason() -> None:
    described = json_schemas()["ErrorRecord"]["properties"]["reason"]["description"]
    for reason in (*REASONS, "unpublishable", "internal_error"):
        assert reason in described


def test_the_committed_schemas_are_the_models_schemas() -> None:
    folder = Path(__file__).resolve().parents[2] / "docs" / "schemas"
    for name, schema in json_schemas().items():
        assert json.loads((folder / f"{name}.schema.json").read_text()) == schema, name


@pytest.mark.parametrize(
    ("raw", "outcome"),
    [
        (b'{"id": "a", "text": "x\\ud800y"}', "invalid_field"),
        (b'{"id": "a\\uDFFF", "text": "xy"}', "invalid_field"),
        (b'{"id": "a", "text": "\\ud83d\\ude00 ok"}', "\U0001f600 ok"),  # a pair: one character
        (b'{"id": "a", "text": "caf\\u00e9 \\u4e2d\\ud7ff"}', "caf\u00e9 \u4e2d\ud7ff"),
        (b'{"id": "a", "text": "\\\\ud800 is text"}', "\\ud800 is text"),  # an escaped backslash
    ],
)
def test_only_escapes_that_make_a_lone_surrogate_are_refused(raw: bytes, outcome: str) -> None:
    parsed = parse_document(raw)
    if isinstance(parsed, ParseError):
        assert parsed.reason == outcome
    else:
        assert parsed.text == outcome
