"""The one changelog reader (`neardup_stream.worker.runtime.replay`): in order up to the last stable offset,
and one policy for records it cannot apply (skip, stop the partition, refuse the restore)."""

from __future__ import annotations

import pytest
from kafka import TopicPartition
from prometheus_client import CollectorRegistry

from neardup_stream.worker.metrics import build_metrics
from neardup_stream.worker.runtime.replay import (
    ROLE_POLICY,
    WORKER_POLICY,
    Applied,
    Interrupted,
    OnRefusal,
    Refused,
    Replayed,
    ReplayPolicy,
    Skipped,
    each,
    replay,
    replay_changes,
)
from tests.unit.worker.runtime.memory_log import MemoryLog

A, B = TopicPartition("c", 0), TopicPartition("c", 1)


def values(*items: str) -> list[bytes | None]:
    return [item.encode() for item in items]


def run(
    log: MemoryLog, policy: ReplayPolicy, start: dict[TopicPartition, int | None] | None = None
) -> tuple[Replayed, dict[int, list[str]], CollectorRegistry]:
    """Replays `log`: a value "bad:<reason>" is refused for that reason, "boom" raises."""
    seen: dict[int, list[str]] = {}

    def apply(partition: int, value: bytes) -> Applied:
        text = value.decode()
        if text == "boom":
            raise ValueError("cannot read it")
        if text.startswith("bad:"):
            return Applied(0, (Skipped(text[4:], f"refused {text}"),))
        seen.setdefault(partition, []).append(text)
        return Applied(1)

    registry = CollectorRegistry()
    start = start if start is not None else dict.fromkeys(log.values)
    done = replay(log, start, apply, policy, lambda: False, build_metrics(registry))  # type: ignore[arg-type]
    return done, seen, registry


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def test_every_record_up_to_the_stable_offset_is_applied_in_order() -> None:
    log = MemoryLog({A: values("a0", "a1", "a2", "a3"), B: values("b0")})
    log.append(A, b"after the end")
    done, seen, registry = run(log, ROLE_POLICY)
    assert seen == {0: ["a0", "a1", "a2", "a3"], 1: ["b0"]}
    assert done.applied == 5 and done.stopped == {} and done.skipped == {}
    assert sample(registry, "neardup_restored_records_total") == 5


def test_a_start_offset_is_honoured_and_tombstones_are_not_applied() -> None:
    log = MemoryLog({A: [b"a0", None, b"a2", b"a3"]})
    done, seen, _ = run(log, ROLE_POLICY, {A: 1})
    assert seen == {0: ["a2", "a3"]} and done.applied == 2


def test_the_worker_skips_and_counts_what_it_cannot_apply() -> None:
    log = MemoryLog({A: values("a0", "bad:other_config", "boom", "a3")})
    done, seen, registry = run(log, WORKER_POLICY)
    assert seen == {0: ["a0", "a3"]} and done.stopped == {}
    assert done.skipped == {"other_config": 1, "corrupt": 1}
    reason = "neardup_restore_skipped_records_total"
    assert sample(registry, reason, reason="corrupt") == 1
    assert sample(registry, reason, reason="other_config") == 1


def test_the_worker_refuses_a_restore_with_records_of_another_pipeline() -> None:
    log = MemoryLog({A: values("a0", "a1", "bad:other_pipeline", "a3")})
    with pytest.raises(Refused) as refused:
        run(log, WORKER_POLICY)
    assert refused.value.at.offset == 2 and refused.value.at.refusal.reason == "other_pipeline"


def test_a_role_stops_a_partition_at_its_first_unreadable_record_and_goes_on_with_others() -> None:
    log = MemoryLog({A: values("a0", "boom", "a2", "bad:x"), B: values("b0", "b1", "b2", "b3")})
    done, seen, registry = run(log, ROLE_POLICY)
    assert seen == {0: ["a0"], 1: ["b0", "b1", "b2", "b3"]}
    (stop,) = done.stopped.values()
    assert (stop.partition, stop.offset, stop.refusal.reason) == (0, 1, "corrupt")
    assert "unreadable changelog record" in stop.reason and "cannot read it" in stop.reason
    assert done.skipped == {}  # stopped there, not skipped
    assert sample(registry, "neardup_restore_skipped_records_total", reason="corrupt") == 0


def test_a_partition_one_replay_stopped_is_read_again_by_the_next_on_the_same_reader() -> None:
    log = MemoryLog({A: values("a0", "boom", "a2")})
    first, seen, _ = run(log, ROLE_POLICY)
    assert first.stopped[0].offset == 1 and seen == {0: ["a0"]} and A in log.paused
    log.values[A][1] = b"a1"  # e.g. compacted away, or another restore of the partition
    second, seen, _ = run(log, ROLE_POLICY)
    assert second.stopped == {} and seen == {0: ["a0", "a1", "a2"]}


def test_a_policy_says_per_reason_what_a_refusal_does() -> None:
    policy = ReplayPolicy(OnRefusal.STOP, {"stale": OnRefusal.SKIP})
    assert policy.on("stale") is OnRefusal.SKIP and policy.on("corrupt") is OnRefusal.STOP
    assert WORKER_POLICY.on("other_pipeline") is OnRefusal.REFUSE
    assert WORKER_POLICY.on("corrupt") is OnRefusal.SKIP


def test_a_stop_request_interrupts_the_replay_and_returns_nothing() -> None:
    log = MemoryLog({A: values(*[f"a{i}" for i in range(30)])}, per_poll=2)
    polls: list[int] = []

    def stop_after_three() -> bool:
        polls.append(1)
        return len(polls) > 3

    registry = CollectorRegistry()
    apply = each(lambda value: None)
    with pytest.raises(Interrupted):
        replay(log, {A: None}, apply, ROLE_POLICY, stop_after_three, build_metrics(registry))  # type: ignore[arg-type]
    assert log.position(A) < 30


def test_each_applies_one_change_per_message() -> None:
    got: list[bytes] = []
    assert each(got.append)(0, b"x") == Applied(1) and got == [b"x"]


def test_a_role_changelog_replays_to_its_first_unreadable_change_and_says_where() -> None:
    log = MemoryLog({A: values("a0", "a1", "boom", "a3")})
    seen: list[bytes] = []

    def apply_one(value: bytes) -> None:
        if value == b"boom":
            raise ValueError("cannot read it")
        seen.append(value)

    metrics = build_metrics(CollectorRegistry())
    stop = replay_changes(log, A, apply_one, lambda: False, metrics)  # type: ignore[arg-type]
    assert seen == [b"a0", b"a1"]
    assert stop is not None and (stop.partition, stop.offset) == (0, 2)
    whole = MemoryLog({A: values("a0", "a1")})
    assert replay_changes(whole, A, lambda v: None, lambda: False, metrics) is None  # type: ignore[arg-type]
