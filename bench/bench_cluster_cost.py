"""CPU per document of the plain worker against `--cluster` replicas, in one run (issue 13).

    python -m bench.bench_cluster_cost --bootstrap-servers 127.0.0.1:19092 --docs 60000 \\
        [--home-shards 24] [--max-batch N] [--runs plain,w1,w3] [--trickle 2000] \\
        [--out bench/results/...]

`--docs` corpus documents (`bench.kafka_docs`: real text, passes of mutated variants beyond
the corpus) are produced first, once to a 1-partition input topic and once, round robin, to a
3-partition one. Then, one after the other, each run consumes them from the start with its
own group (and so its own internal topics):

* ``plain``: one `neardup-stream worker` process on the 1-partition topic;
* ``w1``: one `--cluster` replica (`--home-shards`) on the 1-partition topic;
* ``w3``: three `--cluster` replicas on the 3-partition topic.

A run may be repeated, each time with a group of its own: `--runs plain,w1,w1,plain` also
prints each repeated run's mean against the plain runs' mean. The second run of a pair pays
more on this machine, plain or replica (docs/benchmarks.md); alternated, that cancels out.

CPU is user + system of every thread of every process of the run (/proc), taken two ways:
between the moments the decisions counted by the processes (`neardup_documents_total`,
summed) pass 10% and 100% of the documents, divided by the documents decided in between;
and from the moment every process is ready (start-up, warm-up and compilation are over) to
100%, divided by all the documents, and split by role (`neardup_role_cpu_seconds_total`: a
role's threads with its Kafka clients'). The first leaves out the first batches, but a
cluster's edge and shards run ahead of the decisions (fingerprints and votes of documents
not decided yet), so the cluster's work is undercounted in it; the second counts every
role's work on every document, and is the figure to compare. Then `--trickle` more documents are produced
at `--rate` per second and the produce-to-decision latency of those (the worker's
`neardup_decision_latency_seconds`, from the record timestamp to the committed decision) is
read as p50 / p99, and, finer than that histogram's buckets, hop by hop from the records'
own send times (`bench.cluster_hops`: input to output; for a cluster run on the three
stages also edge, shard, gather). Those stay in the input topic: a later run decides them as part of its backlog,
and paces documents of its own (new ids) after them. (Before, each run waited for
`--docs` decisions only, so the one after `plain` took its latency scrape in the middle of
its backlog: the one-replica p99 of 29-60 s reported for issue 13 was that, not a stall.)

Before the paced documents, `--idle` seconds with nothing to decide give the cores each role
spends polling and heartbeating; the paced documents' CPU is split by role too (what a
document costs when batches are small: mostly the transactions, `bench.bench_transaction`).

`--worker-env NEARDUP_X=V` (repeatable) gives the cluster runs' workers a setting (every
worker starts without the caller's `NEARDUP_*` environment otherwise), e.g.
`NEARDUP_CLUSTER__SINGLE_STAGE=false` for the three stages at W = 1.

`--profile` runs each worker under py-spy (`bench.kafka_profile`: a profiling tool, not a
dependency) and writes its summary next to its log; CPU figures then include the sampler's
pauses, so compare them only with other profiled runs.

`--checkout PATH` runs the workers of another checkout (e.g. the commit before a change: `git
archive REV | tar -x -C PATH`), on the same documents, for a before/after comparison.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from bench import cluster_hops
from bench.kafka_broker import REPO_ROOT, Topics
from bench.kafka_docs import BenchError, DocSource, load_texts, log
from bench.kafka_metrics import (
    decision_counts,
    histogram_buckets,
    histogram_quantiles,
    labelled_counts,
)
from bench.kafka_profile import py_spy, py_spy_wrapper, summarize
from bench.kafka_worker import WorkerProcess, WorkerTopics, read_cpu_seconds
from neardup_stream.settings_fields import field_info
from neardup_stream.worker.settings import Settings

LATENCY = "neardup_decision_latency_seconds"


@dataclass(frozen=True)
class Cost:
    """What one run measured."""

    run: str
    processes: int
    docs: int
    cpu_us_per_doc: float  # between 10% and 100% decided
    cpu_us_per_doc_all: float  # from ready to 100% decided: every role's work on every document
    docs_per_s: float
    latency_p50_s: float | None
    latency_p99_s: float | None
    index_documents: list[float]
    role_us_per_doc: dict[str, float]  # from ready to 100%: `neardup_role_cpu_seconds_total`
    role_us_per_doc_10: dict[str, float]  # the same between 10% and 100%
    hops_ms: dict[str, dict[str, float]]  # paced documents, per hop (`bench.cluster_hops`)
    paced_cpu_us_per_doc: float | None = None  # CPU while deciding the paced documents
    paced_transactions: dict[str, float] | None = None  # per role, while deciding them
    paced_role_us_per_doc: dict[str, float] | None = None  # CPU by role, paced documents
    idle_role_cpu: dict[str, float] | None = None  # cores by role with nothing to decide


def produce(bootstrap: str, topic: str, source: DocSource, first: int, n: int, parts: int,
            rate: float = 0.0) -> None:  # fmt: skip
    """Documents first..first+n to `topic`, round robin over `parts` partitions (paced at
    `rate` per second when given)."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks=1,
        linger_ms=20,
        batch_size=512 * 1024,
        max_request_size=16 * 1024 * 1024,
    )
    started = time.monotonic()
    try:
        for i in range(first, first + n):
            key, value = source.doc(i, "d")
            producer.send(topic, key=key, value=value, partition=i % parts)
            if rate:
                ahead = (i - first + 1) / rate - (time.monotonic() - started)
                if ahead > 0:
                    time.sleep(ahead)
        producer.flush(timeout=600)
    finally:
        producer.close(timeout=30)


