"""The one failure policy: shrink, back off, reset, and blame exactly one output."""

from __future__ import annotations

from kafka import errors as kafka_errors
from kafka.future import Future

from worker.codec import OutMessage
from worker.runtime.policy import MAX_HALVINGS, FailurePolicy, blame


def test_each_consecutive_failure_halves_the_batch_down_to_its_floor() -> None:
    policy = FailurePolicy(backoff_max_s=30)
    sizes = []
    for _ in range(MAX_HALVINGS + 4):
        sizes.append(policy.shrunk(1000))
        policy.failed()
    assert sizes[:5] == [1000, 500, 250, 125, 62]
    assert sizes[-1] == 1 and min(sizes) == 1
    assert policy.shrunk(64 << 20, floor=1 << 20) == 1 << 20


def test_backoff_doubles_from_half_a_second_up_to_the_cap_and_a_success_resets_it() -> None:
    policy = FailurePolicy(backoff_max_s=3)
    assert [policy.failed() for _ in range(5)] == [0.5, 1.0, 2.0, 3, 3]
    policy.succeeded()
    assert policy.failures == 0 and policy.shrunk(8) == 8 and policy.failed() == 0.5


def test_bisecting_shrinks_without_a_backoff() -> None:
    policy = FailurePolicy(backoff_max_s=3)
    policy.bisect()
    assert policy.shrunk(8) == 4


def _messages(*sizes: int) -> list[OutMessage]:
    return [OutMessage("t", b"k", b"x" * n) for n in sizes]


def _done(error: BaseException | None) -> Future:
    future = Future()
    if error is None:
        future.success(None)
    else:
        future.failure(error)
    return future


def test_the_message_send_refused_is_blamed() -> None:
    error = kafka_errors.MessageSizeTooLargeError("too large")
    found = blame(error, [_done(None)], _messages(10, 20, 30))
    assert found is not None and found.position == 1
    assert "MessageSizeTooLargeError" in found.why


def test_of_several_deliveries_rejected_the_largest_is_blamed() -> None:
    too_large = kafka_errors.MessageSizeTooLargeError
    futures = [_done(too_large()), _done(None), _done(too_large()), Future()]
    found = blame(RuntimeError("commit failed"), futures, _messages(10, 99, 50, 500))
    assert found is not None and found.position == 2


def test_transient_failures_blame_nothing() -> None:
    futures = [_done(kafka_errors.KafkaTimeoutError()), _done(None)]
    assert blame(kafka_errors.KafkaTimeoutError(), futures, _messages(10, 20)) is None
    assert blame(kafka_errors.KafkaTimeoutError(), [], _messages(10)) is None
