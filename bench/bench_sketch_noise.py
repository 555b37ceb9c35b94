"""The Jaccard estimate's noise by set size: the compact set, the odd sketch and the 1-bit
one-permutation sketch, on random pairs of known Jaccard (no corpus, no timing).

For each size n and similarity J, pairs of random 64-bit hash sets of n elements with exact
Jaccard J are estimated three ways at the default sketch size: the stored set Rice-coded
whole (`compact_set.encode`, compared with the query's hashes: `set_estimate`; what
documents of up to `compact_limit` shingles keep, tried up to 1,000), both sets' odd
sketches (`odd_sketch`: what documents keep up to `odd_limit`) and both sets' 1-bit
sketches (what larger documents keep). Prints the mean error and the standard deviation of
each.

    python -m bench.bench_sketch_noise [--pairs 600]
"""

from __future__ import annotations

import argparse

import numpy as np

from neardup_stream import DedupConfig
from neardup_stream.fingerprint import compact_set, set_estimate
from neardup_stream.fingerprint.kernels import oph_sketch
from neardup_stream.fingerprint.odd_sketch import odd_estimate, odd_sketch
from neardup_stream.index.similarity import estimate_jaccard

SIZES = (128, 256, 384, 512, 700, 1000, 2000, 4000, 6000, 8000)
COMPACT_TRIED = 1000


def _pair(
    n: int, similarity: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, float]:
    inter = round(2 * n * similarity / (1 + similarity))
    pool = np.unique(rng.integers(0, 2**64, size=3 * n, dtype=np.uint64))
    pool = rng.permutation(pool)[: 2 * n - inter]
    a = np.sort(pool[:n])
    b = np.sort(np.concatenate((pool[:inter], pool[n:])))
    return a, b, inter / (2 * n - inter)


def _stats(errors: list[float]) -> str:
    return f"{np.mean(errors):+.4f}, {np.std(errors):.4f}" if errors else "       -       "


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=600)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    bits = DedupConfig().sketch_bits
    print(
        f"{bits}-bit sketches; compact sets up to {compact_set.compact_limit(bits)} shingles, "
        f"odd sketches up to {DedupConfig().odd_limit} at the default threshold"
    )
    print(
        f"{'J':>4} {'n':>5}  {'compact: mean, sd':>18}  {'odd: mean, sd':>18}  {'1-bit: mean, sd':>18}"
    )
    rng = np.random.default_rng(args.seed)
    for similarity in (0.9, 0.8, 0.7):
        for n in SIZES:
            compact, odd, one_bit = [], [], []
            for _ in range(args.pairs):
                a, b, truth = _pair(n, similarity, rng)
                words = np.zeros(bits // 64, dtype=np.uint64)
                if n <= COMPACT_TRIED and compact_set.encode(b, words):
                    compact.append(set_estimate.estimate(a, n, words, n) - truth)
                oa, ob = np.zeros(bits // 64, np.uint64), np.zeros(bits // 64, np.uint64)
                odd_sketch(a, oa)
                odd_sketch(b, ob)
                odd.append(odd_estimate(oa, ob, n, n) - truth)
                sa, sb = np.zeros(bits // 64, np.uint64), np.zeros(bits // 64, np.uint64)
                oph_sketch(a, bits, sa)
                oph_sketch(b, bits, sb)
                one_bit.append(estimate_jaccard(sa, sb) - truth)
            print(
                f"{similarity:4.1f} {n:5}  {_stats(compact)}      "
                f"{np.mean(odd):+.4f}, {np.std(odd):.4f}      "
                f"{np.mean(one_bit):+.4f}, {np.std(one_bit):.4f}"
            )


if __name__ == "__main__":
    main()
