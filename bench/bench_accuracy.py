"""Accuracy on the hard corpus, by length band, threshold, script and shingling, against peers.

The corpus is :mod:`bench.hard_corpus` (many locales, a third short texts, edits calibrated to
land the true Jaccard mostly in [0.7, 0.9]). The truth is exact: a document is a near-duplicate
at threshold t when its shingle set has Jaccard >= t with some earlier document (an exact
all-pairs join, :mod:`bench.ground_truth`, once per shingling). Every system decides the same
stream, in order, under each configuration (``char5@0.7``: character 5-grams at t = 0.7, ...);
the tables give precision and recall per group side by side, ``dup_of`` is the fraction of
predicted duplicates whose named original truly reaches t (also among the true positives
alone: false positives cannot name a true match), and ``docs/s`` is the in-process
rate of one warm run. ``--cli`` also times the whole ``neardup-stream dedup`` process (warm,
second of two runs) against rensa's in-loop rate on the same corpus (default configuration).

    python -m bench.bench_accuracy --docs 20000 --seed 11 [--systems neardup-stream,rensa]
    python -m bench.bench_accuracy --seed 5 --systems neardup-stream --set sketch_bits=4096
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from bench.corpus import read_jsonl
from bench.ground_truth import LOWER_BOUND, file_sha256, similarity_join
from bench.hard_corpus import ensure_hard_corpus
from bench.peers import DatasketchPeer, RensaPeer, char_tokens, word_tokens

CONFIGS = ("char5@0.7", "char5@0.8", "char5@0.9", "word3@0.8")
SYSTEMS = ("neardup-stream", "rensa", "datasketch")
SIZE_BANDS = ((0, 64), (65, 256), (257, 1024), (1025, 4096), (4097, 10**9))
Decision = tuple[str, bool, str | None]


def parse_config(name: str) -> tuple[str, int, float]:
    """``char5@0.8`` -> ("char", 5, 0.8)."""
    feat, _, t = name.partition("@")
    kind = feat.rstrip("0123456789")
    return kind, int(feat[len(kind) :]), float(t)


class Truth:
    """Exact pairs (later, earlier, Jaccard >= LOWER_BOUND) and set sizes for one shingling."""

    def __init__(self, corpus: Path, texts: list[str], kind: str, k: int) -> None:
        cache = corpus.with_suffix(f".{kind}{k}.pairs.npz")
        sha = file_sha256(corpus)
        if cache.exists() and str(np.load(cache)["sha"]) == sha:
            data = np.load(cache)
            self.x, self.y, self.jac, self.sizes = data["x"], data["y"], data["jac"], data["sizes"]
        else:
            join = similarity_join(texts, LOWER_BOUND, kind, k)
            self.x, self.y, self.jac, self.sizes = join.x, join.y, join.jac, join.sizes
            np.savez(cache, x=self.x, y=self.y, jac=self.jac, sizes=self.sizes, sha=sha)
        self.pair = {
            (int(a), int(b)): float(j) for a, b, j in zip(self.x, self.y, self.jac, strict=True)
        }
        self.best = np.zeros(len(texts))
        np.maximum.at(self.best, self.x, self.jac)

    def jaccard(self, i: int, j: int) -> float:
        """Exact Jaccard of a later and an earlier document (0 when below LOWER_BOUND)."""
        return self.pair.get((i, j), 0.0)


ENGINE_SETTINGS: dict[str, object] = {}  # extra DedupConfig fields (``--set name=value``)


def run_engine(docs: Sequence[tuple[str, str]], kind: str, k: int, t: float) -> list[Decision]:
    from neardup_stream import DedupConfig, Deduplicator, Document

    config = DedupConfig(threshold=t, shingle=kind, shingle_size=k, **ENGINE_SETTINGS)
    dd = Deduplicator(config)
    out: list[Decision] = []
    for b in range(0, len(docs), 1024):
        batch = [Document(id=i, text=x) for i, x in docs[b : b + 1024]]
        out.extend((d.id, d.decision == "duplicate", d.duplicate_of) for d in dd.check_batch(batch))
    return out


def make_runner(system: str, kind: str, k: int, t: float) -> Callable[[Sequence], list[Decision]]:
    """A function deciding a stream under one configuration."""
    tokens = char_tokens if kind == "char" and k == 5 else word_tokens(k)
    if kind == "char" and k != 5:
        raise ValueError("peers support char 5-grams and word n-grams")
    if system == "neardup-stream":
        return lambda docs: run_engine(docs, kind, k, t)
    if system == "rensa":
        return RensaPeer(threshold=t, num_bands=64 if t < 0.75 else 32, tokens=tokens).run
    if system == "datasketch":
        return DatasketchPeer(threshold=t, tokens=tokens).run
    raise ValueError(f"unknown system {system!r}")


def evaluate(
    decisions: list[Decision], truth: Truth, records: list[dict], t: float
) -> dict[str, dict[str, dict[str, float | int | None]]]:
    """Precision / recall per group (``all``, band, script, mutation, set size), dup_of, errors."""
    pos = {r["id"]: i for i, r in enumerate(records)}
    groups: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    dup_ok = dup_n = dup_ok_tp = dup_tp = 0
    fp_j: list[float] = []
    for i, ((_, pred, dup_of), rec) in enumerate(zip(decisions, records, strict=True)):
        true = bool(truth.best[i] >= t - 1e-9)
        size = int(truth.sizes[i])
        keys = {
            "all": "all",
            "band": rec["band"],
            "script": rec["script"],
            "mutation": rec["mutation"] or "none",
            "shingles": next(
                f"{lo}-{hi}" if hi < 10**9 else f">{lo - 1}"
                for lo, hi in SIZE_BANDS
                if lo <= size <= hi
            ),
        }
        for section, key in keys.items():
            cell = groups[section][key]
            cell[0] += pred and true
            cell[1] += pred and not true
            cell[2] += true and not pred
        if pred and dup_of is not None:
            dup_n += 1
            ok = truth.jaccard(i, pos[dup_of]) >= t - 1e-9
            dup_ok += ok
            dup_tp += true
            dup_ok_tp += ok and true
        if pred and not true:
            fp_j.append(float(truth.best[i]))
    out: dict[str, dict[str, dict[str, float | int | None]]] = {}
    for section, cells in groups.items():
        out[section] = {}
        for key, (tp, fp, fn) in sorted(cells.items()):
            p = tp / (tp + fp) if tp + fp else None
            r = tp / (tp + fn) if tp + fn else None
            f1 = 2 * p * r / (p + r) if p and r else None
            out[section][key] = {
                "tp": tp,
                "fp": fp,
                "fn": fn,
                "precision": p,
                "recall": r,
                "f1": f1,
            }
    out["all"]["all"]["dup_of"] = dup_ok / dup_n if dup_n else None
    out["all"]["all"]["dup_of_among_tp"] = dup_ok_tp / dup_tp if dup_tp else None
    out["all"]["all"]["fp_true_jaccard_median"] = float(np.median(fp_j)) if fp_j else None
    return out


def _f(v: float | None) -> str:
    return "  -  " if v is None else f"{v:.3f}"


def print_tables(config: str, results: dict[str, dict]) -> None:
    """One table per section: rows are groups, columns P / R per system."""
    names = list(results)
    print(f"\n=== {config} ===")
    head = "  ".join(f"{n[:14]:>14} P     R  " for n in names)
    for section in ("all", "band", "script", "shingles", "mutation"):
        print(f"  {section:<14} {'true':>6}  {head}")
        first = results[names[0]][section]
        for key in first:
            cells = []
            for n in names:
                c = results[n][section].get(key, {})
                cells.append(f"{'':>8}{_f(c.get('precision'))} {_f(c.get('recall'))}")
            true = first[key]["tp"] + first[key]["fn"]
            print(f"    {key:<12} {true:>6}  " + "  ".join(cells))
    for n in names:
        a = results[n]["all"]["all"]
        print(
            f"  {n}: F1 {_f(a['f1'])}  dup_of {_f(a['dup_of'])} "
            f"({_f(a['dup_of_among_tp'])} of true positives)  FP {a['fp']}  FN {a['fn']}  "
            f"median true J of FPs {_f(a['fp_true_jaccard_median'])}  {a['docs_per_s']:.0f} docs/s"
        )


def cli_speed(corpus: Path, docs: Sequence[tuple[str, str]]) -> dict[str, float]:
    """Warm whole-process ``neardup-stream dedup`` (second of two runs) vs rensa's loop.

    Wall time and CPU time (user + system) of both: on a shared machine the CPU ratio is the
    steadier figure (other load stretches wall time, not the CPU a process spends)."""
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    cmd = [sys.executable, "-m", "neardup_stream.cli", "dedup", "-i", str(corpus), "-o", os.devnull]
    wall, cpu = [], []
    for _ in range(2):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, cwd=root, check=True)
        wall.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    peer = RensaPeer()
    peer.run(docs[:200])
    t0, c0 = time.perf_counter(), time.process_time()
    peer.run(docs)
    rensa_s, rensa_cpu = time.perf_counter() - t0, time.process_time() - c0
    n = len(docs)
    return {
        "dedup_process_s": wall[1],
        "dedup_docs_per_s": n / wall[1],
        "rensa_docs_per_s": n / rensa_s,
        "ratio": (n / wall[1]) / (n / rensa_s),
        "dedup_process_cpu_s": cpu[1],
        "rensa_cpu_s": rensa_cpu,
        "cpu_ratio": rensa_cpu / cpu[1],
    }


def main(argv: list[str] | None = None) -> None:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--corpus", type=Path)
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--cli", action="store_true", help="also time the dedup process vs rensa")
    ap.add_argument("--json", type=Path, help="write all figures here")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an engine setting (DedupConfig field, JSON value), e.g. --set sketch_bits=4096",
    )
    args = ap.parse_args(argv)
    for item in args.set:
        name, _, value = item.partition("=")
        ENGINE_SETTINGS[name] = json.loads(value)
    corpus = args.corpus or ensure_hard_corpus(args.docs, args.seed)
    records = read_jsonl(corpus)
    docs = [(r["id"], r["text"]) for r in records]
    texts = [t for _, t in docs]
    print(f"corpus {corpus}: {len(records)} docs")
    report: dict[str, object] = {"corpus": str(corpus), "configs": {}}
    truths: dict[tuple[str, int], Truth] = {}
    for config in args.configs.split(","):
        kind, k, t = parse_config(config)
        if (kind, k) not in truths:
            truths[(kind, k)] = Truth(corpus, texts, kind, k)
        truth = truths[(kind, k)]
        results: dict[str, dict] = {}
        for system in args.systems.split(","):
            if system != "neardup-stream" and kind == "char" and k != 5:
                continue
            run = make_runner(system, kind, k, t)
            run(docs[:200])  # warm-up (JIT, caches)
            run = make_runner(system, kind, k, t)
            t0 = time.perf_counter()
            decisions = run(docs)
            elapsed = time.perf_counter() - t0
            res = evaluate(decisions, truth, records, t)
            res["all"]["all"]["docs_per_s"] = len(docs) / elapsed
            results[system] = res
        print_tables(config, results)
        report["configs"][config] = results  # type: ignore[index]
    if args.cli:
        speed = cli_speed(corpus, docs)
        report["cli_speed"] = speed
        print(
            f"\nwarm `neardup-stream dedup` process: {speed['dedup_process_s']:.2f} s, "
            f"{speed['dedup_docs_per_s']:.0f} docs/s; rensa loop {speed['rensa_docs_per_s']:.0f} "
            f"docs/s; ratio {speed['ratio']:.2f}x; CPU {speed['dedup_process_cpu_s']:.2f} s "
            f"against {speed['rensa_cpu_s']:.2f} s: {speed['cpu_ratio']:.2f}x"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
