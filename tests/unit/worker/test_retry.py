"""`retry.until_done`: a recovery step is repeated until it succeeds, or until stopped."""

from __future__ import annotations

import threading

from worker import retry


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
