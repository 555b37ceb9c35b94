"""`neardup_stream.worker.runtime.committer`: commits run in order on one thread per committer, a commit
that never returns holds up only its own committer, and no thread exists before the first."""

from __future__ import annotations

import threading

from neardup_stream.worker.runtime.committer import Committer


def _names() -> set[str]:
    return {t.name for t in threading.enumerate()}


def test_jobs_run_in_order_on_one_thread_started_by_the_first() -> None:
    committer = Committer("unit-commit-a")
    assert "unit-commit-a" not in _names()
    ran: list[tuple[int, threading.Thread]] = []
    done = threading.Event()
    for i in range(50):
        committer.submit(lambda i=i: ran.append((i, threading.current_thread())))
    committer.submit(done.set)
    assert done.wait(10)
    assert [i for i, _ in ran] == list(range(50))
    (thread,) = {t for _, t in ran}
    assert thread is not threading.current_thread() and thread.name == "unit-commit-a"
    assert thread.daemon
    committer.stop()
    thread.join(10)
    assert not thread.is_alive()


def test_stop_lets_the_jobs_already_submitted_run_first() -> None:
    committer = Committer("unit-commit-b")
    gate, ran = threading.Event(), []
    committer.submit(lambda: gate.wait(10))
    committer.submit(lambda: ran.append("second"))
    committer.stop()
    committer.submit(lambda: ran.append("after stop"))  # never runs: the thread has ended
    gate.set()
    (thread,) = [t for t in threading.enumerate() if t.name == "unit-commit-b"]
    thread.join(10)
    assert not thread.is_alive()
    assert ran == ["second"]


def test_a_job_that_never_returns_holds_up_only_its_own_committer() -> None:
    stuck = Committer("unit-commit-c")
    release = threading.Event()
    stuck.submit(lambda: release.wait(30))  # a commit that does not return
    stuck.stop()
    fresh, done = Committer("unit-commit-c"), threading.Event()
    fresh.submit(done.set)
    try:
        assert done.wait(10), "the new committer waited behind the stuck one"
    finally:
        release.set()
        fresh.stop()
