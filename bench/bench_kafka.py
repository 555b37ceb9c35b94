"""Throughput, decision latency and restore time of the Kafka worker against a real broker.

One run measures three things and prints a table; the numbers also go to
``bench/results/kafka.json``.

1. **Throughput.** An input topic (1 partition) is pre-loaded with ``--docs`` documents
   (default 50,000): texts of the evaluation corpus ``bench/data/corpus-20000-s7.jsonl``
   when it exists, else synthetic 1-5 KB texts of which ~25% are near-duplicates. Beyond the
   corpus size the texts are reused with a per-pass substitution (ASCII letters rotated, CJK
   ideographs shifted), so every pass is a new set of documents with the corpus's own
   duplicate structure and sizes. The same topic is then consumed three times, each by its own
   consumer group, and timed from the moment the first batch has been fetched (for the worker:
   the first ``/healthz`` 200, which it reports right after its first poll and its restore) to
   the moment all ``N`` input offsets are committed:

   * ``worker``: ``python -m worker`` as a subprocess with default settings and
     ``--max-batch``, its own group, output topics and changelog; completion is observed by
     polling the group's committed offset every 0.2 s. It runs first because the pipes replay
     its output (below);
   * ``pipe, plain``: a bare consume -> produce loop with the worker's own client settings
     (``worker.clients``): read_committed group consumer, idempotent producer, per batch of
     ``--max-batch`` records: send, flush, commit the offsets (the worker's at-least-once path
     minus parsing and deduplication);
   * ``pipe, transactional``: the same loop with the worker's transactional producer: per batch
     begin, send, ``send_offsets_to_transaction``, commit (its exactly-once path minus parsing
     and deduplication).

   The pipes send, per input record, the very messages the worker sent for it (read back from
   its duplicate and changelog topics; unique documents are the input bytes plus the worker's
   one header): same topics layout, sizes and headers, so the only difference left is the
   worker's own work. This matters with kafka-python, whose client cost grows with the bytes
   (see CRC-32C below). Reported: docs/s of each, and worker / transactional pipe (goal >= 0.7).
   The machine being shared and noisy, ``--repeat k`` runs the three k times, interleaved, and
   reports medians (and every round in the JSON).

2. **Decision latency at half the maximum rate.** A fresh worker (fresh topics, empty index)
   is started and waited for, and decides 50 warm-up documents (JIT cache loads, first
   fetches; excluded everywhere); then documents are produced at a steady ``0.5 x`` the worker's
   measured docs/s for ``--latency-seconds`` (default 25 s). Each record's timestamp is its send
   time; a read_committed consumer of the unique and duplicate topics (in a thread, fetch wait
   capped at 100 ms) notes the wall-clock time each document id first becomes visible. Latency
   = visible - sent; p50/p99 over all documents. As a cross-check, p50/p99 of the worker's own
   ``neardup_decision_latency_seconds`` histogram (record timestamp -> transaction committed,
   interpolated within Prometheus buckets, warm-up counts subtracted) are reported too.

3. **Restore of a ``--restore-docs`` index (default 1,000,000) from the changelog.** A pool of
   corpus texts (``--pool-size``, default 20,000) is fingerprinted once with
   ``Deduplicator().process(..., records=True)``; copy ``c`` of the pool is written with ids
   ``r<c>-<id>`` (``duplicate_of``/``representative`` renamed alike) and its bucket keys and
   exact hash XOR-ed with a per-copy constant. The 1M records are then 50 disjoint corpora, each
   with the corpus's key sharing, rather than 50 identical copies piling into the same buckets.
   They go to a fresh compacted 1-partition topic through a plain (non-transactional) producer.
   A worker is started with that changelog and an empty input topic; reported are the restore
   time from its log line ``restored N records ... in X s`` (goal < 60 s), records/s, and the
   time from process spawn to ``/healthz`` 200 (includes interpreter start, imports, JIT and
   the group join). Then, in this process, ``worker.restore.restore_index`` is timed on the
   same topic, and separately its parts: Kafka fetch alone, record decoding, index insertion
   (``Deduplicator.apply_records`` in 10,000-record chunks, like the reader's polls).

Setup work (pre-loading, fingerprinting, producing the changelog) is timed and reported but is
not part of any figure. Throughput of kafka-python itself is bounded by CRC-32C: without the
optional C extension ``crc32c`` it checksums every record batch in pure Python (~6 MB/s per
pass), which the table header states.

Usage::

    KAFKA_PORT=29092 python -m bench.bench_kafka [--docs 50000] [--restore-docs 1000000]
    python -m bench.bench_kafka --bootstrap-servers 127.0.0.1:19092 --sections restore

Without ``--bootstrap-servers`` the local broker is started with ``deploy/local/kafka.sh start``
(port from ``KAFKA_PORT``) and stopped at the end if this run started it. Topics created by the
run are deleted at the end unless ``--keep-topics``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import platform
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord

from bench.corpus import DATA_DIR, read_jsonl
from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.models import Document
from neardup_stream.records import FingerprintRecord
from neardup_stream.settings import Settings
from worker import clients
from worker.restore import restore_index

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS_PATH = REPO_ROOT / "bench" / "results" / "kafka.json"
CORPUS_PATH = DATA_DIR / "corpus-20000-s7.jsonl"
KAFKA_SH = REPO_ROOT / "deploy" / "local" / "kafka.sh"
SECTIONS = ("throughput", "latency", "restore")
RESTORED_RE = re.compile(
    r"restored (\d+) records \((\d+) skipped\) from (\d+) changelog partitions in ([\d.]+) s"
)
LATENCY_METRIC = "neardup_decision_latency_seconds"
UNIQUE_HEADERS = [("neardup.decision", b"unique")]  # what the worker adds to unique documents
WARMUP_DOCS = 50  # decided before the timed stream: JIT cache loads, first fetches


def log(msg: str) -> None:
    """Progress goes to stderr; the table and nothing else to stdout."""
    print(f"[bench_kafka {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class BenchError(RuntimeError):
    """A step failed or timed out; the message says which and why."""


# ---------------------------------------------------------------------------------------------
# documents


@dataclass(frozen=True)
class Text:
    text: str
    lang: str | None


def load_texts(limit: int) -> tuple[list[Text], str]:
    """Up to `limit` texts in stream order: the evaluation corpus, or synthetic ones."""
    if CORPUS_PATH.exists():
        rows = read_jsonl(CORPUS_PATH, limit)
        return [Text(r["text"], r.get("lang")) for r in rows], CORPUS_PATH.name
    return synthetic_texts(limit), "synthetic"


def synthetic_texts(n: int, seed: int = 7, dup_frac: float = 0.25) -> list[Text]:
    """1-5 KB texts from a random vocabulary; `dup_frac` of them edit an earlier text (5%)."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choices(letters, k=rng.randint(2, 10))) for _ in range(30_000)]
    texts: list[str] = []
    for _ in range(n):
        if texts and rng.random() < dup_frac:
            words = rng.choice(texts).split(" ")
            for _ in range(max(1, len(words) // 20)):
                words[rng.randrange(len(words))] = rng.choice(vocab)
            texts.append(" ".join(words))
        else:
            texts.append(" ".join(rng.choices(vocab, k=rng.randint(170, 850))))
    return [Text(t, "en") for t in texts]


def _pass_table(k: int) -> dict[int, int]:
    """Translation of pass `k`: ASCII letters rotated, CJK ideographs shifted by k steps."""
    shift = 1 + (k - 1) % 25
    table: dict[int, int] = {}
    for base in (ord("a"), ord("A")):
        for i in range(26):
            table[base + i] = base + (i + shift) % 26
    lo, span = 0x4E00, 0x9FFF - 0x4E00 + 1
    step = (k * 7919) % span
    for cp in range(lo, lo + span):
        table[cp] = lo + (cp - lo + step) % span
    return table


class DocSource:
    """JSON documents number 0, 1, ...: pass k = i // len(texts) uses the pass-k variant."""

    def __init__(self, texts: list[Text]) -> None:
        if not texts:
            raise BenchError("no texts to build documents from")
        self.texts = texts
        self._tables: dict[int, dict[int, int]] = {}

    def text(self, i: int) -> Text:
        k, j = divmod(i, len(self.texts))
        t = self.texts[j]
        if k == 0:
            return t
        table = self._tables.get(k)
        if table is None:
            table = self._tables[k] = _pass_table(k)
        return Text(t.text.translate(table), t.lang)

    def doc(self, i: int, prefix: str) -> tuple[bytes, bytes]:
        """(key, value) of document `i`; the key is its id."""
        t = self.text(i)
        doc_id = f"{prefix}{i:07d}"
        obj: dict[str, str] = {"id": doc_id, "text": t.text}
        if t.lang:
            obj["lang"] = t.lang
        return doc_id.encode(), json.dumps(obj, ensure_ascii=False).encode()


# ---------------------------------------------------------------------------------------------
# broker and topics


@dataclass
class Broker:
    bootstrap: str
    started_here: bool = False
    port: str | None = None

    def stop_if_started(self) -> None:
        if not self.started_here:
            return
        log(f"stopping the local broker on port {self.port} (started by this run)")
        subprocess.run([str(KAFKA_SH), "stop"], env=self._env(), check=False, timeout=120)

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.port:
            env["KAFKA_PORT"] = self.port
        return env


def start_local_broker() -> Broker:
    """`deploy/local/kafka.sh start` on $KAFKA_PORT; remembers whether it was already running."""
    port = os.environ.get("KAFKA_PORT", "9092")
    env = dict(os.environ, KAFKA_PORT=port)
    status = subprocess.run(
        [str(KAFKA_SH), "status"], env=env, capture_output=True, text=True, timeout=60
    )
    running = status.returncode == 0
    log(f"{'using the running' if running else 'starting a'} local broker on port {port}")
    started = subprocess.run(
        [str(KAFKA_SH), "start"], env=env, capture_output=True, text=True, timeout=600
    )
    if started.returncode != 0:
        raise BenchError(f"kafka.sh start failed:\n{started.stderr[-3000:]}")
    bootstrap = started.stdout.strip().splitlines()[-1]
    return Broker(bootstrap, started_here=not running, port=port)


class Topics:
    """Creates uniquely named topics for this run and deletes them at the end."""

    def __init__(self, bootstrap: str, tag: str) -> None:
        self.bootstrap = bootstrap
        self.tag = tag
        self.created: list[str] = []
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="bench-kafka")

    def name(self, suffix: str) -> str:
        return f"{self.tag}.{suffix}"

    def create(self, suffix: str, compact: bool = False) -> str:
        topic = self.name(suffix)
        spec: dict[str, Any] = {"num_partitions": 1, "replication_factor": 1}
        if compact:
            spec["configs"] = {"cleanup.policy": "compact"}
        self.admin.create_topics({topic: spec}, wait_for_metadata=True)
        self.created.append(topic)
        return topic

    def track(self, *names: str) -> None:
        """Topics the worker creates, to delete at the end."""
        self.created.extend(names)

    def delete_all(self) -> None:
        existing = set(self.admin.list_topics())
        doomed = [t for t in dict.fromkeys(self.created) if t in existing]
        if doomed:
            try:
                self.admin.delete_topics(doomed)
                log(f"deleted {len(doomed)} topics")
            except Exception as exc:
                log(f"could not delete topics {doomed}: {exc}")

    def close(self) -> None:
        self.admin.close()


def produce_bulk(bootstrap: str, topic: str, items: Iterator[tuple[bytes, bytes]]) -> dict:
    """Write (key, value) pairs to partition 0 with a plain batching producer; returns stats."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks=1,
        linger_ms=50,
        batch_size=512 * 1024,
        max_request_size=8 * 1024 * 1024,
        enable_idempotence=False,
    )
    started = time.perf_counter()
    n = nbytes = 0
    last = started
    try:
        for key, value in items:
            producer.send(topic, key=key, value=value, partition=0)
            n += 1
            nbytes += len(value)
            if time.perf_counter() - last > 10:
                last = time.perf_counter()
                log(f"  produced {n:,} records ({n / (last - started):,.0f}/s)")
        producer.flush(timeout=600)
    finally:
        producer.close(timeout=30)
    seconds = time.perf_counter() - started
    return {"records": n, "bytes": nbytes, "seconds": round(seconds, 2)}


def _settings(bootstrap: str, group: str, instance: str, max_batch: int, eos: bool) -> Settings:
    return Settings().with_overrides(
        {
            "kafka": {"bootstrap_servers": bootstrap},
            "worker": {
                "group_id": group,
                "instance_id": instance,
                "max_batch": max_batch,
                "exactly_once": eos,
            },
        }
    )


class CommittedOffset:
    """Reads a group's committed offset of partition 0 without joining the group."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.tp = TopicPartition(topic, 0)
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
        )

    def __call__(self) -> int:
        return int(self.consumer.committed(self.tp) or 0)

    def close(self) -> None:
        self.consumer.close(autocommit=False)


