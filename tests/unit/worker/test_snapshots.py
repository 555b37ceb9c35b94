"""When a worker trusts a local snapshot, and failpoint specs; no broker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.models import Document
from neardup_stream.snapshot import read_meta
from neardup_stream.worker import failpoints, snapshots
from neardup_stream.worker.changelog import Pipeline

OURS = Pipeline("in", "g")


def saved(tmp_path: Path, offset: int = 10) -> DedupConfig:
    config = DedupConfig()
    dedup = Deduplicator(config)
    dedup.check(Document(id="a", text="some text that is long enough to shingle well"))
    snapshots.save(dedup, tmp_path, "cl", 3, offset, OURS)
    return config


def test_a_matching_snapshot_is_used_with_its_offset(tmp_path: Path) -> None:
    config = saved(tmp_path)
    found = snapshots.load(tmp_path, "cl", 3, config, 0, 12, OURS)
    assert isinstance(found, snapshots.Snapshot)
    assert found.offset == 10 and len(found.dedup) == 1


@pytest.mark.parametrize(
    ("changelog", "partition", "config", "start", "end", "reason"),
    [
        ("cl", 4, DedupConfig(), 0, 12, "missing"),
        ("other", 3, DedupConfig(), 0, 12, "missing"),
        ("cl", 3, DedupConfig(threshold=0.9), 0, 12, "other_config"),
        ("cl", 3, DedupConfig(max_docs=5), 0, 12, "other_config"),
        ("cl", 3, DedupConfig(), 11, 20, "out_of_range"),  # compaction/retention moved past it
        ("cl", 3, DedupConfig(), 0, 9, "out_of_range"),  # the changelog was recreated
    ],
)
def test_a_snapshot_that_does_not_match_is_rejected(
    tmp_path: Path,
    changelog: str,
    partition: int,
    config: DedupConfig,
    start: int,
    end: int,
    reason: str,
) -> None:
    saved(tmp_path)
    found = snapshots.load(tmp_path, changelog, partition, config, start, end, OURS)
    assert isinstance(found, snapshots.Rejected) and found.reason == reason


def test_a_snapshot_of_an_earlier_fingerprint_format_is_other_config_not_corrupt(
    tmp_path: Path,
) -> None:
    config = saved(tmp_path)
    meta_file = snapshots.partition_dir(tmp_path, "cl", 3) / "meta.json"
    meta = json.loads(meta_file.read_text())
    meta["fingerprint_format"] = 4  # made before odd sketches replaced samples
    meta_file.write_text(json.dumps(meta))
    found = snapshots.load(tmp_path, "cl", 3, config, 0, 12, OURS)
    assert isinstance(found, snapshots.Rejected) and found.reason == "other_config"
    assert "fingerprints of format 4, this release makes format 5" in found.detail


def test_a_snapshot_moved_to_another_partition_is_rejected(tmp_path: Path) -> None:
    config = saved(tmp_path)
    (tmp_path / "cl" / "p3").rename(tmp_path / "cl" / "p4")
    found = snapshots.load(tmp_path, "cl", 4, config, 0, 12, OURS)
    assert isinstance(found, snapshots.Rejected) and found.reason == "other_topic"


@pytest.mark.parametrize("other", [Pipeline("in", "typo"), Pipeline("documnets", "g")])
def test_a_snapshot_of_another_pipeline_is_rejected(tmp_path: Path, other: Pipeline) -> None:
    config = saved(tmp_path)
    found = snapshots.load(tmp_path, "cl", 3, config, 0, 12, other)
    assert isinstance(found, snapshots.Rejected) and found.reason == "other_pipeline"
    assert "'typo'" in found.detail or "'documnets'" in found.detail


def test_a_snapshot_of_an_earlier_version_naming_no_pipeline_is_rejected(tmp_path: Path) -> None:
    config = saved(tmp_path)
    meta_path = tmp_path / "cl" / "p3" / "meta.json"
    meta = read_meta(meta_path.parent)
    del meta["pipeline"]
    meta_path.write_text(json.dumps(meta))
    found = snapshots.load(tmp_path, "cl", 3, config, 0, 12, OURS)
    assert isinstance(found, snapshots.Rejected) and found.reason == "other_pipeline"


@pytest.mark.parametrize("damage", ["state.npz", "meta.json"])
def test_a_corrupt_snapshot_is_rejected_not_raised(tmp_path: Path, damage: str) -> None:
    config = saved(tmp_path)
    target = tmp_path / "cl" / "p3" / damage
    target.write_bytes(target.read_bytes()[: len(target.read_bytes()) // 2])
    found = snapshots.load(tmp_path, "cl", 3, config, 0, 12, OURS)
    assert isinstance(found, snapshots.Rejected) and found.reason == "corrupt"


def test_failpoint_specs_are_validated() -> None:
    points = failpoints.parse("batch_produced=kill@3, restore_batch=term")
    assert points["batch_produced"].at == 3 and points["restore_batch"].action == "term"
    for bad in ("nowhere=kill", "batch_produced=explode", "batch_produced=kill@0"):
        with pytest.raises(ValueError):
            failpoints.parse(bad)


def test_a_snapshot_of_a_changelog_deleted_and_created_again_is_rejected(tmp_path: Path) -> None:
    # The new topic's offsets start at 0 again: the offset range alone cannot tell them apart.
    config = DedupConfig()
    dedup = Deduplicator(config)
    dedup.check(Document(id="a", text="some text that is long enough to shingle well"))
    snapshots.save(dedup, tmp_path, "cl", 3, 2, OURS, "id-old")
    found = snapshots.load(tmp_path, "cl", 3, config, 0, 3, OURS, "id-new")
    assert isinstance(found, snapshots.Rejected) and found.reason == "other_topic"
    assert "topic id id-old, and that topic now has id id-new" in found.detail
    used = snapshots.load(tmp_path, "cl", 3, config, 0, 3, OURS, "id-old")
    assert isinstance(used, snapshots.Snapshot) and used.offset == 2
    unknown = snapshots.load(tmp_path, "cl", 3, config, 0, 3, OURS, None)  # broker gives none
    assert isinstance(unknown, snapshots.Snapshot)


def test_a_snapshot_naming_no_topic_id_is_rejected_where_the_changelog_has_one(
    tmp_path: Path,
) -> None:
    config = saved(tmp_path)  # no topic id: as an earlier release wrote it
    found = snapshots.load(tmp_path, "cl", 3, config, 0, 12, OURS, "id-now")
    assert isinstance(found, snapshots.Rejected) and found.reason == "other_topic"
