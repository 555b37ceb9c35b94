"""Turning raw input bytes into a `Document`, or a precise reason why not.

Shared by the CLI (one JSONL line) and the Kafka worker (one message value and key), so both
reject the same inputs with the same reason codes. Where the id, text and event time come
from is an `InputMapping`; `parse_document` never raises on bad input.

Reasons: `tombstone`, `too_large`, `invalid_utf8`, `invalid_json`, `not_an_object`,
`missing_id`, `missing_text`, `empty_text`, `invalid_id`, `invalid_field`.

Policy for empty texts: a text that is empty or only whitespace (after joining the mapped
text fields) is rejected as `empty_text`, never decided: it has nothing to compare, and every
such document would otherwise be an exact duplicate of the first one. The worker dead-letters
it; offline `dedup` reports it with its line number like any other bad line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from neardup_stream.mapping import DEFAULT_MAPPING, InputMapping
from neardup_stream.models import MAX_TEXT_CHARS, Document

REASONS = (
    "tombstone",
    "too_large",
    "invalid_utf8",
    "invalid_json",
    "not_an_object",
    "missing_id",
    "missing_text",
    "empty_text",
    "invalid_id",
    "invalid_field",
)

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LAST_MAPPING: list[tuple[InputMapping, bool]] = []  # (mapping, is_default) of the last call


def _fast_path(mapping: InputMapping) -> bool:
    """`mapping.is_default`, remembered for the mapping of the last call (it builds a copy of
    the mapping: microseconds a document, while callers pass one mapping for a whole run)."""
    last = _LAST_MAPPING[0] if _LAST_MAPPING else None
    if last is not None and last[0] is mapping:
        return last[1]
    fast = mapping.is_default
    _LAST_MAPPING[:] = [(mapping, fast)]
    return fast


@dataclass(frozen=True)
class ParseError:
    """Why an input could not become a Document."""

    reason: str
    message: str


def _field_reason(err: ValidationError, names: dict[str, str]) -> ParseError:
    first = err.errors()[0]
    loc = ".".join(str(x) for x in first["loc"]) or "document"
    shown = names.get(loc, loc)
    if first["type"] == "missing":
        return ParseError(f"missing_{loc}", f"field {shown!r} is required")
    if loc == "text" and first["type"] == "value_error":
        return ParseError("empty_text", f"{shown}: {first['msg']}")
    if first["type"] == "string_too_long" and loc != "id":
        return ParseError("too_large", f"{shown} is too long: {first['msg']}")
    if loc == "id" and first["type"] in {"string_too_short", "string_too_long", "value_error"}:
        return ParseError("invalid_id", f"{shown}: {first['msg']}")
    return ParseError("invalid_field", f"field {shown!r}: {first['msg']}")


def _has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _decode(raw: bytes, what: str) -> str | ParseError:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        reason = "invalid_utf8" if what == "input" else "invalid_id"
        return ParseError(reason, f"{what} is not valid UTF-8: {exc}")


def _id_from_key(key: bytes | None) -> str | ParseError:
    if key is None:
        return ParseError("missing_id", "the id comes from the message key, and it has none")
    return _decode(key, "message key")


def _fields(
    obj: dict[str, Any], mapping: InputMapping, key: bytes | None
) -> dict[str, Any] | ParseError:
    """The Document fields `mapping` selects from a JSON object."""
    if mapping.is_default:
        return obj
    out: dict[str, Any] = {}
    if mapping.id_source == "key":
        doc_id = _id_from_key(key)
        if isinstance(doc_id, ParseError):
            return doc_id
        out["id"] = doc_id
    elif mapping.id_field in obj:
        out["id"] = obj[mapping.id_field]
    parts = []
    for name in mapping.text_fields:
        value = obj.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            kind = type(value).__name__
            return ParseError("invalid_field", f"field {name!r} must be a string, got {kind}")
        parts.append(value)
    if not parts:
        names = ", ".join(repr(n) for n in mapping.text_fields)
        return ParseError("missing_text", f"none of the text fields {names} is present")
    out["text"] = mapping.text_separator.join(parts)
    if mapping.timestamp_field is not None and obj.get(mapping.timestamp_field) is not None:
        out["timestamp"] = obj[mapping.timestamp_field]
    domain = mapping.domain_field
    if domain is not None and domain not in out and obj.get(domain) is not None:
        out[domain] = obj[domain]  # kept for `mapping.domain_of`
    return out


def parse_document(
    raw: bytes | None,
    max_bytes: int = 4 * MAX_TEXT_CHARS,
    mapping: InputMapping = DEFAULT_MAPPING,
    key: bytes | None = None,
) -> Document | ParseError:
    """Parse one input into a Document; never raises on bad input.

    Args:
        raw: The message value, or None for a Kafka tombstone.
        max_bytes: Inputs larger than this are rejected before decoding.
        mapping: Where the id, text and timestamp are.
        key: The message key (the id when `mapping.id_source` is "key").
    """
    if raw is None:
        return ParseError("tombstone", "message has no value (tombstone)")
    if len(raw) > max_bytes:
        return ParseError("too_large", f"input is {len(raw)} bytes; the limit is {max_bytes}")
    if _fast_path(mapping):
        try:
            doc = Document.model_validate_json(raw)
            # valid UTF-8 holds no surrogates: only a JSON \uD800-\uDFFF escape can make one
            # (a search, not a re-encoding of every text with escaped non-ASCII characters)
            if _SURROGATE_ESCAPE.search(raw) is None or not (
                _has_surrogate(doc.text) or _has_surrogate(doc.id)
            ):
                return doc
        except ValidationError:
            pass  # classify the problem precisely below
    text = _decode(raw, "input")
    if isinstance(text, ParseError):
        return text
    if mapping.value_format == "text":
        key_id = _id_from_key(key)
        if isinstance(key_id, ParseError):
            return key_id
        fields: dict[str, Any] | ParseError = {"id": key_id, "text": text}
    else:
        try:
            obj = json.loads(text)
        except ValueError as exc:  # (JSONDecodeError, or an integer past 4300 digits)
            return ParseError("invalid_json", f"input is not valid JSON: {exc}")
        except RecursionError:
            return ParseError("invalid_json", "input nests too deeply")
        if not isinstance(obj, dict):
            return ParseError("not_an_object", f"expected a JSON object, got {type(obj).__name__}")
        fields = _fields(obj, mapping, key)
    if isinstance(fields, ParseError):
        return fields
    names = {"id": "message key" if mapping.id_source == "key" else mapping.id_field}
    for name in ("id", "text"):
        value = fields.get(name)
        if name in fields and not isinstance(value, str):
            kind = type(value).__name__
            return ParseError(
                "invalid_field", f"field {names.get(name, name)!r} must be a string, got {kind}"
            )
        if isinstance(value, str) and _has_surrogate(value):
            return ParseError("invalid_field", f"{names.get(name, name)} contains a lone surrogate")
    try:
        return Document.model_validate(fields)
    except ValidationError as exc:
        return _field_reason(exc, names)