# ---------------------------------------------------------------------------------------------
# 1. throughput


def read_committed(bootstrap: str, topic: str) -> list[ConsumerRecord]:
    """Every committed message of partition 0 of `topic` (CRCs unchecked: a helper read)."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        isolation_level="read_committed",
        check_crcs=False,
        max_partition_fetch_bytes=10 * 1024 * 1024,
    )
    tp = TopicPartition(topic, 0)
    out: list[ConsumerRecord] = []
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        deadline = time.monotonic() + 300
        while consumer.position(tp) < end:
            if time.monotonic() > deadline:
                raise BenchError(f"could not read {topic} to its end offset {end}")
            for msgs in consumer.poll(timeout_ms=500).values():
                out.extend(msgs)
    finally:
        consumer.close(autocommit=False)
    return out


@dataclass(frozen=True)
class Mirror:
    """The worker's messages per document id, so the pipes send the same bytes undecided."""

    duplicates: dict[bytes, tuple[bytes, list[tuple[str, bytes]]]]  # key -> (value, headers)
    changelog: dict[bytes, bytes]
    default_changelog: bytes

    @classmethod
    def read(cls, bootstrap: str, wt: WorkerTopics) -> Mirror:
        dups = {m.key: (m.value, list(m.headers)) for m in read_committed(bootstrap, wt.duplicate)}
        changelog = {m.key: m.value for m in read_committed(bootstrap, wt.changelog)}
        default = next(iter(changelog.values()), b"\0" * 400)
        return cls(dups, changelog, default)


