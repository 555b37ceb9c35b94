"""Deterministic evaluation corpus built from real text shipped on a Debian machine.

Sources (all read locally, nothing is downloaded except an optional Debian package):

* ``copyright``: ``/usr/share/doc/*/copyright`` (lots of near-identical licence boilerplate),
* ``man``: English man pages ``/usr/share/man/man[1-8]/*.gz``, troff markup roughly stripped
  (no template family such as the ~16k ``gcloud`` pages may exceed 10% of the bases),
* ``doc``: README/NEWS/changelog/*.txt/*.md files under ``/usr/share/doc`` and info manuals,
* ``license``: ``/usr/share/common-licenses/*``,
* ``man-zh``: Chinese man pages from the Debian package ``manpages-zh``
  (``/usr/share/man/zh_CN`` and ``zh_TW``); installed with apt-get when absent.

Files longer than ``--max-bytes`` (20 KB) are split at paragraph breaks into up to 8 chunks
of 2-20 KB.  Identical base documents (equal after the engine's normalisation) are removed;
near-identical ones are kept, the exact ground truth accounts for them.  Copies are not
re-capped, so an insertion or header mutation may exceed ``--max-bytes`` slightly.

A fraction of the stream consists of mutated copies of earlier documents (and of earlier
copies, forming chains).  Mutations are recorded as ``"<kind>:<level>"``:

* ``char_sub|char_ins|char_del|word_sub|word_ins|word_del`` at level 1, 5, 10, 20, 30
  (percent of characters/words edited),
* ``para_reorder`` at 20, 50, 100 (percent of paragraphs whose position is shuffled),
* ``header_footer`` at 5, 10, 20, 30 (added real text, percent of the original length),
* ``truncate`` at 70, 80, 90, 95 (percent of the characters kept, prefix),
* ``exact:0`` (verbatim copy) and ``format:0`` (case, whitespace and full-width changes that
  the normalisation removes).

Every copy appears after its parent in the stream, usually far after it.  Output is JSONL with
``{"id", "text", "lang", "source", "mutation", "parent"}`` plus a ``.meta.json`` summary.

This module assembles the stream (bases, copies, order, ids) and reads and writes corpora; the
base documents come from ``bench.corpus_sources`` (man pages through ``bench.troff``), the
copies from ``bench.corpus_mutator``.

Usage: ``python -m bench.corpus --out bench/data/corpus.jsonl --docs 20000 --seed 7``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

from bench.corpus_mutator import MUTATIONS, Mutator
from bench.corpus_sources import ZH_PACKAGE, Doc, collect_sources, ensure_zh_package

DATA_DIR = Path(__file__).resolve().parent / "data"


def _group(doc: Doc) -> str:
    """Template family of a document: man page name prefix (``gcloud``, ``git``, ...) or the
    Debian package of a doc file."""
    family, rest = doc.source.split(":", 1)
    if family == "doc":
        return "doc:" + rest.split("/", 1)[0]
    return family + ":" + re.split(r"[_.\-]", rest.split("/")[-1], maxsplit=1)[0]


def choose_bases(
    families: dict[str, list[Doc]], n_base: int, rng: random.Random, zh_frac: float = 0.15
) -> list[Doc]:
    """Pick base documents: licence and copyright files (all of them, or 20% of the bases if
    fewer), Chinese pages up to ``zh_frac`` of the bases, English man pages and
    /usr/share/doc texts for the rest.

    No template family may exceed 10% of the bases (this machine has ~16k near-identical
    ``gcloud`` man pages, which would otherwise dominate)."""
    chosen = list(families["license"]) + list(families["copyright"])
    boiler_cap = round(0.2 * n_base)
    if len(chosen) > boiler_cap:
        chosen = rng.sample(chosen, boiler_cap)
    zh = families["man-zh"]
    chosen += rng.sample(zh, min(len(zh), max(0, round(zh_frac * n_base))))
    cap = max(20, n_base // 10)
    groups: dict[str, list[Doc]] = {}
    for doc in families["man"] + families["doc"]:
        groups.setdefault(_group(doc), []).append(doc)
    english = [d for g in groups.values() for d in (rng.sample(g, cap) if len(g) > cap else g)]
    chosen += rng.sample(english, min(len(english), max(0, n_base - len(chosen))))
    if len(chosen) > n_base:
        chosen = rng.sample(chosen, n_base)
    return chosen


def build_corpus(
    n_docs: int,
    seed: int,
    copy_frac: float,
    chain_frac: float,
    min_bytes: int,
    max_bytes: int,
    install_zh: bool,
) -> tuple[list[dict], dict]:
    """Build the corpus records (stream order) and a metadata summary."""
    rng = random.Random(seed)
    with_zh = ensure_zh_package(install_zh)
    families = collect_sources(min_bytes, max_bytes, with_zh, seed)
    n_base = round(n_docs * (1.0 - copy_frac))
    bases = choose_bases(families, n_base, rng)
    if len(bases) < n_base:
        print(
            f"note: only {len(bases)} distinct base documents available; "
            f"filling the stream with {n_docs - len(bases)} copies",
            file=sys.stderr,
        )
    for doc in bases:
        doc.t = rng.random()
    mutator = Mutator(rng, bases)
    kinds = [m[0] for m in MUTATIONS]
    weights = [m[2] for m in MUTATIONS]
    levels = {m[0]: m[1] for m in MUTATIONS}
    docs: list[Doc] = list(bases)
    copies: list[int] = []
    while len(docs) < n_docs:
        use_chain = copies and rng.random() < chain_frac
        parent_idx = rng.choice(copies) if use_chain else rng.randrange(len(bases))
        parent = docs[parent_idx]
        kind = rng.choices(kinds, weights)[0]
        level = rng.choice(levels[kind])
        text = mutator.apply(parent.text, parent.lang, kind, level)
        if not text or not text.strip():
            continue
        t = parent.t + (1.0 - parent.t) * rng.random() ** 0.5
        docs.append(
            Doc(
                text=text,
                lang=parent.lang,
                source=parent.source,
                mutation=f"{kind}:{level}",
                parent=parent_idx,
                t=t,
            )
        )
        copies.append(len(docs) - 1)
    order = sorted(range(len(docs)), key=lambda i: (docs[i].t, i))
    ids = {old: f"doc{pos:06d}" for pos, old in enumerate(order)}
    records = [
        {
            "id": ids[i],
            "text": docs[i].text,
            "lang": docs[i].lang,
            "source": docs[i].source,
            "mutation": docs[i].mutation,
            "parent": ids[docs[i].parent] if docs[i].parent is not None else None,
        }
        for i in order
    ]
    meta = {
        "docs": len(records),
        "seed": seed,
        "copy_frac": copy_frac,
        "chain_frac": chain_frac,
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "zh_package": ZH_PACKAGE if with_zh else None,
        "pool_sizes": {k: len(v) for k, v in families.items()},
    }
    return records, meta


def corpus_stats(records: list[dict]) -> dict:
    """Summary statistics of a corpus (sizes, languages, families, mutation kinds)."""
    sizes = sorted(len(r["text"].encode("utf-8")) for r in records)
    n = len(sizes)
    copy_ids = {r["id"] for r in records if r["mutation"] is not None}

    def pct(p: float) -> int:
        return sizes[min(n - 1, int(p / 100 * n))] if n else 0

    return {
        "docs": n,
        "base_docs": sum(r["mutation"] is None for r in records),
        "copies": sum(r["mutation"] is not None for r in records),
        "chained_copies": sum(r["parent"] in copy_ids for r in records),
        "lang": dict(Counter(r["lang"] for r in records)),
        "family": dict(Counter(r["source"].split(":", 1)[0] for r in records)),
        "mutation_kind": dict(Counter((r["mutation"] or "none").split(":")[0] for r in records)),
        "bytes_total": sum(sizes),
        "bytes_p5_p50_p95_max": [pct(5), pct(50), pct(95), sizes[-1] if n else 0],
        "chars_total": sum(len(r["text"]) for r in records),
    }


def write_jsonl(records: list[dict], path: Path) -> str:
    """Write records as JSONL and return the sha256 of the file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with path.open("w", encoding="utf-8") as fh:
        for rec in records:
            line = json.dumps(rec, ensure_ascii=False) + "\n"
            fh.write(line)
            digest.update(line.encode("utf-8"))
    return digest.hexdigest()


