"""A cluster stopped for longer than the broker keeps the offsets of an empty group resumes
where it was, exactly once (issue 50): the roles' positions are kept in the pipeline's own
compacted topic and committed back at start (`neardup_stream.worker.runtime.positions`).

Against a broker of its own whose group offsets expire one minute after the group is left
empty. Without the positions, the edge read every retained input again (each decided twice)
and the shard and gather roles lost their checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from tests.integration.cluster_faults import Cluster, decided_like_offline
from tests.integration.faults import wait_for
from tests.integration.harness import Topics, decisions
from tests.integration.test_scale_out import produce_to
from tests.integration.test_worker import stream

pytestmark = [pytest.mark.integration, pytest.mark.faults]
RESTORED = "restored from the pipeline's positions"


def committed(bootstrap: str, groups: list[str]) -> dict[str, int]:
    """How many partitions each group has an offset for."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return {g: len(admin.list_group_offsets({g: None}).get(g, {})) for g in groups}
    finally:
        admin.close()


def test_a_cluster_down_past_the_offset_retention_resumes_where_it_was(
    short_offsets_kafka: str, topics: Topics, tmp_path: Path
) -> None:
    bootstrap = short_offsets_kafka
    docs = stream(360, seed=91)
    before, after = docs[:200], docs[200:]
    cluster = Cluster(bootstrap, topics, tmp_path, size=2)
    group = "g-" + topics.input
    groups = [f"{group}-{role}" for role in ("edge", "shards", "gather")]
    try:
        cluster.start_all()
        produce_to(bootstrap, topics.input, [(0, d) for d in before])
        assert len(decisions(bootstrap, topics, len(before))) == len(before), cluster.logs()
        assert all(committed(bootstrap, groups).values()), committed(bootstrap, groups)
        cluster.stop_all()

        # Every group empty past the retention: the broker deletes their offsets.
        wait_for(
            "the broker to expire the roles' offsets",
            lambda: not any(committed(bootstrap, groups).values()),
            240,
            every=2,
        )
        cluster.log_dir = tmp_path / "after"
        cluster.log_dir.mkdir()
        cluster.start_all()
        produce_to(bootstrap, topics.input, [(0, d) for d in after])
        decided_like_offline(bootstrap, topics, docs)  # each once, none of `before` again
        said = cluster.logs()
        for g in groups:
            assert f"group {g} had no committed offsets" in said, g
        assert RESTORED in said
    finally:
        cluster.stop_all()
