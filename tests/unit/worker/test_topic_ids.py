"""`neardup_stream.worker.topic_ids`: the offset commit metadata naming a topic id, and which incarnation of
a topic the positions read refer to."""

from __future__ import annotations

import uuid

from neardup_stream.worker import topic_ids
from neardup_stream.worker.topic_ids import Incarnations, Recreated

A, B = str(uuid.UUID(int=10)), str(uuid.UUID(int=11))


def test_metadata_round_trips_and_other_formats_name_no_id() -> None:
    assert topic_ids.from_metadata(topic_ids.metadata(A)) == A
    assert topic_ids.metadata(None) == ""
    for text in (None, "", "checkpoint:3", "topic-id=not-a-uuid"):
        assert topic_ids.from_metadata(text) is None


def test_the_id_committed_wins_over_the_first_one_seen_and_a_change_is_said_once() -> None:
    seen = Incarnations()
    seen.committed("in", topic_ids.metadata(A))
    seen.committed("in", topic_ids.metadata(B))  # positions already refer to A
    assert seen.check("in", B) == Recreated("in", A, B)
    assert seen.check("in", B) is None
    assert seen.metadata("in") == topic_ids.metadata(B)


def test_an_unknown_id_changes_nothing() -> None:
    seen = Incarnations()
    assert seen.check("in", None) is None and seen.metadata("in") == ""
    assert seen.check("in", A) is None and seen.metadata("in") == topic_ids.metadata(A)