def read_jsonl(path: Path, limit: int | None = None) -> list[dict]:
    """Read the first ``limit`` records (all when None) of a JSONL corpus."""
    records: list[dict] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if limit is not None and len(records) >= limit:
                break
            records.append(json.loads(line))
    return records


def meta_path(corpus: Path) -> Path:
    """Sidecar metadata file of a corpus."""
    return corpus.with_suffix(".meta.json")


def write_corpus(
    path: Path,
    n_docs: int,
    seed: int,
    copy_frac: float = 0.35,
    chain_frac: float = 0.15,
    min_bytes: int = 500,
    max_bytes: int = 20000,
    install_zh: bool = True,
) -> dict:
    """Build the corpus, write it and its ``.meta.json`` next to it; return the metadata."""
    t0 = time.perf_counter()
    records, meta = build_corpus(
        n_docs, seed, copy_frac, chain_frac, min_bytes, max_bytes, install_zh
    )
    meta["sha256"] = write_jsonl(records, path)
    meta["stats"] = corpus_stats(records)
    meta["build_seconds"] = round(time.perf_counter() - t0, 2)
    meta_path(path).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    return meta


def ensure_corpus(path: Path, n_docs: int, seed: int = 7) -> Path:
    """Build ``path`` (default parameters) unless a corpus of that size and seed is there."""
    mp = meta_path(path)
    if path.exists() and mp.exists():
        meta = json.loads(mp.read_text())
        if meta.get("docs") == n_docs and meta.get("seed") == seed:
            return path
    meta = write_corpus(path, n_docs, seed)
    stats = meta["stats"]
    print(
        f"built {path}: {stats['docs']} docs ({stats['base_docs']} base, {stats['copies']} "
        f"copies), languages {stats['lang']}, {meta['build_seconds']}s",
        file=sys.stderr,
    )
    return path


def main(argv: list[str] | None = None) -> None:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DATA_DIR / "corpus.jsonl")
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--copy-frac", type=float, default=0.35, help="fraction of the stream that are copies"
    )
    ap.add_argument(
        "--chain-frac", type=float, default=0.15, help="fraction of copies made from copies"
    )
    ap.add_argument("--min-bytes", type=int, default=500)
    ap.add_argument("--max-bytes", type=int, default=20000)
    ap.add_argument(
        "--no-install", action="store_true", help="never apt-get install the Chinese package"
    )
    args = ap.parse_args(argv)
    meta = write_corpus(
        args.out,
        args.docs,
        args.seed,
        args.copy_frac,
        args.chain_frac,
        args.min_bytes,
        args.max_bytes,
        not args.no_install,
    )
    print(json.dumps(meta, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
