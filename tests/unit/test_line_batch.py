"""`line_batch`: lines parsed as columns agree with `parse_document` line by line, decisions
written from columns agree with `json.dumps` of a `Decision`, and a whole `dedup` run through
columns writes what the run through `Document`s writes."""

import io
import json

import pytest

from neardup_stream import cli
from neardup_stream.config import DedupConfig
from neardup_stream.engine.outcomes import DecisionColumns
from neardup_stream.line_batch import decision_lines, parse_lines
from neardup_stream.mapping import DEFAULT_MAPPING
from neardup_stream.models import METHODS, Decision
from neardup_stream.parsing import ParseError, parse_document

LINES = [
    b'{"id": "a", "text": "plain text"}',
    b'{"id": "b", "text": "x", "lang": "en", "url": "http://x", "title": null, "n": 1.5}',
    b'{"id": "c", "text": "x", "source": "crawl", "flag": true, "big": 123456789012345678901}',
    b'{"id": "d", "text": "x", "timestamp": "2026-01-02T03:04:05Z"}',
    b'{"id": "e", "text": "x", "timestamp": null, "metadata": null}',
    b'{"id": "f", "text": "x", "metadata": {"k": [1, 2]}}',
    b'{"id": "g", "text": "x", "nested": {"deep": [1]}}',
    b'{"id": "h", "text": "x", "title": 5}',
    b'{"id": "i", "text": "x", "timestamp": "yesterday"}',
    b'{"id": "j", "text": "x", "n": NaN}',
    b'{"id": "k", "text": "x", "n": 1e999}',
    b'{"id": "l", "text": "lone \\ud800 surrogate"}',
    b'{"id": "\\udfff", "text": "x"}',
    b'{"id": "m", "text": "caf\xc3\xa9 \\u00e9 \\ud83d\\ude00 \\u0000"}',
    b'{"id": "n", "text": "x", "id": "n2"}',
    b'\xef\xbb\xbf{"id": "o", "text": "x"}',
    b'{"id": "p", "text": "\xff"}',
    b"{not json",
    b"[1, 2]",
    b'"text"',
    b'{"text": "x"}',
    b'{"id": "q"}',
    b'{"id": "r", "text": ""}',
    b'{"id": "s", "text": " \\n\\t \\u3000"}',
    b'{"id": "", "text": "x"}',
    b'{"id": "  ", "text": "x"}',
    b'{"id": "a\\u0000b", "text": "x"}',
    b'{"id": "' + b"i" * 513 + b'", "text": "x"}',
    b'{"id": 5, "text": "x"}',
    b'{"id": "t", "text": ["x"]}',
    b'{"id": "u", "text": "' + b"x" * 9000 + b'"}',
    b'{"id": "v", "text": "x", "e": ' + b"[" * 1000 + b"]" * 1000 + b', "e": 1}',
    b'{"id": "w", "text": "x", "e": ' + b"[" * 100 + b"]" * 100 + b', "e": 1}',
    b'{"id": "y", "text": "x", "n": ' + b"7" * 5000 + b"}",
    b'{"id": "z", "text": "[[[{{{ brackets in a text are only text ]]]}}}"}',
]


def _outcome(result: object) -> tuple:
    if isinstance(result, ParseError):
        return ("error", result.reason, result.message)
    return ("document", result.id, result.text, result.timestamp)  # type: ignore[attr-defined]


def test_every_line_gets_what_parse_document_gives_it() -> None:
    numbered = list(enumerate(LINES, start=1))
    batch = parse_lines(numbered, max_bytes=8192)
    got = {n: ("document", i, t, s) for n, i, t, s in zip(*_columns(batch), strict=True)}
    got.update({n: ("error", e.reason, e.message) for n, e in batch.errors})
    want = {n: _outcome(parse_document(raw, 8192)) for n, raw in numbered}
    assert got == want
    kinds = [w[0] for w in want.values()]
    assert kinds.count("document") >= 8 and kinds.count("error") >= 15  # both sides tried
    assert batch.numbers == sorted(batch.numbers)  # documents keep their input order


def _columns(batch):  # type: ignore[no-untyped-def]
    return batch.numbers, batch.ids, batch.texts, batch.stamps


@pytest.mark.parametrize("update", [False, True])
def test_decision_lines_are_what_json_dumps_writes(update: bool) -> None:
    cols = DecisionColumns()
    cols.append("plain", 0, None, None, 0.0, update)
    for m, name in enumerate(METHODS, start=1):
        cols.append(f'{name} "q" é\t😀', m, "dup\\of", None, 0.8123456789, update)
        cols.append(name, m, "d", "rep é", 1.0, update)
        cols.append(name, m, "d", "r", 0.7, update)
    want = "".join(json.dumps(cols.decision(i).model_dump()) + "\n" for i in range(len(cols)))
    assert decision_lines(cols) == want
    assert cols.decision(1) == Decision(
        id='exact "q" é\t😀',
        decision="duplicate",
        duplicate_of="dup\\of",
        similarity=0.812346,
        method="exact",
        update=update,
    )


def test_a_run_through_columns_writes_what_a_run_through_documents_writes() -> None:
    texts = [f"document number {i} about topic {i % 7} " * 12 for i in range(40)]
    lines = [json.dumps({"id": f"d{i}", "text": t}) for i, t in enumerate(texts)]
    lines += [
        json.dumps({"id": "copy", "text": texts[3]}),  # an exact duplicate
        json.dumps({"id": "near", "text": texts[5].replace("number 5", "numbr 5")}),
        json.dumps({"id": "d1", "text": texts[1]}),  # a replay
        json.dumps({"id": "d2", "text": texts[9] + " changed"}),  # an update
        json.dumps({"id": "ts", "text": texts[11], "timestamp": "2026-01-01T00:00:00Z"}),
        '{"id": "bad", "text": ""}',
        "{broken",
        json.dumps({"id": "d2", "text": texts[9] + " changed"}),  # a replay of the update
    ]
    source = ("\n".join(lines) + "\n").encode()
    runs = []
    for run in (cli._dedup_columns, cli._dedup_documents):
        sink, err, counts = io.StringIO(), io.StringIO(), cli.Counter()
        config = DedupConfig(threshold=0.7)
        numbered = cli._lines(io.BytesIO(source))
        if run is cli._dedup_columns:
            run(config, numbered, sink, err, 1 << 20, counts)
        else:
            run(config, numbered, sink, err, 1 << 20, DEFAULT_MAPPING, counts)
        runs.append((sink.getvalue(), err.getvalue(), counts))
    assert runs[0] == runs[1]
    out, errors, counts = runs[0]
    decided = [json.loads(line) for line in out.splitlines()]
    assert len(decided) == len(lines) - 2 and errors.count("\n") == 2
    by_id = {d["id"]: d for d in decided}
    assert by_id["copy"]["method"] == "exact" and by_id["near"]["decision"] == "duplicate"
    assert by_id["d2"]["update"] and counts["update"] == 2
