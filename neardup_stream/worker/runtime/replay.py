"""The one changelog reader: partitions replayed from a start offset to their last stable offset.

Every restore (the single worker's indexes, a shard's voter, a gather's first decisions) reads
its changelog here. The reader is read_committed, so aborted transactions are never replayed;
it stops at the last stable offset seen at the start (the records the previous owner
committed: read_committed waits until no open transaction holds them). A stop request raises
`Interrupted`: a partial state is never returned, so it is never decided against.

A record the caller's `apply` cannot use is a `Skipped` (`apply` returns it, or raises
`ValueError`, read as `corrupt`). What happens then is one `ReplayPolicy`, per reason:
`SKIP` counts it (`neardup_restore_skipped_records_total{reason}`, the first few logged) and
goes on; `STOP` ends that partition's replay there (`Replayed.stopped`: its state would have a
hole, so the caller stops the partition); `REFUSE` counts it and raises `Refused` (nothing of
the restore may be used). The single worker skips and refuses another pipeline's records
(`WORKER_POLICY`); the cluster roles stop a partition on any refusal (`ROLE_POLICY`).
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from kafka import KafkaConsumer, TopicPartition

from neardup_stream.worker import failpoints
from neardup_stream.worker.metrics import Metrics

log = logging.getLogger(__name__)
PROGRESS_EVERY_S = 5.0
LOGGED_SKIPS = 10


class Skipped(NamedTuple):
    """Records of one changelog message that `apply` did not apply, and why."""

    reason: str  # the metric label: corrupt, other_config, other_pipeline
    detail: str
    records: int = 1


class Applied(NamedTuple):
    """What `apply` did with one changelog message."""

    applied: int
    refused: tuple[Skipped, ...] = ()


class Unreadable(NamedTuple):
    """Where a partition's replay met a refused record."""

    topic: str
    partition: int
    offset: int
    refusal: Skipped

    @property
    def reason(self) -> str:
        return f"unreadable changelog record ({self.refusal.reason}): {self.refusal.detail}"


class OnRefusal(enum.Enum):
    SKIP = "skip"  # counted and logged; the replay goes on
    STOP = "stop"  # that partition's replay ends at the record
    REFUSE = "refuse"  # counted; the whole restore raises `Refused`


@dataclass(frozen=True)
class ReplayPolicy:
    """What a refused record does, by its reason (`default` for any other)."""

    default: OnRefusal
    by_reason: Mapping[str, OnRefusal] = field(default_factory=dict)

    def on(self, reason: str) -> OnRefusal:
        return self.by_reason.get(reason, self.default)


# The single worker: an index without a corrupt record is still the best it can have; records
# of another pipeline mean the changelog is shared, and nothing of it may be used.
WORKER_POLICY = ReplayPolicy(OnRefusal.SKIP, {"other_pipeline": OnRefusal.REFUSE})
# The cluster roles: a shard or gather never decides from a state with a hole.
ROLE_POLICY = ReplayPolicy(OnRefusal.STOP)


class Interrupted(Exception):
    """The replay was asked to stop; nothing of it may be used."""


class Refused(Exception):
    """A record the policy refuses: nothing of this restore may be used."""

    def __init__(self, at: Unreadable) -> None:
        super().__init__(f"{at.topic}[{at.partition}]@{at.offset}: {at.reason}")
        self.at = at


class Replayed(NamedTuple):
    """What a replay applied, the partitions it stopped at a refused record, and how many
    records it skipped per reason."""

    applied: int
    stopped: dict[int, Unreadable]
    skipped: dict[str, int]


Apply = Callable[[int, bytes], Applied]  # (partition, message value) -> what it applied


def each(apply_one: Callable[[bytes], object]) -> Apply:
    """An `Apply` for changelogs of one state change per message (the cluster roles'):
    `apply_one` raises ValueError for a message it cannot read."""

    def apply(partition: int, value: bytes) -> Applied:
        apply_one(value)
        return Applied(1)

    return apply


