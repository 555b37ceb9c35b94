"""`runtime.positions`: the records that keep each committed offset, the last one per group
and partition, and which kept positions are committed back at start."""

from __future__ import annotations

import json
import uuid

from kafka import OffsetAndMetadata, TopicPartition
from kafka.errors import NoError

from neardup_stream.worker.runtime import positions
from neardup_stream.worker.runtime.positions import Position

IN0, IN1, SH0 = TopicPartition("in", 0), TopicPartition("in", 1), TopicPartition("shards", 0)
OLD, NEW = str(uuid.UUID(int=1)), str(uuid.UUID(int=2))


def at(offset: int, metadata: str = "") -> OffsetAndMetadata:
    return OffsetAndMetadata(offset, metadata, -1)


def test_a_record_round_trips_and_is_keyed_by_group_and_partition() -> None:
    kept = Position("g-edge", IN1, at(42, f"topic-id={OLD}"))
    m = positions.message("g.positions", kept)
    assert (m.topic, m.partition) == ("g.positions", 0)
    assert json.loads(m.key or b"") == ["g-edge", "in", 1]
    assert positions.decode(m.value) == kept


def test_what_this_version_cannot_read_is_skipped() -> None:
    for value in (None, b"", b"{", b"[]", b'{"format": 2}', b'{"format": 1, "topic": "in"}'):
        assert positions.decode(value) is None


def test_the_last_position_of_each_partition_wins_in_log_order() -> None:
    records = positions.messages("p", [("g-edge", {IN0: at(5), IN1: at(3)})])
    records += positions.messages("p", [("g-edge", {IN0: at(9)}), ("g-shards", {SH0: at(0, "c")})])
    assert positions.latest([m.value for m in records] + [None, b"junk"]) == {
        "g-edge": {IN0: at(9), IN1: at(3)},
        "g-shards": {SH0: at(0, "c")},
    }


def test_only_lost_positions_of_partitions_that_exist_in_this_incarnation_come_back() -> None:
    kept = {IN0: at(9, f"topic-id={OLD}"), IN1: at(3, f"topic-id={OLD}"), SH0: at(0, "c")}
    committed = {IN1: at(3)}  # still there: left alone
    assert positions.missing(kept, committed, {"in": 2, "shards": 1}, {"in": OLD}) == {
        IN0: at(9, f"topic-id={OLD}"),
        SH0: at(0, "c"),
    }
    # The input was deleted and created again: its old positions start over, not come back.
    assert positions.missing(kept, {}, {"in": 2, "shards": 1}, {"in": NEW}) == {SH0: at(0, "c")}
    # A partition gone (fewer partitions now), a topic gone: nothing to commit back.
    assert positions.missing(kept, {}, {"in": 1}, {"in": None}) == {IN0: at(9, f"topic-id={OLD}")}


class Admin:
    """Group offsets and topics as a broker holds them; what was committed back."""

    def __init__(self, committed: dict[str, dict[TopicPartition, OffsetAndMetadata]]) -> None:
        self.committed, self.altered = committed, {}

    def list_group_offsets(self, specs: dict[str, None]) -> dict[str, dict[TopicPartition, object]]:
        return {g: dict(self.committed.get(g, {})) for g in specs}

    def describe_topics(self, names: list[str]) -> list[dict[str, object]]:
        sizes = {"in": 2, "shards": 1}
        return [
            {"name": n, "error_code": 0, "topic_id": OLD, "partitions": [{}] * sizes[n]}
            for n in names
        ]

    def alter_group_offsets(self, group: str, offsets: dict[TopicPartition, object]) -> dict:
        self.altered[group] = offsets
        return {tp: NoError for tp in offsets}


def test_groups_that_lost_their_offsets_get_them_back_and_the_others_are_left() -> None:
    values = [
        m.value
        for m in positions.messages(
            "p", [("g-edge", {IN0: at(9, f"topic-id={OLD}")}), ("g-shards", {SH0: at(0, "c")})]
        )
    ]
    admin = Admin({"g-shards": {SH0: at(0, "c")}})  # only the edge's expired
    restored = positions.restore_expired(admin, values, ["g-edge", "g-shards", "g-gather"])  # type: ignore[arg-type]
    assert restored == {"g-edge": [IN0]}
    assert admin.altered == {"g-edge": {IN0: at(9, f"topic-id={OLD}")}}
