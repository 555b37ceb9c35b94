"""Inputs that can never be published or decided as they are, remembered for the replay.

When the broker rejects an output for a deterministic reason (too large, invalid record), or
the engine fails on an input that is alone in its batch, the batch is aborted and replayed;
on the replay `decide` turns each remembered input into a dead letter instead. If even that
dead letter is rejected, the next one carries no payload; if a bare dead letter is rejected
too, nothing the worker can do will publish it: `FatalError`, with the topic to fix.
"""

from __future__ import annotations

import logging

from neardup_stream.worker.records import Rejection, Source

log = logging.getLogger(__name__)


class FatalError(RuntimeError):
    """A condition retrying cannot fix."""


class Rejections(dict[Source, Rejection]):
    """Source -> why it becomes a dead letter on the replay."""

    def __init__(self, dlq_topic: str) -> None:
        super().__init__()
        self.dlq_topic = dlq_topic

    def unpublishable(self, source: Source, why: str) -> None:
        """The broker rejected an output of `source` (its decision or its dead letter)."""
        earlier = self.get(source)
        if earlier is not None and not earlier.keep_payload:
            raise FatalError(
                f"even a dead letter without payload for {source} was rejected ({why}); "
                f"check the dead-letter topic {self.dlq_topic!r} (max.message.bytes, ACLs)"
            )
        self[source] = Rejection("unpublishable", why, keep_payload=earlier is None)
        log.warning("output of %s rejected; it goes to the DLQ: %s", source, why)

    def undecidable(self, source: Source, error: BaseException) -> None:
        """The engine failed on `source` alone: a bug, isolated to one dead letter."""
        why = f"the engine failed on this input: {type(error).__name__}: {error}"[:1000]
        self[source] = Rejection("internal_error", why)
        log.error("engine failed on %s; it goes to the DLQ", source, exc_info=error)
