"""The changelog's packed message format, and the pipeline each message names."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup_stream.worker import changelog
from neardup_stream.worker.changelog import Pipeline
from neardup_stream.worker.settings import Settings, TopicSettings, WorkerSettings

OURS = Pipeline("documents", "neardup")


@given(st.lists(st.binary(min_size=0, max_size=300), max_size=60), st.integers(64, 4096))
def test_packs_round_trip_in_order_and_respect_the_size(records: list[bytes], limit: int) -> None:
    messages = list(changelog.pack(records, OURS, max_bytes=limit))
    assert [r for m in messages for r in changelog.unpack(m).records] == records
    for m in messages:
        assert changelog.unpack(m).pipeline == OURS
        assert len(m) <= limit or len(changelog.unpack(m).records) == 1  # oversized alone


@given(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=40))
def test_every_pipeline_name_round_trips(input_topic: str, group: str) -> None:
    (message,) = changelog.pack([b"r"], Pipeline(input_topic, group))
    assert changelog.unpack(message) == changelog.Pack(Pipeline(input_topic, group), [b"r"])


def test_the_pipeline_id_is_mmh3_of_both_names_and_tells_pipelines_apart() -> None:
    assert OURS.id == 0xACAC9FB5  # mmh3, the same in every process (never Python's hash())
    others = {Pipeline("documnets", "typo").id, Pipeline("documents", "typo").id}
    assert OURS.id not in others and len(others) == 2
    assert Pipeline("a\nb", "c").id != Pipeline("a", "b\nc").id  # names are length-framed


def test_keys_name_the_pipeline_so_compaction_never_mixes_two() -> None:
    ours = changelog.key(OURS, 3, 120, 0)
    theirs = changelog.key(Pipeline("documnets", "typo"), 3, 120, 0)
    assert ours != theirs
    assert ours == f"{OURS.id:08x}:3:120:0".encode()


def test_records_of_earlier_versions_name_no_pipeline() -> None:
    assert changelog.unpack(b"ND\x01rest") == changelog.Pack(None, [b"ND\x01rest"])
    legacy = b"NP\x01" + struct.pack("<I", 2) + struct.pack("<I", 1) + b"a" + struct.pack("<I", 2)
    assert changelog.unpack(legacy + b"bc") == changelog.Pack(None, [b"a", b"bc"])


def test_a_pack_whose_id_does_not_match_its_names_is_malformed() -> None:
    (message,) = changelog.pack([b"abc"], OURS)
    forged = message[:3] + struct.pack("<I", OURS.id ^ 1) + message[7:]
    with pytest.raises(ValueError, match="pipeline id"):
        changelog.unpack(forged)


@pytest.mark.parametrize(
    "damage",
    [
        lambda m: m[:-1],  # truncated inside a record
        lambda m: m[:9],  # truncated inside the pipeline names
        lambda m: m[:-9],  # truncated inside a length
        lambda m: m + b"x",  # trailing bytes
        lambda m: b"XX" + m[2:],  # wrong magic
        lambda m: m[:2] + b"\x09" + m[3:],  # unknown version
        lambda m: b"",
    ],
)
def test_malformed_packs_raise_value_error(damage: object) -> None:
    (message,) = changelog.pack([b"abc", b"defg"], OURS)
    with pytest.raises(ValueError):
        changelog.unpack(damage(message))  # type: ignore[operator]


def test_the_default_changelog_is_named_after_the_group() -> None:
    assert changelog.topic_of(Settings()) == "neardup.changelog"  # as earlier versions
    typo = Settings(worker=WorkerSettings(group_id="typo"))
    assert changelog.topic_of(typo) == "typo.changelog"
    named = Settings(worker=WorkerSettings(group_id="typo"), topics=TopicSettings(changelog="x"))
    assert changelog.topic_of(named) == "x"
    assert changelog.pipeline_of(typo) == Pipeline("documents", "typo")


def test_a_group_id_that_makes_no_topic_name_asks_for_an_explicit_changelog() -> None:
    bad = Settings(worker=WorkerSettings(group_id="my group/1"))
    with pytest.raises(ValueError, match="NEARDUP_TOPICS__CHANGELOG"):
        changelog.topic_of(bad)


def test_flags_changing_the_group_rederive_the_default_changelog() -> None:
    from neardup_stream.worker.main import build_parser, settings_from_args

    args = build_parser().parse_args(["--group-id", "typo"])
    assert changelog.topic_of(settings_from_args(args, Settings())) == "typo.changelog"
    args = build_parser().parse_args(["--group-id", "typo", "--changelog-topic", "shared"])
    assert changelog.topic_of(settings_from_args(args, Settings())) == "shared"


def test_a_changelog_named_like_an_input_or_output_topic_is_refused() -> None:
    with pytest.raises(ValueError, match="also the input topic"):
        TopicSettings(changelog="documents")
    with pytest.raises(ValueError, match="also the dlq topic"):
        TopicSettings(changelog="documents.dlq")
