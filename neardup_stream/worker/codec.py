"""Message formats on the output topics (pure functions; no Kafka client here).

* unique topic: the original document bytes, passed through unchanged; the decision rides in
  headers (`neardup.decision`, `neardup.method`, ..., `neardup.update: true` for an update:
  a new version of an id seen before with other content);
* duplicate topic: the `Decision` as JSON;
* dead-letter topic: an `ErrorRecord` as JSON (reason, message, source topic/partition/offset,
  original bytes in base64), with the reason also in a header.
Message keys are the document id when there is one, else the input message's key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from neardup_stream.models import MAX_MESSAGE_CHARS, Decision, ErrorRecord

Headers = list[tuple[str, bytes]]
RECORD_OVERHEAD = 512  # a record batch's header, one record's framing and its header


def bare_dead_letter_bytes(key_bytes: int = 0) -> int:
    """The most bytes a dead letter without payload takes on the dead-letter topic, with a
    key of `key_bytes` (the input's key when the input has no id): a message of
    `MAX_MESSAGE_CHARS` characters each escaped in JSON (`\\u0001`), the longest topic name,
    every source field, the longest reason."""
    worst = ErrorRecord.build(
        "internal_error",
        "\u0001" * MAX_MESSAGE_CHARS,
        b"",
        0,
        topic="t" * 249,
        partition=2**31 - 1,
        offset=2**63 - 1,
        timestamp=2**63 - 1,
    )
    value = dlq_message("d", worst, None).value
    return len(value) + len(b"neardup.error") + len(b"internal_error") + key_bytes + RECORD_OVERHEAD


@dataclass(frozen=True)
class OutMessage:
    """One message to produce."""

    topic: str
    key: bytes | None
    value: bytes
    headers: Headers = field(default_factory=list)
    partition: int | None = None  # None: the producer's partitioner picks it (by key)


def decision_headers(decision: Decision) -> Headers:
    headers = [("neardup.decision", decision.decision.encode())]
    for name in ("duplicate_of", "representative", "similarity", "method"):
        value = getattr(decision, name)
        if value is not None:
            headers.append((f"neardup.{name}", str(value).encode()))
    if decision.update:
        headers.append(("neardup.update", b"true"))
    return headers


def unique_message(topic: str, decision: Decision, original: bytes) -> OutMessage:
    return OutMessage(topic, decision.id.encode(), original, decision_headers(decision))


def duplicate_message(topic: str, decision: Decision) -> OutMessage:
    value = json.dumps(decision.model_dump(mode="json")).encode()
    return OutMessage(topic, decision.id.encode(), value, decision_headers(decision))


def dlq_message(topic: str, error: ErrorRecord, key: bytes | None) -> OutMessage:
    value = error.model_dump_json().encode()
    return OutMessage(topic, key, value, [("neardup.error", error.reason.encode())])
