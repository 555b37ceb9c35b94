"""The neardup-stream quick start: a real broker, a real worker, a bundled news sample.

    bash deploy/local/demo/run.sh [--stop-broker] [--metrics-port N] [--bootstrap-servers H:P]

Starts the local Kafka broker (`deploy/local/kafka.sh start`, port $KAFKA_PORT, default 9092)
unless --bootstrap-servers is given, runs `python -m neardup_stream.worker` on fresh `demo-<time>.*` topics,
feeds `sample.jsonl` (English + Chinese news with near-duplicates and 2 malformed records),
waits until every message has a committed decision or dead letter, prints a summary and live
metrics, then stops the worker with SIGTERM. The broker keeps running unless --stop-broker.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import unicodedata
import urllib.request
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
KAFKA_SH = REPO / "deploy" / "local" / "kafka.sh"
SAMPLE = HERE / "sample.jsonl"
TEST_KAFKA_PORT = 19092  # `make test`'s broker (Makefile): never suggested for the demo
Doc = dict[str, Any]
WARM_UP = """if True:  # decide the sample once so numba compiles (and caches) the engine's kernels
    import sys
    from neardup_stream import Deduplicator, Document
    from neardup_stream.parsing import parse_document
    parsed = [parse_document(line) for line in open(sys.argv[1], "rb").read().splitlines()]
    Deduplicator().process([d for d in parsed if isinstance(d, Document)], records=True)
"""


class DemoError(Exception):
    """A failure with a message meant for the user."""


def load_sample(path: Path = SAMPLE) -> tuple[list[bytes], dict[str, Doc]]:
    """The raw lines to produce, and the well-formed documents by id (for the summary)."""
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    docs: dict[str, Doc] = {}
    for line in lines:
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("text"), str):
            docs[obj["id"]] = obj
    return lines, docs


def clip(text: str, start: int, columns: int = 62) -> str:
    """`text` from `start` on one line, cut to `columns` terminal columns (CJK count two)."""
    out = "…" if start > 0 else ""
    for ch in text[start:]:
        columns -= 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        if columns <= 1:
            return out + "…"
        out += ch
    return out


def pair_snippets(copy: str, original: str) -> tuple[str, str]:
    """One-line excerpts of two texts, starting just before their first difference."""
    a, b = " ".join(copy.split()), " ".join(original.split())
    same = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    start = 0 if same < 30 or a == b else same - 12
    return clip(a, start), clip(b, start)


def summarize(
    decisions: Sequence[Doc],
    docs: dict[str, Doc],
    elapsed: float,
    dead_letters: Sequence[Doc] = (),
    examples: int = 6,
) -> str:
    """The human-readable result of a run. Pure (no I/O), so tests can call it.

    Args:
        decisions: Decision dicts (id, decision, and for duplicates duplicate_of, similarity,
            method), as read from the unique and duplicate topics.
        docs: The input documents by id (text, lang).
        elapsed: Seconds from the first message produced to the last outcome read committed.
        dead_letters: Error records from the dead-letter topic (reason, message, ...).
        examples: How many duplicate pairs to show.
    """
    lang = {d["id"]: str(docs.get(d["id"], {}).get("lang") or "?") for d in decisions}
    langs = sorted(set(lang.values()))
    table: Counter[tuple[str, str]] = Counter()  # (row, language or "all") -> count
    for d in decisions:
        rows = ["unique"] if d["decision"] == "unique" else ["duplicate", f"  {d['method']}"]
        table.update((row, col) for row in rows for col in (lang[d["id"]], "all"))
    out = [f"{'decision':<13}{'count':>6}{'share':>8}" + "".join(f"{x:>7}" for x in langs)]
    for row in ("unique", "duplicate", "  exact", "  simhash", "  minhash"):
        n, share = table[(row, "all")], table[(row, "all")] / max(1, len(decisions))
        out.append(
            f"{row:<13}{n:>6}{share:>8.1%}" + "".join(f"{table[(row, x)]:>7}" for x in langs)
        )
    reasons = sorted(Counter(str(e.get("reason")) for e in dead_letters).items())
    detail = ", ".join(f"{r}: {n}" for r, n in reasons)
    out.append(f"{'dead letters':<13}{len(dead_letters):>6}    ({detail or 'none'})")
    handled = len(decisions) + len(dead_letters)
    out += [
        "",
        f"throughput   {handled} messages in {elapsed:.2f} s = "
        f"{handled / max(elapsed, 1e-9):,.0f} msg/s (first produced -> last outcome read committed)",
        "             a few hundred messages measure start-up and round trips (poll, transaction",
        "             commit, the consumer's wait for more), not capacity: sustained throughput,",
        "             with a backlog, is in docs/benchmarks.md (thousands of docs/s per worker)",
    ]
    dups = [d for d in decisions if d["decision"] == "duplicate" and d["duplicate_of"] in docs]
    picked = [  # one example per language and method first, then any
        next(d for d in dups if d["method"] == m and lang[d["id"]] == x)
        for x in langs
        for m in ("minhash", "simhash", "exact")
        if any(d["method"] == m and lang[d["id"]] == x for d in dups)
    ]
    picked = (picked + [d for d in dups if d not in picked])[:examples]
    if picked:
        out += ["", "near-duplicates found (similarity, method: copy ≈ earlier document):"]
    for d in picked:
        out.append(f"  {d['similarity']:.3f} {d['method']:<8} {d['id']} ≈ {d['duplicate_of']}")
        texts = pair_snippets(docs[d["id"]]["text"], docs[d["duplicate_of"]]["text"])
        out += [f"      {i}: {t}" for i, t in zip((d["id"], d["duplicate_of"]), texts, strict=True)]
    return "\n".join(out)


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts TCP connections on host:port."""
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((host, port)) == 0