def run_pipe(
    bootstrap: str,
    topics: Topics,
    input_topic: str,
    n: int,
    transactional: bool,
    mirror: Mirror,
    args: argparse.Namespace,
    name: str,
) -> dict:
    """Consume `n` records and send the worker's messages for them, committing per batch."""
    kind = "eos" if transactional else "plain"
    max_batch, timeout = args.max_batch, args.timeout
    unique_topic = topics.create(f"{name}.unique")
    duplicate_topic = topics.create(f"{name}.duplicate")
    cl_topic = topics.create(f"{name}.changelog", compact=True)
    settings = _settings(bootstrap, f"{topics.tag}-{name}", "bench", max_batch, transactional)
    consumer = clients.make_consumer(settings)
    producer = clients.make_producer(settings)
    committed = batches = 0
    positions: dict[TopicPartition, int] = {}
    first = None
    deadline = time.monotonic() + timeout
    try:
        consumer.subscribe([input_topic])
        last_log = time.monotonic()
        while committed < n:
            if time.monotonic() > deadline:
                raise BenchError(f"pipe ({kind}) committed {committed:,}/{n:,} in {timeout:.0f}s")
            batch = consumer.poll(timeout_ms=500, max_records=max_batch)
            if not batch:
                continue
            if first is None:
                first = time.monotonic()
            offsets: dict[TopicPartition, OffsetAndMetadata] = {}
            records = [m for msgs in batch.values() for m in msgs]
            if transactional:
                producer.begin_transaction()
            futures = []
            for m in records:
                offsets[TopicPartition(m.topic, m.partition)] = OffsetAndMetadata(
                    m.offset + 1, "", -1
                )
                dup = mirror.duplicates.get(m.key)
                if dup is None:
                    f = producer.send(
                        unique_topic, key=m.key, value=m.value, headers=UNIQUE_HEADERS
                    )
                else:
                    f = producer.send(duplicate_topic, key=m.key, value=dup[0], headers=dup[1])
                futures.append(f)
                value = mirror.changelog.get(m.key, mirror.default_changelog)
                futures.append(
                    producer.send(cl_topic, key=m.key, value=value, partition=m.partition)
                )
            if transactional:
                producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
                producer.commit_transaction()
            else:
                producer.flush()
                for f in futures:
                    f.get(timeout=30)
                consumer.commit(offsets)
            positions.update({tp: o.offset for tp, o in offsets.items()})
            committed = sum(positions.values())
            batches += 1
            if time.monotonic() - last_log > 10:
                last_log = time.monotonic()
                rate = committed / (last_log - first)
                log(f"  pipe ({kind}): {committed:,}/{n:,} committed ({rate:,.0f} docs/s)")
        seconds = time.monotonic() - (first or time.monotonic())
    finally:
        consumer.close(autocommit=False)
        producer.close(timeout=10)
    return {
        "docs": committed,
        "batches": batches,
        "seconds": round(seconds, 2),
        "docs_per_s": round(committed / seconds, 1),
    }


