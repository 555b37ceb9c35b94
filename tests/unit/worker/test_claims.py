"""`neardup_stream.worker.claim_records`: the first-claim rule of the claims topic (pure: records in, owners
and refusals out)."""

from __future__ import annotations

import logging

import pytest

from neardup_stream.worker.changelog import Pipeline
from neardup_stream.worker.claim_records import (
    GROUP_ID,
    Owned,
    conflicts,
    decode,
    encode,
    group_conflicts,
    owners,
    remapped,
    unclaimed_by,
)
from neardup_stream.worker.settings import Settings

A, B = Pipeline("docs-a", "g-a"), Pipeline("docs-b", "g-b")


def test_a_record_reads_back_as_the_claims_it_made() -> None:
    claims = decode(encode(A, "a0", {"t.votes": "id-1", "t.fingerprints": "id-2"}))
    assert {(c.topic, c.topic_id, c.pipeline, c.instance) for c in claims} == {
        ("t.votes", "id-1", A, "a0"),
        ("t.fingerprints", "id-2", A, "a0"),
    }


def test_the_first_claim_in_log_order_owns_a_topic_and_later_ones_are_refused() -> None:
    log = [encode(A, "a0", {"t.votes": "id-1"}), encode(B, "b0", {"t.votes": "id-1", "u": "id-9"})]
    first = owners(log)
    assert first[Owned("t.votes", "id-1")].pipeline == A
    assert first[Owned("u", "id-9")].pipeline == B
    lines = conflicts(first, B, {"t.votes": "id-1", "u": "id-9"})
    assert len(lines) == 1
    assert "topic(s) 't.votes' belong to another pipeline" in lines[0]
    assert A.describe() in lines[0] and B.describe() in lines[0] and "'a0'" in lines[0]
    assert conflicts(first, A, {"t.votes": "id-1"}) == []  # replicas of one pipeline agree


def test_topics_of_one_owner_are_named_in_one_line() -> None:
    first = owners([encode(A, "a0", {"t.votes": "1", "t.fingerprints": "2"})])
    lines = conflicts(first, B, {"t.votes": "1", "t.fingerprints": "2", "mine": "3"})
    assert len(lines) == 1
    assert "topic(s) 't.fingerprints', 't.votes' belong to another pipeline" in lines[0]


def test_a_topic_created_again_is_claimed_afresh() -> None:
    first = owners([encode(A, "a0", {"t.votes": "old-id"})])
    assert conflicts(first, B, {"t.votes": "new-id"}) == []
    assert conflicts(first, B, {"t.votes": "old-id"}) != []


def test_records_this_version_cannot_read_are_logged_and_ignored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="neardup_stream.worker.claim_records"):
        first = owners([b"{", None, b'{"format": 99}', encode(B, "b0", {"t": "i"})])
    assert first[Owned("t", "i")].pipeline == B
    ignored = [r.getMessage() for r in caplog.records]
    assert [m.split(" ignored")[0] for m in ignored] == [
        f"claims record at offset {n}" for n in (0, 1, 2)
    ]
    with pytest.raises(ValueError, match="pipeline or topics missing"):
        decode(b'{"format": 1}')


def test_a_changelog_claimed_with_another_input_mapping_is_refused_naming_each_difference() -> None:
    old = Settings().input_settings
    new = Settings(input={"text_fields": "title,text", "id_from_key": True}).input_settings
    first = owners([encode(A, "a0", {"a.changelog": "id-1"}, old)])
    assert first[Owned("a.changelog", "id-1")].mapping == old
    assert remapped(first, A, {"a.changelog": "id-1"}, old) == []
    (line,) = remapped(first, A, {"a.changelog": "id-1"}, new)
    assert "topic 'a.changelog' holds this pipeline's index built with other settings" in line
    assert 'input.text_fields: index ["text"], this worker ["title", "text"]' in line
    assert "input.id_from_key: index false, this worker true" in line
    assert "input.id_field" not in line and "'a0'" in line


def test_a_mapping_is_checked_only_against_this_pipelines_own_claims_that_name_one() -> None:
    mapping = Settings().input_settings
    other = Settings(input={"text_fields": "body"}).input_settings
    first = owners([encode(A, "a0", {"legacy": "1"}), encode(B, "b0", {"theirs": "2"}, other)])
    assert first[Owned("legacy", "1")].mapping is None  # claimed before mappings were named
    assert remapped(first, A, {"legacy": "1"}, mapping) == []
    assert remapped(first, A, {"theirs": "2"}, mapping) == []  # another pipeline's: conflicts()
    assert remapped(first, A, {"unclaimed": "3"}, mapping) == []
    with pytest.raises(ValueError, match="mapping is not a JSON object"):
        decode(b'{"format": 1, "pipeline": {}, "topics": {}, "mapping": [1]}')


