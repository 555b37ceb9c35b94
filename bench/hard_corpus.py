"""A harder evaluation corpus: many locales, many short texts, edits calibrated near the threshold.

Built from text on this Debian machine (nothing downloaded; ``apt-get install manpages-de
manpages-fr ... manpages-zh`` adds locales): man pages of every locale under
``/usr/share/man/<locale>/``, English man pages, Debian copyright files and the common licences.
Base documents come in three length bands, by design:

* ``short``: single paragraphs of 40-300 characters (usually fewer than 256 shingles), from man
  pages of every locale and copyright files;
* ``medium`` and ``long``: whole pages or chunks of them (300-3,000 and 3,000-20,000 chars).

No locale exceeds ``max_locale_share`` of the bases, so English does not dominate.

Copies (``copy_frac`` of the stream, some of them copies of copies) are edited until the exact
character 5-gram Jaccard with their parent reaches a target drawn mostly from [0.7, 0.9]:
the edit amount is found by bisection against the exact shingle sets. Kinds: character
substitution / insertion / deletion (CJK text gets CJK characters), word substitution /
insertion / deletion, truncation, boilerplate (real text of the same locale added as header and
footer), paragraph reordering plus character edits, mixed word + character edits, and exact or
format-only copies. Each record keeps ``parent_jaccard``, the Jaccard actually reached.

With ``--levels`` the copies are edited by fixed amounts instead (1-30% of characters or
words, cuts and additions of 1-30%), the usual way held-out corpora are made.

Output: JSONL ``{"id", "text", "lang", "script", "band", "source", "mutation", "target",
"parent", "parent_jaccard"}`` in stream order (``target`` is the edit amount with
``--levels``). Usage::

    python -m bench.hard_corpus --docs 20000 --seed 11   # bench/data/hard-20000-s11.jsonl
    python -m bench.hard_corpus --docs 20000 --seed 12 --levels
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import os
import random
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from bench.corpus import DATA_DIR, write_jsonl
from bench.corpus_mutator import Mutator
from bench.corpus_sources import (
    COPYRIGHT_GLOB,
    LICENSE_DIR,
    read_man,
    read_plain,
    split_chunks,
)
from bench.textnorm import jaccard, normalize, shingle_set

MAN_ROOT = "/usr/share/man"
_CJK_RE = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_CYR_RE = re.compile("[\u0400-\u04ff]")
_LETTER_RE = re.compile(r"[^\W\d_]")
_PARA_RE = re.compile(r"\n[ \t]*\n+")
BANDS = (("short", 0, 300), ("medium", 300, 3000), ("long", 3000, 10**9))
KINDS: tuple[tuple[str, float], ...] = (
    ("char_sub", 0.12),
    ("char_ins", 0.08),
    ("char_del", 0.10),
    ("word_sub", 0.10),
    ("word_ins", 0.07),
    ("word_del", 0.08),
    ("truncate", 0.10),
    ("boilerplate", 0.10),
    ("reorder_edit", 0.07),
    ("mixed", 0.08),
    ("exact", 0.05),
    ("format", 0.05),
)


def script_of(text: str) -> str:
    """``cjk`` (>= 10% of letters Han/kana/Hangul), ``cyrillic`` (>= 30%) or ``latin``."""
    letters = len(_LETTER_RE.findall(text)) or 1
    if len(_CJK_RE.findall(text)) >= 0.1 * letters:
        return "cjk"
    if len(_CYR_RE.findall(text)) >= 0.3 * letters:
        return "cyrillic"
    return "latin"


def band_of(text: str) -> str:
    """Length band of a text by characters of its normalised form."""
    n = len(normalize(text))
    return next(name for name, lo, hi in BANDS if lo <= n < hi)


def _man_files() -> dict[str, list[str]]:
    """locale -> man page paths (``en`` for the untranslated sections)."""
    out: dict[str, list[str]] = {"en": sorted(glob.glob(f"{MAN_ROOT}/man[1-8]/*"))}
    for loc_dir in sorted(glob.glob(f"{MAN_ROOT}/*/")):
        loc = os.path.basename(loc_dir.rstrip("/"))
        if not loc.startswith("man"):
            out[loc] = sorted(glob.glob(f"{loc_dir}man[1-8]/*"))
    return out


def collect_bases(seed: int, per_locale: int) -> list[dict]:
    """Read up to ``per_locale`` pages per locale plus copyright and licence files; return
    whole/chunked documents and short paragraphs, deduplicated by normalised text."""
    rng = random.Random(seed)
    items: list[tuple[str, str, str]] = []  # (lang, source, path)
    for loc, paths in _man_files().items():
        for p in rng.sample(paths, min(len(paths), per_locale)):
            items.append((loc, f"man:{loc}/{os.path.basename(p)}", p))
    for p in sorted(glob.glob(COPYRIGHT_GLOB)):
        items.append(("en", f"copyright:{p.split('/')[-2]}", p))
    for p in sorted(glob.glob(f"{LICENSE_DIR}/*")):
        items.append(("en", f"license:{os.path.basename(p)}", p))
    seen: set[str] = set()
    out: list[dict] = []

    def add(text: str, lang: str, source: str) -> None:
        key = hashlib.sha1(normalize(text).encode()).hexdigest()
        if text and key not in seen:
            seen.add(key)
            out.append({"text": text, "lang": lang, "source": source})

    for lang, source, path in items:
        reader = read_man if source.startswith("man:") else read_plain
        text = reader(path)
        if not text:
            continue
        text = text.replace("\r\n", "\n").replace("\ufffd", "").strip()
        for k, chunk in enumerate(split_chunks(text, random.Random(source), 20000, 4)):
            chunk = chunk.strip()
            if len(chunk) >= 300:
                add(chunk, lang, f"{source}#{k}")
        for k, para in enumerate(_PARA_RE.split(text)):
            para = " ".join(para.split())
            if 40 <= len(para) < 300:
                add(para, lang, f"{source}~{k}")
    return out


def choose_bases(
    pool: list[dict], n: int, rng: random.Random, max_locale_share: float
) -> list[dict]:
    """``n`` bases: a third from each length band where possible, no locale above its share."""
    by_band: dict[str, list[dict]] = {}
    for d in pool:
        by_band.setdefault(band_of(d["text"]), []).append(d)
    cap = max(1, round(max_locale_share * n))
    per_lang: Counter[str] = Counter()
    chosen: list[dict] = []
    for name, _, _ in BANDS:
        docs = by_band.get(name, [])
        rng.shuffle(docs)
        want = n // 3 if name != "long" else n - len(chosen)
        got = 0
        for d in docs:
            if got == want:
                break
            if per_lang[d["lang"]] < cap // 3 + (cap if name == "long" else 0):
                per_lang[d["lang"]] += 1
                chosen.append(d)
                got += 1
    return chosen


class Calibrator:
    """Edits a text until its character 5-gram Jaccard with the original reaches a target."""

    def __init__(self, mutator: Mutator, rng: random.Random) -> None:
        self.m = mutator
        self.rng = rng

    def _editor(self, kind: str, text: str, lang: str) -> Callable[[float, int], str | None]:
        m = self.m

        def with_rng(fn: Callable[[], str | None], sub: int) -> str | None:
            m.rng = random.Random(sub)
            return fn()

        if kind.startswith("char_"):
            op = kind[5:]
            return lambda x, s: with_rng(lambda: m._char_edit(text, op, x), s)
        if kind.startswith("word_"):
            op = kind[5:]
            return lambda x, s: with_rng(lambda: m._word_edit(text, lang, op, x), s)
        if kind == "truncate":
            return lambda x, s: text[: max(1, round((1 - x) * len(text)))]
        if kind == "boilerplate":
            return lambda x, s: with_rng(
                lambda: m._header_footer(text, lang, max(1, round(100 * x))), s
            )
        if kind == "reorder_edit":
            moved = m._para_reorder(text, lang, 100) or text
            return lambda x, s: with_rng(lambda: m._char_edit(moved, "sub", x), s)
        if kind == "mixed":

            def mixed() -> Callable[[float, int], str | None]:
                def run(x: float, s: int) -> str | None:
                    words = with_rng(lambda: m._word_edit(text, lang, "sub", x / 2), s) or text
                    return with_rng(lambda: m._char_edit(words, "del", x / 2), s + 1)

                return run

            return mixed()
        raise ValueError(kind)

    def at_level(self, text: str, lang: str, kind: str, amount: float) -> tuple[str, float] | None:
        """Edit by a fixed amount (fraction edited, cut or added); return the copy and its
        Jaccard with ``text``."""
        if kind in ("exact", "format"):
            return self.edit(text, lang, kind, 1.0)
        copy = self._editor(kind, text, lang)(amount, self.rng.randrange(2**31))
        if not copy or not copy.strip():
            return None
        return copy, jaccard(shingle_set(text), shingle_set(copy))

    def edit(self, text: str, lang: str, kind: str, target: float) -> tuple[str, float] | None:
        """Bisect the edit amount; return the copy closest to ``target`` and its Jaccard."""
        if kind == "exact":
            return text, 1.0
        if kind == "format":
            self.m.rng = random.Random(self.rng.random())
            return self.m._format(text, lang, 0), 1.0
        base = shingle_set(text)
        editor = self._editor(kind, text, lang)
        sub = self.rng.randrange(2**31)
        lo, hi = 0.0, 1.0 if kind in ("truncate", "boilerplate") else 0.6
        if kind == "truncate":
            hi = 0.7
        best: tuple[float, str, float] | None = None
        for _ in range(9):
            x = (lo + hi) / 2
            copy = editor(x, sub)
            if not copy or not copy.strip():
                hi = x
                continue
            j = jaccard(base, shingle_set(copy))
            if best is None or abs(j - target) < best[0]:
                best = (abs(j - target), copy, j)
            if j > target:
                lo = x
            else:
                hi = x
        return None if best is None else (best[1], best[2])


def draw_target(rng: random.Random) -> float:
    """Target Jaccard: mostly in [0.7, 0.9], some above and below."""
    roll = rng.random()
    if roll < 0.65:
        return rng.uniform(0.7, 0.9)
    if roll < 0.85:
        return rng.uniform(0.9, 0.99)
    return rng.uniform(0.5, 0.7)


LEVELS = (0.01, 0.03, 0.05, 0.1, 0.2, 0.3)


def build(
    n_docs: int, seed: int, copy_frac: float, chain_frac: float, calibrated: bool = True
) -> list[dict]:
    """Corpus records in stream order."""
    rng = random.Random(seed)
    pool = collect_bases(seed, per_locale=max(60, n_docs // 25))
    n_base = round(n_docs * (1 - copy_frac))
    bases = choose_bases(pool, n_base, rng, max_locale_share=0.25)
    docs: list[dict] = []
    for d in bases:
        docs.append({**d, "mutation": None, "target": None, "parent": None, "pj": None})
        docs[-1]["t"] = rng.random()
    from bench.corpus_sources import Doc

    mutator = Mutator(rng, [Doc(text=d["text"], lang=d["lang"], source=d["source"]) for d in bases])
    calib = Calibrator(mutator, rng)
    kinds, weights = zip(*KINDS, strict=True)
    copies: list[int] = []
    while len(docs) < n_docs:
        chain = copies and rng.random() < chain_frac
        pidx = rng.choice(copies) if chain else rng.randrange(len(bases))
        parent = docs[pidx]
        kind = rng.choices(kinds, weights)[0]
        if calibrated:
            target = draw_target(rng)
            made = calib.edit(parent["text"], parent["lang"], kind, target)
        else:
            target = rng.choice(LEVELS)  # the edit amount, not a Jaccard
            made = calib.at_level(parent["text"], parent["lang"], kind, target)
        if made is None:
            continue
        text, pj = made
        t = parent["t"] + (1.0 - parent["t"]) * rng.random() ** 0.5
        docs.append(
            {
                "text": text,
                "lang": parent["lang"],
                "source": parent["source"],
                "mutation": kind,
                "target": round(target, 4) if kind not in ("exact", "format") else 1.0,
                "parent": pidx,
                "pj": round(pj, 6),
                "t": t,
            }
        )
        copies.append(len(docs) - 1)
    order = sorted(range(len(docs)), key=lambda i: (docs[i]["t"], i))
    ids = {old: f"h{pos:06d}" for pos, old in enumerate(order)}
    return [
        {
            "id": ids[i],
            "text": docs[i]["text"],
            "lang": docs[i]["lang"],
            "script": script_of(docs[i]["text"]),
            "band": band_of(docs[i]["text"]),
            "source": docs[i]["source"],
            "mutation": docs[i]["mutation"],
            "target": docs[i]["target"],
            "parent": ids[docs[i]["parent"]] if docs[i]["parent"] is not None else None,
            "parent_jaccard": docs[i]["pj"],
        }
        for i in order
    ]


def ensure_hard_corpus(
    n_docs: int, seed: int, path: Path | None = None, calibrated: bool = True
) -> Path:
    """Build the corpus at ``path`` (default under bench/data) unless it exists."""
    kind = "hard" if calibrated else "levels"
    path = path or DATA_DIR / f"{kind}-{n_docs}-s{seed}.jsonl"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(build(n_docs, seed, 0.28, 0.15, calibrated), path)
    return path


def main(argv: list[str] | None = None) -> None:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--levels",
        action="store_true",
        help="edit by fixed amounts (1-30%%) instead of calibrating to a target Jaccard",
    )
    args = ap.parse_args(argv)
    path = ensure_hard_corpus(args.docs, args.seed, args.out, calibrated=not args.levels)
    from bench.corpus import read_jsonl

    recs = read_jsonl(path)
    for field in ("lang", "script", "band", "mutation"):
        print(field, dict(Counter(str(r[field]) for r in recs).most_common()))


if __name__ == "__main__":
    main()
