"""What Baidu's "n longest sentences" signature would add to the engine, and what it costs.

Seed 001 describes it: hash the n longest sentences of a text (n = 3); two texts with the same
signature are duplicates. Here, over a hard corpus (:mod:`bench.hard_corpus`), in stream order:
the engine decides every document (default settings at each threshold), and a document is
also flagged when an earlier document has its signature (an exact-key index over every
document, as the engine indexes duplicates too). Reported per threshold, against the exact
Jaccard truth (:mod:`bench.ground_truth`): the engine alone, the signature alone, both
(engine OR signature), and the engine with the method built in (``longest_sentences`` = n,
which matches only documents no candidate matches by Jaccard); how many signature matches have a true Jaccard below the threshold
(false positives; also how many of those are nevertheless copies of the same base document,
edited below the threshold, rather than unrelated texts), and how many of the copies wrapped
in boilerplate (a header and a
footer of real text, mutation ``boilerplate``) are flagged as duplicates at all, whatever
their Jaccard with the parent (the recall a boilerplate-stripping user wants).

    python -m bench.bench_sentences --docs 20000 --seed 31 [--sentences 3] [--min-chars 1]
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from pathlib import Path

import mmh3
import numpy as np

from bench.bench_accuracy import ENGINE_SETTINGS, Truth, run_engine
from bench.corpus import read_jsonl
from bench.hard_corpus import ensure_hard_corpus
from bench.textnorm import normalize

# a sentence ends at ., !, ? (before white space or the end), at CJK full stops, or a line break
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|[\u3002\uff01\uff1f]+|\n")


def longest_sentences(text: str, n: int, min_chars: int = 1) -> list[str]:
    """The `n` longest normalised sentences of `text` (ties broken by text), or [] when the
    text has fewer than `n` of at least `min_chars` characters (a shorter text is its own
    signature: an exact copy)."""
    sentences = {s for s in map(normalize, _SENTENCE_END.split(text)) if len(s) >= min_chars}
    if len(sentences) < n:
        return []
    return sorted(sentences, key=lambda s: (-len(s), s))[:n]


def signature(text: str, n: int, min_chars: int = 1) -> int | None:
    """A 64-bit MurmurHash3 of the `n` longest sentences (None when there are fewer)."""
    chosen = longest_sentences(text, n, min_chars)
    if not chosen:
        return None
    return mmh3.hash64("\n".join(chosen).encode(), 0x6E656172, signed=False)[0]


def signature_matches(texts: Sequence[str], n: int, min_chars: int = 1) -> list[int | None]:
    """Per document, the earliest earlier document with the same signature (or None)."""
    first: dict[int, int] = {}
    out: list[int | None] = []
    for i, text in enumerate(texts):
        sig = signature(text, n, min_chars)
        if sig is None:
            out.append(None)
            continue
        out.append(first.get(sig))
        first.setdefault(sig, i)
    return out


def families(records: Sequence[dict]) -> list[str]:
    """Per document, the id of the base document its chain of copies starts from."""
    root: dict[str, str] = {}
    for r in records:
        root[r["id"]] = root.get(r["parent"], r["parent"]) if r["parent"] else r["id"]
    return [root[r["id"]] for r in records]


def _prf(pred: np.ndarray, true: np.ndarray) -> dict[str, float | int]:
    tp, fp, fn = int((pred & true).sum()), int((pred & ~true).sum()), int((~pred & true).sum())
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return {"tp": tp, "fp": fp, "fn": fn, "precision": p, "recall": r, "f1": 2 * p * r / (p + r)}


def main(argv: list[str] | None = None) -> None:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--corpus", type=Path)
    ap.add_argument("--sentences", type=int, default=3, help="n of the n longest sentences")
    ap.add_argument("--min-chars", type=int, default=1, help="ignore shorter sentences")
    ap.add_argument("--thresholds", default="0.7,0.8,0.9")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    corpus = args.corpus or ensure_hard_corpus(args.docs, args.seed)
    records = read_jsonl(corpus)
    docs = [(r["id"], r["text"]) for r in records]
    texts = [t for _, t in docs]
    truth = Truth(corpus, texts, "char", 5)
    matches = signature_matches(texts, args.sentences, args.min_chars)
    sig = np.array([m is not None for m in matches])
    boiler = np.array([r["mutation"] == "boilerplate" for r in records])
    pair_j = np.array(
        [truth.jaccard(i, m) if m is not None else 1.0 for i, m in enumerate(matches)]
    )
    family = families(records)
    related = np.array([m is not None and family[m] == family[i] for i, m in enumerate(matches)])
    with_sig = sum(signature(t, args.sentences, args.min_chars) is not None for t in texts)
    print(f"corpus {corpus}: {len(texts)} docs, {with_sig} with >= {args.sentences} sentences")
    print(f"{boiler.sum()} boilerplate-wrapped copies; {sig.sum()} signature matches")
    report: dict[str, object] = {
        "corpus": str(corpus),
        "sentences": args.sentences,
        "min_chars": args.min_chars,
    }
    for t in (float(x) for x in args.thresholds.split(",")):
        ENGINE_SETTINGS.pop("longest_sentences", None)
        engine = np.array([dup for _, dup, _ in run_engine(docs, "char", 5, t)])
        ENGINE_SETTINGS["longest_sentences"] = args.sentences
        with_method = run_engine(docs, "char", 5, t)
        ENGINE_SETTINGS.pop("longest_sentences")
        on = np.array([dup for _, dup, _ in with_method])
        pos = {r["id"]: i for i, r in enumerate(records)}
        of = [pos[d] if d is not None else None for _, _, d in with_method]
        related_on = np.array([m is not None and family[m] == family[i] for i, m in enumerate(of)])
        true = truth.best >= t - 1e-9
        rows = {
            "engine": engine,
            "signature": sig,
            "engine+signature": engine | sig,
            f"engine, longest_sentences={args.sentences}": on,
        }
        out = {name: _prf(pred, true) for name, pred in rows.items()}
        for name, pred in rows.items():
            out[name]["boilerplate_flagged"] = float(pred[boiler].mean())
        added = sig & ~engine
        out["added"] = {
            "documents": int(added.sum()),
            "true": int((added & true).sum()),
            "false": int((added & ~true).sum()),
            "pair_jaccard_below_t": int((sig & (pair_j < t - 1e-9)).sum()),
            "false_but_copies": int((added & ~true & related).sum()),
            "false_boilerplate": int((added & ~true & boiler).sum()),
        }
        added = on & ~engine
        out["added_by_the_engine_method"] = {
            "documents": int(added.sum()),
            "true": int((added & true).sum()),
            "false": int((added & ~true).sum()),
            "false_but_copies": int((added & ~true & related_on).sum()),
        }
        report[str(t)] = out
        print(f"\nt = {t}: {'':26} P      R      F1     FP    FN   boilerplate flagged")
        for name in rows:
            c = out[name]
            print(
                f"  {name:<32} {c['precision']:.4f} {c['recall']:.4f} {c['f1']:.4f} "
                f"{c['fp']:>5} {c['fn']:>5}   {c['boilerplate_flagged']:.3f}"
            )
        a = out["added"]
        print(
            f"  signature adds {a['documents']} flags: {a['true']} true, {a['false']} false; "
            f"{a['pair_jaccard_below_t']} signature pairs have Jaccard below t; of the false, "
            f"{a['false_but_copies']} are copies of the same base (edited below t), "
            f"{a['false_boilerplate']} boilerplate-wrapped"
        )
        a = out["added_by_the_engine_method"]
        print(
            f"  the engine's method adds {a['documents']}: {a['true']} true, {a['false']} false "
            f"({a['false_but_copies']} of them copies of the same base)"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
