"""Exact streaming ground truth: character 5-gram Jaccard of every document vs. all earlier ones.

For document ``i`` (stream order) we report the maximum exact Jaccard similarity of its 5-gram
set against every earlier document when that maximum is >= ``LOWER_BOUND`` (0.5), and the
list of earlier documents whose similarity is >= ``threshold`` (default 0.8).

Method: an all-pairs similarity join (PPJoin: prefix, positional and size filters) at
``t = LOWER_BOUND``, followed by exact verification of every surviving candidate.

* Shingles (see :mod:`bench.textnorm`) are hashed to 64 bits (a numba kernel mixing the
  UTF-32 code points with the murmur3 64-bit finaliser; collisions are negligible at this
  scale and :func:`self_check` verifies set sizes against the real string sets).
* Tokens are ranked by global document frequency ascending; each set is sorted by rank.
* Sets are processed by ascending size.  A pair with Jaccard >= t (overlap >= alpha =
  ceil(t/(1+t)*(|x|+|y|))) must share a token within the first ``|x| - ceil(t*|x|) + 1``
  tokens of the probing set and the first ``|y| - ceil(2t/(1+t)*|y|) + 1`` tokens of the
  indexed (smaller) set (prefix filter); it needs ``|y| >= t*|x|`` (size filter) and, at each
  shared token at positions (i, j), ``shared_so_far + min(|x|-i, |y|-j) >= alpha``
  (positional filter).  Survivors are verified by an exact merge intersection.

The result is cached next to the corpus as ``<corpus>.truth.json`` (keyed on the corpus
sha256, threshold and lower bound).  ``python -m bench.ground_truth --check`` validates the
join against brute force with Python string sets on a 500-document sample.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

from bench.corpus import DATA_DIR, read_jsonl
from bench.textnorm import jaccard, normalize, shingle_set

LOWER_BOUND = 0.5
DEFAULT_THRESHOLD = 0.8
_EPS = 1e-9

_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_SEED = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, inline="always")
def _fmix64(k: np.uint64) -> np.uint64:
    k ^= k >> np.uint64(33)
    k *= _M1
    k ^= k >> np.uint64(33)
    k *= _M2
    k ^= k >> np.uint64(33)
    return k


@njit(cache=True)
def _hash_docs(cps: np.ndarray, offsets: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique 64-bit shingle hashes per document (CSR: values, offsets)."""
    n_docs = offsets.shape[0] - 1
    out = np.empty(max(1, cps.shape[0]), dtype=np.uint64)
    out_off = np.zeros(n_docs + 1, dtype=np.int64)
    pos = 0
    for d in range(n_docs):
        lo, hi = offsets[d], offsets[d + 1]
        n = hi - lo
        start = pos
        if n > 0:
            n_sh = n - k + 1 if n >= k else 1
            width = min(n, k)
            for i in range(n_sh):
                x = np.uint64(0)
                y = np.uint64(width) << np.uint64(42)
                for j in range(width):
                    c = np.uint64(cps[lo + i + j])
                    if j < 3:
                        x |= c << np.uint64(21 * j)
                    else:
                        y |= c << np.uint64(21 * (j - 3))
                out[pos] = _fmix64(x ^ _fmix64(y ^ _SEED))
                pos += 1
            seg = np.sort(out[start:pos])
            m = 0
            for i in range(seg.shape[0]):
                if i == 0 or seg[i] != seg[i - 1]:
                    out[start + m] = seg[i]
                    m += 1
            pos = start + m
        out_off[d + 1] = pos
    return out[:pos].copy(), out_off


