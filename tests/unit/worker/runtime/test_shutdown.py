"""Every step of a stop runs against one deadline: a step that never returns is left behind."""

from __future__ import annotations

import logging
import signal
import threading
import time

import pytest

from neardup_stream.worker.runtime.shutdown import (
    Deadline,
    Stop,
    join,
    pause,
    wait_for_stop,
    within,
)


def test_a_step_that_ends_is_waited_for_and_its_failure_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    done: list[str] = []
    assert within("closing a", lambda: done.append("a"), Deadline(30)) is True
    assert done == ["a"]

    def fails() -> None:
        raise RuntimeError("broker gone")

    with caplog.at_level(logging.ERROR, logger="neardup_stream.worker.runtime.shutdown"):
        assert within("closing b", fails, Deadline(30)) is True
    assert "stopping: closing b failed" in caplog.text


def test_a_step_that_never_returns_is_left_running_on_a_daemon_thread(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = threading.Event()
    try:
        with caplog.at_level(logging.WARNING, logger="neardup_stream.worker.runtime.shutdown"):
            assert within("closing stuck", release.wait, Deadline(0)) is False
        stuck = [t for t in threading.enumerate() if t.name == "stop-closing stuck"]
        assert stuck and all(t.daemon and t.is_alive() for t in stuck)
        assert "closing stuck did not finish in time" in caplog.text
    finally:
        release.set()


def test_join_names_the_threads_still_running_at_the_deadline(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = threading.Event()
    busy = threading.Thread(target=release.wait, daemon=True)
    idle = threading.Thread(target=lambda: None, daemon=True)
    busy.start()
    idle.start()
    idle.join()
    try:
        with caplog.at_level(logging.WARNING, logger="neardup_stream.worker.runtime.shutdown"):
            assert join({"ShardRole": busy, "EdgeRole": idle}, Deadline(0)) == ["ShardRole"]
        assert "ShardRole still busy" in caplog.text
    finally:
        release.set()
    assert join({"ShardRole": busy}, Deadline(30)) == []


def test_the_deadline_never_leaves_less_than_the_floor() -> None:
    assert Deadline(0).left() == 0
    assert Deadline(0).left(floor=1.0) == 1.0
    assert Deadline(3600).left() > 3000


def test_a_signal_delivered_to_another_thread_still_stops_the_waiting_main_thread() -> None:
    """Any thread may receive a process's SIGTERM; its handler runs in the main thread only
    once that thread executes again. Here the kernel delivers the signal to a helper thread
    (`pthread_kill`), and the main thread, waiting for its stop, must run the handler soon:
    an endless `Event.wait()` would sleep until the watchdog sets the event 10 s later."""
    stop = Stop()
    handled: list[float] = []

    def on_signal(_signum: int, _frame: object) -> None:
        handled.append(time.monotonic())
        stop.request()  # as `neardup_stream.worker.main`'s handler does

    def deliver_to_myself() -> None:
        time.sleep(0.3)  # the main thread is waiting by then
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)

    def watchdog() -> None:
        time.sleep(10)
        stop.set()

    previous = signal.signal(signal.SIGUSR1, on_signal)
    try:
        threading.Thread(target=watchdog, daemon=True).start()
        sender = threading.Thread(target=deliver_to_myself)
        started = time.monotonic()
        sender.start()
        wait_for_stop(stop)
        sender.join()
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert handled and handled[0] - started < 5  # the handler, not the watchdog, ended it


def test_a_pause_lasts_its_time_unless_stopped() -> None:
    stop = threading.Event()
    started = time.monotonic()
    assert pause(stop, 0.5) is False and time.monotonic() - started >= 0.5
    threading.Timer(0.2, stop.set).start()
    started = time.monotonic()
    assert pause(stop, 30) is True and time.monotonic() - started < 10


def test_a_stop_requested_while_its_own_lock_is_held_does_not_wait_for_it() -> None:
    """A signal handler runs on the main thread between two bytecodes, and may interrupt
    `Event.wait` while it holds the event's lock. `Event.set` there would wait for that lock
    forever, and the process would ignore SIGTERM (what a replica did once in CI; whether
    this was why is not known). `request()` must not take it. Here one thread holds the
    lock and requests, as the handler would."""
    stop = Stop()
    returned = threading.Event()

    def handler_inside_wait() -> None:
        with stop._cond:  # held, as `Event.wait` holds it around its sleep
            stop.request()
            returned.set()

    helper = threading.Thread(target=handler_inside_wait, daemon=True)
    helper.start()
    assert returned.wait(10), "request() waited for the lock its own thread holds"
    helper.join(10)
    assert stop.is_set() and stop.wait(0)  # the next look sets it, outside the handler


def test_a_requested_stop_wakes_a_thread_waiting_on_it_once_anyone_looks() -> None:
    stop = Stop()
    woke: list[bool] = []
    waiter = threading.Thread(target=lambda: woke.append(stop.wait(30)))
    waiter.start()
    stop.request()
    assert pause(stop, 30) is True  # the main thread's look sets it, and wakes the waiter
    waiter.join(10)
    assert woke == [True]
