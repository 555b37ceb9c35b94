"""ACL denials against the real broker's authorizer (`deploy/local/kafka.sh` runs KRaft's
StandardAuthorizer, allowing everyone while no ACL names a resource): a worker denied what
it needs exits with EX_CONFIG and one line naming what was denied and the ACL that grants
it, at start-up as later; never a traceback, never a retry loop that looks alive."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourceType,
)

from neardup_stream.worker.security_errors import EXIT_CONFIG
from tests.integration.harness import Topics, WorkerProcess, decisions, produce_docs
from tests.integration.test_worker import stream

pytestmark = pytest.mark.integration


def deny(admin: KafkaAdminClient, kind: ResourceType, name: str) -> None:
    """Deny every operation on one resource to the test clients (PLAINTEXT: ANONYMOUS)."""
    acl = ACL(
        principal="User:ANONYMOUS",
        host="*",
        operation=ACLOperation.ALL,
        permission_type=ACLPermissionType.DENY,
        resource_pattern=ResourcePattern(kind, name, ACLResourcePatternType.LITERAL),
    )
    result = admin.create_acls([acl])
    assert not result["failed"], f"the broker took no ACL (no authorizer?): {result['failed']}"


def undeny(admin: KafkaAdminClient, kind: ResourceType, name: str) -> None:
    pattern = ResourcePattern(kind, name, ACLResourcePatternType.LITERAL)
    admin.delete_acls(
        [ACL("User:ANONYMOUS", "*", ACLOperation.ALL, ACLPermissionType.DENY, pattern)]
    )


def assert_one_clear_line(worker: WorkerProcess, *words: str) -> None:
    log = worker.log()
    assert "Traceback" not in log, log
    lines = [line for line in log.splitlines() if "denies this worker" in line]
    assert len(lines) == 1, log
    for word in words:
        assert word in lines[0], lines[0]


def test_a_denied_transactional_id_ends_start_up_with_one_clear_error(
    kafka_bootstrap: str, kafka_admin: KafkaAdminClient, topics: Topics, tmp_path: Path
) -> None:
    group = "g-" + topics.input
    txn_id = f"{group}-w1"
    deny(kafka_admin, ResourceType.TRANSACTIONAL_ID, txn_id)
    try:
        worker = WorkerProcess(kafka_bootstrap, topics, group, tmp_path / "w.log").start()
        assert worker.wait_exit(120) == EXIT_CONFIG, worker.log()
        assert_one_clear_line(worker, repr(txn_id), "TransactionalId", "WRITE")
    finally:
        undeny(kafka_admin, ResourceType.TRANSACTIONAL_ID, txn_id)


def test_an_output_topic_denied_while_running_stops_the_worker_with_one_clear_error(
    kafka_bootstrap: str, kafka_admin: KafkaAdminClient, topics: Topics, tmp_path: Path
) -> None:
    group = "g-" + topics.input
    worker = WorkerProcess(kafka_bootstrap, topics, group, tmp_path / "w.log").start()
    try:
        worker.wait_ready()
        first = stream(20, seed=3)
        produce_docs(kafka_bootstrap, topics.input, first)
        assert len(decisions(kafka_bootstrap, topics, len(first))) == len(first)
        deny(kafka_admin, ResourceType.TOPIC, topics.unique)
        produce_docs(kafka_bootstrap, topics.input, stream(20, seed=4))
        assert worker.wait_exit(120) == EXIT_CONFIG, worker.log()
        assert_one_clear_line(worker, "topic", topics.unique)
    finally:
        undeny(kafka_admin, ResourceType.TOPIC, topics.unique)
        if worker.proc is not None and worker.proc.poll() is None:
            worker.stop()


def test_a_cluster_replica_denied_a_role_transactional_id_exits_with_one_clear_error(
    kafka_bootstrap: str, kafka_admin: KafkaAdminClient, topics: Topics, tmp_path: Path
) -> None:
    group = "g-" + topics.input
    txn_id = f"{group}-shards-w1"  # one role's: the replica's other roles may start
    deny(kafka_admin, ResourceType.TRANSACTIONAL_ID, txn_id)
    try:
        worker = WorkerProcess(
            kafka_bootstrap, topics, group, tmp_path / "w.log", extra=["--scope", "topic"]
        ).start()
        assert worker.wait_exit(180) == EXIT_CONFIG, worker.log()
        assert_one_clear_line(worker, f"'{group}-<edge|shards|gather>-w1'", "TransactionalId")
    finally:
        undeny(kafka_admin, ResourceType.TRANSACTIONAL_ID, txn_id)
