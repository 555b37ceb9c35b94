"""Quality and speed of neardup-stream against peer systems on the evaluation corpus.

Builds (or loads) the corpus and its exact ground truth, runs every system on the same
documents in stream order, then prints a table (throughput, memory, precision, recall, F1,
``duplicate_of`` correctness), per-mutation / per-language / per-Jaccard breakdowns, and
writes ``<out>/dedup.json`` and ``<out>/dedup.png``.

Each system runs in its own subprocess with the thread count pinned (``--threads``, default
1: numba, rayon, BLAS and OpenMP pools), after an untimed warm-up on the first 200 documents
(JIT compilation, caches).  Timing covers normalisation, shingling, sketching, indexing and
verification of documents already in memory (no file reading or JSON parsing).  Memory is
the resident-set growth of the worker between "documents loaded" and "run finished, index
still alive" divided by the document count (``rss``: an upper bound, it includes allocator
slack, measured after ``gc.collect()`` + ``malloc_trim(0)`` and with mimalloc purging
immediately; tracemalloc would miss rensa's Rust heap); neardup-stream also reports its own
``index_bytes()``, shown instead, with the RSS figure in a separate column.

Usage::

    python -m bench.bench_dedup --docs 20000 --systems datasketch,rensa,neardup-stream
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import importlib
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.corpus import DATA_DIR, corpus_stats, ensure_corpus, read_jsonl
from bench.ground_truth import build_truth
from bench.peers import DatasketchPeer, Decision, Peer, RensaPeer, time_peer
from bench.quality import evaluate

ALL_SYSTEMS = ("neardup-stream", "neardup-stream-precise", "datasketch", "rensa")
ENGINE_SYSTEMS = ("neardup-stream", "neardup-stream-precise")
WARMUP_DOCS = 200
RESULTS_DIR = Path(__file__).resolve().parent / "results"


class EngineSystem:
    """neardup-stream's ``Deduplicator`` behind the peer interface."""

    def __init__(self, precise: bool, batch: int = 1024) -> None:
        self.name = "neardup-stream-precise" if precise else "neardup-stream"
        self.precise = precise
        self.batch = batch
        self.dd: object | None = None

    def run(self, docs: Sequence[tuple[str, str]]) -> list[Decision]:
        """Feed the stream to ``check_batch`` in micro-batches of ``batch`` documents."""
        from neardup_stream import DedupConfig, Deduplicator, Document

        dd = Deduplicator(DedupConfig(precise=True) if self.precise else DedupConfig())
        out: list[Decision] = []
        for b in range(0, len(docs), self.batch):
            batch = [Document(id=i, text=t) for i, t in docs[b : b + self.batch]]
            out.extend(
                (d.id, d.decision == "duplicate", d.duplicate_of) for d in dd.check_batch(batch)
            )
        self.dd = dd
        return out

    def index_bytes(self) -> int | None:
        """Bytes held by the engine's index."""
        return int(self.dd.index_bytes()) if self.dd is not None else None


def make_system(name: str, engine_batch: int) -> Peer:
    """Instantiate a system by name."""
    if name == "datasketch":
        return DatasketchPeer()
    if name == "rensa":
        return RensaPeer()
    if name in ENGINE_SYSTEMS:
        return EngineSystem(precise=name.endswith("precise"), batch=engine_batch)
    raise ValueError(f"unknown system {name!r}; choose from {', '.join(ALL_SYSTEMS)}")


def engine_available() -> str | None:
    """None when ``neardup_stream`` imports with the expected API, else the reason."""
    try:
        module = importlib.import_module("neardup_stream")
    except Exception as exc:  # any import-time failure means "skip the engine"
        return f"{type(exc).__name__}: {exc}"
    missing = [n for n in ("Deduplicator", "DedupConfig", "Document") if not hasattr(module, n)]
    return f"missing {', '.join(missing)}" if missing else None


