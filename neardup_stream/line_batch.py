"""JSON lines in and out of a batch as columns, with no object per line.

Offline `dedup` reads its input through `parse_lines` and writes its decisions with
`decision_lines`: the same JSON line per decision as `json.dumps` of a `Decision` gives.

In: each line through `plain_objects.parse_input`, a plain object straight into the columns
without a `Document`; every other line through `parsing.parse_document`, so what the batch
holds for it, its document or its precise reason, is exactly what that gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from json.encoder import encode_basestring_ascii as _quoted  # what json.dumps writes a str as

from neardup_stream.engine.outcomes import DecisionColumns
from neardup_stream.index.columns import UNIQUE
from neardup_stream.models import METHODS
from neardup_stream.parsing import ParseError
from neardup_stream.plain_objects import parse_input


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


def parse_lines(lines: Sequence[tuple[int, bytes]], max_bytes: int) -> LineBatch:
    """Parse numbered input lines (see the module docstring); never raises on bad input."""
    out = LineBatch()
    for number, raw in lines:
        parsed = parse_input(raw, max_bytes)
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