@dataclass
class WorkerProcess:
    """`python -m worker` as a child process with its log in a file."""

    bootstrap: str
    topics: WorkerTopics
    group: str
    log_path: Path
    max_batch: int
    instance: str = "bench"
    metrics_port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    spawned_at: float = 0.0
    _log_file: Any = field(default=None, repr=False)

    def start(self) -> WorkerProcess:
        if not self.metrics_port:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.metrics_port = int(s.getsockname()[1])
        cmd = [
            sys.executable,
            "-m",
            "worker",
            "--bootstrap-servers",
            self.bootstrap,
            *self.topics.args(),
            "--group-id",
            self.group,
            "--instance-id",
            self.instance,
            "--max-batch",
            str(self.max_batch),
            "--metrics-port",
            str(self.metrics_port),
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 (kept open for the child)
        self.spawned_at = time.monotonic()
        self.proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, stdout=self._log_file, stderr=self._log_file, env=env
        )
        return self

    def http(self, path: str) -> tuple[int, str]:
        url = f"http://127.0.0.1:{self.metrics_port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def check_alive(self) -> None:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise BenchError(f"worker exited with {self.proc.returncode}:\n{self.log_tail()}")

    def wait_ready(self, timeout: float) -> float:
        """Poll /healthz every 50 ms; returns the monotonic time it first answered 200."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            with contextlib.suppress(OSError):
                if self.http("/healthz")[0] == 200:
                    return time.monotonic()
            time.sleep(0.05)
        raise BenchError(f"worker not ready after {timeout:.0f}s:\n{self.log_tail()}")

    def rss_bytes(self) -> int | None:
        assert self.proc is not None
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None

    def stop(self, timeout: float = 60) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                log(f"worker ignored SIGTERM for {timeout:.0f}s; killing it")
                self.proc.kill()
                self.proc.wait(10)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def log_tail(self, chars: int = 4000) -> str:
        return f"(log {self.log_path})\n" + self.log_text()[-chars:]


@dataclass(frozen=True)
class WorkerTopics:
    """The topics of one worker; outputs are fresh, named after a prefix."""

    input: str
    unique: str
    duplicate: str
    dlq: str
    changelog: str

    @classmethod
    def fresh(
        cls, topics: Topics, prefix: str, input_topic: str, changelog: str = ""
    ) -> WorkerTopics:
        """Outputs (and the changelog, unless given) are left to the worker to create."""
        wt = cls(
            input_topic,
            topics.name(f"{prefix}.unique"),
            topics.name(f"{prefix}.duplicate"),
            topics.name(f"{prefix}.dlq"),
            changelog or topics.name(f"{prefix}.changelog"),
        )
        topics.track(wt.unique, wt.duplicate, wt.dlq, wt.changelog)
        return wt

    def args(self) -> list[str]:
        return [
            *("--input-topic", self.input),
            *("--unique-topic", self.unique),
            *("--duplicate-topic", self.duplicate),
            *("--dlq-topic", self.dlq),
            *("--changelog-topic", self.changelog),
        ]


def run_worker_throughput(
    bootstrap: str, wt: WorkerTopics, group: str, n: int, args: argparse.Namespace
) -> dict:
    """Time a worker from ready to all `n` input offsets committed."""
    w = WorkerProcess(bootstrap, wt, group, args.log_dir / "worker-throughput.log", args.max_batch)
    offset = CommittedOffset(bootstrap, group, wt.input)
    try:
        w.start()
        ready = w.wait_ready(args.timeout)
        log(f"  worker ready after {ready - w.spawned_at:.1f}s; waiting for {n:,} commits")
        deadline = ready + args.timeout
        last_log = time.monotonic()
        done = offset()
        while done < n:
            if time.monotonic() > deadline:
                raise BenchError(f"worker committed {done:,}/{n:,} in {args.timeout:.0f}s")
            w.check_alive()
            time.sleep(0.2)
            done = offset()
            if time.monotonic() - last_log > 10:
                last_log = time.monotonic()
                log(f"  worker: {done:,}/{n:,} committed ({done / (last_log - ready):,.0f} docs/s)")
        finished = time.monotonic()
        _, metrics = w.http("/metrics")
    finally:
        offset.close()
        w.stop()
    seconds = finished - ready
    return {
        "docs": done,
        "seconds": round(seconds, 2),
        "docs_per_s": round(done / seconds, 1),
        "startup_seconds": round(ready - w.spawned_at, 2),
        "batch_seconds_p50_p99": histogram_quantiles(
            metrics, "neardup_batch_processing_seconds", (0.5, 0.99)
        ),
        "decisions": _decision_counts(metrics),
    }


def _decision_counts(metrics: str) -> dict[str, float]:
    counts: dict[str, float] = {}
    for line in metrics.splitlines():
        m = re.match(
            r'neardup_documents_total\{decision="(\w+)",method="([\w-]+)"\} ([\d.e+]+)', line
        )
        if m:
            counts[f"{m[1]}/{m[2]}"] = float(m[3])
    return counts


def section_throughput(
    bootstrap: str, topics: Topics, src: DocSource, args: argparse.Namespace
) -> dict:
    n = args.docs
    input_topic = topics.create("input")
    log(f"pre-loading {n:,} documents into {input_topic}")
    preload = produce_bulk(bootstrap, input_topic, (src.doc(i, "d") for i in range(n)))
    log(
        f"  {preload['records']:,} docs, {preload['bytes'] / 1e6:,.0f} MB "
        f"in {preload['seconds']:.1f}s"
    )
    Deduplicator().process([Document(id="warm", text=src.text(0).text)])  # JIT cache
    out: dict[str, Any] = {"preload": preload, "input_bytes_per_doc": preload["bytes"] / n}
    runs: dict[str, list[dict]] = {"worker": [], "pipe_plain": [], "pipe_transactional": []}
    mirror: Mirror | None = None
    for r in range(args.repeat):
        sfx = str(r + 1) if args.repeat > 1 else ""
        log(f"worker{f' (round {sfx})' if sfx else ''}")
        wt = WorkerTopics.fresh(topics, f"worker{sfx}", input_topic)
        runs["worker"].append(
            run_worker_throughput(bootstrap, wt, f"{topics.tag}-worker{sfx}", n, args)
        )
        log(f"  -> {runs['worker'][-1]['docs_per_s']:,.0f} docs/s")
        if mirror is None:
            mirror = Mirror.read(bootstrap, wt)
            out["mirror"] = {
                "duplicates": len(mirror.duplicates),
                "changelog": len(mirror.changelog),
            }
        for transactional in (False, True):
            kind = "transactional" if transactional else "plain"
            log(f"bare pipe, {kind}")
            runs[f"pipe_{kind}"].append(
                run_pipe(
                    bootstrap,
                    topics,
                    input_topic,
                    n,
                    transactional,
                    mirror,
                    args,
                    f"pipe-{kind}{sfx}",
                )
            )
            log(f"  -> {runs[f'pipe_{kind}'][-1]['docs_per_s']:,.0f} docs/s")
    for key, rounds in runs.items():
        rates = [r["docs_per_s"] for r in rounds]
        out[key] = {"docs_per_s": statistics.median(rates), "runs": rounds}
    for pipe in ("transactional", "plain"):
        out[f"ratio_worker_vs_{pipe}_pipe"] = round(
            out["worker"]["docs_per_s"] / out[f"pipe_{pipe}"]["docs_per_s"], 3
        )
    return out


# ---------------------------------------------------------------------------------------------
# 2. latency


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 1]."""
    if not values:
        return float("nan")
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def histogram_buckets(metrics: str, name: str) -> dict[float, float]:
    """Cumulative bucket counts (upper bound -> count) of a histogram in /metrics text."""
    pattern = re.compile(rf'^{name}_bucket\{{le="([^"]+)"\}} ([\d.e+]+)$')
    return {
        float(m[1]): float(m[2]) for m in map(pattern.match, metrics.splitlines()) if m is not None
    }


