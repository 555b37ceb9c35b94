"""Fault injection: a storm of malformed input never stops the default worker (topic scope,
one replica), and every message gets exactly one outcome (a decision, or one bounded dead letter with the right reason). Some
messages, valid and malformed, carry no record time (-1)."""

from __future__ import annotations

import base64
import hashlib
import json
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.faults import (
    assert_exactly_once,
    create_topic,
    send_records,
    topic_config,
    wait_committed,
)
from tests.integration.harness import (
    Topics,
    WorkerProcess,
    decisions,
    read_all,
)
from tests.integration.test_worker import expected, stream
from tests.unit.conftest import random_text

pytestmark = [pytest.mark.integration, pytest.mark.faults]  # `make test-faults`

DLQ_PAYLOAD_BYTES = 65_536  # the worker's default bound on the raw bytes a dead letter carries
INPUT_LIMIT = 8 * 1024 * 1024  # the worker's default --max-message-bytes
OVERSIZED = 12_000_000  # larger than the input limit, and than what the output topics accept
DEEP = 100_000


def _malformed(kind: str, n: int) -> bytes | None:
    """The n-th malformed message of `kind` (each one distinct)."""
    tag = f"bad-{kind}-{n}"
    deep = b"[" * DEEP + b"]" * DEEP
    return {
        "invalid_json": lambda: f'{{"id": "{tag}", "text": "unterminated'.encode(),
        "empty_value": lambda: b"",
        "invalid_utf8": lambda: b'{"id": "' + tag.encode() + b'\xff\xfe", "text": "x"}',
        "id_not_a_string": lambda: json.dumps({"id": n, "text": tag}).encode(),
        "text_not_a_string": lambda: json.dumps({"id": tag, "text": [tag, "a"]}).encode(),
        "text_null": lambda: json.dumps({"id": tag, "text": None}).encode(),
        "empty_id": lambda: json.dumps({"id": "", "text": tag}).encode(),
        "blank_id": lambda: json.dumps({"id": " \t " * (1 + n % 3), "text": tag}).encode(),
        "nul_in_id": lambda: json.dumps({"id": tag + "\x00", "text": tag}).encode(),
        "tombstone": lambda: None,
        "deep_array": lambda: deep,
        "deep_field": lambda: (
            b'{"id": "' + tag.encode() + b'", "text": "x", "metadata": {"a": ' + deep + b"}}"
        ),
        "lone_surrogate_id": lambda: f'{{"id": "{tag}\\ud800", "text": "x"}}'.encode(),
        "lone_surrogate_text": lambda: f'{{"id": "{tag}", "text": "a\\udc00b"}}'.encode(),
        "huge_id": lambda: json.dumps({"id": tag + "x" * (600 + n), "text": "x"}).encode(),
        "timestamp_not_a_date": lambda: json.dumps(
            {"id": tag, "text": "x", "timestamp": "not a date"}
        ).encode(),
        "timestamp_year_99999": lambda: json.dumps(
            {"id": tag, "text": "x", "timestamp": "99999-01-01T00:00:00Z"}
        ).encode(),
        "not_an_object": lambda: random.Random(n).choice(
            [b"[1, 2, 3]", b'"just a string"', b"42", b"null", b"true"]
        ),
        "missing_text": lambda: json.dumps({"id": tag, "title": "no text"}).encode(),
        "missing_id": lambda: json.dumps({"text": tag}).encode(),
    }[kind]()


# The dead-letter reason each kind must get.
REASONS = {
    "invalid_json": "invalid_json",
    "empty_value": "invalid_json",
    "invalid_utf8": "invalid_utf8",
    "id_not_a_string": "invalid_field",
    "text_not_a_string": "invalid_field",
    "text_null": "invalid_field",
    "empty_id": "invalid_id",
    "blank_id": "invalid_id",
    "nul_in_id": "invalid_id",
    "tombstone": "tombstone",
    "deep_array": "invalid_json",
    "deep_field": "invalid_json",
    "lone_surrogate_id": "invalid_field",
    "lone_surrogate_text": "invalid_field",
    "huge_id": "invalid_id",
    "timestamp_not_a_date": "invalid_field",
    "timestamp_year_99999": "invalid_field",
    "not_an_object": "not_an_object",
    "missing_text": "missing_text",
    "missing_id": "missing_id",
    "oversized": "too_large",
}