def hash_shingles(texts: list[str], k: int = 5, batch: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """Hash every text's normalised k-gram set: CSR ``(values uint64, offsets int64)``."""
    parts: list[np.ndarray] = []
    sizes: list[np.ndarray] = []
    for b in range(0, len(texts), batch):
        norms = [normalize(t).encode("utf-32-le") for t in texts[b : b + batch]]
        lens = np.fromiter((len(s) // 4 for s in norms), dtype=np.int64, count=len(norms))
        offsets = np.zeros(len(norms) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        cps = np.frombuffer(b"".join(norms), dtype=np.uint32)
        vals, off = _hash_docs(cps, offsets, k)
        parts.append(vals)
        sizes.append(np.diff(off))
    values = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    if sizes:
        np.cumsum(np.concatenate(sizes), out=offsets[1:])
    return values, offsets


@njit(cache=True)
def _sort_segments(tok: np.ndarray, off: np.ndarray) -> None:
    for d in range(off.shape[0] - 1):
        tok[off[d] : off[d + 1]] = np.sort(tok[off[d] : off[d + 1]])


@njit(cache=True)
def _prefix_len(n: int, t: float) -> int:
    if n == 0:
        return 0
    return min(n, n - math.ceil(t * n - _EPS) + 1)


@njit(cache=True)
def _index_prefix_len(n: int, t: float) -> int:
    if n == 0:
        return 0
    return min(n, n - math.ceil(2.0 * t / (1.0 + t) * n - _EPS) + 1)


@njit(cache=True)
def _verify(a: np.ndarray, b: np.ndarray, i: int, j: int, o: int, need: int) -> int:
    """Continue a merge intersection of sorted ``a[i:]``, ``b[j:]`` from overlap ``o``; returns
    the total overlap, or -1 as soon as ``need`` can no longer be reached."""
    na = a.shape[0]
    nb = b.shape[0]
    while i < na and j < nb:
        if o + min(na - i, nb - j) < need:
            return -1
        if a[i] == b[j]:
            o += 1
            i += 1
            j += 1
        elif a[i] < b[j]:
            i += 1
        else:
            j += 1
    return o if o >= need else -1


@njit(cache=True)
def _ppjoin(
    tok: np.ndarray, off: np.ndarray, df: np.ndarray, t: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """PPJoin (prefix + positional + size filters) self-join at Jaccard ``t``.

    Records are processed by ascending size; each probes with ``|x| - ceil(t|x|) + 1`` tokens
    and indexes ``|x| - ceil(2t/(1+t)|x|) + 1`` tokens.  Returns (a, b, jaccard, n_verified)
    with ``b < a`` in stream order."""
    n_docs = off.shape[0] - 1
    sizes = off[1:] - off[:-1]
    order = np.argsort(sizes, kind="mergesort")
    n_tok = df.shape[0]
    cnt = np.zeros(n_tok + 1, dtype=np.int64)
    for d in order:
        for j in range(off[d], off[d] + _index_prefix_len(sizes[d], t)):
            if df[tok[j]] > 1:
                cnt[tok[j] + 1] += 1
    p_off = np.cumsum(cnt)
    p_doc = np.empty(p_off[-1], dtype=np.int32)
    p_pos = np.empty(p_off[-1], dtype=np.int32)
    fill = p_off[:-1].copy()
    for d in order:
        base = off[d]
        for j in range(base, base + _index_prefix_len(sizes[d], t)):
            tk = tok[j]
            if df[tk] > 1:
                p_doc[fill[tk]] = d
                p_pos[fill[tk]] = j - base
                fill[tk] += 1
    start = p_off[:-1].copy()
    end = p_off[:-1].copy()
    acc = np.zeros(n_docs, dtype=np.int64)
    last_x = np.zeros(n_docs, dtype=np.int64)
    last_y = np.zeros(n_docs, dtype=np.int64)
    cands = np.empty(n_docs, dtype=np.int64)
    cap = 1024
    ra = np.empty(cap, dtype=np.int32)
    rb = np.empty(cap, dtype=np.int32)
    rj = np.empty(cap, dtype=np.float64)
    n_out = 0
    n_ver = 0
    for x in order:
        nx = sizes[x]
        base = off[x]
        nc = 0
        min_size = t * nx - _EPS
        for i in range(_prefix_len(nx, t)):
            tk = tok[base + i]
            if df[tk] < 2:
                continue
            s = start[tk]
            e = end[tk]
            while s < e and sizes[p_doc[s]] < min_size:
                s += 1
            start[tk] = s
            for q in range(s, e):
                y = p_doc[q]
                ay = acc[y]
                if ay < 0:
                    continue
                ny = sizes[y]
                if ay == 0:
                    cands[nc] = y
                    nc += 1
                alpha = math.ceil(t / (1.0 + t) * (nx + ny) - _EPS)
                if ay + min(nx - i, ny - p_pos[q]) >= alpha:
                    acc[y] = ay + 1
                    last_x[y] = i
                    last_y[y] = p_pos[q]
                else:
                    acc[y] = -1
        a = tok[base : base + nx]
        for c in range(nc):
            y = cands[c]
            ay = acc[y]
            acc[y] = 0
            if ay <= 0:
                continue
            n_ver += 1
            ny = sizes[y]
            need = math.ceil(t / (1.0 + t) * (nx + ny) - _EPS)
            o = _verify(a, tok[off[y] : off[y] + ny], last_x[y] + 1, last_y[y] + 1, ay, need)
            if o < 0:
                continue
            jac = o / (nx + ny - o)
            if jac < t:
                continue
            if n_out == cap:
                cap *= 2
                ra2 = np.empty(cap, dtype=np.int32)
                rb2 = np.empty(cap, dtype=np.int32)
                rj2 = np.empty(cap, dtype=np.float64)
                ra2[:n_out] = ra[:n_out]
                rb2[:n_out] = rb[:n_out]
                rj2[:n_out] = rj[:n_out]
                ra, rb, rj = ra2, rb2, rj2
            ra[n_out] = max(x, y)
            rb[n_out] = min(x, y)
            rj[n_out] = jac
            n_out += 1
        for j in range(base, base + _index_prefix_len(nx, t)):
            if df[tok[j]] > 1:
                end[tok[j]] += 1
    return ra[:n_out].copy(), rb[:n_out].copy(), rj[:n_out].copy(), n_ver


@dataclass
class PairJoin:
    """All earlier-doc pairs with Jaccard >= ``lower``: arrays aligned by pair."""

    x: np.ndarray
    y: np.ndarray
    jac: np.ndarray
    sizes: np.ndarray
    candidates: int


def word_shingle_hashes(texts: list[str], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique 64-bit hashes of every text's word n-gram set (the engine's definition:
    n-grams of the space-separated words of the normalised text; fewer words give one
    feature, the whole text): CSR ``(values uint64, offsets int64)``."""
    import mmh3

    parts: list[np.ndarray] = []
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    for i, text in enumerate(texts):
        norm = normalize(text)
        words = norm.split(" ") if norm else []
        if not words:
            grams: list[str] = []
        elif len(words) < n:
            grams = [norm]
        else:
            grams = [" ".join(words[j : j + n]) for j in range(len(words) - n + 1)]
        hashes = np.unique(
            np.array([mmh3.hash64(g.encode("utf-8"), 1)[0] for g in grams], dtype=np.int64)
        ).view(np.uint64)
        parts.append(np.sort(hashes))
        offsets[i + 1] = offsets[i] + hashes.size
    values = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
    return values, offsets


def similarity_join(
    texts: list[str], lower: float = LOWER_BOUND, shingle: str = "char", k: int = 5
) -> PairJoin:
    """Exact all-pairs join of the texts' shingle sets (character k-grams by default, or word
    k-grams), y < x in stream order, Jaccard >= lower."""
    if shingle == "char":
        values, off = hash_shingles(texts, k)
    else:
        values, off = word_shingle_hashes(texts, k)
    uniq, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    del values
    order = np.lexsort((uniq, counts))
    rank = np.empty(order.shape[0], dtype=np.int64)
    rank[order] = np.arange(order.shape[0], dtype=np.int64)
    tok_dtype = np.int32 if order.shape[0] < 2**31 else np.int64
    tok = rank[inverse.ravel()].astype(tok_dtype)
    df = counts[order].astype(np.int32)
    del uniq, inverse, counts, order, rank
    _sort_segments(tok, off)
    x, y, jac, n_cand = _ppjoin(tok, off, df, lower)
    order = np.lexsort((y, x))
    return PairJoin(x=x[order], y=y[order], jac=jac[order], sizes=np.diff(off), candidates=n_cand)


def truth_from_join(ids: list[str], join: PairJoin, threshold: float) -> list[dict]:
    """Per-document truth records from the pair join."""
    best: list[tuple[float, int]] = [(0.0, -1)] * len(ids)
    matches: list[list[tuple[int, float]]] = [[] for _ in ids]
    for x, y, jac in zip(join.x.tolist(), join.y.tolist(), join.jac.tolist(), strict=True):
        if jac > best[x][0] or (jac == best[x][0] and y < best[x][1]):
            best[x] = (jac, y)
        if jac >= threshold:
            matches[x].append((y, jac))
    out = []
    for i, doc_id in enumerate(ids):
        bj, by = best[i]
        ms = sorted(matches[i], key=lambda m: (-m[1], m[0]))
        out.append(
            {
                "id": doc_id,
                "max_jaccard": round(bj, 6) if by >= 0 else None,
                "best": ids[by] if by >= 0 else None,
                "matches": [[ids[y], round(j, 6)] for y, j in ms],
            }
        )
    return out


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def truth_path(corpus: Path) -> Path:
    """Cache location of a corpus's ground truth."""
    return corpus.with_suffix(".truth.json")


def build_truth(corpus: Path, threshold: float = DEFAULT_THRESHOLD, force: bool = False) -> dict:
    """Load the cached ground truth of ``corpus`` or compute and cache it."""
    sha = file_sha256(corpus)
    cache = truth_path(corpus)
    if cache.exists() and not force:
        cached = json.loads(cache.read_text())
        if (
            cached.get("corpus_sha256") == sha
            and cached.get("threshold") == threshold
            and cached.get("lower_bound") == LOWER_BOUND
        ):
            return cached
    t0 = time.perf_counter()
    records = read_jsonl(corpus)
    ids = [r["id"] for r in records]
    join = similarity_join([r["text"] for r in records], LOWER_BOUND)
    docs = truth_from_join(ids, join, threshold)
    elapsed = time.perf_counter() - t0
    n_dup = sum(bool(d["matches"]) for d in docs)
    truth = {
        "corpus": str(corpus),
        "corpus_sha256": sha,
        "threshold": threshold,
        "lower_bound": LOWER_BOUND,
        "shingles": "char-5gram set of NFKC+casefold+whitespace-collapsed text",
        "n_docs": len(docs),
        "n_true_duplicates": n_dup,
        "n_pairs_ge_lower": int(join.x.shape[0]),
        "n_pairs_ge_threshold": sum(len(d["matches"]) for d in docs),
        "n_candidates_verified": int(join.candidates),
        "build_seconds": round(elapsed, 2),
        "docs": docs,
    }
    cache.write_text(json.dumps(truth, ensure_ascii=False, separators=(",", ":")))
    return truth


def brute_force(texts: list[str]) -> list[tuple[float, list[tuple[int, float]]]]:
    """Per doc: (max Jaccard vs. earlier docs, all earlier (index, Jaccard)) using string sets."""
    sets = [shingle_set(t) for t in texts]
    out = []
    for i, s in enumerate(sets):
        sims = [(j, jaccard(s, sets[j])) for j in range(i)]
        out.append((max((v for _, v in sims), default=0.0), sims))
    return out


def _check_sample(records: list[dict], n: int, rng: random.Random) -> list[dict]:
    """~n docs in stream order, rich in duplicate clusters: copies plus their ancestors."""
    by_id = {r["id"]: r for r in records}
    pos = {r["id"]: i for i, r in enumerate(records)}
    chosen: set[str] = set()
    copies = [r for r in records if r.get("parent")]
    for r in rng.sample(copies, min(len(copies), n // 3)):
        node: dict | None = r
        while node is not None and len(chosen) < n:
            chosen.add(node["id"])
            node = by_id.get(node["parent"]) if node.get("parent") else None
    rest = [r["id"] for r in records if r["id"] not in chosen]
    chosen.update(rng.sample(rest, min(len(rest), n - len(chosen))))
    return sorted((by_id[i] for i in chosen), key=lambda r: pos[r["id"]])


def self_check(corpus: Path, n: int = 500, threshold: float = DEFAULT_THRESHOLD) -> bool:
    """Compare the prefix-filter join with brute force on an ``n``-document sample."""
    records = _check_sample(read_jsonl(corpus), n, random.Random(12345))
    texts = [r["text"] for r in records]
    t0 = time.perf_counter()
    join = similarity_join(texts, LOWER_BOUND)
    fast = truth_from_join([r["id"] for r in records], join, threshold)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    slow = brute_force(texts)
    t_slow = time.perf_counter() - t0
    errors = 0
    string_sizes = [len(shingle_set(t)) for t in texts]
    if string_sizes != join.sizes.tolist():
        errors += 1
        print("hash collision or normalisation mismatch: set sizes differ", file=sys.stderr)
    for i, (rec, (mx, sims)) in enumerate(zip(fast, slow, strict=True)):
        expect_max = round(mx, 6) if mx >= LOWER_BOUND else None
        expect = sorted(
            [(records[j]["id"], round(v, 6)) for j, v in sims if v >= threshold],
            key=lambda m: (-m[1], m[0]),
        )
        got = [(m[0], m[1]) for m in rec["matches"]]
        if rec["max_jaccard"] != expect_max or got != expect:
            errors += 1
            print(f"mismatch at {i} {rec['id']}: {rec} vs max={mx} {expect}", file=sys.stderr)
    n_dup = sum(bool(r["matches"]) for r in fast)
    n_near = sum(r["max_jaccard"] is not None for r in fast)
    print(
        f"check: {len(records)} docs, {n_dup} duplicates >= {threshold}, {n_near} with max >= "
        f"{LOWER_BOUND}, {len(join.x)} pairs; join {t_fast:.2f}s vs brute force {t_slow:.2f}s; "
        f"{'OK' if errors == 0 else f'{errors} ERRORS'}"
    )
    return errors == 0


def main(argv: list[str] | None = None) -> None:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DATA_DIR / "corpus.jsonl")
    ap.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
    ap.add_argument("--force", action="store_true", help="recompute even if cached")
    ap.add_argument("--check", action="store_true", help="validate against brute force")
    ap.add_argument("--check-docs", type=int, default=500)
    args = ap.parse_args(argv)
    if args.check:
        corpus = args.corpus
        if not corpus.exists():
            from bench.corpus import ensure_corpus

            corpus = ensure_corpus(Path("/tmp/neardup-bench-check/corpus.jsonl"), 3000)
        sys.exit(0 if self_check(corpus, args.check_docs, args.threshold) else 1)
    truth = build_truth(args.corpus, args.threshold, args.force)
    summary = {k: v for k, v in truth.items() if k != "docs"}
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
