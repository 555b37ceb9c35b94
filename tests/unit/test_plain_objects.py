"""`plain_objects.parse_input` gives, for every input, what `parse_document` gives.

Generated objects mix the declared fields, near-miss keys, keys given twice, odd whitespace,
NUL, escaped and raw lone surrogates, big integers, nesting and a byte-order mark: the plain
path must admit exactly the inputs `parse_document` admits, with the same id, text and time,
and refuse the rest with the same reason.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup_stream.fingerprint.normalize import fold
from neardup_stream.mapping import DEFAULT_MAPPING, InputMapping
from neardup_stream.models import MAX_TEXT_CHARS
from neardup_stream.parsing import ParseError, parse_document
from neardup_stream.plain_objects import MAX_FOLDED_CHARS, folded_length, parse_input

LIMIT = 1 << 20
_PIECES = [
    *("", " ", "\t", "\n", "\x00", "\x1c", "\x85", "\xa0", "\u2028", "\u3000", "\u200b"),
    *("\ufeff", "a", "é", "中", "\U0001f600", "\\", '"', "\ud800", "\udc00"),
]
_strings = st.lists(st.sampled_from(_PIECES), max_size=6).map("".join) | st.text(max_size=8)
_scalars = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | _strings
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_strings, inner, max_size=2),
    max_leaves=4,
)
_KEYS = ["id", "text", "title", "url", "lang", "timestamp", "metadata", "extra", "Id", "text "]
_pairs = st.lists(st.tuples(st.sampled_from(_KEYS), _values), max_size=7)


def _object(pairs: list[tuple[str, object]], ascii: bool) -> bytes:
    """A JSON object of `pairs` in order, a key given twice kept twice (raw lone surrogates
    written as their three bytes, as a sender that does not check would)."""
    body = ",".join(
        json.dumps(k, ensure_ascii=ascii) + ":" + json.dumps(v, ensure_ascii=ascii)
        for k, v in pairs
    )
    return ("{" + body + "}").encode("utf-8", "surrogatepass")


def _same(raw: bytes) -> None:
    plain = parse_input(raw, LIMIT)
    full = parse_document(raw, LIMIT)
    if isinstance(full, ParseError):
        assert isinstance(plain, ParseError) and plain.reason == full.reason, (raw, plain, full)
    else:
        assert not isinstance(plain, ParseError), (raw, plain, full)
        assert (plain.id, plain.text, plain.timestamp) == (full.id, full.text, full.timestamp)


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(_pairs, _strings, _strings, st.booleans(), st.sampled_from(["", " ", "\n", "\ufeff"]))
def test_the_plain_path_admits_and_refuses_as_parse_document_does(
    pairs: list[tuple[str, object]], doc_id: str, text: str, ascii: bool, lead: str
) -> None:
    _same(lead.encode() + _object(pairs, ascii))
    strings = [("id", doc_id), ("text", text)]  # an id and a text of odd strings
    _same(_object(strings + pairs, ascii))
    _same(_object(pairs + strings, ascii))
    _same(_object([("id", "x"), ("text", "hello"), *pairs], ascii))  # plain unless `pairs` say


def test_deep_nesting_and_oversized_inputs_take_parse_document() -> None:
    deep = b'{"id":"a","text":"b","extra":' + b"[" * 600 + b"]" * 600 + b"}"
    _same(deep)
    _same(b'{"id":"a","text":"' + b"x" * LIMIT + b'"}')


@pytest.mark.parametrize("mapping", [DEFAULT_MAPPING, InputMapping(text_fields=("text",))])
def test_a_text_folding_past_the_limit_is_too_large_whichever_path_reads_it(
    mapping: InputMapping,
) -> None:
    """U+FDFA folds to 18 code points: 300,000 of them (0.9 MB of UTF-8, within every
    input limit) fold to 5.4M, past `MAX_FOLDED_CHARS`; fingerprinted, 2M of them took
    3.4 GB."""
    raw = json.dumps({"id": "x", "text": "\ufdfa" * 300_000}, ensure_ascii=False).encode()
    got = parse_input(raw, 8 << 20, mapping)
    assert isinstance(got, ParseError) and got.reason == "too_large"
    assert str(MAX_FOLDED_CHARS) in got.message and "5400000" in got.message


@pytest.mark.parametrize(
    "text",
    ["a" * MAX_TEXT_CHARS, "\u4e2d" * MAX_TEXT_CHARS, "\ufdfa" * (MAX_FOLDED_CHARS // 18)],
    ids=["ascii", "cjk", "ligature-at-the-limit"],
)
def test_texts_folding_within_the_limit_are_kept(text: str) -> None:
    raw = json.dumps({"id": "x", "text": text}, ensure_ascii=False).encode()
    got = parse_input(raw, 16 << 20)
    assert not isinstance(got, ParseError) and got.text == text


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(st.characters(exclude_categories=("Cs",)), max_size=80))
def test_the_folded_length_bounds_the_text_folded_whole(text: str) -> None:
    assert folded_length(text) >= len(fold(text))
