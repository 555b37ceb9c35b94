"""Background restores (`neardup_stream.worker.runtime.restore`): results taken once, paused until complete,
and a cancelled restore's result never used (property test over start/cancel/take)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from neardup_stream.worker.metrics import build_metrics
from neardup_stream.worker.runtime.replay import Skipped, Unreadable
from neardup_stream.worker.runtime.restore import Finished, Restored, Restores

Stop = Callable[[], bool]


class Reader:
    """What a restore is given as its reader; counts how many were made and closed."""

    made = 0

    def __init__(self) -> None:
        Reader.made += 1
        self.closed = False

    def close(self) -> None:
        self.closed = True


class Pauses:
    """Records what the restores paused and resumed."""

    def __init__(self) -> None:
        self.paused: set[int] = set()
        self.resumed: list[int] = []

    def pause(self, partition: int) -> None:
        self.paused.add(partition)

    def resume(self, partition: int) -> None:
        self.paused.discard(partition)
        self.resumed.append(partition)


def restores(stop: threading.Event | None = None, pauses: Pauses | None = None) -> Restores[str]:
    metrics = build_metrics(CollectorRegistry())
    return Restores("t", stop or threading.Event(), metrics, Reader, pauses)  # type: ignore[arg-type]


def take(r: Restores[str], n: int = 1) -> list[Finished[str]]:
    """The next `n` finished restores (they end on the restore thread)."""
    out: list[Finished[str]] = []
    while len(out) < n:
        out += r.finished()
    return out


def test_a_finished_restore_is_taken_once_and_its_partition_resumed() -> None:
    pauses = Pauses()
    r = restores(pauses=pauses)
    release = threading.Event()
    r.start(3, lambda reader, should_stop: Restored("state-3" if release.wait(30) else None))
    assert r.pending() == {3} and r.finished() == [] and pauses.paused == {3}
    release.set()
    assert take(r) == [Finished(3, "state-3", None, None)]
    assert r.pending() == set() and r.finished() == [] and pauses.resumed == [3]
    r.close()


def test_a_stopped_or_failed_restore_leaves_its_partition_paused() -> None:
    pauses = Pauses()
    r = restores(pauses=pauses)
    at = Unreadable("c", 1, 7, Skipped("corrupt", "bad bytes"))
    made = Reader.made

    def fails(reader: Reader, should_stop: Stop) -> Restored[str]:
        raise RuntimeError("broker gone")

    r.start(1, lambda reader, should_stop: Restored(None, at))
    r.start(2, fails)  # type: ignore[arg-type]
    done = {f.partition: f for f in take(r, 2)}
    assert done[1] == Finished(1, None, at, None)
    assert isinstance(done[2].error, RuntimeError) and done[2].state is None
    assert pauses.paused == {1, 2} and pauses.resumed == []
    r.start(2, lambda reader, should_stop: Restored("again"))
    assert take(r) == [Finished(2, "again", None, None)]
    assert Reader.made == made + 2  # a fresh reader after the failure
    r.close()


def test_a_cancelled_restore_is_told_to_stop_and_its_result_is_never_used() -> None:
    r = restores()
    started, saw_stop = threading.Event(), threading.Event()

    def restore(reader: Reader, should_stop: Stop) -> Restored[str]:
        started.set()
        while not should_stop():
            threading.Event().wait(0.01)
        saw_stop.set()
        return Restored("stale")

    r.start(1, restore)  # type: ignore[arg-type]
    assert started.wait(30)
    r.cancel(1)
    assert saw_stop.wait(30)
    # The partition comes back: a fresh restore, and only its result is taken.
    r.start(1, lambda reader, should_stop: Restored("fresh"))
    assert take(r) == [Finished(1, "fresh", None, None)]
    r.close()


def test_the_role_stop_flag_stops_every_restore_and_close_closes_the_reader() -> None:
    stop = threading.Event()
    r = restores(stop)
    seen, running = threading.Event(), threading.Event()
    readers: list[Reader] = []

    def restore(reader: Reader, should_stop: Stop) -> Restored[str]:
        readers.append(reader)
        running.set()
        while not should_stop():
            threading.Event().wait(0.01)
        seen.set()
        return Restored("partial")

    r.start(0, restore)  # type: ignore[arg-type]
    assert running.wait(30)  # (a restore not started yet never starts once stopped)
    stop.set()
    assert seen.wait(30)
    r.close()
    assert readers[0].closed


def test_the_restore_thread_is_a_daemon_so_a_stuck_restore_never_holds_up_the_exit() -> None:
    r = restores()
    release, started = threading.Event(), threading.Event()

    def stuck(reader: Reader, should_stop: Stop) -> Restored[str]:
        started.set()
        release.wait(30)  # e.g. a fetch the broker never answers
        return Restored("late")

    r.start(0, stuck)  # type: ignore[arg-type]
    assert started.wait(30)
    thread = next(t for t in threading.enumerate() if t.name == "t-restore")
    assert thread.daemon and thread.is_alive()
    release.set()
    r.close()
    assert not thread.is_alive()


Op = tuple[str, int]
ops = st.lists(
    st.tuples(st.sampled_from(["start", "cancel", "take"]), st.integers(0, 2)), max_size=25
)


@settings(max_examples=60, deadline=None)
@given(ops=ops)
def test_only_the_latest_uncancelled_restore_of_a_partition_is_ever_taken(ops: list[Op]) -> None:
    r = restores()
    tokens = itertools.count()
    live: dict[int, str] = {}  # partition -> the restore whose result may be taken
    taken: list[Finished[str]] = []

    def check(finished: list[Finished[str]]) -> None:
        for f in finished:
            assert live.get(f.partition) == f.state, (f, live)  # never a cancelled/replaced one
            del live[f.partition]
        taken.extend(finished)

    for op, p in ops:
        if op == "start":
            token = f"{p}:{next(tokens)}"
            # A restore told to stop returns a partial state: it must never be taken.
            r.start(
                p,
                lambda reader, should_stop, token=token: Restored(
                    "partial" if should_stop() else token
                ),
            )
            live[p] = token
        elif op == "cancel":
            r.cancel(p)
            live.pop(p, None)
        else:
            check(r.finished())
        assert r.pending() == set(live)
    while r.pending():
        check(r.finished())
    assert live == {}
    assert len({f.state for f in taken}) == len(taken)  # each result once
    r.close()