def histogram_quantiles(
    metrics: str, name: str, qs: Sequence[float], before: str = ""
) -> list[float | None]:
    """Quantiles of a Prometheus histogram, as histogram_quantile(); minus a `before` scrape."""
    old = histogram_buckets(before, name)
    buckets = sorted(
        (le, count - old.get(le, 0.0)) for le, count in histogram_buckets(metrics, name).items()
    )
    if not buckets or buckets[-1][1] == 0:
        return [None for _ in qs]
    total = buckets[-1][1]
    out: list[float | None] = []
    for q in qs:
        rank = q * total
        prev_le, prev_count = 0.0, 0.0
        value: float | None = None
        for le, count in buckets:
            if count >= rank:
                if le == float("inf"):
                    value = prev_le  # beyond the last finite bucket: report its bound
                else:
                    width = count - prev_count
                    frac = (rank - prev_count) / width if width else 1.0
                    value = prev_le + (le - prev_le) * frac
                break
            prev_le, prev_count = le, count
        out.append(None if value is None else round(value, 4))
    return out


class VisibilityRecorder:
    """A read_committed consumer thread noting when each key first becomes visible."""

    def __init__(self, bootstrap: str, topic_names: Sequence[str]) -> None:
        self.seen: dict[str, float] = {}
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            enable_auto_commit=False,
            isolation_level="read_committed",
            fetch_max_wait_ms=100,
            check_crcs=False,  # a measuring client; spare the shared CPU
            max_partition_fetch_bytes=10 * 1024 * 1024,
        )
        tps = [TopicPartition(t, 0) for t in topic_names]
        self.consumer.assign(tps)
        self.consumer.seek_to_beginning(*tps)
        for tp in tps:
            self.consumer.position(tp)  # resolve now, not while documents flow
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="visibility", daemon=True)
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                batch = self.consumer.poll(timeout_ms=100)
                now = time.time()
                for msgs in batch.values():
                    for m in msgs:
                        if m.key is not None:
                            self.seen.setdefault(m.key.decode(), now)
        except BaseException as exc:
            self.error = exc

    def start(self) -> VisibilityRecorder:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.consumer.close(autocommit=False)


def wait_visible(
    recorder: VisibilityRecorder, w: WorkerProcess, count: int, timeout: float
) -> None:
    """Until `count` keys are visible or `timeout` passes (then the caller reports a shortfall)."""
    deadline = time.monotonic() + timeout
    while len(recorder.seen) < count and time.monotonic() < deadline:
        if recorder.error is not None:
            raise BenchError(f"visibility consumer failed: {recorder.error!r}")
        w.check_alive()
        time.sleep(0.1)


def section_latency(
    bootstrap: str, topics: Topics, src: DocSource, rate: float, args: argparse.Namespace
) -> dict:
    count = max(1, round(rate * args.latency_seconds))
    wt = WorkerTopics.fresh(topics, "lat", topics.create("lat.input"))
    docs = [src.doc(i, "lat-") for i in range(count)]
    warmup = [src.doc(i, "warm-") for i in range(count, count + WARMUP_DOCS)]
    w = WorkerProcess(
        bootstrap, wt, f"{topics.tag}-lat", args.log_dir / "worker-latency.log", args.max_batch
    )
    recorder: VisibilityRecorder | None = None
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
    sent: dict[str, float] = {}
    try:
        w.start()
        w.wait_ready(args.timeout)
        recorder = VisibilityRecorder(bootstrap, [wt.unique, wt.duplicate]).start()
        for key, value in warmup:
            producer.send(wt.input, key=key, value=value)
        producer.flush()
        wait_visible(recorder, w, len(warmup), 120.0)
        if len(recorder.seen) < len(warmup):
            raise BenchError(f"warm-up documents not decided in 120 s:\n{w.log_tail()}")
        recorder.seen.clear()
        _, warm_metrics = w.http("/metrics")
        log(f"producing {count:,} docs at {rate:,.1f} docs/s for {args.latency_seconds:.0f}s")
        t0 = time.monotonic()
        for i, (key, value) in enumerate(docs):
            delay = t0 + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            now = time.time()
            producer.send(wt.input, key=key, value=value, timestamp_ms=int(now * 1000))
            sent[key.decode()] = now
        send_seconds = time.monotonic() - t0
        producer.flush()
        wait_visible(recorder, w, count, max(60.0, args.latency_seconds))
        _, metrics = w.http("/metrics")
    finally:
        producer.close(timeout=10)
        if recorder is not None:
            recorder.stop()
        w.stop()
    latencies = [recorder.seen[k] - t for k, t in sent.items() if k in recorder.seen]
    if len(latencies) < count:
        log(f"  warning: only {len(latencies):,}/{count:,} decisions became visible")
    hist = histogram_quantiles(metrics, LATENCY_METRIC, (0.5, 0.99), before=warm_metrics)
    return {
        "target_docs_per_s": round(rate, 1),
        "achieved_docs_per_s": round(count / send_seconds, 1) if send_seconds > 0 else None,
        "docs_sent": count,
        "docs_visible": len(latencies),
        "p50_s": round(percentile(latencies, 0.5), 4),
        "p99_s": round(percentile(latencies, 0.99), 4),
        "mean_s": round(statistics.fmean(latencies), 4) if latencies else None,
        "max_s": round(max(latencies), 4) if latencies else None,
        "worker_histogram_p50_s": hist[0],
        "worker_histogram_p99_s": hist[1],
        "batch_seconds_p50_p99": histogram_quantiles(
            metrics, "neardup_batch_processing_seconds", (0.5, 0.99), before=warm_metrics
        ),
    }


