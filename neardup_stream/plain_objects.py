"""Plain objects: JSON inputs `Document` accepts as they are, read without building one.

A *plain* object has `id` and `text` strings `Document` accepts, and every other field is
null, a string in a declared string field (`title`, `url`, `lang`), or a scalar in a field
`Document` does not declare (kept in the input, never read). `plain_document` gives such an
input's id and text as a `models.PlainDocument` (no own timestamp: an object with one is not
plain), and None for every other input: a `timestamp` to parse, `metadata`, nested extras,
anything orjson refuses, anything invalid. `parse_input` then takes `parsing.parse_document`,
so for every input it gives what that gives, or the same id and text without the object.
orjson is stricter than pydantic's parser (no NaN, no lone surrogates, no numbers beyond a
double), never looser, so no input is plain that `parse_document` would refuse.

Offline `dedup` (`line_batch`) and the worker's admission under the default mapping read
their inputs through it. orjson earns its place as a dependency here: it decodes these
inputs in half the time of `json` or pydantic's parser, and building a pydantic `Document`
per input cost as much again (8.1 against 3.6 µs per held-out line).
"""

from __future__ import annotations

from typing import Any

import orjson

from neardup_stream.mapping import DEFAULT_MAPPING, InputMapping
from neardup_stream.models import MAX_ID_CHARS, MAX_TEXT_CHARS, Parsed, PlainDocument
from neardup_stream.parsing import ParseError, parse_document

_STRINGS = ("title", "url", "lang")  # declared: a string or null
# Inputs with more brackets than this go to `parse_document`: orjson nests deeper (1,024)
# than Python's `json` (the recursion limit), and a nested value under a key given twice
# never reaches `_plain` (the last one wins), so only an input that cannot nest that deep is
# decoded here.
_NESTING = 512


def _plain(obj: Any) -> PlainDocument | None:
    """The id and text of a plain object (see the module docstring), else None."""
    if type(obj) is not dict:
        return None
    doc_id, text = obj.get("id"), obj.get("text")
    if type(doc_id) is not str or type(text) is not str:
        return None
    if not 0 < len(doc_id) <= MAX_ID_CHARS or not doc_id.strip() or "\x00" in doc_id:
        return None
    if not text or len(text) > MAX_TEXT_CHARS or text.isspace():
        return None
    if len(obj) > 2:
        for key in _STRINGS:
            value = obj.get(key)
            if value is not None and type(value) is not str:
                return None
        if obj.get("timestamp") is not None or obj.get("metadata") is not None:
            return None
        for value in obj.values():  # orjson gives dict, list or a scalar
            if type(value) is dict or type(value) is list:
                return None
    return PlainDocument(doc_id, text)


def plain_document(raw: bytes | None, max_bytes: int) -> PlainDocument | None:
    """The `PlainDocument` of input `raw`, or None: `parse_document` then says what it is."""
    if raw is None or len(raw) > max_bytes or raw.count(b"[") + raw.count(b"{") > _NESTING:
        return None
    try:
        return _plain(orjson.loads(raw))
    except orjson.JSONDecodeError:
        return None


def parse_input(
    raw: bytes | None,
    max_bytes: int,
    mapping: InputMapping = DEFAULT_MAPPING,
    key: bytes | None = None,
) -> Parsed | ParseError:
    """`parse_document`, a plain object first as a `PlainDocument` when `mapping` is the
    `DEFAULT_MAPPING` object itself (any other mapping may read more of the document)."""
    parsed = plain_document(raw, max_bytes) if mapping is DEFAULT_MAPPING else None
    return parse_document(raw, max_bytes, mapping, key) if parsed is None else parsed
