"""The broker-free driver: one outcome per input, the worker's formats, its refusals."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from neardup_stream.models import Document
from neardup_stream.parsing import parse_document
from neardup_stream.records import FingerprintRecord
from neardup_stream.sharded.deduplicator import ShardedDeduplicator
from neardup_stream.worker import changelog
from neardup_stream.worker.decide import Source
from neardup_stream.worker.settings import Settings
from neardup_stream.worker.testing import DEFAULT_START_MS, Driver, InputMessage

SAMPLE = Path(__file__).resolve().parents[4] / "deploy" / "local" / "demo" / "sample.jsonl"
TEXT = "the quick brown fox jumps over the lazy dog near the river bank " * 4
OTHER = "an entirely different sentence about harbours, ships and container terminals " * 4
AT = re.compile(rb'"at":"[^"]*"')


def settings(scope: str = "partition", **sections: dict[str, object]) -> Settings:
    """Settings of one scope: partition unless told (most tests here read the per-partition
    loop's state); `scope="topic"` is the product default."""
    worker = {"scope": scope, **sections.pop("worker", {})}
    return Settings().with_overrides({"worker": worker, **sections})  # type: ignore[arg-type]


def doc(i: str, text: str = TEXT) -> bytes:
    return json.dumps({"id": i, "text": text}).encode()


def test_every_input_gets_one_output_in_the_worker_formats() -> None:
    s = settings()
    driver = Driver(s)
    out = driver.send_many(
        [
            InputMessage(doc("a"), b"a"),
            InputMessage(doc("b"), b"b", headers=(("trace", b"1"),)),
            InputMessage(b"{broken", b"k3"),
            InputMessage(None, b"k4"),
        ]
    )
    # as the worker sends them: a batch's dead letters (admission) before its decisions
    assert [(o.topic, o.key) for o in out] == [
        (s.topics.dlq, b"k3"),
        (s.topics.dlq, b"k4"),
        (s.topics.unique, b"a"),
        (s.topics.duplicate, b"b"),
    ]
    assert out[2].value == doc("a")  # passed through unchanged
    assert dict(out[2].headers)["neardup.decision"] == b"unique"
    assert json.loads(out[3].value)["duplicate_of"] == "a"
    assert dict(out[0].headers) == {"neardup.error": b"invalid_json"}
    error = json.loads(out[0].value)
    assert error["source"] == {
        "topic": s.topics.input,
        "partition": 0,
        "offset": 2,
        "timestamp": DEFAULT_START_MS,
    }
    assert [o.source.offset for o in out] == [2, 3, 0, 1]
    assert out[0].source == Source(s.topics.input, 0, 2)
    assert all(o.partition is None for o in out)  # the producer's partitioner decides
    assert driver.outputs(s.topics.dlq) == out[:2]


def test_same_inputs_give_the_same_outputs_but_a_dead_letters_time() -> None:
    messages = [
        InputMessage(doc(str(i), TEXT if i % 2 else OTHER), str(i).encode()) for i in range(9)
    ]
    messages.insert(4, InputMessage(b"not json", b"bad"))
    first = Driver(settings()).send_many(messages)
    second = Driver(settings()).send_many(messages)

    def blank(records: list) -> list:
        return [(r.topic, r.key, AT.sub(b"", r.value), r.headers) for r in records]

    assert blank(first) == blank(second)
    assert sum(1 for r in first if AT.search(r.value)) == 1


def test_partitions_have_their_own_index_and_offsets() -> None:
    s = settings(topics={"partitions": 2})
    driver = Driver(s)
    out = driver.send_many(
        [
            InputMessage(doc("p0"), partition=0),
            InputMessage(doc("p1"), partition=1),
            InputMessage(doc("p1-copy"), partition=1),
        ]
    )
    assert [o.topic for o in out] == [s.topics.unique, s.topics.unique, s.topics.duplicate]
    assert json.loads(out[2].value)["duplicate_of"] == "p1"
    assert [o.source.offset for o in out] == [0, 0, 1]


def test_batches_follow_the_worker_s_max_batch_and_decisions_do_not_depend_on_them() -> None:
    messages = [InputMessage(doc(str(i), TEXT if i % 3 else OTHER)) for i in range(7)]
    whole = Driver(settings()).send_many(messages)
    small = Driver(settings(worker={"max_batch": 2})).send_many(messages)
    one_by_one_driver = Driver(settings())
    one_by_one = [r for m in messages for r in one_by_one_driver.send_many([m])]
    assert whole == small == one_by_one


def test_the_clock_stamps_inputs_without_a_timestamp() -> None:
    driver = Driver(settings(), start_ms=1_000)
    driver.advance(500)
    [dead] = driver.send(b"x", key=b"k")
    assert json.loads(dead.value)["source"]["timestamp"] == 1_500
    [dead] = driver.send(b"x", key=b"k", timestamp_ms=42)
    assert json.loads(dead.value)["source"]["timestamp"] == 42
    with pytest.raises(ValueError, match="forward"):
        driver.advance(-1)


def test_a_small_unique_topic_makes_large_documents_unpublishable() -> None:
    s = settings()
    driver = Driver(s, topic_limits={s.topics.unique: 1100})
    out = driver.send_many([InputMessage(doc("big")), InputMessage(doc("x", "tiny text"))])
    assert [o.topic for o in out] == [s.topics.dlq, s.topics.unique]
    assert json.loads(out[0].value)["reason"] == "unpublishable"


def test_an_unrecordable_input_is_dead_lettered_and_left_out_of_the_index() -> None:
    """As in the loop: the batch fails, the partition is rebuilt from what was committed,
    the input becomes an `unpublishable` dead letter on the replay."""
    s = settings(dedup={"precise": True})
    driver = Driver(s, topic_limits={changelog.topic_of(s): 1024 + 700})
    short = "a short note on ships"
    [kept] = driver.send(doc("kept", short))
    assert kept.topic == s.topics.unique
    out = driver.send_many([InputMessage(doc("long")), InputMessage(doc("again", short))])
    assert [o.topic for o in out] == [s.topics.dlq, s.topics.duplicate]
    assert json.loads(out[0].value)["reason"] == "unpublishable"
    assert json.loads(out[1].value)["duplicate_of"] == "kept"  # the rebuilt index kept it
    stored = [
        FingerprintRecord.decode(raw).doc_id
        for value in driver._committed[0]
        for raw in changelog.unpack(value).records
    ]
    assert stored == ["kept", "again"]  # never "long": its batch was rebuilt without it
    assert len(driver.indexes[0]) == 2


def test_cluster_settings_decide_like_offline_sharded_dedup() -> None:
    """Topic scope: the edge, shard and gather steps, i.e. `dedup --home-shards`. The index
    bound applies per shard there, so on the demo sample the scopes decide differently."""
    engine = {"home_shards": 6, "max_docs": 30}
    s = settings("topic", dedup=engine)
    lines = [line for line in SAMPLE.read_bytes().splitlines() if line.strip()]
    messages = [InputMessage(line, f"k{i}".encode()) for i, line in enumerate(lines)]
    out = Driver(s).send_many(messages)
    dead = [o for o in out if o.topic == s.topics.dlq]
    assert out[: len(dead)] == dead and len(dead) == 2  # the edge publishes them first
    got = [(o.key, dict(o.headers).get("neardup.duplicate_of")) for o in out[2:]]

    parsed = [parse_document(line) for line in lines]
    docs = [d for d in parsed if isinstance(d, Document)]
    times = [DEFAULT_START_MS / 1000] * len(docs)
    offline = ShardedDeduplicator(s.dedup).process(docs, times=times)
    assert got == [(d.id.encode(), d.duplicate_of and d.duplicate_of.encode()) for d in offline]

    single = Driver(settings(dedup={"max_docs": 30})).send_many(messages)
    assert [o.headers for o in single[2:]] != [o.headers for o in out[2:]]


@pytest.mark.parametrize(
    ("driver_settings", "message", "named"),
    [
        (settings(), InputMessage(b"{}", topic="elsewhere"), "topics.input"),
        (settings(), InputMessage(b"{}", partition=1), "topics.partitions"),
    ],
)
def test_mismatched_settings_are_refused_by_name(
    driver_settings: Settings, message: InputMessage | None, named: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(named)):
        Driver(driver_settings).send_many([message] if message else [])


def test_the_rules_are_the_worker_s_for_topics_it_creates() -> None:
    from neardup_stream.worker.topics import TopicLayout

    s = settings()
    limit = s.worker.output_max_message_bytes
    layout = TopicLayout(1, {s.topics.unique: limit, changelog.topic_of(s): limit})
    assert Driver(s).rules == layout.decide_rules(s)
    limits = {s.topics.unique: 5000, changelog.topic_of(s): 7000}
    assert Driver(s, topic_limits=limits).rules == TopicLayout(1, limits).decide_rules(s)


def test_the_kit_imports_no_kafka_client_until_a_broker_fixture_is_used() -> None:
    """pytest loads the plugin in every session: that costs no engine and no Kafka import;
    the driver needs the engine, never Kafka."""
    probe = (
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'kafka', 'numba'}), "
        "'neardup_stream.deduplicator' in sys.modules)\n"
    )
    code = (
        f"import sys, neardup_stream.worker.testing.plugin\n{probe}"
        f"from neardup_stream.worker.testing import Driver\n{probe}"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split("\n")[:2] == ["[] False", "[] True"]


def test_the_driver_example_of_the_docs_runs() -> None:
    text = (SAMPLE.parents[3] / "docs" / "testing.md").read_text()
    block = re.search(r"## The driver.*?```python\n(.*?)```", text, re.DOTALL)
    assert block is not None, "docs/testing.md lost its driver example"
    exec(compile(block.group(1), "docs/testing.md", "exec"), {})
