"""Helpers of the fault-injection tests (test_faults_*.py): waiting on conditions, producing
exact records, reading committed offsets and topic configs, the exactly-once assertion, and a
broker of our own to pause and restart. Worker processes come from `harness`."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from kafka import KafkaAdminClient, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import KafkaError

from tests.integration.harness import REPO_ROOT, WorkerProcess
from tests.unit.conftest import mutate, random_text


def wait_for(what: str, check: Callable[[], object], timeout: float, every: float = 0.2) -> object:
    """Poll `check` until it returns something truthy (returned); fail naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(every)


def send_records(
    bootstrap: str,
    topic: str,
    records: Iterable[tuple[bytes | None, bytes | None, int | None]],
    max_request_size: int = 1_048_576,
) -> list[int]:
    """Produce (key, value, timestamp_ms) records in order to partition 0; their offsets.

    Idempotent, so a retry never writes an input twice."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=True,
        linger_ms=5,
        max_request_size=max_request_size,
    )
    futures = [
        producer.send(topic, key=key, value=value, partition=0, timestamp_ms=ts)
        for key, value, ts in records
    ]
    producer.flush()
    offsets = [f.get(timeout=120).offset for f in futures]
    producer.close()
    return offsets


def long_range_stream(n: int, seed: int) -> list[dict[str, object]]:
    """n short documents; a quarter are near-copies and a tenth exact copies of a document
    anywhere earlier in the stream."""
    rng = random.Random(seed)
    docs: list[dict[str, object]] = []
    for i in range(n):
        roll = rng.random()
        if i >= 20 and roll < 0.25:
            text = mutate(str(docs[rng.randrange(i)]["text"]), 0.02, seed * 1_000_003 + i)
        elif i >= 20 and roll < 0.35:
            text = str(docs[rng.randrange(i)]["text"])
        else:
            text = random_text(seed * 1_000_000 + i, 60)
        docs.append({"id": f"lr{seed}-{i}", "text": text})
    return docs


def doc_records(docs: Iterable[dict[str, object]]) -> list[tuple[bytes, bytes, None]]:
    """Documents as (key=id, JSON value, broker-assigned timestamp) records."""
    return [(str(d["id"]).encode(), json.dumps(d).encode(), None) for d in docs]


def create_topic(
    bootstrap: str, name: str, partitions: int = 1, configs: dict[str, str] | None = None
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        spec = {"num_partitions": partitions, "replication_factor": 1, "configs": configs or {}}
        admin.create_topics({name: spec}, wait_for_metadata=True)
    finally:
        admin.close()


def topic_config(bootstrap: str, name: str) -> dict[str, str]:
    """Every configuration value of topic `name` (defaults included)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        found = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, name, None)], config_filter="all"
        )
    finally:
        admin.close()
    return {k: v["value"] for k, v in found["topic"][name].items()}


def committed(bootstrap: str, group: str, topic: str) -> int:
    """The group's committed offset of `topic` partition 0 (0 if none or unreachable)."""
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
    except KafkaError:
        return 0
    try:
        offsets = admin.list_group_offsets({group: [TopicPartition(topic, 0)]})
    except KafkaError:
        return 0
    finally:
        admin.close()
    found = offsets.get(group, {}).get(TopicPartition(topic, 0))
    return max(0, found.offset) if found is not None else 0


def wait_committed(
    bootstrap: str, topic: str, at_least: int, worker: WorkerProcess, timeout: float
) -> int:
    """Wait until the worker's group (in topic scope its edge's) committed `at_least` input
    records (returns the offset seen); the worker must stay up meanwhile."""
    seen, group = 0, worker.input_group

    def check() -> int:
        nonlocal seen
        assert worker.alive(), f"worker exited while consuming:\n{worker.log()}"
        seen = max(seen, committed(bootstrap, group, topic))
        return seen if seen >= at_least else 0

    try:
        return int(wait_for(f"{group} to commit {at_least} of {topic}", check, timeout, every=0.5))
    except AssertionError as exc:
        if "worker exited" in str(exc):
            raise
        raise AssertionError(f"{exc} (committed: {seen})\n{worker.log()}") from None


def assert_exactly_once(got: dict, ids: list[str]) -> None:
    """Every id decided once, nothing else decided."""
    missing = [i for i in ids if i not in got]
    repeated = {i: v for i, v in got.items() if len(v) != 1}
    extra = sorted(set(got) - set(ids))
    assert not missing, f"{len(missing)} documents without a decision, e.g. {missing[:5]}"
    assert not repeated, f"{len(repeated)} decided more than once: {list(repeated.items())[:3]}"
    assert not extra, f"{len(extra)} decisions for ids never sent, e.g. {extra[:5]}"


def free_port_pair(start: int) -> int:
    """The first port p >= start with p and p + 1 free (client and controller listeners)."""
    for port in range(start, start + 500, 2):
        try:
            for p in (port, port + 1):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
        except OSError:
            continue
        return port
    raise AssertionError(f"no two free ports from {start}")


@dataclass
class Broker:
    """A broker of our own (deploy/local/kafka.sh on its own port and data dir), to fault."""

    port: int
    data_dir: Path
    address: str = ""

    def _sh(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "KAFKA_PORT": str(self.port),
            "KAFKA_CONTROLLER_PORT": str(self.port + 1),
            "KAFKA_DATA_DIR": str(self.data_dir),
            "KAFKA_HEAP_OPTS": os.environ.get("KAFKA_HEAP_OPTS", "-Xms128m -Xmx512m"),
        }
        script = REPO_ROOT / "deploy" / "local" / "kafka.sh"
        done = subprocess.run(
            ["bash", str(script), *args],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert done.returncode == 0, f"kafka.sh {args[0]} failed:\n{done.stderr[-4000:]}"
        return done

    def start(self) -> str:
        self.address = self._sh("start").stdout.strip().splitlines()[-1]
        return self.address

    def stop(self) -> None:
        self.resume()  # a stopped JVM cannot handle SIGTERM
        self._sh("stop")

    def pid(self) -> int | None:
        path = self.data_dir / "kafka.pid"
        return int(path.read_text().strip()) if path.exists() else None

    def pause(self) -> None:
        pid = self.pid()
        assert pid is not None, "broker not running"
        os.kill(pid, signal.SIGSTOP)

    def resume(self) -> None:
        pid = self.pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


class Feeder(threading.Thread):
    """Produces records to partition 0 in `chunks`, one every `every` seconds, through broker
    faults (one idempotent producer that retries, so nothing is written twice)."""

    def __init__(self, bootstrap: str, topic: str, records: list, chunks: int, every: float):
        super().__init__(daemon=True)
        self.args = (bootstrap, topic, records, chunks, every)
        self.error: BaseException | None = None
        self.sent = 0

    def run(self) -> None:
        bootstrap, topic, records, chunks, every = self.args
        try:
            producer = KafkaProducer(
                bootstrap_servers=bootstrap,
                acks="all",
                enable_idempotence=True,
                linger_ms=5,
                delivery_timeout_ms=300_000,
            )
            size = -(-len(records) // chunks)
            for start in range(0, len(records), size):
                futures = [
                    producer.send(topic, key=k, value=v, partition=0, timestamp_ms=ts)
                    for k, v, ts in records[start : start + size]
                ]
                producer.flush()
                for f in futures:
                    f.get(timeout=300)
                self.sent += len(futures)
                time.sleep(every)
            producer.close()
        except BaseException as exc:
            self.error = exc