def replay_changes(
    reader: KafkaConsumer,
    tp: TopicPartition,
    apply_one: Callable[[bytes], object],
    should_stop: Callable[[], bool],
    metrics: Metrics,
) -> Unreadable | None:
    """A cluster role's changelog partition `tp` from its start, one state change per
    message (`each`), stopping at a message `apply_one` cannot read: where it stopped."""
    done = replay(reader, {tp: None}, each(apply_one), ROLE_POLICY, should_stop, metrics)
    return done.stopped.get(tp.partition)


def replay(
    reader: KafkaConsumer,
    start: Mapping[TopicPartition, int | None],
    apply: Apply,
    policy: ReplayPolicy,
    should_stop: Callable[[], bool],
    metrics: Metrics,
) -> Replayed:
    """Call `apply` on every committed record of each partition of `start`, in order, from
    its start offset (None: the log start) up to its last stable offset at the start."""
    tps = sorted(start, key=lambda tp: (tp.topic, tp.partition))
    if not tps:
        return Replayed(0, {}, {})
    began = last_log = time.monotonic()
    reader.assign(tps)
    reader.resume(*tps)  # a reused reader keeps a partition an earlier replay stopped paused
    ends = reader.end_offsets(tps)
    for tp in tps:
        first = start[tp]
        reader.seek_to_beginning(tp) if first is None else reader.seek(tp, first)
    stopped: dict[int, Unreadable] = {}
    skips: dict[str, int] = {}
    applied = 0
    remaining = set(tps)
    while True:
        remaining = {tp for tp in remaining if reader.position(tp) < ends[tp]}
        if not remaining:
            break
        if should_stop():
            raise Interrupted(f"replay of {sorted(str(tp) for tp in tps)} stopped")
        for tp, messages in reader.poll(timeout_ms=500).items():
            for msg in messages:
                if tp not in remaining or msg.offset >= ends[tp]:
                    break
                if should_stop():  # a poll returns up to 10,000 records: never finish them all
                    raise Interrupted(f"replay of {sorted(str(t) for t in tps)} stopped")
                if msg.value is None:
                    continue  # a compaction tombstone
                try:
                    done = apply(tp.partition, msg.value)
                except ValueError as exc:
                    done = Applied(0, (Skipped("corrupt", f"{type(exc).__name__}: {exc}"),))
                applied += done.applied
                for refusal in done.refused:
                    at = Unreadable(tp.topic, tp.partition, msg.offset, refusal)
                    action = policy.on(refusal.reason)
                    if action is OnRefusal.STOP:
                        stopped[tp.partition] = at
                        remaining.discard(tp)
                        reader.pause(tp)
                        break
                    metrics.restore_skipped.labels(refusal.reason).inc(refusal.records)
                    if action is OnRefusal.REFUSE:
                        raise Refused(at)
                    _log_skip(skips, at)
        failpoints.hit("restore_batch")
        now = time.monotonic()
        if now - last_log >= PROGRESS_EVERY_S:
            last_log = now
            log.info("restoring: %d records replayed (%.0f/s)", applied, applied / (now - began))
    metrics.restored_records.inc(applied)
    log.info(
        "restored partitions %s: %d records replayed%s in %.1f s (%s)",
        [tp.partition for tp in tps],
        applied,
        "".join(f" (partition {p} stopped at offset {u.offset})" for p, u in stopped.items()),
        time.monotonic() - began,
        ", ".join(sorted({tp.topic for tp in tps})),
    )
    return Replayed(applied, stopped, skips)


def _log_skip(skips: dict[str, int], at: Unreadable) -> None:
    """The first few skips of each reason, one by one: a changelog written under other
    settings would otherwise log every one of its records."""
    seen = skips[at.refusal.reason] = skips.get(at.refusal.reason, 0) + at.refusal.records
    if seen - at.refusal.records < LOGGED_SKIPS:
        log.warning(
            "skipping changelog record %s[%d]@%d: %s",
            at.topic,
            at.partition,
            at.offset,
            at.refusal.detail,
        )
    elif seen - at.refusal.records == LOGGED_SKIPS:
        log.warning(
            "more changelog records skipped as %s; not logged one by one", at.refusal.reason
        )
