import json

import pytest

from neardup_stream.models import Document, json_schemas
from neardup_stream.parsing import ParseError, parse_document


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


def test_valid_document_keeps_extra_fields() -> None:
    raw = json.dumps({"id": "a", "text": "t", "url": "http://x", "source": "crawl"}).encode()
    doc = parse_document(raw)
    assert isinstance(doc, Document)
    assert doc.url == "http://x" and doc.model_extra == {"source": "crawl"}


def test_json_schemas_export() -> None:
    schemas = json_schemas()
    assert set(schemas) == {"Document", "Decision", "ErrorRecord"}
    assert set(schemas["Document"]["required"]) == {"id", "text"}