# ---------------------------------------------------------------------------------------------
# 3. restore


def fingerprint_pool(src: DocSource, size: int) -> list[FingerprintRecord]:
    """Records of the first `size` texts, made by the engine itself (1,000 per call)."""
    dedup = Deduplicator()
    pool: list[FingerprintRecord] = []
    for start in range(0, size, 1000):
        docs = [
            Document(id=f"p{i:06d}", text=src.text(i).text)
            for i in range(start, min(size, start + 1000))
        ]
        pool.extend(o.record for o in dedup.process(docs, records=True) if o.record is not None)
    return pool


def _renamed(doc_id: str | None, copy: int) -> str | None:
    return None if doc_id is None else f"r{copy}-{doc_id}"


def changelog_records(pool: list[FingerprintRecord], n: int) -> Iterator[tuple[bytes, bytes]]:
    """`n` (key, value) changelog records: copy c of the pool, ids and bucket keys varied by c."""
    for i in range(n):
        c, j = divmod(i, len(pool))
        p = pool[j]
        x = zlib.crc32(c.to_bytes(4, "little")) if c else 0
        rec = dataclasses.replace(
            p,
            doc_id=f"r{c}-{p.doc_id}",
            duplicate_of=_renamed(p.duplicate_of, c),
            representative=_renamed(p.representative, c),
            exact=(int(p.exact[0]) ^ (x | x << 32), int(p.exact[1])),
            lsh_keys=p.lsh_keys ^ x,
            simhash_keys=p.simhash_keys ^ x,
        )
        yield rec.doc_id.encode(), rec.encode()


def inprocess_restore(
    bootstrap: str, topic: str, expected: int, pool: list[FingerprintRecord]
) -> dict:
    """`restore_index` in this process, then its parts: fetch, decode, insert."""
    settings = _settings(bootstrap, "unused", "bench", 500, False)
    config = DedupConfig()
    Deduplicator(config).apply_records(pool[:100])  # compile the replay kernels first
    tp = TopicPartition(topic, 0)

    reader = clients.make_reader(settings)
    started = time.perf_counter()
    dedup, replayed = restore_index(reader, topic, [0], config)
    total = time.perf_counter() - started
    reader.close(autocommit=False)
    index_bytes = dedup.index_bytes()
    del dedup

    reader = clients.make_reader(settings)
    reader.assign([tp])
    reader.seek_to_beginning(tp)
    end = reader.end_offsets([tp])[tp]
    values: list[bytes] = []
    started = time.perf_counter()
    while reader.position(tp) < end:
        for msgs in reader.poll(timeout_ms=500).values():
            values.extend(m.value for m in msgs if m.value is not None)
    fetch = time.perf_counter() - started
    reader.close(autocommit=False)

    dedup = Deduplicator(config)
    decode = insert = 0.0
    for start in range(0, len(values), 10_000):
        t0 = time.perf_counter()
        records = [FingerprintRecord.decode(v) for v in values[start : start + 10_000]]
        t1 = time.perf_counter()
        dedup.apply_records(records)
        t2 = time.perf_counter()
        decode += t1 - t0
        insert += t2 - t1
    if replayed != expected or len(values) != expected:
        log(f"  warning: replayed {replayed:,}, fetched {len(values):,}, expected {expected:,}")
    return {
        "restore_index_seconds": round(total, 2),
        "records_per_s": round(replayed / total, 1),
        "records": replayed,
        "index_bytes": index_bytes,
        "fetch_only_seconds": round(fetch, 2),
        "decode_seconds": round(decode, 2),
        "insert_seconds": round(insert, 2),
    }


