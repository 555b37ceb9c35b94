"""An input topic deleted and created again (its topic id changes, its offsets start over) is
read from its log start: the positions of the old topic are never taken as positions in the
new one, which would skip the new topic's first records without a word when it is already
longer. While the workers are down the broker deletes the old topic's committed offsets; while
they run, the topic id they read under changes (one error names both), and they no longer
make the deleted topic again themselves (kafka-python's consumers asked the broker to)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.errors import KafkaError

from tests.integration.cluster_faults import Cluster
from tests.integration.faults import assert_exactly_once, create_topic, wait_for
from tests.integration.harness import Topics, WorkerProcess, decisions
from tests.integration.test_scale_out import produce_to
from tests.integration.test_worker import stream

pytestmark = [pytest.mark.integration, pytest.mark.faults]  # topics deleted under the workers
RECREATED = "was deleted and created again (topic id"


def recreate(bootstrap: str, topic: str, partitions: int) -> None:
    """Delete `topic`, then create it again once the broker has let go of the old one."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.delete_topics([topic])
    finally:
        admin.close()

    def created() -> bool:
        try:
            create_topic(bootstrap, topic, partitions)
        except KafkaError:  # still being deleted
            return False
        return True

    wait_for(f"{topic} created again", created, 60, every=0.5)


def starter(
    mode: str, bootstrap: str, topics: Topics, tmp_path: Path, env: dict[str, str]
) -> Callable[[], WorkerProcess]:
    """What starts one worker (`single`) or one `--cluster` replica, again each call."""
    if mode == "single":
        return WorkerProcess(
            bootstrap, topics, "g-" + topics.input, tmp_path / "w.log", env=env
        ).start
    cluster = Cluster(bootstrap, topics, tmp_path, size=1, env=env)
    return lambda: cluster.start(0)


@pytest.mark.parametrize("mode", ["single", "cluster"])
def test_an_input_recreated_while_down_is_read_from_its_start(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path, mode: str
) -> None:
    create_topic(kafka_bootstrap, topics.input, partitions=1)
    old, new = stream(100, seed=71), stream(250, seed=72)
    start = starter(mode, kafka_bootstrap, topics, tmp_path, {})
    worker = start()
    worker.wait_ready()
    try:
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in old])
        assert len(decisions(kafka_bootstrap, topics, len(old))) == len(old), worker.log()
        assert worker.stop() == 0, worker.log()

        # The new topic is longer than the old offset (100) before the worker is back.
        recreate(kafka_bootstrap, topics.input, 1)
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in new])
        worker = start()
        worker.wait_ready()
        got = decisions(kafka_bootstrap, topics, len(old) + len(new), timeout=180)
        assert_exactly_once(got, [str(d["id"]) for d in old + new])
        # The broker deleted the old topic's committed offsets with it: read from the start.
        assert "reading from the log start" in worker.log(100_000)
    finally:
        if worker.alive():
            worker.stop()


@pytest.mark.parametrize("mode", ["single", "cluster"])
def test_an_input_recreated_while_the_worker_runs_is_read_from_its_start(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path, mode: str
) -> None:
    create_topic(kafka_bootstrap, topics.input, partitions=1)
    old, new = stream(100, seed=73), stream(250, seed=74)
    env = {"NEARDUP_WORKER__METADATA_MAX_AGE_MS": "2000"}
    worker = starter(mode, kafka_bootstrap, topics, tmp_path, env)()
    worker.wait_ready()
    try:
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in old])
        assert len(decisions(kafka_bootstrap, topics, len(old))) == len(old), worker.log()
        recreate(kafka_bootstrap, topics.input, 1)
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in new])
        got = decisions(kafka_bootstrap, topics, len(old) + len(new), timeout=180)
        assert_exactly_once(got, [str(d["id"]) for d in old + new])
        said = [line for line in worker.log(100_000).splitlines() if RECREATED in line]
        assert len(said) == 1, said  # the topic id the positions refer to changed
        assert "reading partitions [0] of the new one from their log start" in said[0]
        assert worker.alive()
    finally:
        if worker.alive():
            worker.stop()
