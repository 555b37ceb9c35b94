"""Helpers for driving a real worker process against the real broker in tests."""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

REPO_ROOT = Path(__file__).resolve().parents[2]
_ROLE_PARTITIONS = re.compile(r'^neardup_role_partitions\{role="(\w+)"\} (\S+)$', re.M)


# Ports for the test's own listeners (metrics, Prometheus): below the kernel's ephemeral range
# (32768-60999 by default), so no Kafka client connection of this or a parallel pytest process
# holds one as its local port, and below the brokers of its own (28500+). A cursor in a file
# shared by the user's pytest processes on the host (in /tmp whatever TMPDIR says) hands each
# port out once per 8,000 picks, so the main and the fault suite, run at once, never pick the
# same one. Where the ephemeral range covers these ports, the kernel picks (`bind(0)`).
_PORTS = range(20000, 28000)
_CURSOR = Path("/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()) / (
    f"neardup-test-port-cursor-{os.getuid()}"
)


def _ephemeral() -> range:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return range(int(low), int(high) + 1)
    except (OSError, ValueError):
        return range(32768, 61000)


def free_port() -> int:
    """A port nothing listens on now, not handed out to another test recently."""
    ephemeral = _ephemeral()
    if ephemeral.start < _PORTS.stop and _PORTS.start < ephemeral.stop:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])
    with open(_CURSOR, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        text = f.read().strip()
        at = int(text) if text.isdigit() else _PORTS.start + os.getpid() % len(_PORTS)
        for step in range(len(_PORTS)):
            port = _PORTS.start + (at - _PORTS.start + step) % len(_PORTS)
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
            f.seek(0)
            f.truncate()
            f.write(str(port + 1))
            return port
    raise AssertionError(f"no free port in {_PORTS}")


@dataclass
class Topics:
    """A fresh set of topic names for one test."""

    input: str
    unique: str
    duplicate: str
    dlq: str
    changelog: str

    @classmethod
    def fresh(cls, make: object) -> Topics:
        base = make("nd")  # type: ignore[operator]
        return cls(base, f"{base}.unique", f"{base}.duplicate", f"{base}.dlq", f"{base}.changelog")

    def args(self, changelog: bool = True) -> list[str]:
        """The worker's topic flags; `changelog`: with `--changelog-topic` (partition scope's)."""
        return [
            "--input-topic",
            self.input,
            "--unique-topic",
            self.unique,
            "--duplicate-topic",
            self.duplicate,
            "--dlq-topic",
            self.dlq,
            *(["--changelog-topic", self.changelog] if changelog else []),
        ]

    def internal_env(self) -> dict[str, str]:
        """The scale-out roles' internal topics, fresh for this test, as environment."""
        return {
            "NEARDUP_CLUSTER__FINGERPRINTS": f"{self.input}.fingerprints",
            "NEARDUP_CLUSTER__PAYLOADS": f"{self.input}.payloads",
            "NEARDUP_CLUSTER__VOTES": f"{self.input}.votes",
            "NEARDUP_CLUSTER__SHARDS": f"{self.input}.shards",
            "NEARDUP_CLUSTER__SHARD_CHANGELOG": f"{self.input}.shard-changelog",
            "NEARDUP_CLUSTER__GATHER_CHANGELOG": f"{self.input}.gather-changelog",
        }


@dataclass
class WorkerProcess:
    """`python -m neardup_stream.worker` as a child process, with its log in a file."""

    bootstrap: str
    topics: Topics
    group: str
    log_path: Path
    instance: str = "w1"
    extra: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # e.g. NEARDUP_FAILPOINTS, on top
    # --scope, unless `extra` gives it: partition for the per-partition worker's tests, None
    # for the product default (topic scope)
    scope: str | None = "partition"
    create_input: bool = True  # --create-input-topic: most tests produce after the start
    metrics_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def partition_scope(self) -> bool:
        """Whether the worker runs `--scope partition` (given in `extra` or by `scope`)."""
        given = self.extra[self.extra.index("--scope") + 1] if "--scope" in self.extra else None
        return (given or self.scope) == "partition"

    @property
    def input_group(self) -> str:
        """The group that commits the input offsets: the worker's own in partition scope,
        its edge role's (`<group>-edge`) in topic scope."""
        return self.group if self.partition_scope else f"{self.group}-edge"

    def start(self) -> WorkerProcess:
        cmd = [
            sys.executable,
            "-m",
            "neardup_stream.worker",
            "--bootstrap-servers",
            self.bootstrap,
            *self.topics.args(changelog=self.partition_scope),
            "--group-id",
            self.group,
            "--instance-id",
            self.instance,
            "--metrics-port",
            str(self.metrics_port),
            *(["--create-input-topic"] if self.create_input else []),
            *(["--scope", self.scope] if self.scope and "--scope" not in self.extra else []),
            *self.extra,
        ]
        log = open(self.log_path, "ab")  # noqa: SIM115 (kept open for the child)
        env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
        env.update(self.env)
        self.proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=log, stderr=log, env=env)
        return self

    def http(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.metrics_port}{path}", timeout=5
            ) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"worker exited {self.proc.returncode}:\n{self.log()}")
            if self.healthy():
                return
            time.sleep(0.2)
        raise AssertionError(f"worker not ready after {timeout}s:\n{self.log()}")

    def healthy(self) -> bool:
        """Whether /healthz answers 200 (False while it does not answer)."""
        try:
            return self.http("/healthz")[0] == 200
        except OSError:  # not listening yet, or gone
            return False

    def held(self) -> dict[str, float]:
        """Partitions it holds per cluster role (empty while it does not answer)."""
        try:
            return {r: float(v) for r, v in _ROLE_PARTITIONS.findall(self.http("/metrics")[1])}
        except OSError:
            return {}

    def gauge(self, name: str) -> float | None:
        """The value of an unlabelled gauge (None while it does not answer)."""
        try:
            found = re.search(rf"^{name} (\S+)$", self.http("/metrics")[1], re.M)
        except OSError:
            return None
        return None if found is None else float(found.group(1))

    def dump_stacks(self) -> None:
        """Every thread's stack into its log (SIGUSR1: `faulthandler`), for a failed wait."""
        if self.alive():
            assert self.proc is not None
            self.proc.send_signal(signal.SIGUSR1)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self, timeout: float = 60) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._dump_stacks()
                self.proc.kill()
                self.proc.wait(10)
                raise AssertionError(f"worker ignored SIGTERM:\n{self.log(20_000)}") from None
        return self.proc.returncode

    def _dump_stacks(self, timeout: float = 5) -> None:
        """Every thread's stack into the log (the worker's `faulthandler` on SIGUSR1), so a
        worker that hangs says where; waits until the dump is there or `timeout`."""
        assert self.proc is not None
        before = self.log_path.stat().st_size
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            with self.log_path.open("rb") as f:
                f.seek(before)
                if b"hread 0x" in f.read():  # "Thread 0x..." or "Current thread 0x..."
                    return
            time.sleep(0.1)

    def log(self, tail: int = 6000) -> str:
        return self.log_path.read_text(errors="replace")[-tail:]

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_exit(self, timeout: float) -> int:
        """The exit code once the process ends by itself (e.g. at a failpoint)."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"worker still running after {timeout}s:\n{self.log()}") from None


def produce(bootstrap: str, topic: str, values: Iterable[bytes | None], keys: bool = True) -> int:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
    n = 0
    for n, value in enumerate(values, start=1):
        producer.send(topic, value=value, key=f"k{n}".encode() if keys else None)
    producer.flush()
    producer.close()
    return n


def produce_docs(bootstrap: str, topic: str, docs: Iterable[dict[str, object]]) -> int:
    return produce(bootstrap, topic, (json.dumps(d).encode() for d in docs))


def _partitions_for(consumer: KafkaConsumer, topic: str) -> set[int]:
    """The topic's partitions; none yet while the broker answers a retriable error (a broker
    under load may briefly list no brokers at all: `MetadataEmptyBrokerList`)."""
    try:
        return consumer.partitions_for_topic(topic) or set()
    except KafkaError as exc:
        if not exc.retriable:
            raise
        return set()


def read_all(bootstrap: str, topic: str, expected: int, timeout: float = 120) -> list:
    """Committed messages of `topic` (all partitions), waiting for at least `expected`."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        isolation_level="read_committed",
        enable_auto_commit=False,
        group_id=None,
        consumer_timeout_ms=1000,
    )
    deadline = time.monotonic() + timeout
    while not (partitions := _partitions_for(consumer, topic)):
        if time.monotonic() > deadline:
            consumer.close()
            return []
        time.sleep(0.2)
    tps = [TopicPartition(topic, p) for p in partitions]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    out: list = []
    end = consumer.end_offsets(tps)
    while time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=200).values():
            out.extend(batch)
        if all(consumer.position(tp) >= end[tp] for tp in tps):
            if len(out) >= expected:
                break
            time.sleep(0.5)
            end = consumer.end_offsets(tps)
    consumer.close()
    return out


