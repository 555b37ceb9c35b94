"""Fault injection: documents stamped far in the future (year 2100) or far in the past (1970)
leave every other document's decision unchanged, with a 72 h retention window, in the
default worker (topic scope; the offline reference has the stream's home shards).

The stream replays 100 hours of history: each document's timestamp and its Kafka record time
are its event time, and 30% of the documents are near-copies of an earlier one, some
within the window (duplicates) and some older than 72 h (unique again). A clock outlier must
neither move the window (2100) nor be matched inside it (1970). Each outlier's record time is
its neighbour's (the time it was received), so the worker clamps a future one to that.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pytest

from neardup_stream import DedupConfig, Deduplicator, Document
from neardup_stream.config import with_stream_home_shards
from tests.integration.faults import (
    assert_exactly_once,
    create_topic,
    send_records,
    wait_committed,
)
from tests.integration.harness import (
    Topics,
    WorkerProcess,
    decisions,
)
from tests.unit.conftest import mutate, random_text

pytestmark = [pytest.mark.integration, pytest.mark.faults]  # `make test-faults`

WINDOW_S = 72 * 3600
SPAN_S = 100 * 3600
MARGIN_S = 2 * 3600  # > the worker's default max_future_skew_seconds
FUTURE = "2100-01-01T00:00:00Z"
PAST = "1970-01-01T00:00:01Z"

Record = tuple[bytes, bytes, int]


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat().replace("+00:00", "Z")


def _history(n: int, seed: int, now: float) -> tuple[list[dict[str, object]], list[float]]:
    """n documents over the SPAN_S seconds before `now` (oldest first), and their times.

    No near-copy is within MARGIN_S of the window's edge from its original: a clamped future
    time may move the watermark ahead by up to the allowed skew (1 h), which must not decide
    whether a pair is still in the window."""
    rng = random.Random(seed)
    docs: list[dict[str, object]] = []
    times = [now - SPAN_S + i * (SPAN_S - 3600) / n for i in range(n)]
    for i, t in enumerate(times):
        if i >= 10 and rng.random() < 0.3:
            j = rng.randrange(i)
            while abs(t - times[j] - WINDOW_S) < MARGIN_S:
                j = rng.randrange(i)
            text = mutate(str(docs[j]["text"]), 0.02, seed * 1_000_003 + i)
        else:
            text = random_text(seed * 1_000_000 + i, 60)
        docs.append({"id": f"h{seed}-{i}", "text": text, "timestamp": _iso(t)})
    return docs, times


def _outliers(
    docs: list[dict[str, object]], stamp: str, seed: int, copies: bool
) -> dict[int, list[dict[str, object]]]:
    """20 documents stamped `stamp`, to insert before the document at each key: new texts,
    and with `copies` every other one a near-copy of a document that comes later."""
    rng = random.Random(seed)
    out: dict[int, list[dict[str, object]]] = {}
    for j in range(20):
        at = rng.randrange(20, len(docs) * 4 // 5)
        if copies and j % 2:
            text = mutate(str(docs[rng.randrange(at, len(docs))]["text"]), 0.02, seed + j)
        else:
            text = random_text(seed * 7_000_000 + j, 60)
        out.setdefault(at, []).append({"id": f"clock-{seed}-{j}", "text": text, "timestamp": stamp})
    return out


def _records(
    docs: list[dict[str, object]], times: list[float], outliers: dict[int, list[dict[str, object]]]
) -> list[Record]:
    """Input records; an outlier's record time is its neighbour's (when it was received)."""
    out: list[Record] = []
    for i, (doc, t) in enumerate(zip(docs, times, strict=True)):
        for extra in outliers.get(i, []):
            out.append((str(extra["id"]).encode(), json.dumps(extra).encode(), int(t * 1000)))
        out.append((str(doc["id"]).encode(), json.dumps(doc).encode(), int(t * 1000)))
    return out


def _run(bootstrap: str, records: list[Record], tmp_path: Path, name: str) -> dict:
    base = f"nd-clocks-{name}-{uuid.uuid4().hex[:10]}"
    topics = Topics(base, f"{base}.u", f"{base}.d", f"{base}.q", f"{base}.c")
    create_topic(bootstrap, topics.input)
    send_records(bootstrap, topics.input, records)
    group = "g-" + base
    worker = WorkerProcess(
        bootstrap,
        topics,
        group,
        tmp_path / f"{name}.log",
        extra=["--max-age", str(WINDOW_S), "--max-batch", "200"],
        scope=None,  # the default worker: one index for the topic
    ).start()
    try:
        worker.wait_ready()
        wait_committed(bootstrap, topics.input, len(records), worker, timeout=240)
        got = decisions(bootstrap, topics, len(records), timeout=60)
        assert worker.alive(), worker.log()
    finally:
        assert worker.stop() == 0, worker.log()
    assert_exactly_once(got, [key.decode() for key, _, _ in records])
    return got


def _offline(docs: list[dict[str, object]], max_age: float | None) -> dict:
    dedup = Deduplicator(with_stream_home_shards(DedupConfig(max_age_seconds=max_age)))
    out = dedup.check_batch([Document.model_validate(d) for d in docs])
    return {d.id: [(d.decision, d.duplicate_of)] for d in out}


@dataclass
class History:
    docs: list[dict[str, object]]
    times: list[float]
    offline: dict  # id -> [(decision, duplicate_of)] of the offline engine, same window
    plain: dict  # the same, from a worker run


@pytest.fixture(scope="module")
def history(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> History:
    docs, times = _history(1500, seed=41, now=time.time())
    offline = _offline(docs, WINDOW_S)
    logs = tmp_path_factory.mktemp("clocks")
    plain = _run(kafka_bootstrap, _records(docs, times, {}), logs, "plain")
    return History(docs, times, offline, plain)


def test_the_worker_applies_the_window_as_the_offline_engine(history: History) -> None:
    assert history.offline != _offline(history.docs, None), "the window must matter here"
    assert history.plain == history.offline


def _assert_unchanged(history: History, outliers: dict, mixed: dict) -> None:
    changed = {
        i: (history.plain[i], mixed[i]) for i in history.plain if mixed[i] != history.plain[i]
    }
    assert not changed, (
        f"{len(changed)} of {len(history.docs)} decisions changed by "
        f"{sum(map(len, outliers.values()))} clock outliers, e.g. {list(changed.items())[:5]}"
    )


def test_far_future_timestamps_leave_other_decisions_unchanged(
    kafka_bootstrap: str, history: History, tmp_path: Path
) -> None:
    """Stamped 2100 but received in stream order: clamped, they must not move the window."""
    outliers = _outliers(history.docs, FUTURE, seed=42, copies=False)
    records = _records(history.docs, history.times, outliers)
    _assert_unchanged(history, outliers, _run(kafka_bootstrap, records, tmp_path, "future"))


def test_far_past_timestamps_leave_other_decisions_unchanged(
    kafka_bootstrap: str, history: History, tmp_path: Path
) -> None:
    """Stamped 1970: older than the window when they arrive, so nothing may match them."""
    outliers = _outliers(history.docs, PAST, seed=43, copies=True)
    records = _records(history.docs, history.times, outliers)
    _assert_unchanged(history, outliers, _run(kafka_bootstrap, records, tmp_path, "past"))