def input_size(bootstrap: str, topic: str) -> int:
    """Records in `topic` (all partitions): what a run from the start has to decide."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        return sum(consumer.end_offsets(tps).values())
    finally:
        consumer.close()


def decided(workers: list[WorkerProcess]) -> tuple[float, list[str]]:
    """Documents decided so far over all processes, and their /metrics texts."""
    texts = []
    for w in workers:
        w.check_alive()
        try:
            texts.append(w.http("/metrics")[1])
        except OSError:
            texts.append("")
    return sum(sum(decision_counts(t).values()) for t in texts), texts


def cpu(workers: list[WorkerProcess]) -> float:
    return sum(read_cpu_seconds(w.pid) or 0.0 for w in workers)


def by_role(texts: list[str], counter: str) -> dict[str, float]:
    """A counter's value by role, summed over the processes' /metrics texts."""
    total: dict[str, float] = {}
    for text in texts:
        for role, value in labelled_counts(text, counter, "role").items():
            total[role] = total.get(role, 0.0) + value
    return total


def role_cpu(workers: list[WorkerProcess]) -> dict[str, float]:
    """CPU seconds by role (`neardup_role_cpu_seconds_total`), summed over the processes."""
    return by_role(decided(workers)[1], "neardup_role_cpu_seconds_total")


def wait_for(workers: list[WorkerProcess], n: float, timeout: float) -> tuple[float, float, float]:
    """Until the processes decided `n` documents: (decided, CPU seconds, monotonic time)."""
    deadline = time.monotonic() + timeout
    last_log = time.monotonic()
    while True:
        done, _ = decided(workers)
        if done >= n:
            return done, cpu(workers), time.monotonic()
        if time.monotonic() > deadline:
            raise BenchError(f"{done:,.0f}/{n:,.0f} decided in {timeout:.0f}s")
        if time.monotonic() - last_log > 15:
            last_log = time.monotonic()
            log(f"  {done:,.0f}/{n:,.0f} decided")
        time.sleep(0.25)


def measure(args: argparse.Namespace, topics: Topics, source: DocSource, name: str,
            inputs: dict[int, str], occurrence: int = 0) -> Cost:  # fmt: skip
    """One run of `name`; its `occurrence`-th in `--runs` (each has a group and topics of its
    own, so a repeated run decides the whole backlog again)."""
    replicas, parts = {"plain": (1, 1), "w1": (1, 1), "w3": (3, 3)}[name]
    own = f"{name}-{occurrence}" if occurrence else name
    group = topics.name(f"g-{own}")
    wt = WorkerTopics.fresh(topics, own, inputs[parts])
    extra = ["--partitions", str(parts)]
    if name == "plain":
        extra += ["--scope", "partition"]
    else:
        extra += ["--scope", "topic", "--home-shards", str(args.home_shards)]

    exe = py_spy() if args.profile else None
    if args.profile and exe is None:
        log("  py-spy not found (pip install py-spy): no profile")

    def samples(i: int) -> Path:  # py-spy's raw samples of process i
        return args.logs / f"{own}-r{i}-profile.txt"

    def process(i: int) -> WorkerProcess:
        log_path = args.logs / f"{own}-r{i}.log"
        return WorkerProcess(
            args.bootstrap_servers,
            wt,
            group,
            log_path,
            args.max_batch,
            extra,
            cwd=args.checkout,
            instance=f"r{i}",
            wrapper=py_spy_wrapper(exe, samples(i), 100) if exe else (),
            settings_env=dict(kv.split("=", 1) for kv in args.worker_env if name != "plain"),
        )

    # The input holds the documents produced at the start and the paced ones of earlier runs:
    # all of them are this run's backlog, and its paced documents come after them (new ids).
    backlog = input_size(args.bootstrap_servers, inputs[parts])
    workers = [process(i) for i in range(replicas)]
    try:
        for w in workers:
            w.start()
        for w in workers:
            w.wait_ready(300)
        c_ready, roles_ready = cpu(workers), role_cpu(workers)
        log(f"{name}: {replicas} process(es) ready; deciding {backlog:,} documents")
        d0, c0, t0 = wait_for(workers, 0.1 * backlog, 1800)
        roles_10 = role_cpu(workers)
        d1, c1, t1 = wait_for(workers, backlog, 3600)
        roles = role_cpu(workers)
        role_us = {r: round((roles[r] - roles_ready.get(r, 0.0)) / d1 * 1e6, 1) for r in roles}
        between = max(d1 - d0, 1)  # a small backlog can pass 10% and 100% in one scrape
        role_us_10 = {r: round((roles[r] - roles_10.get(r, 0.0)) / between * 1e6, 1)
                      for r in roles}  # fmt: skip
        _, before = decided(workers)
        c_paced = cpu(workers)
        p50 = p99 = paced_cpu = paced_txns = paced_roles = idle = None
        if args.idle:  # what the roles cost with nothing to decide: polls, heartbeats
            roles_idle = role_cpu(workers)
            time.sleep(args.idle)
            idle = {r: round((v - roles_idle.get(r, 0.0)) / args.idle, 3)
                    for r, v in role_cpu(workers).items()}  # fmt: skip
        hops: dict[str, dict[str, float]] = {}
        if args.trickle:
            roles_paced = role_cpu(workers)
            produce(args.bootstrap_servers, inputs[parts], source, backlog, args.trickle,
                    parts, args.rate)  # fmt: skip
            wait_for(workers, backlog + args.trickle, 600)
            _, after = decided(workers)
            paced_cpu = round((cpu(workers) - c_paced) / args.trickle * 1e6, 1)
            paced_txns = _transactions(after, before)
            paced_roles = {r: round((v - roles_paced.get(r, 0.0)) / args.trickle * 1e6, 1)
                           for r, v in role_cpu(workers).items()}  # fmt: skip
            p50, p99 = quantiles(after, before)  # over the processes' summed buckets
            split = (f"{group}.fingerprints", f"{group}.votes")
            hops = cluster_hops.hops(args.bootstrap_servers, inputs[parts], args.trickle,
                                     [wt.unique, wt.duplicate], None if name == "plain" else split)  # fmt: skip
        _, texts = decided(workers)
        index = [_gauge(t, "neardup_index_documents") for t in texts]
    finally:
        for w in workers:
            with contextlib.suppress(Exception):
                w.stop()
    if exe:  # py-spy writes its file when the worker has exited
        for i, w in enumerate(workers):
            with contextlib.suppress(Exception):
                assert w.proc is not None
                w.proc.wait(60)
                out = samples(i).with_suffix(".json")
                out.write_text(json.dumps(summarize(samples(i)), indent=2) + "\n")
                log(f"  profile of {name} r{i}: {out}")
    cost = Cost(name, replicas, int(d1 - d0), round((c1 - c0) / between * 1e6, 1),
                round((c1 - c_ready) / d1 * 1e6, 1),
                round((d1 - d0) / max(t1 - t0, 1e-3), 1), p50, p99, index, role_us, role_us_10,
                hops, paced_cpu, paced_txns, paced_roles, idle)  # fmt: skip
    log(f"{name}: {cost}")
    return cost


def mean_cost(costs: list[Cost], run: str) -> tuple[float, float] | None:
    """The mean CPU µs per document of every `run` in `costs`, between 10% and 100% and from
    ready (None: no such run). Alternated runs (`--runs plain,w1,w1,plain`) cancel what a
    run pays for its place in the sequence (a machine drifting, a growing backlog)."""
    own = [c for c in costs if c.run == run]
    if not own:
        return None
    return (sum(c.cpu_us_per_doc for c in own) / len(own),
            sum(c.cpu_us_per_doc_all for c in own) / len(own))  # fmt: skip


def quantiles(after: list[str], before: list[str]) -> tuple[float | None, float | None]:
    """p50 and p99 of the latency histogram over all processes, between two scrapes."""
    summed_after, summed_before = _summed(after), _summed(before)
    p50, p99 = histogram_quantiles(summed_after, LATENCY, [0.5, 0.99], summed_before)
    return p50, p99


def _summed(texts: list[str]) -> str:
    """One exposition text whose latency buckets are the sums over `texts`."""
    total: dict[float, float] = {}
    for t in texts:
        for le, count in histogram_buckets(t, LATENCY).items():
            total[le] = total.get(le, 0.0) + count
    lines = [
        f'{LATENCY}_bucket{{le="{"+Inf" if le == float("inf") else le}"}} {count}'
        for le, count in sorted(total.items())
    ]
    return "\n".join(lines)


def _transactions(after: list[str], before: list[str]) -> dict[str, float]:
    """Transactions each role committed between two scrapes, summed over the processes."""
    then = by_role(before, "neardup_role_transactions_total")
    now = by_role(after, "neardup_role_transactions_total")
    return {role: n - then.get(role, 0.0) for role, n in now.items()}


def _gauge(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap-servers", default="127.0.0.1:19092")
    ap.add_argument("--docs", type=int, default=60_000)
    ap.add_argument("--texts", type=int, default=20_000, help="corpus texts before variants")
    ap.add_argument("--home-shards", type=int, default=24)
    default_batch = field_info(Settings, ("worker", "max_batch")).default
    ap.add_argument("--max-batch", type=int, default=default_batch, help="default %(default)s")
    ap.add_argument("--runs", default="plain,w1,w3")
    ap.add_argument("--trickle", type=int, default=2000, help="paced documents for latency")
    ap.add_argument("--rate", type=float, default=200.0, help="their documents per second")
    ap.add_argument(
        "--idle",
        type=float,
        default=5.0,
        help="seconds with nothing to decide, before the paced ones (0: none)",
    )
    ap.add_argument("--logs", type=Path, default=Path("/tmp/bench-cluster-cost"))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--worker-env", action="append", default=[], metavar="NEARDUP_X=V",
                    help="a setting for the cluster runs' workers, e.g. "
                         "NEARDUP_CLUSTER__SINGLE_STAGE=false (three stages at W = 1)")  # fmt: skip
    ap.add_argument("--profile", action="store_true",
                    help="run the workers under py-spy; summaries next to their logs")  # fmt: skip
    ap.add_argument("--checkout", type=Path, default=REPO_ROOT, help="whose workers to run")
    args = ap.parse_args()
    os.environ["PYTHONPATH"] = str(args.checkout.resolve())  # the workers import from there
    args.logs.mkdir(parents=True, exist_ok=True)
    texts, origin = load_texts(args.texts)
    source = DocSource(texts)
    topics = Topics(args.bootstrap_servers, f"bench-cost-{int(time.time())}")
    try:
        inputs = {}
        runs = args.runs.split(",")
        for parts in sorted({3 if r == "w3" else 1 for r in runs}):
            name = topics.name(f"input{parts}")
            spec = NewTopic(name, parts, 1, topic_configs={"max.message.bytes": str(16 << 20)})
            topics.admin.create_topics([spec])
            topics.track(name)
            inputs[parts] = name
            log(f"producing {args.docs:,} documents ({origin}) to {name}")
            produce(args.bootstrap_servers, name, source, 0, args.docs, parts)
        costs = [
            measure(args, topics, source, r, inputs, runs[:i].count(r)) for i, r in enumerate(runs)
        ]
    finally:  # the inputs, and every topic the workers made (outputs, internal topics)
        topics.delete([t for t in topics.admin.list_topics() if t.startswith(topics.tag)])
        topics.close()
    result = {"docs": args.docs, "corpus": origin, "home_shards": args.home_shards,
              "checkout": str(args.checkout),
              "costs": [asdict(c) for c in costs]}  # fmt: skip
    plain = mean_cost(costs, "plain")
    for c in costs:
        ratio = f" ({c.cpu_us_per_doc / plain[0]:.2f}x plain)" if plain else ""
        whole = f" ({c.cpu_us_per_doc_all / plain[1]:.2f}x plain)" if plain else ""
        print(f"{c.run}: {c.cpu_us_per_doc} us/doc{ratio} between 10% and 100%, "
              f"{c.cpu_us_per_doc_all} us/doc{whole} from ready, {c.docs_per_s} docs/s, "
              f"latency p50 {c.latency_p50_s} s p99 {c.latency_p99_s} s, index {c.index_documents}")  # fmt: skip
        roles = ", ".join(f"{r} {us}" for r, us in sorted(c.role_us_per_doc.items()))
        print(f"  CPU us/doc by role from ready (their Kafka clients included): {roles}")
        roles = ", ".join(f"{r} {us}" for r, us in sorted(c.role_us_per_doc_10.items()))
        print(f"  CPU us/doc by role between 10% and 100%: {roles}")
        for hop, q in c.hops_ms.items():
            print(f"  latency of the paced documents, {hop}: {q} (ms, send times)")
        if c.idle_role_cpu is not None:
            print(f"  idle: cores by role {c.idle_role_cpu}")
        if c.paced_cpu_us_per_doc is not None:
            print(f"  paced documents: {c.paced_cpu_us_per_doc} CPU us/doc, transactions by "
                  f"role {c.paced_transactions}, CPU us/doc by role {c.paced_role_us_per_doc}")  # fmt: skip
    for run in dict.fromkeys(runs):  # repeated runs: their means, against the plain runs' mean
        mean = mean_cost(costs, run)
        if runs.count(run) > 1 and mean:
            vs = f" ({mean[0] / plain[0]:.2f}x / {mean[1] / plain[1]:.2f}x plain)" if plain else ""
            print(
                f"{run}, mean of {runs.count(run)} runs: {mean[0]:.1f} / {mean[1]:.1f} us/doc{vs}"
            )
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