def free_port_pair(start: int) -> int:
    """The first port from `start` that is free with its successor (the broker's controller
    port), skipping the test suite's broker port."""
    port = start
    while TEST_KAFKA_PORT in (port, port + 1) or port_open(port) or port_open(port + 1):
        port += 2
    return port


def kafka_sh(command: str, port: int) -> subprocess.CompletedProcess[str]:
    """Run deploy/local/kafka.sh; its progress messages (stderr) go to the terminal."""
    env = {**os.environ, "KAFKA_PORT": str(port)}
    cmd = ["bash", str(KAFKA_SH), command]
    return subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, check=False)


def ensure_broker(port: int) -> str:
    """Start (or reuse) the local broker on 127.0.0.1:port; returns its bootstrap address."""
    if kafka_sh("status", port).returncode != 0:
        for p in (port, int(os.environ.get("KAFKA_CONTROLLER_PORT", port + 1))):
            if port_open(p):
                other = free_port_pair(port + 100)
                raise DemoError(
                    f"port 127.0.0.1:{p} is already in use by another process (not the local "
                    "broker that deploy/local/kafka.sh manages).\n  Free the port, run the demo "
                    f"on another one (e.g. make demo KAFKA_PORT={other}; {TEST_KAFKA_PORT} is "
                    "the test suite's), or, if that is a Kafka broker, use it: "
                    f"--bootstrap-servers 127.0.0.1:{port}"
                )
    started = kafka_sh("start", port)
    if started.returncode != 0 or not started.stdout.split():
        raise DemoError(
            f"deploy/local/kafka.sh start failed (exit {started.returncode}), see above"
        )
    return started.stdout.split()[-1]


