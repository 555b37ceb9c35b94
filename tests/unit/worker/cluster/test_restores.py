"""Background restores: results taken once, cancellation seen by the restore, never used."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from worker.cluster.restores import Restores


def test_a_finished_restore_is_taken_once() -> None:
    restores: Restores[str] = Restores("t", threading.Event())
    release = threading.Event()
    restores.start(3, lambda should_stop: "state-3" if release.wait(30) else "timeout")
    assert restores.pending() == {3} and restores.finished() == []
    release.set()
    results: list[tuple[int, str]] = []
    while not results:
        results = restores.finished()
    assert results == [(3, "state-3")] and restores.pending() == set()
    restores.close()


def test_a_cancelled_restore_is_told_to_stop_and_its_result_is_never_used() -> None:
    restores: Restores[str] = Restores("t", threading.Event())
    started, saw_stop = threading.Event(), threading.Event()

    def restore(should_stop: Callable[[], bool]) -> str:
        started.set()
        while not should_stop():
            threading.Event().wait(0.01)
        saw_stop.set()
        return "stale"

    restores.start(1, restore)
    assert started.wait(30)
    restores.cancel(1)
    assert saw_stop.wait(30)
    # The partition comes back: a fresh restore, and only its result is taken.
    restores.start(1, lambda should_stop: "fresh")
    results: list[tuple[int, str]] = []
    while not results:
        results = restores.finished()
    assert results == [(1, "fresh")]
    restores.close()


def test_the_role_stop_flag_stops_every_restore() -> None:
    stop = threading.Event()
    restores: Restores[bool] = Restores("t", stop)
    seen = threading.Event()

    def restore(should_stop: Callable[[], bool]) -> bool:
        while not should_stop():
            threading.Event().wait(0.01)
        seen.set()
        return True

    restores.start(0, restore)
    stop.set()
    assert seen.wait(30)
    restores.close()


def test_the_restore_thread_is_a_daemon_so_a_stuck_restore_never_holds_up_the_exit() -> None:
    restores: Restores[str] = Restores("stuck", threading.Event())
    release, started = threading.Event(), threading.Event()
    restores.start(0, lambda should_stop: "late" if started.set() or release.wait(30) else "")
    assert started.wait(30)
    thread = next(t for t in threading.enumerate() if t.name == "stuck-restore")
    assert thread.daemon and thread.is_alive()
    release.set()
    restores.close()
    assert not thread.is_alive()


def test_a_failed_restore_raises_when_taken() -> None:
    restores: Restores[str] = Restores("t", threading.Event())

    def broken(should_stop: Callable[[], bool]) -> str:
        raise OSError("changelog unreadable")

    restores.start(2, broken)
    with pytest.raises(OSError, match="changelog unreadable"):
        while not restores.finished():  # raises once the restore has failed
            threading.Event().wait(0.01)
    restores.close()
