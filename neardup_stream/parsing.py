"""Turning raw input bytes into a `Document`, or a precise reason why not.

Shared by the CLI (one JSONL line) and the Kafka worker (one message value), so both reject
the same inputs with the same reason codes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pydantic import ValidationError

from neardup_stream.models import MAX_TEXT_CHARS, Document


@dataclass(frozen=True)
class ParseError:
    """Why an input could not become a Document."""

    reason: str
    message: str


def _field_reason(err: ValidationError) -> ParseError:
    first = err.errors()[0]
    loc = ".".join(str(x) for x in first["loc"]) or "document"
    if first["type"] == "missing":
        return ParseError(f"missing_{loc}", f"field {loc!r} is required")
    if first["type"] == "string_too_long":
        return ParseError("too_large", f"field {loc!r} is too long: {first['msg']}")
    if loc == "id" and first["type"] in {"string_too_short", "value_error"}:
        return ParseError("invalid_id", f"field 'id': {first['msg']}")
    return ParseError("invalid_field", f"field {loc!r}: {first['msg']}")


def parse_document(raw: bytes | None, max_bytes: int = 4 * MAX_TEXT_CHARS) -> Document | ParseError:
    """Parse one JSON document; never raises on bad input.

    Args:
        raw: The encoded JSON object, or None for a Kafka tombstone.
        max_bytes: Inputs larger than this are rejected before decoding.
    """
    if raw is None:
        return ParseError("tombstone", "message has no value (tombstone)")
    if len(raw) > max_bytes:
        return ParseError("too_large", f"input is {len(raw)} bytes; the limit is {max_bytes}")
    try:
        return Document.model_validate_json(raw)
    except ValidationError:
        pass  # classify the problem precisely below
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ParseError("invalid_utf8", f"input is not valid UTF-8: {exc}")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return ParseError("invalid_json", f"input is not valid JSON: {exc}")
    except RecursionError:
        return ParseError("invalid_json", "input nests too deeply")
    if not isinstance(obj, dict):
        return ParseError("not_an_object", f"expected a JSON object, got {type(obj).__name__}")
    for field in ("id", "text"):
        if field in obj and not isinstance(obj[field], str):
            kind = type(obj[field]).__name__
            return ParseError("invalid_field", f"field {field!r} must be a string, got {kind}")
    try:
        return Document.model_validate(obj)
    except ValidationError as exc:
        return _field_reason(exc)
