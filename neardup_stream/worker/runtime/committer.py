"""The thread a publisher's commits run on: one per producer, not one per transaction.

A commit (`Publisher._finish`: add the offsets, wait for what must be delivered first, end
the transaction) runs off the loop thread, so that an in-flight batch commits while the next
one is stepped and so that a commit that never returns can be abandoned. Until 2026-11-28
each commit started a thread of its own: a thread's start costs its creation and a
hand-over of the GIL to it that the starting thread waits for, every transaction, on every
role (with three roles and their clients' threads in one process, that wait was up to a
switch interval). A `Committer` runs commits one after the other on one thread, started on
the first.

A commit that cannot complete (kafka-python's `send_offsets_to_transaction` and
`commit_transaction` have no timeout) keeps its thread: the publisher abandons it, replaces
the producer and takes a new `Committer` (`stop` lets the old thread end once its commit
returns, if it ever does), as it abandoned that commit's thread before.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

Job = Callable[[], Any]


class Committer:
    """Runs submitted commits in order on one daemon thread named `name`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, job: Job) -> None:
        """Run `job` after the ones submitted before it (it handles its own errors)."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name=self.name)
                self._thread.start()
        self._jobs.put(job)

    def stop(self) -> None:
        """The thread ends after the jobs already submitted (at once if it has none)."""
        self._jobs.put(None)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            job()