def _storm(seed: int = 7) -> list[tuple[str, bytes | None]]:
    """(kind, value) in input order: 1,050 malformed messages of 21 kinds, 300 documents
    and one valid 2 MB document, shuffled together. Kind "doc" is a valid document."""
    rng = random.Random(seed)
    kinds = [k for k in REASONS if k != "oversized"]
    items: list[tuple[str, bytes | None]] = [
        (kind, _malformed(kind, n))
        for kind in kinds
        for n in range(50 if "deep" not in kind else 10)
    ]
    items += [
        (k, _malformed(k, 1000 + n)) for n in range(90) for k in ("invalid_json", "missing_id")
    ]
    items.append(("oversized", json.dumps({"id": "oversized", "text": "y" * OVERSIZED}).encode()))
    docs = stream(300, seed=seed)
    big = {"id": "doc-2mb", "text": random_text(seed, 330_000)[:1_990_000]}
    rng.shuffle(items)
    out: list[tuple[str, bytes | None]] = []
    for i, doc in enumerate([*docs[:150], big, *docs[150:]]):
        out.append(("doc", json.dumps(doc).encode()))
        out.extend(items[i * len(items) // 301 : (i + 1) * len(items) // 301])
    return out


def _key(i: int, kind: str, raw: bytes | None) -> bytes | None:
    """Documents are keyed by id; malformed messages carry no key (the id must not come from
    it), except tombstones, which need one."""
    if kind == "doc" and raw is not None:
        return str(json.loads(raw)["id"]).encode()
    return f"tombstone-{i}".encode() if raw is None else None


def _time(i: int) -> int | None:
    """Every 29th message has no record time (-1); the others get the broker's."""
    return -1 if i % 29 == 0 else None


def test_malformed_storm(
    kafka_bootstrap: str, unique_topic: Callable[[str], str], tmp_path: Path
) -> None:
    storm = _storm()
    bad = [(kind, raw) for kind, raw in storm if kind != "doc"]
    valid = [json.loads(raw) for kind, raw in storm if kind == "doc" and raw is not None]
    assert len(bad) >= 1000 and len({k for k, _ in bad}) >= 12 and len(valid) == 301
    assert max(len(json.dumps(d)) for d in valid) > 1_900_000
    assert sum(kind == "doc" and _time(i) == -1 for i, (kind, _) in enumerate(storm)) >= 5

    topics = Topics.fresh(unique_topic)
    create_topic(kafka_bootstrap, topics.input, configs={"max.message.bytes": str(2 * OVERSIZED)})
    group = "g-" + topics.input
    worker = WorkerProcess(kafka_bootstrap, topics, group, tmp_path / "w.log", scope=None).start()
    try:
        worker.wait_ready()
        records = [(_key(i, kind, raw), raw, _time(i)) for i, (kind, raw) in enumerate(storm)]
        offsets = send_records(
            kafka_bootstrap, topics.input, records, max_request_size=2 * OVERSIZED
        )
        wait_committed(kafka_bootstrap, topics.input, offsets[-1] + 1, worker, timeout=180)
        dlq = read_all(kafka_bootstrap, topics.dlq, len(bad), timeout=60)
        got = decisions(kafka_bootstrap, topics, len(valid), timeout=60)
        assert worker.alive(), worker.log()
    finally:
        assert worker.stop() == 0, worker.log()

    # exactly one dead letter per malformed message, with the right reason and a bounded copy
    by_offset = {off: (kind, raw) for off, (kind, raw) in zip(offsets, storm, strict=True)}
    seen = Counter(json.loads(m.value)["source"]["offset"] for m in dlq)
    bad_offsets = {off for off, (kind, _) in by_offset.items() if kind != "doc"}
    assert {o: c for o, c in seen.items() if c != 1} == {}, "offsets dead-lettered twice"
    assert set(seen) - bad_offsets == set(), "valid documents dead-lettered"
    missing = sorted(bad_offsets - set(seen))
    assert not missing, f"{len(missing)} malformed messages without a dead letter: " + str(
        Counter(by_offset[o][0] for o in missing)
    )
    wrong = []
    for m in dlq:
        record = json.loads(m.value)
        kind, raw = by_offset[record["source"]["offset"]]
        raw = raw or b""
        prefix = base64.b64decode(record["raw_base64"])
        checks = {
            "reason": record["reason"] == REASONS[kind],
            "header": dict(m.headers).get("neardup.error") == REASONS[kind].encode(),
            "source": record["source"]["topic"] == topics.input
            and record["source"]["partition"] == 0
            and isinstance(record["source"].get("timestamp"), int),
            "at": bool(record.get("at")),
            "raw_length": record["raw_length"] == len(raw),
            "raw_sha256": record["raw_sha256"] == hashlib.sha256(raw).hexdigest(),
            "raw_base64": prefix == raw[:DLQ_PAYLOAD_BYTES],
            "raw_truncated": record["raw_truncated"] == (len(raw) > DLQ_PAYLOAD_BYTES),
            "bounded": len(m.value) <= 2 * DLQ_PAYLOAD_BYTES,
            "message": bool(record["message"]),
        }
        failed = [name for name, ok in checks.items() if not ok]
        if failed:
            wrong.append((kind, record["reason"], failed))
    assert not wrong, f"{len(wrong)} wrong dead letters, e.g. {sorted(set(map(str, wrong)))[:8]}"

    # exactly one decision per valid document, the offline engine's, the 2 MB one passed through
    assert_exactly_once(got, [str(d["id"]) for d in valid])
    assert {k: v[0] for k, v in got.items()} == expected(valid)
    unique_ids = {m.key.decode() for m in read_all(kafka_bootstrap, topics.unique, 0, timeout=10)}
    assert "doc-2mb" in unique_ids
    limit = int(topic_config(kafka_bootstrap, topics.unique)["max.message.bytes"])
    assert limit >= INPUT_LIMIT, f"{topics.unique} accepts only {limit} bytes"
    assert limit < OVERSIZED, "the oversized input must exceed what the output topics accept"