def test_a_claim_written_before_mappings_were_named_takes_its_owners_first_mapping() -> None:
    mapping = Settings().input_settings
    other = Settings(input={"text_fields": "body"}).input_settings
    log = [
        encode(A, "a0", {"legacy": "1"}),
        encode(B, "b0", {"legacy": "1"}, other),  # another pipeline's mapping: not A's
        encode(A, "a1", {"legacy": "1"}, mapping),
        encode(A, "a2", {"legacy": "1"}, other),  # later: the first one named counts
    ]
    first = owners(log)
    assert first[Owned("legacy", "1")].pipeline == A
    assert first[Owned("legacy", "1")].instance == "a0"
    assert first[Owned("legacy", "1")].mapping == mapping
    assert remapped(first, A, {"legacy": "1"}, other) != []


def test_a_group_is_claimed_by_its_pipeline_in_one_mode() -> None:
    g = Pipeline("docs-a", "g")
    first = owners([encode(g, "w1", {"group g": GROUP_ID}, None, "single")])
    assert first[Owned("group g", GROUP_ID)].mode == "single"
    assert group_conflicts(first, g, "single") == []  # its own, in its mode
    (mixed,) = group_conflicts(first, g, "cluster")
    assert "is run in partition scope (--scope partition" in mixed
    assert "this worker runs in topic scope (the default" in mixed and "'w1'" in mixed
    assert "--handover-from as docs/operations/upgrading.md says" in mixed
    topic = owners([encode(g, "w1", {"group g": GROUP_ID}, None, "cluster")])
    (back,) = group_conflicts(topic, g, "single")
    assert "is run in topic scope" in back and "upgrading.md" not in back
    (other,) = group_conflicts(first, Pipeline("docs-b", "g"), "single")
    assert "consumer group 'g' belongs to another pipeline" in other
    assert "input topic 'docs-a'" in other and "input topic 'docs-b'" in other
    assert group_conflicts(first, Pipeline("docs-a", "h"), "cluster") == []  # unclaimed
    with pytest.raises(ValueError, match="unknown mode 'both'"):
        decode(encode(g, "w1", {"group g": GROUP_ID}, None, "both"))


def test_output_topics_of_another_pipeline_are_refused_unless_handed_over_to() -> None:
    from neardup_stream.worker.changelog import Pipeline
    from neardup_stream.worker.claim_records import Claim, Owned, output_conflicts

    g1, g2 = Pipeline("docs", "g1"), Pipeline("docs", "g2")
    other = Pipeline("news", "g3")
    first = {Owned("out.unique", "u1"): Claim("out.unique", "u1", g1, "a0")}
    ids = {"out.unique": "u1"}
    assert output_conflicts(first, g1, ids, successor=False) == []  # its own
    [same_input] = output_conflicts(first, g2, ids, successor=False)
    assert "'out.unique' are written by another pipeline" in same_input
    assert "decide every input a second time" in same_input
    assert "NEARDUP_CLUSTER__HANDOVER_FROM" in same_input
    assert output_conflicts(first, g2, ids, successor=True) == []  # the new generation
    [mixed] = output_conflicts(first, other, ids, successor=True)
    assert "their decisions would mix" in mixed and "--unique-topic" in mixed
    # Another incarnation of the topic (deleted and made again) is nobody's yet.
    assert output_conflicts(first, other, {"out.unique": "u2"}, successor=False) == []


def test_settings_an_older_claim_does_not_name_are_taken_from_the_next_one_then_checked() -> None:
    """A changelog claimed with the input mapping alone (before `dedup.index_duplicates` was
    named) takes the next worker's value; a restart with the other value is then refused."""
    older = Settings().input_settings
    now = Settings().index_settings
    changed = Settings(dedup={"index_duplicates": False}).index_settings
    first = owners([encode(A, "a0", {"a.changelog": "id-1"}, older)])
    assert unclaimed_by(first[Owned("a.changelog", "id-1")], A, now)  # claimed again
    assert not unclaimed_by(first[Owned("a.changelog", "id-1")], A, older)
    first = owners(
        [
            encode(A, "a0", {"a.changelog": "id-1"}, older),
            encode(A, "a1", {"a.changelog": "id-1"}, now),
        ]
    )
    assert first[Owned("a.changelog", "id-1")].mapping == now
    assert remapped(first, A, {"a.changelog": "id-1"}, now) == []
    (line,) = remapped(first, A, {"a.changelog": "id-1"}, changed)
    assert "dedup.index_duplicates: index true, this worker false" in line
    # A value named first stays: a later claim naming another one changes nothing.
    again = owners(
        [
            encode(A, "a0", {"a.changelog": "id-1"}, now),
            encode(A, "a1", {"a.changelog": "id-1"}, changed),
        ]
    )
    assert again[Owned("a.changelog", "id-1")].mapping == now
