"""The worker against a SASL_SSL (SCRAM-SHA-512 over TLS) broker, configured only through the
documented settings (NEARDUP_KAFKA__SECURITY_PROTOCOL, __SASL_MECHANISM, __SASL_USERNAME,
__SASL_PASSWORD, __SSL_CAFILE): a single worker and a scale-out replica decide every document
exactly once; wrong credentials and an untrusted certificate end start-up with one clear
error (exit 78) instead of a worker that retries forever.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from neardup_stream.worker.clients import common_config
from neardup_stream.worker.security_errors import EXIT_CONFIG
from neardup_stream.worker.settings import KafkaSettings
from tests.integration.harness import Topics, WorkerProcess
from tests.integration.test_worker import expected, stream

pytestmark = pytest.mark.integration
PREFIX = "NEARDUP_KAFKA__"


def client_config(env: dict[str, str]) -> dict[str, object]:
    """kafka-python arguments for the test's own clients, mapped as the worker maps them."""
    fields = {k.removeprefix(PREFIX).lower(): v for k, v in env.items() if k.startswith(PREFIX)}
    return common_config(KafkaSettings.model_validate(fields))


def produce_secure(env: dict[str, str], topic: str, docs: list[dict[str, object]]) -> None:
    producer = KafkaProducer(**client_config(env), acks="all", linger_ms=5)
    for doc in docs:
        producer.send(topic, value=json.dumps(doc).encode(), key=str(doc["id"]).encode())
    producer.flush()
    producer.close()


def secure_decisions(
    env: dict[str, str], topics: Topics, expected_n: int, timeout: float = 180
) -> dict[str, list[str]]:
    """id -> decisions committed to the unique and duplicate topics, once `expected_n` are
    there (or at the timeout); a later duplicate would show as a second entry."""
    consumer = KafkaConsumer(
        **client_config(env),
        group_id=None,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    got: dict[str, list[str]] = {}
    deadline = time.monotonic() + timeout
    try:
        tps: list[TopicPartition] = []
        while not tps and time.monotonic() < deadline:
            parts = [
                (t, consumer.partitions_for_topic(t)) for t in (topics.unique, topics.duplicate)
            ]
            if all(p for _, p in parts):
                tps = [TopicPartition(t, i) for t, ps in parts for i in ps or ()]
            else:
                time.sleep(0.2)
        consumer.assign(tps)
        while time.monotonic() < deadline and sum(map(len, got.values())) < expected_n:
            for tp, records in consumer.poll(timeout_ms=500).items():
                for r in records:
                    if tp.topic == topics.unique:
                        got.setdefault(r.key.decode(), []).append("unique")
                    else:
                        got.setdefault(json.loads(r.value)["id"], []).append("duplicate")
        for tp, records in consumer.poll(timeout_ms=2000).items():  # anything beyond: a repeat
            for r in records:
                key = r.key.decode() if tp.topic == topics.unique else json.loads(r.value)["id"]
                got.setdefault(key, []).append("repeat")
    finally:
        consumer.close()
    return got


def secure_worker(
    env: dict[str, str], topics: Topics, log: Path, cluster: bool, **overrides: str
) -> WorkerProcess:
    extra = ["--scope", "topic", "--partitions", "1"] if cluster else []
    return WorkerProcess(
        env["NEARDUP_KAFKA__BOOTSTRAP_SERVERS"],
        topics,
        "g-" + topics.input,
        log,
        extra=extra,
        env={**env, **(topics.internal_env() if cluster else {}), **overrides},
    )


@pytest.mark.parametrize("cluster", [False, True], ids=["worker", "cluster-replica"])
def test_decides_every_document_exactly_once_over_sasl_ssl(
    sasl_ssl_kafka: dict[str, str], topics: Topics, tmp_path: Path, cluster: bool
) -> None:
    docs = stream(120, seed=7)
    worker = secure_worker(sasl_ssl_kafka, topics, tmp_path / "w.log", cluster).start()
    try:
        worker.wait_ready()
        produce_secure(sasl_ssl_kafka, topics.input, docs)
        got = secure_decisions(sasl_ssl_kafka, topics, len(docs))
        want = expected(docs)
        assert sum(d == "duplicate" for d, _ in want.values()) > 20
        assert got == {k: [d] for k, (d, _) in want.items()}, worker.log()
    finally:
        assert worker.stop() == 0, worker.log()


def exit_log(worker: WorkerProcess) -> str:
    """Start `worker`; its whole log once it exited, as it must, with EXIT_CONFIG."""
    worker.start()
    try:
        assert worker.wait_exit(120) == EXIT_CONFIG, worker.log()
    finally:
        if worker.alive():  # it kept retrying: the failure above says so
            worker.kill()
    return worker.log_path.read_text()


def untrusted_ca(directory: Path) -> Path:
    """A CA that did not sign the broker's certificate."""
    ca = directory / "other-ca.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(directory / "other-ca.key"), "-out", str(ca), "-subj", "/CN=other"),
        ],
        check=True,
        capture_output=True,
    )
    return ca


@pytest.mark.parametrize("cluster", [False, True], ids=["worker", "cluster-replica"])
def test_wrong_credentials_end_start_up_with_one_clear_error(
    sasl_ssl_kafka: dict[str, str], topics: Topics, tmp_path: Path, cluster: bool
) -> None:
    wrong = "not-the-password-" + topics.input[-6:]
    worker = secure_worker(
        sasl_ssl_kafka,
        topics,
        tmp_path / "w.log",
        cluster,
        NEARDUP_KAFKA__SASL_PASSWORD=wrong,
        NEARDUP_KAFKA__REQUEST_TIMEOUT_MS="10000",
    )
    log = exit_log(worker)
    user = sasl_ssl_kafka["NEARDUP_KAFKA__SASL_USERNAME"]
    errors = [line for line in log.splitlines() if "SASL authentication failed" in line]
    assert len(errors) == 1, log
    assert "SCRAM-SHA-512" in errors[0] and f"user '{user}'" in errors[0], errors[0]
    assert "invalid credentials" in errors[0], errors[0]
    assert wrong not in log and sasl_ssl_kafka["NEARDUP_KAFKA__SASL_PASSWORD"] not in log
    assert "SaslAuthenticationFailedError" not in log.replace(errors[0], ""), log
    assert "Traceback" not in log, log


@pytest.mark.parametrize("cluster", [False, True], ids=["worker", "cluster-replica"])
def test_an_untrusted_certificate_ends_start_up_with_one_clear_error(
    sasl_ssl_kafka: dict[str, str], topics: Topics, tmp_path: Path, cluster: bool
) -> None:
    ca = untrusted_ca(tmp_path)
    worker = secure_worker(
        sasl_ssl_kafka,
        topics,
        tmp_path / "w.log",
        cluster,
        NEARDUP_KAFKA__SSL_CAFILE=str(ca),
        NEARDUP_KAFKA__REQUEST_TIMEOUT_MS="10000",
    )
    log = exit_log(worker)
    errors = [
        line
        for line in log.splitlines()
        if "CERTIFICATE_VERIFY_FAILED" in line or ("certificate verification" in line)
    ]
    assert len(errors) == 1, log
    assert "TLS certificate verification" in errors[0] and str(ca) in errors[0], errors[0]
    assert "self-signed certificate in certificate chain" in errors[0], errors[0]
    assert sasl_ssl_kafka["NEARDUP_KAFKA__SASL_PASSWORD"] not in log
    assert "Traceback" not in log, log
