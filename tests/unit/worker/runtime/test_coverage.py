"""Coverage: partitions no member of a Stable group reads are found, said, and rejoined for."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from neardup_stream.worker.metrics import build_metrics
from neardup_stream.worker.runtime.coverage import Coverage, GroupView, unread, view_of
from neardup_stream.worker.settings import Settings


def member(topic: str, partitions: list[int]) -> dict[str, Any]:
    assignment = {"assigned_partitions": [{"topic": topic, "partitions": partitions}]}
    return {"member_id": "m", "member_assignment": assignment}


def test_partitions_no_member_is_assigned_are_unread_in_a_stable_group_only() -> None:
    described = {"group_state": "Stable", "members": [member("in", [0]), member("in", [2])]}
    view = view_of(described)
    assert view == GroupView("Stable", {"in": {0, 2}})
    assert unread({"in": 6}, view) == {"in": [1, 3, 4, 5]}
    assert unread({"in": 3, "other": 1}, view) == {"in": [1], "other": [0]}
    assert unread({"in": 3}, view._replace(state="PreparingRebalance")) == {}
    everyone = view_of({"group_state": "Stable", "members": [member("in", [0, 1, 2])]})
    assert unread({"in": 3}, everyone) == {}
    undecodable = {"group_state": "Stable", "members": [{"member_assignment": b"\x00"}]}
    assert view_of(undecodable).assigned == {}


class Coordinator:
    def __init__(self) -> None:
        self.rejoins = 0

    def request_rejoin(self) -> None:
        self.rejoins += 1


class Consumer:
    """What `Coverage` reads of a kafka-python consumer: its topics and their partitions."""

    def __init__(self, partitions: int) -> None:
        self.partitions = partitions
        self._coordinator = Coordinator()

    def subscription(self) -> set[str]:
        return {"in"}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(self.partitions))


class Described(Coverage):
    """A `Coverage` whose group descriptions are given, in turn."""

    def __init__(self, consumer: Consumer, views: list[GroupView]) -> None:
        self.registry = CollectorRegistry()
        settings = Settings(worker={"group_id": "g"})
        super().__init__(consumer, settings, "batch", build_metrics(self.registry), every_s=0)  # type: ignore[arg-type]
        self.views = views

    def _describe(self) -> GroupView | None:
        return self.views.pop(0)

    def unread_gauge(self) -> float | None:
        return self.registry.get_sample_value("neardup_unread_partitions", {"role": "batch"})


def test_partitions_unread_twice_in_a_row_make_it_unready_and_rejoin_until_read() -> None:
    consumer = Consumer(3)
    only_0 = GroupView("Stable", {"in": {0}})
    views = [only_0, only_0, GroupView("PreparingRebalance", {}), only_0, only_0]
    coverage = Described(consumer, [*views, GroupView("Stable", {"in": {0, 1, 2}})])
    coverage.check()  # once: perhaps a rebalance about to start
    assert coverage.covered() and consumer._coordinator.rejoins == 0
    coverage.check()  # twice in a row: said, exported, rejoined
    assert not coverage.covered() and consumer._coordinator.rejoins == 1
    assert coverage.unread_gauge() == 2
    coverage.check()  # rebalancing: nothing changes
    coverage.check()  # seen again once since the rejoin: still unready, no second rejoin yet
    assert not coverage.covered() and consumer._coordinator.rejoins == 1
    coverage.check()
    assert consumer._coordinator.rejoins == 2
    coverage.check()  # every partition read
    assert coverage.covered() and coverage.unread_gauge() == 0


def test_a_description_that_fails_changes_nothing() -> None:
    consumer = Consumer(2)
    coverage = Described(consumer, [None, GroupView("Stable", {"in": {0, 1}})])  # type: ignore[list-item]
    coverage.check()
    coverage.check()
    assert coverage.covered() and consumer._coordinator.rejoins == 0
