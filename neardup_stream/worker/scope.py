"""What a worker of partition scope compares documents with, said where an operator looks.

A worker of `worker.scope=partition` keeps one index per input partition, so it compares a
document only with documents of the same partition: a near-duplicate that arrives on
another partition is not caught (docs/worker.md, "Scope"). `WithinPartitionWarning` watches the
worker's assignment and logs one WARNING when it first holds more than one partition, and
again each time an assignment grows past one partition after having held at most one, naming
the partitions and how to compare across them (topic scope, the default).
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def within_partition_message(topic: str, partitions: set[int]) -> str:
    """The warning for a worker of partition scope that owns `partitions` of `topic` (more than one)."""
    return (
        f"this worker consumes {len(partitions)} partitions of {topic!r} "
        f"({sorted(partitions)}) and compares documents within each partition only: a "
        "near-duplicate that arrives on another partition is not caught. To compare across "
        "partitions, drop --scope partition / NEARDUP_WORKER__SCOPE=partition (topic scope, "
        "the default), or key the input so that near-duplicates share a partition"
    )


class WithinPartitionWarning:
    """Logs the within-partition warning when an assignment grows past one partition.

    `observe` is called with every assignment the worker settles on (on the Kafka client's
    thread: it only logs). It warns when the assignment holds more than one partition and
    the previous one held at most one (initially: none), so a worker that keeps its
    partitions through rebalances says it once.
    """

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self._many = False

    def observe(self, owned: set[int]) -> bool:
        """Note the assignment `owned`; True when it logged the warning."""
        many = len(owned) > 1
        grew, self._many = many and not self._many, many
        if grew:
            log.warning("%s", within_partition_message(self.topic, owned))
        return grew
