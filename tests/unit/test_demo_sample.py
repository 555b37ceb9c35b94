"""The quick-start demo's bundled sample and its summary, offline (no broker, no worker).

`deploy/local/demo/sample.jsonl` must parse (except its two deliberately malformed records),
hold English and Chinese news with near-duplicates the engine finds, be reproducible from
`make_sample.py`, and `demo.summarize` must report exactly what the engine decided.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from neardup_stream import Decision, Deduplicator, Document
from neardup_stream.parsing import ParseError, parse_document

DEMO_DIR = Path(__file__).resolve().parents[2] / "deploy" / "local" / "demo"
SAMPLE = DEMO_DIR / "sample.jsonl"


def _load(name: str) -> ModuleType:
    """Import deploy/local/demo/<name>.py (the directory is not a package)."""
    spec = importlib.util.spec_from_file_location(f"neardup_demo_{name}", DEMO_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


demo = _load("demo")


@pytest.fixture(scope="module")
def parsed() -> list[Document | ParseError]:
    return [parse_document(line) for line in SAMPLE.read_bytes().splitlines()]


@pytest.fixture(scope="module")
def docs(parsed: list[Document | ParseError]) -> list[Document]:
    return [p for p in parsed if isinstance(p, Document)]


@pytest.fixture(scope="module")
def decisions(docs: list[Document]) -> list[Decision]:
    return Deduplicator().check_batch(docs)


def test_sample_parses_except_the_two_malformed_records(
    parsed: list[Document | ParseError], docs: list[Document]
) -> None:
    errors = [p for p in parsed if isinstance(p, ParseError)]
    assert sorted(e.reason for e in errors) == ["invalid_json", "missing_text"]
    assert 300 <= len(docs) <= 600
    assert len({d.id for d in docs}) == len(docs)
    assert SAMPLE.stat().st_size < 1_000_000


def test_sample_is_english_and_chinese_news(docs: list[Document]) -> None:
    langs = Counter(d.lang for d in docs)
    assert set(langs) == {"en", "zh"} and min(langs.values()) >= 100
    for d in docs:
        assert 300 <= len(d.text) <= 2000, d.id
        assert d.title and d.url and d.timestamp is not None, d.id
    assert any("。" in d.text for d in docs if d.lang == "zh")


def test_engine_finds_duplicates_in_both_languages(
    docs: list[Document], decisions: list[Decision]
) -> None:
    dups = [(doc, d) for doc, d in zip(docs, decisions, strict=True) if d.is_duplicate]
    assert len(dups) >= 0.2 * len(docs)
    assert {doc.lang for doc, _ in dups} == {"en", "zh"}
    assert {d.method for _, d in dups} >= {"exact", "minhash"}
    assert all(d.duplicate_of is not None and d.similarity is not None for _, d in dups)


def test_sample_is_reproducible_from_make_sample() -> None:
    make_sample = _load("make_sample")
    assert "\n".join(make_sample.build()) + "\n" == SAMPLE.read_text(encoding="utf-8")


def _row(text: str, label: str) -> list[int]:
    """The counts of one summary table row: total, then one per language column."""
    match = re.search(rf"^{re.escape(label)}\s+(\d+)\s+[\d.]+%((?:\s+\d+)*)$", text, re.M)
    assert match, f"no {label!r} row in:\n{text}"
    return [int(match.group(1)), *map(int, match.group(2).split())]


def test_summary_counts_match_the_decisions(
    docs: list[Document], decisions: list[Decision]
) -> None:
    records = [d.model_dump(mode="json") for d in decisions]
    by_id = {d.id: {"text": d.text, "lang": d.lang} for d in docs}
    dead = [{"reason": "invalid_json"}, {"reason": "missing_text"}]
    text = demo.summarize(records, by_id, elapsed=2.0, dead_letters=dead)

    lang = {d.id: d.lang for d in docs}
    expected: Counter[tuple[str, str]] = Counter()
    for d in decisions:
        for row in ("unique",) if d.decision == "unique" else ("duplicate", f"  {d.method}"):
            expected.update([(row, "all"), (row, lang[d.id])])
    for row in ("unique", "duplicate", "  exact", "  simhash", "  minhash"):
        assert _row(text, row) == [expected[(row, c)] for c in ("all", "en", "zh")], row
    assert _row(text, "unique")[0] + _row(text, "duplicate")[0] == len(docs)
    assert re.search(r"^dead letters\s+2\s+\(invalid_json: 1, missing_text: 1\)$", text, re.M)
    total = len(docs) + 2
    assert f"{total} messages in 2.00 s = {total / 2:,.0f} msg/s" in text

    examples = re.findall(r"^\s+([01]\.\d{3}) (\w+)\s+(\S+) ≈ (\S+)$", text, re.M)
    assert len(examples) == 6
    assert {lang[copy] for _, _, copy, _ in examples} == {"en", "zh"}
    by_decision = {d.id: d for d in decisions}
    for similarity, method, copy, original in examples:
        d = by_decision[copy]
        assert (d.method, d.duplicate_of, f"{d.similarity:.3f}") == (method, original, similarity)


def test_snippets_fit_one_line_and_start_near_the_difference() -> None:
    base = "同一段新闻正文，" * 10
    copy, original = demo.pair_snippets(base + "错别字在这里得。", base + "错别字在这里的。")
    assert copy != original and copy.startswith("…") and "得" in copy and "的" in original
    for text in (copy, original, demo.clip("x" * 500, 0)):
        assert sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text) <= 62
