"""The corpus's mutations: how a copy of a base document differs from it.

Owns the mutation kinds and their levels (`MUTATIONS`, with their relative frequencies) and
`Mutator`, which applies one to a text with a seeded RNG: character and word edits (words
from per-language vocabularies drawn from the bases), paragraph reordering, real text added
as header and footer, truncation, verbatim copies and format changes the normalisation undoes.
"""

from __future__ import annotations

import random
import re

from bench.corpus_sources import CJK_RE, PARA_SPLIT, WORD_RE, Doc

EDIT_KINDS = ("char_sub", "char_ins", "char_del", "word_sub", "word_ins", "word_del")
EDIT_LEVELS = (1, 5, 10, 20, 30)
# (kind, levels, weight): weights are relative frequencies of each mutation kind.
MUTATIONS: tuple[tuple[str, tuple[int, ...], float], ...] = (
    *((kind, EDIT_LEVELS, 0.10) for kind in EDIT_KINDS),
    ("para_reorder", (20, 50, 100), 0.09),
    ("header_footer", (5, 10, 20, 30), 0.09),
    ("truncate", (70, 80, 90, 95), 0.10),
    ("exact", (0,), 0.06),
    ("format", (0,), 0.06),
)


class Mutator:
    """Applies the mutation kinds to texts with a seeded RNG and per-language vocabularies."""

    def __init__(self, rng: random.Random, bases: list[Doc]) -> None:
        self.rng = rng
        self.bases_by_lang: dict[str, list[Doc]] = {}
        for doc in bases:
            self.bases_by_lang.setdefault(doc.lang, []).append(doc)
        self.vocab: dict[str, list[str]] = {}
        for lang, docs in self.bases_by_lang.items():
            sample = rng.sample(docs, min(len(docs), 1500))
            words = [w for d in sample for w in WORD_RE.findall(d.text)]
            self.vocab[lang] = words or ["x"]

    def apply(self, text: str, lang: str, kind: str, level: int) -> str | None:
        """Return the mutated text, or None when ``kind`` does not apply to ``text``."""
        if kind.startswith("char_"):
            return self._char_edit(text, kind[5:], level / 100)
        if kind.startswith("word_"):
            return self._word_edit(text, lang, kind[5:], level / 100)
        return getattr(self, f"_{kind}")(text, lang, level)

    def _char_edit(self, text: str, op: str, rate: float) -> str:
        rng = self.rng
        n = len(text)
        positions = set(rng.sample(range(n), max(1, round(rate * n))))
        chars = list(text)
        for pos in positions:
            if op == "sub":
                chars[pos] = text[rng.randrange(n)]
            elif op == "ins":
                chars[pos] = text[rng.randrange(n)] + chars[pos]
            else:
                chars[pos] = ""
        return "".join(chars)

    def _word_edit(self, text: str, lang: str, op: str, rate: float) -> str | None:
        rng = self.rng
        spans = [m.span() for m in WORD_RE.finditer(text)]
        if len(spans) < 5:
            return None
        chosen = sorted(rng.sample(range(len(spans)), max(1, round(rate * len(spans)))))
        vocab = self.vocab.get(lang) or self.vocab["en"]
        sep = "" if lang == "zh" else " "
        parts: list[str] = []
        prev = 0
        for idx in chosen:
            start, end = spans[idx]
            parts.append(text[prev:start])
            word = text[start:end]
            if op == "sub":
                parts.append(rng.choice(vocab))
            elif op == "ins":
                parts.append(rng.choice(vocab) + (sep if CJK_RE.match(word) is None else ""))
                parts.append(word)
            elif end < len(text) and text[end] == " ":
                end += 1
            prev = end
        parts.append(text[prev:])
        return "".join(parts)

    @staticmethod
    def _blocks(text: str) -> tuple[list[str], str]:
        paras = PARA_SPLIT.split(text)
        if len(paras) >= 3:
            return paras, "\n\n"
        return text.split("\n"), "\n"

    def _para_reorder(self, text: str, lang: str, level: int) -> str | None:
        blocks, joiner = self._blocks(text)
        if len(blocks) < 3:
            return None
        k = max(2, round(level / 100 * len(blocks)))
        idx = sorted(self.rng.sample(range(len(blocks)), k))
        moved = idx[:]
        while moved == idx:
            self.rng.shuffle(moved)
        new = blocks[:]
        for dst, src in zip(idx, moved, strict=True):
            new[dst] = blocks[src]
        return joiner.join(new)

    def _header_footer(self, text: str, lang: str, level: int) -> str:
        rng = self.rng
        total = max(20, round(level / 100 * len(text)))
        donor = rng.choice(self.bases_by_lang[lang]).text
        while len(donor) < total:
            donor += "\n" + rng.choice(self.bases_by_lang[lang]).text
        start = rng.randrange(len(donor) - total + 1)
        extra = donor[start : start + total]
        split = rng.randint(0, total)
        header, footer = extra[:split].strip(), extra[split:].strip()
        return "\n\n".join(p for p in (header, text, footer) if p)

    def _truncate(self, text: str, lang: str, level: int) -> str:
        return text[: max(1, round(level / 100 * len(text)))]

    def _exact(self, text: str, lang: str, level: int) -> str:
        return text

    def _format(self, text: str, lang: str, level: int) -> str:
        """Changes the normalisation undoes: case, whitespace runs, full-width ASCII."""
        rng = self.rng
        whitespace = (" ", "\n", "  ", "\t", " \n ", "\n\n")
        pieces = re.split(r"(\s+)", text)
        out: list[str] = []
        for piece in pieces:
            if not piece:
                continue
            if piece.isspace():
                out.append(rng.choice(whitespace) if rng.random() < 0.3 else piece)
                continue
            roll = rng.random()
            if roll < 0.05:
                piece = piece.upper()
            elif roll < 0.08 and piece.isascii():
                piece = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in piece)
            out.append(piece)
        return "".join(out)
