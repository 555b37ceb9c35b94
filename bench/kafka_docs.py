"""Documents for the Kafka benchmarks: corpus texts (or synthetic ones), reused in passes.

`DocSource.doc(i)` is document number `i` as a (key, JSON value) pair. Texts come from the
evaluation corpus ``bench/data/corpus-20000-s7.jsonl`` when it exists (``python -m
bench.corpus --out bench/data/corpus-20000-s7.jsonl --docs 20000 --seed 7``), else synthetic
1-5 KB texts of which ~25% are near-duplicates. Beyond the corpus size the texts are reused
with a per-pass substitution (ASCII letters rotated, CJK ideographs shifted), so every pass is
a new set of documents with the corpus's own duplicate structure and sizes.
"""

from __future__ import annotations

import functools
import json
import random
import sys
import time
from dataclasses import dataclass

import numpy as np

from bench.corpus import DATA_DIR, ensure_corpus, read_jsonl

CORPUS_PATH = DATA_DIR / "corpus-20000-s7.jsonl"


def log(msg: str) -> None:
    """Progress goes to stderr; the table and nothing else to stdout."""
    print(f"[bench_kafka {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class BenchError(RuntimeError):
    """A step failed or timed out; the message says which and why."""


@dataclass(frozen=True)
class Text:
    text: str
    lang: str | None


def load_texts(limit: int) -> tuple[list[Text], str]:
    """Up to `limit` texts in stream order: the evaluation corpus (real text from this
    machine, built first if missing: a minute or two), or synthetic ones where it cannot be."""
    try:
        ensure_corpus(CORPUS_PATH, 20_000)
    except Exception as exc:  # e.g. no man pages or docs on this machine
        log(f"no evaluation corpus ({exc!r}): synthetic texts instead")
        return synthetic_texts(limit), "synthetic"
    rows = read_jsonl(CORPUS_PATH, limit)
    return [Text(r["text"], r.get("lang")) for r in rows], CORPUS_PATH.name


def synthetic_texts(n: int, seed: int = 7, dup_frac: float = 0.25) -> list[Text]:
    """1-5 KB texts from a random vocabulary; `dup_frac` of them edit an earlier text (5%)."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choices(letters, k=rng.randint(2, 10))) for _ in range(30_000)]
    texts: list[str] = []
    for _ in range(n):
        if texts and rng.random() < dup_frac:
            words = rng.choice(texts).split(" ")
            for _ in range(max(1, len(words) // 20)):
                words[rng.randrange(len(words))] = rng.choice(vocab)
            texts.append(" ".join(words))
        else:
            texts.append(" ".join(rng.choices(vocab, k=rng.randint(170, 850))))
    return [Text(t, "en") for t in texts]


def pass_table(k: int) -> np.ndarray:
    """Code point map of pass `k` over the BMP: ASCII letters rotated, CJK ideographs shifted."""
    table = np.arange(0x10000, dtype=np.uint32)
    shift = 1 + (k - 1) % 25
    for base in (ord("a"), ord("A")):
        table[base : base + 26] = base + (np.arange(26) + shift) % 26
    lo, span = 0x4E00, 0x9FFF - 0x4E00 + 1
    table[lo : lo + span] = lo + (np.arange(span) + (k * 7919) % span) % span
    return table


@functools.lru_cache(maxsize=2)
def _tables(k: int) -> tuple[np.ndarray, bytes]:
    table = pass_table(k)
    return table, table[:256].astype(np.uint8).tobytes()


def pass_variant(text: str, k: int) -> str:
    """Pass `k` of a text (`pass_table`); pass 0 is the text itself."""
    if k == 0:
        return text
    table, ascii_table = _tables(k)
    if text.isascii():
        return text.encode().translate(ascii_table).decode()
    cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    mapped = np.where(cps < 0x10000, table[np.minimum(cps, 0xFFFF)], cps)
    return mapped.tobytes().decode("utf-32-le")


class DocSource:
    """JSON documents number 0, 1, ...: pass k = i // len(texts) uses the pass-k variant."""

    def __init__(self, texts: list[Text]) -> None:
        if not texts:
            raise BenchError("no texts to build documents from")
        self.texts = texts

    def text(self, i: int) -> Text:
        k, j = divmod(i, len(self.texts))
        t = self.texts[j]
        return t if k == 0 else Text(pass_variant(t.text, k), t.lang)

    def doc(self, i: int, prefix: str) -> tuple[bytes, bytes]:
        """(key, value) of document `i`; the key is its id."""
        t = self.text(i)
        doc_id = f"{prefix}{i:07d}"
        obj: dict[str, str] = {"id": doc_id, "text": t.text}
        if t.lang:
            obj["lang"] = t.lang
        return doc_id.encode(), json.dumps(obj, ensure_ascii=False).encode()
