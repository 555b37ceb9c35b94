"""A backlog produced faster than the cluster decides: are all documents decided, exactly once?

Starts `--replicas` `--cluster` replicas (default settings, topics and group of their own) on
an input of `--partitions` partitions, then produces `--docs` short documents (`--chars`
characters; a `--copies` share are edited copies of an earlier one) as fast as the producer
goes while they run. Every 10 s it prints the decisions committed so far, each replica's
`/healthz`, the gather's buffered bytes and whether a role says it is stalled; it stops once
output offsets reach `--docs` and stop moving, or nothing was decided for `--give-up-s`. Then it reads the outputs
and counts each input's outcomes.

    python -m bench.bench_backlog --bootstrap-servers 127.0.0.1:9092 --docs 300000
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import time
from collections import Counter
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from bench.kafka_broker import Topics
from bench.kafka_docs import log
from bench.kafka_worker import WorkerProcess, WorkerTopics


def documents(n: int, chars: int, copies: float, seed: int = 50):
    """(id, text): random words; a `copies` share edit a few words of an earlier text."""
    rng = random.Random(seed)
    texts: list[str] = []
    for i in range(n):
        if texts and rng.random() < copies:
            words = rng.choice(texts[-5000:]).split()
            for _ in range(max(1, len(words) // 40)):
                words[rng.randrange(len(words))] = "".join(rng.choices(string.ascii_lowercase, k=6))
            text = " ".join(words)
        else:
            words, size = [], 0
            while size < chars:
                w = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9)))
                words.append(w)
                size += len(w) + 1
            text = " ".join(words)
            texts.append(text)
        yield f"d{i}", text


def committed_outputs(bootstrap: str, topics: list[str]) -> int:
    """Records committed on `topics` (read_committed end offsets, markers included)."""
    c = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed")
    try:
        tps = [TopicPartition(t, p) for t in topics for p in (c.partitions_for_topic(t) or ())]
        return sum(c.end_offsets(tps).values()) if tps else 0
    finally:
        c.close()


def outcomes(bootstrap: str, topics: list[str]) -> Counter[str]:
    """How many outcomes each input id got on `topics` (read_committed)."""
    c = KafkaConsumer(
        *topics,
        bootstrap_servers=bootstrap,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        consumer_timeout_ms=15_000,
    )
    seen: Counter[str] = Counter()
    for rec in c:
        if rec.value is None:
            continue
        value = json.loads(rec.value)
        doc_id = value.get("id") or (value.get("source") or {}).get("key") or ""
        seen[str(doc_id)] += 1
    c.close()
    return seen


def gauge(text: str, name: str) -> float:
    found = re.findall(rf"^{name}(?:\{{[^}}]*\}})? (\S+)$", text, re.M)
    return max((float(v) for v in found), default=0.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap-servers", default="127.0.0.1:9092")
    ap.add_argument("--docs", type=int, default=300_000)
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--chars", type=int, default=400)
    ap.add_argument("--copies", type=float, default=0.1)
    ap.add_argument("--give-up-s", type=float, default=300.0)
    ap.add_argument("--logs", type=Path, default=Path("/tmp/bench-backlog"))
    a = ap.parse_args()
    a.logs.mkdir(parents=True, exist_ok=True)
    tag = f"backlog-{int(time.time())}"
    topics = Topics(a.bootstrap_servers, tag)
    spec = {"num_partitions": a.partitions, "replication_factor": 1, "configs": {}}
    topics.admin.create_topics({topics.name("input"): spec}, wait_for_metadata=True)
    topics.track(topics.name("input"))
    wt = WorkerTopics.fresh(topics, "out", topics.name("input"))
    replicas = [
        WorkerProcess(
            a.bootstrap_servers,
            wt,
            f"{tag}-g",
            a.logs / f"{tag}-r{i}.log",
            2000,
            extra_args=["--scope", "topic"],
            instance=f"r{i}",
        ).start()
        for i in range(a.replicas)
    ]
    try:
        for r in replicas:
            r.wait_ready(300)
        log(f"{a.replicas} replicas ready; producing {a.docs:,} documents")
        producer = KafkaProducer(
            bootstrap_servers=a.bootstrap_servers, linger_ms=20, batch_size=256 * 1024, acks=1
        )
        started = time.monotonic()
        for doc_id, text in documents(a.docs, a.chars, a.copies):
            producer.send(
                wt.input,
                key=doc_id.encode(),
                value=json.dumps({"id": doc_id, "text": text}).encode(),
            )
        producer.flush()
        producer.close()
        log(f"produced in {time.monotonic() - started:.0f} s")
        outputs = [wt.unique, wt.duplicate, wt.dlq]
        last, last_change = -1, time.monotonic()
        while True:
            done = committed_outputs(a.bootstrap_servers, outputs)
            states = []
            for r in replicas:
                status, text = r.http("/healthz")[0], r.http("/metrics")[1]
                states.append(
                    f"{r.instance}:{status} buf={gauge(text, 'neardup_gather_buffered_bytes') / 2**20:.0f}MiB"
                    f" stalled={gauge(text, 'neardup_role_stalled'):.0f}"
                )
            log(
                f"{time.monotonic() - started:6.0f} s: ~{done:,} output offsets; {' '.join(states)}"
            )
            if done != last:
                last, last_change = done, time.monotonic()
            quiet = time.monotonic() - last_change
            if (done >= a.docs and quiet > 25) or quiet > a.give_up_s:  # markers count too
                break
            time.sleep(10)
        seen = outcomes(a.bootstrap_servers, outputs)
        twice = sum(1 for v in seen.values() if v > 1)
        missing = a.docs - len(seen)
        log(
            f"decided {len(seen):,} of {a.docs:,} documents; missing {missing:,}; "
            f"more than one outcome {twice:,}; {time.monotonic() - started:.0f} s from the "
            f"first record produced"
        )
    finally:
        for r in replicas:
            r.stop()
        topics.delete_all()
        topics.close()


if __name__ == "__main__":
    main()
