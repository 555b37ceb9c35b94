"""The broker side of the Kafka benchmarks: the local broker, this run's topics, bulk loads.

Without ``--bootstrap-servers`` the local broker is started with ``deploy/local/kafka.sh
start`` (port from ``KAFKA_PORT``) and stopped at the end if this run started it. Topics are
named after the run's tag and deleted at the end (unless ``--keep-topics``).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord

from bench.kafka_docs import BenchError, log
from neardup_stream.worker.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[1]
KAFKA_SH = REPO_ROOT / "deploy" / "local" / "kafka.sh"


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
        configs = {"max.message.bytes": str(16 * 1024 * 1024)}
        if compact:
            configs["cleanup.policy"] = "compact"
        spec: dict[str, Any] = {"num_partitions": 1, "replication_factor": 1, "configs": configs}
        self.admin.create_topics({topic: spec}, wait_for_metadata=True)
        self.created.append(topic)
        return topic

    def track(self, *names: str) -> None:
        """Topics the worker creates, to delete at the end."""
        self.created.extend(names)

    def delete(self, names: list[str]) -> None:
        existing = set(self.admin.list_topics())
        doomed = [t for t in dict.fromkeys(names) if t in existing]
        if doomed:
            try:
                self.admin.delete_topics(doomed)
                log(f"deleted {len(doomed)} topics")
            except Exception as exc:
                log(f"could not delete topics {doomed}: {exc}")

    def delete_all(self) -> None:
        self.delete(self.created)

    def close(self) -> None:
        self.admin.close()


def produce_bulk(
    bootstrap: str, topic: str, items: Iterator[tuple[bytes | None, bytes | None]]
) -> dict:
    """Write (key, value) pairs to partition 0 with a plain batching producer; returns stats."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks=1,
        linger_ms=50,
        batch_size=512 * 1024,
        max_request_size=16 * 1024 * 1024,
        enable_idempotence=False,
    )
    started = time.perf_counter()
    n = nbytes = 0
    last = started
    try:
        for key, value in items:
            producer.send(topic, key=key, value=value, partition=0)
            n += 1
            nbytes += len(value or b"")
            if time.perf_counter() - last > 10:
                last = time.perf_counter()
                log(f"  produced {n:,} records to {topic} ({n / (last - started):,.0f}/s)")
        producer.flush(timeout=600)
    finally:
        producer.close(timeout=30)
    seconds = time.perf_counter() - started
    return {"records": n, "bytes": nbytes, "seconds": round(seconds, 2)}


class BackgroundProducer:
    """`produce_bulk` in a thread, so a worker can start consuming while the topic fills."""

    def __init__(
        self, bootstrap: str, topic: str, items: Iterator[tuple[bytes | None, bytes | None]]
    ) -> None:
        self.result: dict | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(bootstrap, topic, items), name="producer", daemon=True
        )
        self._thread.start()

    def _run(self, bootstrap: str, topic: str, items: Iterator) -> None:
        try:
            self.result = produce_bulk(bootstrap, topic, items)
        except BaseException as exc:
            self.error = exc

    def join(self, timeout: float) -> dict:
        self._thread.join(timeout)
        if self.error is not None:
            raise BenchError(f"background producer failed: {self.error!r}")
        if self.result is None:
            raise BenchError(f"background producer not done after {timeout:.0f}s")
        return self.result


def worker_settings(
    bootstrap: str, group: str, instance: str, max_batch: int, eos: bool
) -> Settings:
    """The worker's own settings, for clients built the way the worker builds them."""
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


def read_committed(bootstrap: str, topic: str) -> list[ConsumerRecord]:
    """Every committed message of `topic`, partition by partition (CRCs unchecked: a helper
    read)."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        isolation_level="read_committed",
        check_crcs=False,
        max_partition_fetch_bytes=20 * 1024 * 1024,
    )
    out: list[ConsumerRecord] = []
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        if not tps:
            return out
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        deadline = time.monotonic() + 300
        while any(consumer.position(tp) < end[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise BenchError(f"could not read {topic} to its end offsets {end}")
            for msgs in consumer.poll(timeout_ms=500).values():
                out.extend(msgs)
    finally:
        consumer.close(autocommit=False)
    out.sort(key=lambda m: (m.partition, m.offset))
    return out
