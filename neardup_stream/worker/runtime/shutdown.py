"""A stop that ends in time: every step of a shutdown under one deadline.

A replica stopping on SIGTERM waits for its roles to finish their current step (a commit in
flight, a poll) and then closes their clients and restores. Any of these can wait on the
broker for a long time (a commit up to the request timeout, a producer re-created after a
fenced transaction up to `max.block.ms`, a restore reading a large changelog), and an
orchestrator kills a process that outlives its grace period. So each step runs against one
`Deadline` (`worker.shutdown_timeout_s`): `within` runs a step on a daemon thread and stops
waiting when its share of the deadline is over, naming the step in the log. A step left
running cannot lose anything: what it had not committed is aborted by the broker (its
transaction times out or is fenced by the next start) and replayed from the committed state.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)
MIN_STEP_S = 1.0  # every close step gets at least this, even once the deadline has passed
SIGNAL_CHECK_S = 0.2  # how often a main thread waiting for its stop looks at pending signals


class Stop(threading.Event):
    """A worker's stop, which a signal handler may request (`request`).

    `Event.set` takes the event's lock. A handler runs on the main thread between two of its
    bytecodes, and the main thread spends its time in `wait()` on this very event
    (`wait_for_stop`), which holds that lock around its sleep: a handler that set the event
    there would wait for itself, forever, and the process would ignore every later SIGTERM.
    `request()` takes no lock: it marks the stop, and the next `is_set()` or `wait()` on any
    thread (`pause` looks every `SIGNAL_CHECK_S`) sets the event, outside any handler."""

    def __init__(self) -> None:
        super().__init__()
        self._requested = False

    def request(self) -> None:
        """Ask for the stop: safe in a signal handler (no lock, a plain assignment)."""
        self._requested = True

    def is_set(self) -> bool:
        self._take_request()
        return super().is_set()

    def wait(self, timeout: float | None = None) -> bool:
        self._take_request()
        return super().wait(timeout)

    def _take_request(self) -> None:
        """A requested stop becomes the event, here, outside any handler."""
        if self._requested and not super().is_set():
            self.set()


def wait_for_stop(stop: threading.Event) -> None:
    """Block the main thread until `stop` is set, running signal handlers meanwhile.

    A signal the kernel delivers to another thread (any thread may receive a process's
    SIGTERM, and Kafka's clients run several) only marks the handler pending: Python runs it
    in the main thread at its next bytecode. A main thread in an endless `stop.wait()`
    never gets there, so the SIGTERM that should set `stop` would be lost. Waking up every
    `SIGNAL_CHECK_S` runs it."""
    pause(stop, math.inf)


def pause(stop: threading.Event, seconds: float) -> bool:
    """Wait `seconds` or until `stop` is set (whether it is), running signal handlers
    meanwhile (`wait_for_stop`): a back-off of the main thread must not hold back SIGTERM."""
    until = time.monotonic() + seconds
    while not stop.is_set():
        left = until - time.monotonic()
        if left <= 0:
            break
        stop.wait(min(left, SIGNAL_CHECK_S))
    return stop.is_set()


@dataclass
class Deadline:
    """`seconds` from its creation."""

    seconds: float
    started: float = field(default_factory=time.monotonic)

    def left(self, floor: float = 0.0) -> float:
        return max(floor, self.started + self.seconds - time.monotonic())

    def elapsed(self) -> float:
        return time.monotonic() - self.started


def join(threads: dict[str, threading.Thread], deadline: Deadline) -> list[str]:
    """Wait for `threads` (name -> thread) until `deadline`; the names still running."""
    for thread in threads.values():
        thread.join(deadline.left())
    late = [name for name, t in threads.items() if t.is_alive()]
    if late:
        log.warning(
            "stopping: %s still busy after %.0f s (worker.shutdown_timeout_s); not waiting for "
            "them (what they did not commit is replayed on the next start)",
            ", ".join(late),
            deadline.seconds,
        )
    return late


def within(name: str, step: Callable[[], object], deadline: Deadline) -> bool:
    """Run `step` on a daemon thread; wait until it ends or its time is up. True: it ended
    (an exception it raised is logged, the shutdown goes on)."""

    def run() -> None:
        try:
            step()
        except Exception:
            log.exception("stopping: %s failed", name)

    thread = threading.Thread(target=run, name=f"stop-{name}", daemon=True)
    thread.start()
    thread.join(deadline.left(MIN_STEP_S))
    if thread.is_alive():
        log.warning("stopping: %s did not finish in time; not waiting for it", name)
        return False
    return True
