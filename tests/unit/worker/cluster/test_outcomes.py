"""A gather transaction's messages: decisions, pass-throughs, dead letters, split changes."""

from __future__ import annotations

import json
import time

from prometheus_client import CollectorRegistry

from neardup_stream.models import Decision
from neardup_stream.sharded.changes import FirstDecisions
from neardup_stream.worker.cluster.outcomes import Outcomes
from neardup_stream.worker.cluster.payloads import Passage
from neardup_stream.worker.decide import Source
from neardup_stream.worker.metrics import build_metrics
from neardup_stream.worker.rejections import Rejections
from neardup_stream.worker.settings import Settings


def passage(i: int) -> Passage:
    return Passage(Source("docs", 0, 100 + i), 1_700_000_000_000, f"k{i}".encode(), b"x" * 50)


def test_a_rejected_input_gets_its_dead_letter_and_the_rest_their_decisions() -> None:
    settings = Settings()
    rejections = Rejections(settings.topics.dlq)
    rejections.unpublishable(passage(1).source, "MessageSizeTooLargeError: too large")
    out = Outcomes(settings, rejections)
    decisions = [
        Decision(id="a", decision="unique"),
        Decision(id="b", decision="unique"),
        Decision(id="c", decision="duplicate", duplicate_of="a", similarity=0.9, method="exact"),
    ]
    out.add_record(2, 7, decisions, [passage(i) for i in range(3)], [])
    topics = [m.topic for m in out.messages]
    assert topics == [settings.topics.unique, settings.topics.dlq, settings.topics.duplicate]
    dead = json.loads(out.messages[1].value)
    assert dead["reason"] == "unpublishable" and "too large" in dead["message"]
    assert dead["source"]["offset"] == 101
    assert out.sources == [passage(i).source for i in range(3)]
    assert out.counts == [("unique", "none"), ("duplicate", "exact")]
    registry = CollectorRegistry()
    out.account(build_metrics(registry), time.time())
    assert registry.get_sample_value("neardup_dlq_messages_total", {"reason": "unpublishable"}) == 1
    assert registry.get_sample_value("neardup_decision_latency_seconds_count") == 2
    assert not rejections  # settled once committed


def test_first_decisions_over_the_message_limit_become_several_changelog_records() -> None:
    settings = Settings()
    limit = settings.worker.output_max_message_bytes // 2
    entries = [
        (1000 + i, Decision(id=f"{i}-" + "i" * 9000, decision="duplicate", duplicate_of="o" * 9000))
        for i in range(500)
    ]
    change = FirstDecisions("", 2000, entries, 0, 2000, False)
    assert len(change.pack()) > settings.worker.output_max_message_bytes
    out = Outcomes(settings, Rejections(settings.topics.dlq))
    out.add_record(1, 42, [], [], [change])
    assert len(out.messages) > 1 and out.sources == [None] * len(out.messages)
    for m in out.messages:
        assert m.topic == settings.cluster.gather_changelog and m.partition == 1
        assert m.key == b"42" and len(m.value) <= limit
    parts = [FirstDecisions.unpack(m.value) for m in out.messages]
    assert [e for p in parts for e in p.entries] == entries


def test_every_document_counted_has_its_latency_observed_already() -> None:
    """A scrape that sees a document counted sees its latency (the plain worker's rule too:
    tests/unit/worker/test_metrics_account.py)."""
    settings = Settings()
    out = Outcomes(settings, Rejections(settings.topics.dlq))
    decisions = [Decision(id=i, decision="unique") for i in "abc"]
    out.add_record(2, 7, decisions, [passage(i) for i in range(3)], [])
    registry = CollectorRegistry()
    metrics = build_metrics(registry)
    counter = metrics.documents.labels("unique", "none")
    inc, seen = counter.inc, []

    def inc_and_look(amount: float = 1) -> None:  # what a scrape at this moment would see
        seen.append(registry.get_sample_value("neardup_decision_latency_seconds_count"))
        inc(amount)

    counter.inc = inc_and_look  # type: ignore[method-assign]
    out.account(metrics, time.time())
    assert seen and all(count == 3.0 for count in seen)  # every increment came after all three
    assert (
        registry.get_sample_value(
            "neardup_documents_total", {"decision": "unique", "method": "none"}
        )
        == 3.0
    )
