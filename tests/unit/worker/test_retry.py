"""`retry.until_done`: a recovery step is repeated until it succeeds, or until stopped."""

from __future__ import annotations

import threading

import pytest
from kafka.errors import InvalidSessionTimeoutError

from neardup_stream.worker import retry


def test_a_failing_step_is_repeated_until_it_succeeds() -> None:
    calls: list[int] = []

    def flaky() -> None:
        calls.append(len(calls))
        if len(calls) < 3:
            raise OSError("broker not reachable")

    retry.until_done(threading.Event(), 0.0, flaky)
    assert calls == [0, 1, 2]


def test_a_stop_ends_the_repeats() -> None:
    stop = threading.Event()
    calls: list[int] = []

    def failing() -> None:
        calls.append(1)
        if len(calls) == 2:
            stop.set()
        raise OSError("still down")

    retry.until_done(stop, 0.0, failing)
    assert len(calls) == 2


def test_a_stopped_caller_does_not_run_the_step() -> None:
    stop = threading.Event()
    stop.set()
    calls: list[int] = []
    retry.until_done(stop, 0.0, lambda: calls.append(1))
    assert calls == []


def test_a_setting_the_broker_refuses_is_not_retried() -> None:
    calls = []

    def join() -> None:
        calls.append(1)
        raise InvalidSessionTimeoutError()

    for attempt in (
        lambda: retry.until_done(threading.Event(), 0.01, join),
        lambda: retry.until_stopped(threading.Event(), lambda n: 0.01, join),
    ):
        with pytest.raises(InvalidSessionTimeoutError):
            attempt()
    assert len(calls) == 2


def test_start_up_gives_up_after_the_deadline_with_a_clear_error() -> None:
    now = [0.0]
    calls: list[float] = []

    def unreachable() -> None:
        calls.append(now[0])
        now[0] += 4.0  # each attempt takes a while (the client's bootstrap timeout)
        raise OSError("connection refused")

    with pytest.raises(retry.BrokerUnavailable) as gave_up:
        retry.until_stopped(
            threading.Event(), lambda attempt: 0.0, unreachable, 10.0, lambda: now[0]
        )
    assert calls == [0.0, 4.0, 8.0]
    assert "giving up after kafka.give_up_after_s=10" in str(gave_up.value)
    assert "--bootstrap-servers" in str(gave_up.value)


def test_without_a_deadline_start_up_retries_until_the_broker_answers() -> None:
    calls: list[int] = []

    def comes_up() -> str:
        calls.append(1)
        if len(calls) < 5:
            raise OSError("connection refused")
        return "up"

    assert retry.until_stopped(threading.Event(), lambda attempt: 0.0, comes_up) == "up"
    assert len(calls) == 5
