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

import numpy as np
import orjson

from neardup_stream.fingerprint.normalize import fold, fold_table
from neardup_stream.mapping import DEFAULT_MAPPING, InputMapping
from neardup_stream.models import MAX_ID_CHARS, MAX_TEXT_CHARS, Parsed, PlainDocument
from neardup_stream.parsing import ParseError, parse_document

_STRINGS = ("title", "url", "lang")  # declared: a string or null
MAX_FOLDED_CHARS = 2 * MAX_TEXT_CHARS  # the longest folded text fingerprinted
MAX_FOLD_GROWTH = 54  # code points one folds to at most: NFKC 18 (U+FDFA), case folding 3
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
    `DEFAULT_MAPPING` object itself (any other mapping may read more of the document); a
    text whose folded form is too long to fingerprint is `too_large` (`folds_too_long`)."""
    plain = plain_document(raw, max_bytes) if mapping is DEFAULT_MAPPING else None
    parsed = parse_document(raw, max_bytes, mapping, key) if plain is None else plain
    if isinstance(parsed, ParseError):
        return parsed
    why = folds_too_long(parsed.text)
    return parsed if why is None else ParseError("too_large", why)


def folds_too_long(text: str) -> str | None:
    """Why `text` is too long to fingerprint once folded (NFKC and case folding, what every
    feature is computed from), or None. NFKC makes up to 18 code points of one (U+FDFA),
    so a text within `MAX_TEXT_CHARS` could fold to 36M code points and the fingerprinting
    of it take gigabytes; `MAX_FOLDED_CHARS` bounds it. Only a text that could grow past the
    bound and is not ASCII (which folds to its own length) is measured (`folded_length`)."""
    if len(text) * MAX_FOLD_GROWTH <= MAX_FOLDED_CHARS or text.isascii():
        return None
    folded = folded_length(text)
    if folded <= MAX_FOLDED_CHARS:
        return None
    return (
        f"text folds to {folded} characters (NFKC and case folding, each character on its "
        f"own, from {len(text)}); the limit is {MAX_FOLDED_CHARS}"
    )


def folded_length(text: str) -> int:
    """The code points `text` folds to, each character folded on its own: at least the
    length of the text folded whole (composing a character with the next only shortens it),
    through the fold table, without building the folded text."""
    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    index, pool = fold_table()  # pool[index[c]]: the length casefold(NFKC(c)) has
    at = np.full(cps.size, -1, dtype=np.int64)
    inside = cps < index.size
    at[inside] = index[cps[inside]]
    known = at >= 0
    total = int(pool[at[known]].sum())
    others, counts = np.unique(cps[~known], return_counts=True)  # (combining marks, ...)
    for c, n in zip(others.tolist(), counts.tolist(), strict=True):
        total += len(fold(chr(c))) * n
    return total
