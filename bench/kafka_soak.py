"""Section `soak`: the worker's memory over a long stream with a bounded index.

``--soak-docs`` documents (default 1,000,000) are produced to a fresh input topic by a
background producer while a worker started with ``--max-docs`` ``--soak-max-docs`` (default
100,000; the engine's retention, ``NEARDUP_DEDUP__MAX_DOCS``) consumes them. Every
``--soak-sample-s`` seconds the worker's VmRSS (``/proc/<pid>/status``) and its committed
input offset are sampled. Once the window is full the index stops growing, so RSS must stay
flat: the slope of RSS against documents committed is fitted (least squares) over the samples
after ``--soak-flat-after`` documents (default 2 x max-docs: the window fills after max-docs
indexed documents, and duplicates are not indexed) and reported in MiB per 100,000
documents, with the RSS at the fill point, its maximum and its end.
"""

from __future__ import annotations

import argparse
from typing import Any

from bench.kafka_broker import BackgroundProducer, Topics
from bench.kafka_docs import DocSource, log
from bench.kafka_metrics import decision_counts, metric_values
from bench.kafka_worker import WorkerProcess, WorkerTopics, run_until_committed

MIB = 2**20


def slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of ys against xs."""
    if len(xs) < 2:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    if var == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var


def thin(samples: list[dict[str, float]], every_docs: int) -> list[dict[str, float]]:
    """One sample per `every_docs` documents committed (and the last), for the report."""
    out: list[dict[str, float]] = []
    for s in samples:
        if not out or s["committed"] - out[-1]["committed"] >= every_docs:
            out.append(s)
    if samples and out[-1] is not samples[-1]:
        out.append(samples[-1])
    return out


def analyse(samples: list[dict[str, float]], flat_after: int) -> dict[str, Any]:
    flat = [s for s in samples if s["committed"] >= flat_after]
    per_doc = slope([s["committed"] for s in flat], [s["rss"] for s in flat])
    per_s = slope([s["t"] for s in flat], [s["rss"] for s in flat])
    at_fill = flat[0] if flat else None
    return {
        "flat_after_docs": flat_after,
        "samples_in_fit": len(flat),
        "slope_mib_per_100k_docs": None if per_doc is None else round(per_doc * 1e5 / MIB, 3),
        "slope_mib_per_minute": None if per_s is None else round(per_s * 60 / MIB, 3),
        "rss_mib_at_fill": None if at_fill is None else round(at_fill["rss"] / MIB, 1),
        "rss_mib_max_after_fill": round(max(s["rss"] for s in flat) / MIB, 1) if flat else None,
        "rss_mib_min_after_fill": round(min(s["rss"] for s in flat) / MIB, 1) if flat else None,
        "rss_mib_end": round(samples[-1]["rss"] / MIB, 1) if samples else None,
        "rss_mib_max": round(max(s["rss"] for s in samples) / MIB, 1) if samples else None,
    }


def section_soak(
    bootstrap: str, topics: Topics, src: DocSource, args: argparse.Namespace
) -> dict[str, Any]:
    n, max_docs = args.soak_docs, args.soak_max_docs
    input_topic = topics.create("soak.input")
    log(f"soak: producing {n:,} documents in the background; worker with --max-docs {max_docs:,}")
    producer = BackgroundProducer(bootstrap, input_topic, (src.doc(i, "k") for i in range(n)))
    wt = WorkerTopics.fresh(topics, "soak", input_topic)
    group = f"{topics.tag}-soak"
    w = WorkerProcess(
        bootstrap,
        wt,
        group,
        args.log_dir / f"{group}.log",
        args.max_batch,
        extra_args=("--max-docs", str(max_docs)),
    )
    run = run_until_committed(w, n, args.soak_timeout, sample_every=args.soak_sample_s)
    produced = producer.join(60)
    samples = [
        {"t": s["t"], "committed": int(s["committed"]), "rss": int(s["rss"])} for s in run.samples
    ]
    flat_after = args.soak_flat_after or 2 * max_docs
    out: dict[str, Any] = {
        "docs": n,
        "max_docs": max_docs,
        "produce": produced,
        "seconds": round(run.seconds, 1),
        "docs_per_s": round(run.docs_per_s, 1),
        "analysis": analyse(samples, flat_after),
        "index_documents_metric": metric_values(run.metrics, "neardup_index_documents"),
        "decisions": decision_counts(run.metrics),
        "samples_every_50k_docs": [
            {**s, "rss_mib": round(s["rss"] / 2**20, 1)} for s in thin(samples, 50_000)
        ],
        "samples": samples,
    }
    topics.delete([input_topic, *wt.outputs])
    return out