def section_restore(
    bootstrap: str, topics: Topics, src: DocSource, args: argparse.Namespace
) -> dict:
    n = args.restore_docs
    pool_size = min(args.pool_size, n)
    log(f"fingerprinting a pool of {pool_size:,} texts")
    started = time.perf_counter()
    pool = fingerprint_pool(src, pool_size)
    fp_seconds = time.perf_counter() - started
    changelog = topics.create("restore.changelog", compact=True)
    log(f"writing {n:,} changelog records to {changelog}")
    produced = produce_bulk(bootstrap, changelog, changelog_records(pool, n))
    log(
        f"  {produced['records']:,} records, {produced['bytes'] / 1e6:,.0f} MB "
        f"in {produced['seconds']:.1f}s"
    )
    wt = WorkerTopics.fresh(topics, "restore", topics.create("restore.input"), changelog)
    Deduplicator().apply_records(pool[:100])  # refresh the replay kernels' JIT cache if stale
    w = WorkerProcess(
        bootstrap,
        wt,
        f"{topics.tag}-restore",
        args.log_dir / "worker-restore.log",
        args.max_batch,
    )
    log("worker restore")
    try:
        w.start()
        ready = w.wait_ready(args.timeout)
        rss = w.rss_bytes()
        _, metrics = w.http("/metrics")
    finally:
        w.stop()
    m = RESTORED_RE.search(w.log_text())
    if m is None:
        raise BenchError(f"no 'restored N records' line in the worker log:\n{w.log_tail()}")
    records, seconds = int(m[1]), float(m[4])
    gauge = re.search(r"^neardup_restore_seconds ([\d.e+]+)$", metrics, re.M)
    out: dict[str, Any] = {
        "records_written": produced["records"],
        "changelog_bytes": produced["bytes"],
        "record_bytes_mean": round(produced["bytes"] / max(1, produced["records"]), 1),
        "pool_size": len(pool),
        "pool_fingerprint_seconds": round(fp_seconds, 2),
        "produce": produced,
        "worker": {
            "records_restored": records,
            "restore_seconds": seconds,
            "restore_seconds_metric": float(gauge[1]) if gauge else None,
            "records_per_s": round(records / seconds, 1) if seconds else None,
            "spawn_to_ready_seconds": round(ready - w.spawned_at, 2),
            "rss_bytes_after_restore": rss,
        },
    }
    log(f"  -> {records:,} records in {seconds:.1f}s ({records / max(seconds, 1e-9):,.0f}/s)")
    if not args.skip_inprocess:
        log("in-process restore_index and its parts")
        out["in_process"] = inprocess_restore(bootstrap, changelog, produced["records"], pool)
    return out


# ---------------------------------------------------------------------------------------------
# report


_CRC_PROBE = "from kafka.record import util; print('C' if getattr(util, 'crc32c_c', None) else 'pure Python')"


def _crc_impl(child: bool) -> str:
    """kafka-python's CRC-32C: in this process, or in a fresh one (as the worker gets it)."""
    if not child:
        from kafka.record import util

        return "C" if getattr(util, "crc32c_c", None) else "pure Python"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    probe = subprocess.run(
        [sys.executable, "-c", _CRC_PROBE],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return probe.stdout.strip() or f"unknown ({probe.stderr.strip()[-200:]})"


def _git(*cmd: str) -> str:
    try:
        done = subprocess.run(
            ["git", *cmd], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return ""
    return done.stdout.strip()


def environment() -> dict[str, Any]:
    """Versions and the state of the code under test (checked again at the end of the run)."""
    from importlib.metadata import PackageNotFoundError, version

    diff = _git("diff", "HEAD", "--", "neardup_stream", "worker")
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "crc32c_bench": _crc_impl(child=False),
        "crc32c_worker": _crc_impl(child=True),
        "git_commit": _git("rev-parse", "--short", "HEAD"),
        "code_diff_sha1": hashlib.sha1(diff.encode()).hexdigest()[:12] if diff else None,
    }
    for pkg in ("kafka-python", "crc32c", "numpy", "numba"):
        try:
            env[pkg] = version(pkg)
        except PackageNotFoundError:
            env[pkg] = "not installed"
    return env


def _fmt(value: float | None, spec: str = ",.0f", unit: str = "") -> str:
    return "n/a" if value is None else f"{value:{spec}}{unit}"


def table(results: dict[str, Any]) -> str:
    rows: list[tuple[str, str, str]] = []
    t = results.get("throughput")
    if t:
        for key, label in (
            ("pipe_plain", "bare pipe, plain (idempotent, commit per batch)"),
            ("pipe_transactional", "bare pipe, transactional (1 txn per batch)"),
            ("worker", "worker (python -m worker, exactly-once)"),
        ):
            r = t[key]
            detail = ", ".join(f"{x['docs_per_s']:,.0f} in {x['seconds']:.1f} s" for x in r["runs"])
            if len(r["runs"]) > 1:
                detail = f"median of {detail}"
            rows.append(("throughput", label, f"{r['docs_per_s']:,.0f} docs/s  ({detail})"))
        ratio = t["ratio_worker_vs_transactional_pipe"]
        verdict = "ok" if ratio >= 0.7 else "BELOW GOAL"
        rows.append(
            ("throughput", "worker / transactional pipe", f"{ratio:.2f}  (goal >= 0.7: {verdict})")
        )
        rows.append(("throughput", "worker / plain pipe", f"{t['ratio_worker_vs_plain_pipe']:.2f}"))
    lat = results.get("latency")
    if lat:
        rows.append(
            (
                "latency",
                "rate (0.5 x worker max), target / achieved",
                f"{lat['target_docs_per_s']:,.0f} / {_fmt(lat['achieved_docs_per_s'])} docs/s",
            )
        )
        rows.append(
            (
                "latency",
                "produce -> visible (read_committed) p50 / p99",
                f"{lat['p50_s']:.3f} / {lat['p99_s']:.3f} s  "
                f"({lat['docs_visible']:,}/{lat['docs_sent']:,} docs)",
            )
        )
        rows.append(
            (
                "latency",
                "worker histogram p50 / p99 (cross-check)",
                f"{_fmt(lat['worker_histogram_p50_s'], '.3f')} / "
                f"{_fmt(lat['worker_histogram_p99_s'], '.3f')} s",
            )
        )
    res = results.get("restore")
    if res:
        w = res["worker"]
        verdict = "ok" if w["restore_seconds"] < 60 else "ABOVE GOAL"
        if w["records_restored"] < 1_000_000:
            verdict = "n/a, the goal is for 1M"
        rows.append(
            (
                "restore",
                f"worker restore of {w['records_restored']:,} records (log)",
                f"{w['restore_seconds']:.1f} s  ({_fmt(w['records_per_s'])} rec/s; "
                f"goal < 60 s: {verdict})",
            )
        )
        rows.append(
            ("restore", "worker spawn -> /healthz 200", f"{w['spawn_to_ready_seconds']:.1f} s")
        )
        if w["rss_bytes_after_restore"]:
            rows.append(
                (
                    "restore",
                    "worker RSS after restore",
                    f"{w['rss_bytes_after_restore'] / 2**20:,.0f} MiB",
                )
            )
        ip = res.get("in_process")
        if ip:
            rows.append(
                (
                    "restore",
                    "in-process restore_index",
                    f"{ip['restore_index_seconds']:.1f} s  ({ip['records_per_s']:,.0f} rec/s)",
                )
            )
            rows.append(
                (
                    "restore",
                    "  parts: fetch only / decode / insert",
                    f"{ip['fetch_only_seconds']:.1f} / {ip['decode_seconds']:.1f} / "
                    f"{ip['insert_seconds']:.1f} s",
                )
            )
    widths = [
        max(len(r[i]) for r in [("section", "measurement", "value"), *rows]) for i in range(2)
    ]
    lines = [f"{'section':<{widths[0]}}  {'measurement':<{widths[1]}}  value"]
    lines.append("-" * (widths[0] + widths[1] + 40))
    lines += [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c}" for a, b, c in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# main


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.bench_kafka", description=__doc__.splitlines()[0]
    )
    p.add_argument("--docs", type=int, default=50_000, help="documents for throughput")
    p.add_argument("--restore-docs", type=int, default=1_000_000, help="changelog records")
    p.add_argument("--bootstrap-servers", help="use this broker (default: start the local one)")
    p.add_argument("--max-batch", type=int, default=500, help="records per batch/transaction")
    p.add_argument(
        "--repeat", type=int, default=1, help="throughput rounds (worker, pipes); medians reported"
    )
    p.add_argument("--latency-seconds", type=float, default=25.0)
    p.add_argument("--latency-rate", type=float, help="docs/s (default: 0.5 x worker max)")
    p.add_argument("--pool-size", type=int, default=20_000, help="texts fingerprinted for restore")
    p.add_argument(
        "--sections",
        default=",".join(SECTIONS),
        help=f"comma-separated subset of {','.join(SECTIONS)}",
    )
    p.add_argument("--skip-inprocess", action="store_true", help="no in-process restore timing")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per waiting step")
    p.add_argument("--out", type=Path, default=RESULTS_PATH, help="JSON results file")
    p.add_argument("--log-dir", type=Path, help="worker logs (default: a new temp dir)")
    p.add_argument("--keep-topics", action="store_true", help="do not delete this run's topics")
    return p