def decide_then_stop(
    bootstrap: str, topics: Topics, group: str, log_path: Path, docs: list[dict[str, object]]
) -> None:
    """Start a worker, produce `docs`, wait until each is decided, stop the worker cleanly."""
    worker = WorkerProcess(bootstrap, topics, group, log_path).start()
    try:
        worker.wait_ready()
        produce_docs(bootstrap, topics.input, docs)
        assert len(decisions(bootstrap, topics, len(docs))) == len(docs), worker.log()
    finally:
        assert worker.stop() == 0, worker.log()


def decisions(bootstrap: str, topics: Topics, expected: int, timeout: float = 180) -> dict:
    """id -> list of (decision, duplicate_of) across the unique and duplicate topics."""
    deadline = time.monotonic() + timeout
    result: dict[str, list[tuple[str, str | None]]] = {}
    while True:
        result = {}
        uniq = read_all(bootstrap, topics.unique, 0, timeout=5)
        dups = read_all(bootstrap, topics.duplicate, 0, timeout=5)
        for m in uniq:
            result.setdefault(m.key.decode(), []).append(("unique", None))
        for m in dups:
            d = json.loads(m.value)
            result.setdefault(d["id"], []).append(("duplicate", d["duplicate_of"]))
        if sum(len(v) for v in result.values()) >= expected or time.monotonic() > deadline:
            return result
        time.sleep(1)
