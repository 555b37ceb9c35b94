"""JSON lines in and out of a batch as columns, with no object per line.

Offline `dedup` reads its input through `parse_lines` and writes its decisions with
`decision_lines`: the same JSON line per decision as `json.dumps` of a `Decision` gives.

In: orjson decodes each line; a *plain* object goes straight into the columns: its `id` and
`text` are strings `Document` accepts, and every other field is null, a string in a declared
string field (`title`, `url`, `lang`), or a scalar in a field `Document` does not declare
(kept, never read). Every other line (a `timestamp` to parse, `metadata`, nested extras,
anything orjson refuses, anything invalid) goes through `parsing.parse_document`, so what the
batch holds for it, its document or its precise reason, is exactly what that gives. orjson is stricter than pydantic's parser (no NaN, no lone
surrogates, no numbers beyond a double), never looser, so no line is accepted here that
`parse_document` would refuse.

orjson earns its place as a dependency here: it decodes these lines in half the time of
`json` or pydantic's parser, and building a pydantic `Document` per line cost as much again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from json.encoder import encode_basestring_ascii as _quoted  # what json.dumps writes a str as
from typing import Any

import orjson

from neardup_stream.engine.outcomes import DecisionColumns
from neardup_stream.index.columns import UNIQUE
from neardup_stream.models import MAX_ID_CHARS, MAX_TEXT_CHARS, METHODS
from neardup_stream.parsing import ParseError, parse_document

_STRINGS = ("title", "url", "lang")  # declared: a string or null
# Lines with more brackets than this go to `parse_document`: orjson nests deeper (1,024) than
# Python's `json` (the recursion limit), and a nested value under a key given twice never
# reaches `_plain` (the last one wins), so only a line that cannot nest that deep is decoded
# here.
_NESTING = 512


@dataclass
class LineBatch:
    """Documents of a batch of lines as columns, and the lines that are not documents."""

    numbers: list[int] = field(default_factory=list)  # line number of each document
    ids: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    stamps: list[datetime | None] = field(default_factory=list)  # its own `timestamp`
    errors: list[tuple[int, ParseError]] = field(default_factory=list)  # (line number, why)

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, number: int, doc_id: str, text: str, stamp: datetime | None) -> None:
        self.numbers.append(number)
        self.ids.append(doc_id)
        self.texts.append(text)
        self.stamps.append(stamp)


def _plain(obj: Any) -> tuple[str, str] | None:
    """(id, text) of a plain object (see the module docstring), else None."""
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
    return doc_id, text


def _decoded(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None  # (not an object: `parse_document` says why)


def parse_lines(lines: Sequence[tuple[int, bytes]], max_bytes: int) -> LineBatch:
    """Parse numbered input lines (see the module docstring); never raises on bad input."""
    out = LineBatch()
    for number, raw in lines:
        fits = len(raw) <= max_bytes and raw.count(b"[") + raw.count(b"{") <= _NESTING
        plain = _plain(_decoded(raw)) if fits else None
        if plain is not None:
            out.add(number, *plain, None)
            continue
        parsed = parse_document(raw, max_bytes)
        if isinstance(parsed, ParseError):
            out.errors.append((number, parsed))
        else:
            out.add(number, parsed.id, parsed.text, parsed.timestamp)
    return out


_METHODS = tuple(_quoted(m) for m in METHODS)
_FLAGS = ("false", "true")


def decision_lines(cols: DecisionColumns) -> str:
    """One JSON line per decision, byte for byte `json.dumps(decision.model_dump())`."""
    out = []
    for i, doc_id in enumerate(cols.ids):
        head = '{"id": ' + _quoted(doc_id)
        update = _FLAGS[cols.update[i]]
        method = cols.method[i]
        if method == UNIQUE:
            out.append(
                f'{head}, "decision": "unique", "duplicate_of": null, "representative": null, '
                f'"similarity": null, "method": null, "update": {update}}}\n'
            )
            continue
        dup, rep = cols.duplicate_of[i], cols.representative[i]
        out.append(
            f'{head}, "decision": "duplicate", '
            f'"duplicate_of": {"null" if dup is None else _quoted(dup)}, '
            f'"representative": {"null" if rep is None else _quoted(rep)}, '
            f'"similarity": {cols.similarity[i]!r}, "method": {_METHODS[method - 1]}, '
            f'"update": {update}}}\n'
        )
    return "".join(out)