def start_worker(bootstrap: str, prefix: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    """`python -m neardup_stream.worker` on the demo's topics (NEARDUP_* settings ignored), logging to `log`."""
    flags = {
        "bootstrap-servers": bootstrap, "group-id": prefix, "instance-id": "demo",
        "metrics-host": "127.0.0.1", "metrics-port": str(port),
        "input-topic": f"{prefix}.documents", "unique-topic": f"{prefix}.unique",
        "duplicate-topic": f"{prefix}.duplicate", "dlq-topic": f"{prefix}.dlq",
    }  # fmt: skip
    cmd = [sys.executable, "-m", "neardup_stream.worker", "--create-input-topic"]
    cmd += [a for k, v in flags.items() for a in (f"--{k}", v)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    with open(log, "ab") as f:
        return subprocess.Popen(cmd, cwd=REPO, stdout=f, stderr=subprocess.STDOUT, env=env)


def http_get(port: int, path: str) -> tuple[int, str]:
    """GET http://127.0.0.1:port/path -> (status, body); (0, "") if nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""
    except OSError:
        return 0, ""


def wait_healthy(proc: subprocess.Popen[bytes], port: int, timeout: float) -> None:
    """Block until /healthz answers 200 (index restored, consuming), or fail."""
    deadline = time.monotonic() + timeout
    while http_get(port, "/healthz")[0] != 200:
        if proc.poll() is not None:
            raise DemoError(f"the worker exited with code {proc.returncode} during start-up")
        if time.monotonic() > deadline:
            raise DemoError(f"the worker was not healthy after {timeout:.0f} s")
        time.sleep(0.3)


def produce(bootstrap: str, topic: str, lines: Sequence[bytes]) -> float:
    """Send every line as one message (key = document id); returns the start time (epoch s)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    started = time.time()
    for n, line in enumerate(lines, 1):
        try:
            key = str(json.loads(line)["id"]).encode()
        except (ValueError, KeyError, TypeError):
            key = f"line-{n}".encode()
        producer.send(topic, key=key, value=line)
    producer.flush()
    producer.close()
    return started


def collect(
    bootstrap: str, prefix: str, expected: int, proc: subprocess.Popen[bytes], timeout: float
) -> tuple[list[Doc], list[Doc], float]:
    """Read committed outputs until `expected` messages are accounted for.

    Returns (decisions, dead letters, epoch seconds when the last of them was read). The
    consumer reads committed records only, so that is after the last commit: a record's own
    timestamp is when it was produced, inside its transaction, before the commit.
    """
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level="read_committed", group_id=None
    )
    topics = [f"{prefix}.unique", f"{prefix}.duplicate", f"{prefix}.dlq"]
    for _ in range(20):  # the worker created them before it turned healthy; metadata may lag
        tps = [TopicPartition(t, p) for t in topics for p in consumer.partitions_for_topic(t)]
        if {tp.topic for tp in tps} == set(topics):
            break
        time.sleep(0.5)
    else:
        raise DemoError(f"output topics {topics} not found on {bootstrap}")
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    decided: dict[str, Doc] = {}
    dead: dict[tuple[int, int], Doc] = {}
    start = time.monotonic()
    try:
        while len(decided) + len(dead) < expected:
            if proc.poll() is not None:
                raise DemoError(f"the worker exited with code {proc.returncode} mid-run")
            if time.monotonic() - start > timeout:
                done = len(decided) + len(dead)
                raise DemoError(f"only {done}/{expected} messages decided after {timeout:.0f} s")
            for tp, records in consumer.poll(timeout_ms=500).items():
                for r in records:
                    if tp.topic.endswith(".dlq"):
                        dead[(r.partition, r.offset)] = json.loads(r.value)
                    elif tp.topic.endswith(".duplicate"):
                        decided[r.key.decode()] = json.loads(r.value)
                    else:  # unique: the original document; the decision is in the headers
                        headers = {k: v.decode() for k, v in r.headers}
                        decided[r.key.decode()] = {
                            "id": r.key.decode(),
                            "decision": headers["neardup.decision"],
                        }
        read_at = time.time()
    finally:
        consumer.close()
    return list(decided.values()), list(dead.values()), read_at


def format_metrics(port: int) -> str:
    """A few live values scraped from the worker's /metrics."""
    status, body = http_get(port, "/metrics")
    m: Counter[str] = Counter()  # metric name -> value summed over labels
    for line in body.splitlines() if status == 200 else []:
        if line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            m[series.split("{")[0]] += float(value)
    lat = m["neardup_decision_latency_seconds_sum"] / max(
        1, m["neardup_decision_latency_seconds_count"]
    )
    rows = [
        ("neardup_documents_total", f"{m['neardup_documents_total']:.0f}"),
        ("neardup_dlq_messages_total", f"{m['neardup_dlq_messages_total']:.0f}"),
        ("neardup_index_documents", f"{m['neardup_index_documents']:.0f}"),
        ("neardup_index_bytes", f"{m['neardup_index_bytes'] / 1e6:.2f} MB"),
        (
            "neardup_batch_processing_seconds",
            f"{m['neardup_batch_processing_seconds_sum']:.2f} s "
            f"in {m['neardup_batch_processing_seconds_count']:.0f} batches",
        ),
        ("neardup_decision_latency_seconds", f"mean {lat:.2f} s (record timestamp -> commit)"),
        ("neardup_consumer_lag_messages", f"{m['neardup_consumer_lag_messages']:.0f}"),
        ("neardup_transaction_aborts_total", f"{m['neardup_transaction_aborts_total']:.0f}"),
    ]
    head = f"metrics      http://127.0.0.1:{port}/metrics  (health: /healthz); live values:"
    return "\n".join([head, *(f"  {name:<35}{value}" for name, value in rows)])


def stop_worker(proc: subprocess.Popen[bytes], timeout: float = 30) -> int:
    """SIGTERM, wait (SIGKILL after `timeout`); returns the exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    return proc.returncode


def run(args: argparse.Namespace, prefix: str, log: Path) -> int:
    """The demo proper; raises DemoError on failure."""
    lines, docs = load_sample(args.sample)
    if port_open(args.metrics_port):
        raise DemoError(f"metrics port 127.0.0.1:{args.metrics_port} is busy; use --metrics-port")
    # Meanwhile, load the engine once (it compiles here only if the install could not).
    warm_up = subprocess.Popen([sys.executable, "-c", WARM_UP, str(args.sample)], cwd=REPO)
    loading = time.monotonic()
    print(
        "[demo] loading the engine",
        file=sys.stderr,
    )
    bootstrap = args.bootstrap_servers
    if not bootstrap:
        bootstrap, args.local_broker = ensure_broker(args.kafka_port), True
    if warm_up.wait() != 0:
        raise DemoError("the engine failed to load in this Python (see the error above)")
    print(f"[demo] engine loaded in {time.monotonic() - loading:.1f} s", file=sys.stderr)
    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    if not port.isdigit() or not port_open(int(port), host or "127.0.0.1"):
        raise DemoError(f"cannot connect to Kafka at {bootstrap}")
    print(f"[demo] broker {bootstrap}, topics {prefix}.*, worker log {log}", file=sys.stderr)
    args.proc = start_worker(bootstrap, prefix, args.metrics_port, log)
    wait_healthy(args.proc, args.metrics_port, args.timeout)
    print(
        f"[demo] worker healthy; producing {len(lines)} messages, waiting for decisions",
        file=sys.stderr,
    )
    started = produce(bootstrap, f"{prefix}.documents", lines)
    decisions, dead, last = collect(bootstrap, prefix, len(lines), args.proc, args.timeout)
    metrics = format_metrics(args.metrics_port)
    code = stop_worker(args.proc)
    langs = Counter(str(d.get("lang")) for d in docs.values())
    print(
        f"\n== neardup-stream demo: {len(lines)} messages = {len(docs)} documents "
        f"({langs['en']} English, {langs['zh']} Chinese) + {len(lines) - len(docs)} malformed ==\n"
    )
    print(summarize(decisions, docs, max(last - started, 1e-3), dead))
    print(f"\ntopics       {prefix}.{{documents,unique,duplicate,dlq}} on {bootstrap}")
    print(f"index        {prefix}.shard-changelog (and the other {prefix}.* internal topics)")
    print(f"\n{metrics}\n\nworker stopped with SIGTERM (exit code {code}); log: {log}")
    return 0 if code == 0 else 1


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="deploy/local/demo/run.sh", description=__doc__.splitlines()[0]
    )
    p.add_argument("--bootstrap-servers", help="use this Kafka instead of the local broker")
    p.add_argument(
        "--kafka-port",
        type=int,
        default=int(os.environ.get("KAFKA_PORT", "9092")),
        help="port of the local broker (default $KAFKA_PORT or 9092)",
    )
    p.add_argument("--metrics-port", type=int, default=9108, help="worker metrics (default 9108)")
    p.add_argument("--stop-broker", action="store_true", help="stop the local broker at the end")
    p.add_argument("--sample", type=Path, default=SAMPLE, help="JSONL to feed (default: bundled)")
    p.add_argument("--timeout", type=float, default=180, help="seconds allowed per waiting step")
    args = p.parse_args(argv)
    args.proc, args.local_broker = None, False
    prefix = time.strftime("demo-%Y%m%d-%H%M%S")
    log = Path(tempfile.gettempdir()) / f"neardup-{prefix}.log"
    t0, code, reason = time.monotonic(), 1, ""
    try:
        code = run(args, prefix, log)
    except DemoError as exc:
        reason = str(exc)
    except KeyboardInterrupt:
        code, reason = 130, "interrupted"
    except Exception as exc:
        traceback.print_exc()
        reason = f"unexpected error: {exc!r}"
    if reason:
        print(f"\n[demo] FAILED: {reason}", file=sys.stderr)
        if args.proc is not None:
            stop_worker(args.proc, timeout=10)
        if log.exists():
            tail = [line[:300] for line in log.read_text(errors="replace").splitlines()[-25:]]
            print(f"[demo] last lines of the worker log {log}:", *tail, sep="\n  ", file=sys.stderr)
    if args.local_broker and args.stop_broker:
        kafka_sh("stop", args.kafka_port)
    elif args.local_broker:
        print(
            f"\nthe Kafka broker keeps running on 127.0.0.1:{args.kafka_port}; "
            f"stop it with: KAFKA_PORT={args.kafka_port} deploy/local/kafka.sh stop"
        )
    print(
        f"[demo] {'done' if code == 0 else 'failed'} in {time.monotonic() - t0:.1f} s",
        file=sys.stderr,
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