def run(args: argparse.Namespace, bootstrap: str) -> dict[str, Any]:
    """The selected sections against `bootstrap`; this run's topics are deleted afterwards."""
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    tag = f"bk{time.strftime('%m%d%H%M%S')}{random.randrange(1000):03d}"
    texts, source = load_texts(max(args.docs, args.pool_size))
    env = environment()
    if env["crc32c_bench"] != env["crc32c_worker"]:
        log(f"warning: CRC-32C is {env['crc32c_bench']} here, {env['crc32c_worker']} in workers")
    src = DocSource(texts)
    results: dict[str, Any] = {
        "config": {
            "docs": args.docs,
            "restore_docs": args.restore_docs,
            "max_batch": args.max_batch,
            "repeat": args.repeat,
            "latency_seconds": args.latency_seconds,
            "pool_size": args.pool_size,
            "bootstrap_servers": bootstrap,
            "sections": sections,
            "run_tag": tag,
            "texts": f"{source} ({len(texts):,} texts, reused in passes)",
        },
        "environment": env,
    }
    topics = Topics(bootstrap, tag)
    try:
        if "throughput" in sections:
            results["throughput"] = section_throughput(bootstrap, topics, src, args)
        if "latency" in sections:
            rate = args.latency_rate
            if rate is None:
                if "throughput" not in results:
                    raise BenchError("--latency-rate is needed without the throughput section")
                rate = 0.5 * results["throughput"]["worker"]["docs_per_s"]
            results["latency"] = section_latency(bootstrap, topics, src, rate, args)
        if "restore" in sections:
            results["restore"] = section_restore(bootstrap, topics, src, args)
    finally:
        if not args.keep_topics:
            topics.delete_all()
        topics.close()
    after = environment()
    changed = [
        f"{k}: {v} -> {after.get(k)}"
        for k, v in results["environment"].items()
        if after.get(k) != v
    ]
    if changed:
        results["warnings"] = [f"the environment changed during the run ({'; '.join(changed)})"]
    return results


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    unknown = {s.strip() for s in args.sections.split(",")} - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}")
    args.log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="bench-kafka-"))
    args.log_dir.mkdir(parents=True, exist_ok=True)
    # SIGTERM -> KeyboardInterrupt, so the finally blocks stop workers and the broker.
    signal.signal(signal.SIGTERM, _interrupt)
    started = time.monotonic()
    try:
        broker = Broker(args.bootstrap_servers) if args.bootstrap_servers else start_local_broker()
    except (BenchError, subprocess.TimeoutExpired) as exc:
        print(f"bench_kafka: {exc}", file=sys.stderr)
        return 1
    log(f"broker {broker.bootstrap}; worker logs in {args.log_dir}")
    try:
        results = run(args, broker.bootstrap)
    except BenchError as exc:
        print(f"bench_kafka: {exc}", file=sys.stderr)
        return 1
    finally:
        broker.stop_if_started()
    results["total_seconds"] = round(time.monotonic() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    env = results["environment"]
    sizes = {"throughput": f"{args.docs:,} docs", "restore": f"{args.restore_docs:,} records"}
    ran = ", ".join(f"{s} ({sizes[s]})" if s in sizes else s for s in results["config"]["sections"])
    print(
        f"\nneardup-stream on Kafka: {ran}; broker {broker.bootstrap}; "
        f"kafka-python {env['kafka-python']} (CRC-32C: {env['crc32c_bench']} here, "
        f"{env['crc32c_worker']} in the worker); {env['cpus']} CPUs; "
        f"code {env['git_commit']}{' + local changes' if env['code_diff_sha1'] else ''}; "
        f"texts: {results['config']['texts']}"
    )
    print(table(results))
    for warning in results.get("warnings", []):
        print(f"WARNING: {warning}")
    print(f"total {results['total_seconds']:.0f} s; results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