def _rss_bytes() -> int:
    """Resident set size after a full GC and returning free heap pages to the OS."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def worker(name: str, corpus: Path, result: Path, repeat: int, engine_batch: int) -> None:
    """Run one system in this process and write decisions, timing and memory to ``result``."""
    docs = [(r["id"], r["text"]) for r in read_jsonl(corpus)]
    make_system(name, engine_batch).run(docs[:WARMUP_DOCS])
    gc.collect()
    timings = []
    decisions: list[Decision] = []
    rss_delta = rss_released = 0
    index_bytes: int | None = None
    for _ in range(repeat):
        system = make_system(name, engine_batch)
        rss0 = _rss_bytes()
        decisions, timing = time_peer(system, docs)
        timings.append(timing)
        rss1 = _rss_bytes()
        rss_delta = rss1 - rss0
        index_bytes = system.index_bytes()
        del system
        rss_released = rss1 - _rss_bytes()
    best = min(timings, key=lambda t: t.seconds)
    payload = {
        "system": name,
        "seconds": best.seconds,
        "seconds_all": [t.seconds for t in timings],
        "docs_per_s": best.docs_per_s,
        "mchars_per_s": best.mchars_per_s,
        "rss_delta_bytes": rss_delta,
        "rss_released_on_drop_bytes": rss_released,
        "index_bytes": index_bytes,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "decisions": decisions,
    }
    result.write_text(json.dumps(payload))


def run_system(
    name: str, corpus: Path, threads: int, repeat: int, engine_batch: int
) -> dict | None:
    """Run ``name`` in a fresh subprocess; None (with a message) if it failed."""
    env = dict(os.environ)
    env["MIMALLOC_PURGE_DELAY"] = "0"
    for var in (
        "NUMBA_NUM_THREADS",
        "RAYON_NUM_THREADS",
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
    ):
        env[var] = str(threads)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "result.json"
        cmd = [
            sys.executable,
            "-m",
            "bench.bench_dedup",
            "--worker",
            name,
            "--corpus",
            str(corpus),
            "--result",
            str(result),
            "--repeat",
            str(repeat),
            "--engine-batch",
            str(engine_batch),
        ]
        proc = subprocess.run(cmd, env=env, cwd=root, check=False)
        if proc.returncode != 0 or not result.exists():
            print(f"!! {name} failed (exit {proc.returncode}); skipped", file=sys.stderr)
            return None
        return json.loads(result.read_text())


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def print_summary(rows: list[dict]) -> None:
    """Main comparison table."""
    header = (
        f"{'system':<24} {'docs/s':>8} {'Mchar/s':>8} {'bytes/doc':>12} {'rss/doc':>8} "
        f"{'P':>6} {'R':>6} {'F1':>6} {'dup_of':>7}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        q = r["quality"]
        mem = f"{r['bytes_per_doc']:.0f} {r['bytes_method']}"
        print(
            f"{r['system']:<24} {r['docs_per_s']:>8.0f} {r['mchars_per_s']:>8.2f} {mem:>12} "
            f"{r['rss_bytes_per_doc']:>8.0f} {_fmt(q['precision']):>6} {_fmt(q['recall']):>6} "
            f"{_fmt(q['f1']):>6} {_fmt(q['dup_of_correct']):>7}"
        )


def print_breakdown(rows: list[dict], section: str, title: str) -> None:
    """Side-by-side recall (and flagged rate where nothing is a true duplicate) per group."""
    if not rows:
        return
    groups = list(rows[0]["quality"][section])
    names = [r["system"] for r in rows]
    widths = [max(7, len(n)) for n in names]
    print(f"\n{title}  (recall; '~x' = flagged rate where the group has no true duplicates)")
    print(
        f"  {'group':<18} {'n':>6} {'true':>6} "
        + " ".join(f"{n:>{w}}" for n, w in zip(names, widths, strict=True))
    )
    for g in groups:
        first = rows[0]["quality"][section][g]
        cells = []
        for r in rows:
            st = r["quality"][section].get(g)
            if st is None:
                cells.append("-")
            elif st["true_dups"]:
                cells.append(_fmt(st["recall"]))
            else:
                cells.append("~" + _fmt(st["flagged_rate"]))
        print(
            f"  {g:<18} {first['n']:>6} {first['true_dups']:>6} "
            + " ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True))
        )


def plot(rows: list[dict], path: Path, title: str) -> None:
    """Bar charts: throughput and precision/recall/F1 per system."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["system"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
    bars = ax1.bar(names, [r["docs_per_s"] for r in rows], color="#4c72b0")
    ax1.bar_label(bars, fmt="%.0f")
    ax1.set_ylabel("documents / second (1 thread)")
    ax1.set_title("Throughput")
    width = 0.27
    xs = range(len(names))
    for k, (metric, color) in enumerate(
        (("precision", "#55a868"), ("recall", "#c44e52"), ("f1", "#8172b2"))
    ):
        vals = [r["quality"][metric] or 0.0 for r in rows]
        b = ax2.bar([x + (k - 1) * width for x in xs], vals, width, label=metric, color=color)
        ax2.bar_label(b, fmt="%.2f", fontsize=7)
    ax2.set_xticks(list(xs), names)
    ax2.set_ylim(0, 1.22)
    ax2.set_title("Quality vs exact Jaccard >= threshold")
    ax2.legend(loc="upper center", ncol=3, fontsize=8)
    for ax in (ax1, ax2):
        ax.tick_params(axis="x", labelrotation=15)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in ("numpy", "numba", "datasketch", "rensa", "neardup-stream"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def main(argv: list[str] | None = None) -> None:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--corpus",
        type=Path,
        help="existing corpus; default: bench/data/corpus-<docs>-s<seed>.jsonl",
    )
    ap.add_argument("--systems", default=",".join(ALL_SYSTEMS))
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1, help="timed runs per system (best kept)")
    ap.add_argument("--engine-batch", type=int, default=1024)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker, args.corpus, args.result, args.repeat, args.engine_batch)
        return

    corpus = (args.corpus or DATA_DIR / f"corpus-{args.docs}-s{args.seed}.jsonl").resolve()
    t0 = time.perf_counter()
    if args.corpus is None:
        ensure_corpus(corpus, args.docs, args.seed)
    truth = build_truth(corpus)
    records = read_jsonl(corpus)
    prep_s = time.perf_counter() - t0
    stats = corpus_stats(records)
    print(
        f"corpus {corpus}: {stats['docs']} docs ({stats['lang']}), "
        f"{stats['chars_total'] / 1e6:.1f} Mchars, {truth['n_true_duplicates']} true duplicates "
        f"(Jaccard >= {truth['threshold']}); corpus+truth ready in {prep_s:.1f}s"
    )

    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in systems if s not in ALL_SYSTEMS]
    if unknown:
        ap.error(f"unknown systems {unknown}; choose from {', '.join(ALL_SYSTEMS)}")
    reason = engine_available() if any(s in ENGINE_SYSTEMS for s in systems) else None
    if reason is not None:
        print(f"note: skipping neardup-stream systems ({reason})")
        systems = [s for s in systems if s not in ENGINE_SYSTEMS]

    rows: list[dict] = []
    for name in systems:
        print(f"running {name} ...", flush=True)
        res = run_system(name, corpus, args.threads, args.repeat, args.engine_batch)
        if res is None:
            continue
        decisions = [(d[0], bool(d[1]), d[2]) for d in res.pop("decisions")]
        quality = evaluate(decisions, truth, records)
        if res["index_bytes"]:
            bytes_per_doc, method = res["index_bytes"] / len(records), "index"
        else:
            bytes_per_doc, method = res["rss_delta_bytes"] / len(records), "rss"
        rows.append(
            {
                **res,
                "bytes_per_doc": bytes_per_doc,
                "bytes_method": method,
                "rss_bytes_per_doc": res["rss_delta_bytes"] / len(records),
                "quality": quality,
            }
        )
    if not rows:
        print("no system ran")
        return
    print()
    print_summary(rows)
    print(
        "\nbytes/doc: 'index' = the engine's index_bytes(); 'rss' = worker RSS growth over the "
        "run with the index alive (upper bound, includes allocator slack)"
    )
    print_breakdown(rows, "by_mutation_kind", "Recall by mutation kind")
    print_breakdown(rows, "by_mutation", "Recall by mutation kind:level")
    print_breakdown(rows, "by_lang", "Recall by language")
    print_breakdown(rows, "by_max_jaccard", "Recall by exact max Jaccard vs earlier docs")

    args.out.mkdir(parents=True, exist_ok=True)
    report = {
        "corpus": str(corpus),
        "corpus_stats": stats,
        "truth": {k: v for k, v in truth.items() if k != "docs"},
        "threads": args.threads,
        "repeat": args.repeat,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "versions": _versions(),
        "results": rows,
    }
    (args.out / "dedup.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    plot(
        rows,
        args.out / "dedup.png",
        f"{stats['docs']} docs, {truth['n_true_duplicates']} true dups "
        f"(char-5gram Jaccard >= {truth['threshold']})",
    )
    print(f"\nwrote {args.out / 'dedup.json'} and {args.out / 'dedup.png'}")


if __name__ == "__main__":
    main()
