"""The one failure policy: shrink, back off, reset, and blame exactly one output."""

from __future__ import annotations

from kafka import TopicPartition
from kafka import errors as kafka_errors
from kafka.future import Future
from kafka.producer.future import FutureRecordMetadata
from kafka.producer.producer_batch import ProducerBatch
from kafka.record.memory_records import MemoryRecordsBuilder

from neardup_stream.worker.codec import OutMessage
from neardup_stream.worker.runtime.policy import MAX_HALVINGS, FailurePolicy, aborted, blame


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


def test_a_batch_too_large_for_its_topic_stays_small_then_doubles_back_per_commit() -> None:
    policy = FailurePolicy(backoff_max_s=3)
    for _ in range(4):  # 1000 -> 500 -> 250 -> 125 -> 62, which fits
        policy.too_large()
    assert policy.shrunk(1000) == 62
    policy.succeeded()
    assert policy.failures == 0 and policy.shrunk(1000) == 125  # not 1000: it would fail again
    policy.too_large()  # 125 did not fit either
    assert policy.shrunk(1000) == 62
    policy.succeeded()
    sizes = []
    for _ in range(5):  # fitting from now on: doubles back per commit
        sizes.append(policy.shrunk(1000))
        policy.succeeded()
    assert sizes == [125, 250, 500, 1000, 1000]


def test_other_failures_keep_no_halving_past_a_commit() -> None:
    policy = FailurePolicy(backoff_max_s=3)
    policy.too_large()
    policy.succeeded()
    assert policy.shrunk(8) == 8  # one halving, undone by its own commit
    policy.bisect()  # an input the step failed on: bisected, then dead-lettered
    policy.failed()
    assert policy.shrunk(8) == 2
    policy.succeeded()
    assert policy.shrunk(8) == 8


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


def _batch_futures(sizes: list[int]) -> tuple[ProducerBatch, list[FutureRecordMetadata]]:
    """kafka-python's own batch of records of `sizes` bytes, and the records' futures."""
    batch = ProducerBatch(TopicPartition("t", 0), MemoryRecordsBuilder(2, 0, 1 << 20))
    return batch, [batch.try_append(0, b"k", b"x" * n, []) for n in sizes]


def test_a_larger_record_aborted_unsent_is_not_blamed_for_another_batchs_refusal() -> None:
    # The broker refused a 10-byte record (its topic's limit is small); the transaction then
    # failed and kafka-python aborted a batch never sent, of a 500-byte record of another
    # topic, with the same exception object: the refused record is the one to blame.
    refusal = kafka_errors.MessageSizeTooLargeError()
    refused, refused_futures = _batch_futures([10])
    unsent, unsent_futures = _batch_futures([500])
    refused.complete_exceptionally(refusal, lambda _: refusal)
    unsent.abort(refusal)
    assert unsent_futures[0].exception is refusal  # the exception cannot tell them apart
    futures = refused_futures + unsent_futures
    found = blame(kafka_errors.KafkaError("in an error state"), futures, _messages(10, 500))
    assert found is not None and found.position == 0
    assert aborted(unsent_futures[0]) and not aborted(refused_futures[0])
