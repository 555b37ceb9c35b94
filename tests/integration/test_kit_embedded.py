"""The worker as a library: two embedded workers in one process, on their own topics.

Both decide what they are sent; each counts only its own documents on its own registry; each
serves /healthz and /metrics on its own free port; a second worker with the same
transactional id is refused; stopping one leaves the other working.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable

import pytest
from kafka import KafkaAdminClient

from neardup_stream.worker.embedded import EmbeddedWorker
from neardup_stream.worker.settings import Settings
from neardup_stream.worker.testing.broker import BrokerWorker, fresh_settings

pytestmark = pytest.mark.integration

TEXT = (
    "The harbour authority said on Tuesday that the new container terminal would open in the "
    "spring after two years of construction, doubling the port's capacity for ships."
)


def docs(prefix: str, n: int) -> list[dict[str, str]]:
    """`n` copies of one text: the first is unique, the others its duplicates."""
    return [{"id": f"{prefix}-{i}", "text": TEXT} for i in range(n)]


def counted(worker: EmbeddedWorker, decision: str) -> float:
    method = "none" if decision == "unique" else "exact"
    value = worker.registry.get_sample_value(
        "neardup_documents_total", {"decision": decision, "method": method}
    )
    return value or 0.0


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.05)


def http(port: int, path: str) -> tuple[int, str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return r.status, r.read().decode()


def test_two_embedded_workers_in_one_process(kafka_bootstrap: str) -> None:
    one = BrokerWorker.start(fresh_settings(Settings(), kafka_bootstrap, "embedded-one"))
    two = None
    try:
        two = BrokerWorker.start(fresh_settings(Settings(), kafka_bootstrap, "embedded-two"))
        a, b = one.embedded, two.embedded
        assert a.registry is not b.registry
        assert a.health().ready and b.health().ready  # `start` waited for /healthz's ready
        assert a.metrics_port is not None and b.metrics_port is not None
        assert a.metrics_port != b.metrics_port
        assert http(a.metrics_port, "/healthz") == (200, "ready\n")

        one.send_documents(docs("one", 3))
        two.send_documents(docs("two", 5))
        got_one = one.wait_for(3)
        got_two = two.wait_for(5)
        assert sorted(o.id or "" for o in got_one) == [f"one-{i}" for i in range(3)]
        assert sorted(o.id or "" for o in got_two) == [f"two-{i}" for i in range(5)]
        assert [o.kind for o in got_one].count("unique") == 1
        assert [o.kind for o in got_two].count("unique") == 1

        # metrics are counted once the transaction committed: wait for them, then compare
        wait_until(lambda: counted(a, "duplicate") == 2, "worker one counted its duplicates")
        wait_until(lambda: counted(b, "duplicate") == 4, "worker two counted its duplicates")
        assert counted(a, "unique") == 1 and counted(b, "unique") == 1
        _, text = http(b.metrics_port, "/metrics")
        assert 'neardup_documents_total{decision="duplicate",method="exact"} 4.0' in text

        same = two.settings.with_overrides({"metrics": {"enabled": False}})
        with pytest.raises(ValueError, match=r"worker\.instance_id"):
            EmbeddedWorker(same).start()

        one.close()
        one = None  # type: ignore[assignment]
        two.send_documents(docs("two-more", 1))
        assert len(two.wait_for(6)) == 6
        assert b.health().running
    finally:
        if one is not None:
            one.close()
        if two is not None:
            two.close()


def test_a_scale_out_worker_gets_its_own_internal_topics_and_leaves_none(
    kafka_bootstrap: str,
) -> None:
    base = Settings().with_overrides({"cluster": {"enabled": True}, "dedup": {"home_shards": 3}})
    settings = fresh_settings(base, kafka_bootstrap, "embedded-cluster")
    internal = {settings.cluster.fingerprints, settings.cluster.votes, settings.cluster.shards}
    assert all(name.startswith(settings.topics.input) for name in internal)
    worker = BrokerWorker.start(settings)
    try:
        worker.send_documents(docs("c", 3))
        got = worker.wait_for(3, timeout=120)
        assert sorted(o.kind for o in got) == ["duplicate", "duplicate", "unique"]
    finally:
        worker.close()
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    try:
        left = [t for t in admin.list_topics() if t.startswith(settings.topics.input)]
    finally:
        admin.close()
    assert left == []


def test_the_kit_never_deletes_a_changelog_its_base_settings_name_in_topic_scope(
    kafka_bootstrap: str, kafka_admin: KafkaAdminClient, unique_topic: Callable[[str], str]
) -> None:
    """A base that names a pipeline's changelog (e.g. NEARDUP_TOPICS__CHANGELOG from a
    deployment's environment): topic scope does not use it, so the kit's clean-up leaves it."""
    from neardup_stream.worker.testing.broker import delete_everything
    from tests.integration.faults import create_topic, wait_for

    kept = unique_topic("someones.changelog")
    create_topic(kafka_bootstrap, kept)
    settings = fresh_settings(
        Settings.model_validate({"topics": {"changelog": kept}}), kafka_bootstrap, "kept"
    )
    assert settings.topic_scope and settings.topics.changelog == kept
    create_topic(kafka_bootstrap, settings.topics.input)
    delete_everything(settings)
    wait_for(
        "the kit's own input to be deleted",
        lambda: settings.topics.input not in kafka_admin.list_topics(),
        timeout=30,
    )
    assert kept in kafka_admin.list_topics()
