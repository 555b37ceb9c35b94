"""Whether every partition of the topics a role's group reads has a reader, and getting one.

A consumer group is trusted to assign every partition of its topics, but one case is not:
a static member (`group.instance.id`) that rejoins a Stable group gets its previous
assignment without a rebalance, and kafka-python (JoinGroup v7) then takes itself for a
follower, which never compares the topics' partition counts with the assignment. Partitions
added while the members were down, or while every member had rejoined this way, are
assigned to nobody, for good, while the group says Stable.

So each role checks it: every `CHECK_EVERY_S` it asks the group's coordinator for every
member's assignment (`describe_groups`) and compares their union with the partitions its
consumer's metadata knows (`unread`, pure). Partitions seen unread in two Stable
descriptions in a row are exported (`neardup_unread_partitions{role}`), logged, make the
role unready, and make its consumer rejoin: its JoinGroup carries the sticky assignor's
user data, changed since its last join, so the coordinator starts a rebalance and the
leader assigns every partition. A description that fails or finds the group rebalancing
changes nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from kafka import KafkaAdminClient, KafkaConsumer
from kafka.errors import KafkaError

from neardup_stream.worker import clients
from neardup_stream.worker.metrics import Metrics
from neardup_stream.worker.settings import Settings

log = logging.getLogger(__name__)
CHECK_EVERY_S = 10.0
TIMEOUT_MS = 5_000  # a check waits this long at most for the broker (the role loop waits too)


class GroupView(NamedTuple):
    """A consumer group as its coordinator describes it."""

    state: str  # "Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead"
    assigned: dict[str, set[int]]  # topic -> the partitions some member is assigned


def view_of(description: Mapping[str, Any]) -> GroupView:
    """A `GroupView` from one group of kafka-python's `describe_groups` answer."""
    assigned: dict[str, set[int]] = {}
    for member in description.get("members") or []:
        assignment = member.get("member_assignment") or {}
        if not isinstance(assignment, Mapping):  # not decodable: nobody is known to read
            continue
        for entry in assignment.get("assigned_partitions") or []:
            assigned.setdefault(entry["topic"], set()).update(entry["partitions"])
    return GroupView(str(description.get("group_state", "")), assigned)


def unread(partitions: Mapping[str, int], view: GroupView) -> dict[str, list[int]]:
    """Per topic, the partitions (of `partitions[topic]`) no member of a Stable group is
    assigned; nothing for a group in any other state (its assignment is being made)."""
    if view.state != "Stable":
        return {}
    found: dict[str, list[int]] = {}
    for topic, count in sorted(partitions.items()):
        missing = sorted(set(range(count)) - view.assigned.get(topic, set()))
        if missing:
            found[topic] = missing
    return found


def spans(found: Mapping[str, Iterable[int]]) -> str:
    """`topic [1, 2]; other [0]` (a log line)."""
    return "; ".join(f"{topic} {sorted(parts)}" for topic, parts in sorted(found.items()))


class Coverage:
    """One role consumer's check of its group's assignment (see the module docstring)."""

    def __init__(
        self,
        consumer: KafkaConsumer,
        role: Settings,
        name: str,
        metrics: Metrics,
        every_s: float = CHECK_EVERY_S,
    ) -> None:
        self.consumer, self.role, self.name, self.metrics = consumer, role, name, metrics
        self.every_s = every_s
        self._admin: KafkaAdminClient | None = None
        self._next = time.monotonic() + every_s
        self._seen: dict[str, list[int]] = {}  # unread at the last Stable description
        self._unread: dict[str, list[int]] = {}  # unread twice in a row: said and exported
        metrics.unread_partitions.labels(name).set(0)

    def covered(self) -> bool:
        """False while partitions of its topics have stayed without a reader."""
        return not self._unread

    def check(self) -> None:
        """Describe the group if it is time to (between polls, on the role's thread)."""
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self.every_s
        topics = self.consumer.subscription() or set()
        counts = {t: len(self.consumer.partitions_for_topic(t) or ()) for t in topics}
        try:
            view = self._describe()
        except KafkaError as exc:  # the broker away: the next check asks again
            log.debug("%s: group description failed: %s", self.name, exc)
            return
        if view is None or view.state != "Stable":
            return
        found = unread(counts, view)
        if not found:
            if self._unread:
                log.info("%s: every partition of its topics has a reader again", self.name)
            self._seen, self._unread = {}, {}
            self.metrics.unread_partitions.labels(self.name).set(0)
            return
        persisted = {t: p for t, p in found.items() if set(p) & set(self._seen.get(t, ()))}
        self._seen = found
        if persisted:  # seen once only, it may be a rebalance about to start: look again
            self._unread = persisted
            self.metrics.unread_partitions.labels(self.name).set(
                sum(len(p) for p in persisted.values())
            )
            self._rejoin(persisted)

    def _rejoin(self, persisted: dict[str, list[int]]) -> None:
        log.warning(
            "%s: partitions no member of group %s reads: %s (the group is Stable without "
            "them: partitions added while its static members were away); rejoining, so "
            "that the group assigns them",
            self.name,
            self.role.worker.group_id,
            spans(persisted),
        )
        self._seen = {}  # the rebalance takes a while: judged afresh twice after it
        coordinator = getattr(self.consumer, "_coordinator", None)
        if coordinator is not None:
            coordinator.request_rejoin()

    def _describe(self) -> GroupView | None:
        if self._admin is None:
            config = {**clients.common_config(self.role.kafka), "request_timeout_ms": TIMEOUT_MS}
            self._admin = KafkaAdminClient(**config, bootstrap_timeout_ms=TIMEOUT_MS)
        group = self.role.worker.group_id
        described = self._admin.describe_groups([group]).get(group)
        if described is None or described.get("error"):
            return None
        return view_of(described)

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None
