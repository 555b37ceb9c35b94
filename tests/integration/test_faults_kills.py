"""Fault injection: the worker killed (SIGKILL) or stopped (SIGTERM) at exact lines, again and
again, still decides every document exactly once, and decides it as an uninterrupted run and
the offline engine do.

The worker stops itself at named failpoints (`NEARDUP_FAILPOINTS`, see neardup_stream/worker/failpoints.py):
after producing a batch but before committing it, while a commit is in flight, and in the
middle of a restore. The input has near-copies of documents far back in the stream, so an
index that lost part of its past (a partial restore, a partial snapshot) decides differently.
Workers and the offline engine use 32,768-bit sketches: changelog records of about 4 KB, so a
restore takes several fetches and a stop requested after the first one lands mid-restore.
"""

from __future__ import annotations

import random
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from neardup_stream import DedupConfig, Deduplicator, Document
from tests.integration.faults import (
    assert_exactly_once,
    committed,
    create_topic,
    doc_records,
    long_range_stream,
    send_records,
    wait_committed,
)
from tests.integration.harness import (
    Topics,
    WorkerProcess,
    decisions,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]  # `make test-faults`

DOCS = 15_000
BATCH = ["--max-batch", "500"]
ENGINE = {"NEARDUP_DEDUP__SKETCH_BITS": "32768"}  # ~4 KB changelog records


@dataclass
class Reference:
    """One input topic, and what an uninterrupted worker and the offline engine decide."""

    bootstrap: str
    input: str
    ids: list[str]
    uninterrupted: dict[str, str]
    offline: dict[str, str]
    logs: Path


def _topics(input_topic: str) -> Topics:
    base = f"{input_topic}-{uuid.uuid4().hex[:8]}"
    return Topics(input_topic, f"{base}.u", f"{base}.d", f"{base}.q", f"{base}.c")


def _decided(got: dict) -> dict[str, str]:
    return {i: v[0][0] for i, v in got.items()}


@pytest.fixture(scope="module")
def reference(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Reference:
    docs = long_range_stream(DOCS, seed=31)
    ids = [str(d["id"]) for d in docs]
    input_topic = f"nd-kills-{uuid.uuid4().hex[:12]}"
    create_topic(kafka_bootstrap, input_topic)
    send_records(kafka_bootstrap, input_topic, doc_records(docs))
    logs = tmp_path_factory.mktemp("kills")
    topics = _topics(input_topic)
    worker = WorkerProcess(
        kafka_bootstrap,
        topics,
        "g-" + topics.unique,
        logs / "uninterrupted.log",
        extra=BATCH,
        env=ENGINE,
    ).start()
    try:
        worker.wait_ready()
        wait_committed(kafka_bootstrap, input_topic, DOCS, worker, 300)
        got = decisions(kafka_bootstrap, topics, DOCS, timeout=60)
    finally:
        assert worker.stop() == 0, worker.log()
    assert_exactly_once(got, ids)
    dedup = Deduplicator(DedupConfig(sketch_bits=int(ENGINE["NEARDUP_DEDUP__SKETCH_BITS"])))
    offline = {
        d.id: d.decision for d in dedup.check_batch([Document.model_validate(d) for d in docs])
    }
    return Reference(kafka_bootstrap, input_topic, ids, _decided(got), offline, logs)


def _run_with_failpoints(
    ref: Reference, name: str, steps: list[tuple[str, int | None]], snapshots: bool = False
) -> dict:
    """Start a worker per step with NEARDUP_FAILPOINTS=step and wait for it to stop itself with
    the expected signal (None: any exit); then one clean worker finishes the input."""
    topics, group = _topics(ref.input), f"g-{name}-{uuid.uuid4().hex[:8]}"
    log = ref.logs / f"{name}.log"
    extra = [*BATCH, "--snapshot-dir", str(ref.logs / f"{name}-snapshots")] if snapshots else BATCH
    progress = []
    for spec, signum in steps:
        worker = WorkerProcess(
            ref.bootstrap,
            topics,
            group,
            log,
            extra=extra,
            env={**ENGINE, "NEARDUP_FAILPOINTS": spec},
        ).start()
        try:
            code = worker.wait_exit(timeout=120)
        except AssertionError as exc:
            worker.stop()
            hint = " (was a partial restore kept?)" if spec.startswith("restore") else ""
            raise AssertionError(
                f"failpoint {spec} after {progress} never fired{hint}: {exc}"
            ) from None
        if signum is not None:
            assert code == -signum, f"{spec}: exit {code}, not by signal {signum}\n{worker.log()}"
        progress.append((spec, code, committed(ref.bootstrap, group, ref.input)))
    assert progress[-1][2] < DOCS, f"the input was finished before the last failpoint: {progress}"
    return _finish(ref, topics, group, log, extra)


def _run_with_kills(ref: Reference, name: str, kills: list[tuple[bool, float]]) -> dict:
    """Start a worker (with snapshots) per kill and SIGKILL it after a delay: from its start
    (`after_ready` False: start-up, restore) or from the moment it is ready (True: decide,
    produce, commit, a snapshot), at moments no failpoint names; then one clean worker
    finishes the input."""
    topics, group = _topics(ref.input), f"g-{name}-{uuid.uuid4().hex[:8]}"
    log = ref.logs / f"{name}.log"
    extra = ["--max-batch", "200", "--snapshot-dir", str(ref.logs / f"{name}-snapshots")]
    often = {**ENGINE, "NEARDUP_WORKER__SNAPSHOT_EVERY_S": "2"}  # kills may land in snapshots
    progress = []
    for after_ready, delay in kills:
        worker = WorkerProcess(ref.bootstrap, topics, group, log, extra=extra, env=often)
        worker.start()
        if after_ready:
            worker.wait_ready(timeout=180)
        time.sleep(delay)  # the moment of the fault, not a wait for a condition
        assert worker.alive(), worker.log()
        worker.kill()
        progress.append((after_ready, round(delay, 2), committed(ref.bootstrap, group, ref.input)))
    assert progress[0][2] < DOCS, f"the input was finished before the first kill: {progress}"
    assert progress[-1][2] > 0, f"nothing was decided between the kills: {progress}"
    return _finish(ref, topics, group, log, extra)


def _finish(ref: Reference, topics: Topics, group: str, log: Path, extra: list[str]) -> dict:
    """A clean worker decides the rest of the input; what the output topics hold then."""
    worker = WorkerProcess(ref.bootstrap, topics, group, log, extra=extra, env=ENGINE).start()
    try:
        worker.wait_ready(timeout=180)
        wait_committed(ref.bootstrap, ref.input, DOCS, worker, timeout=300)
        got = decisions(ref.bootstrap, topics, DOCS, timeout=60)
        assert worker.alive(), worker.log()
    finally:
        assert worker.stop() == 0, worker.log()
    return got


def _assert_same_as_reference(got: dict, ref: Reference) -> None:
    assert_exactly_once(got, ref.ids)
    decided = _decided(got)
    uniques = {i for i, d in decided.items() if d == "unique"}
    assert uniques == {i for i, d in ref.uninterrupted.items() if d == "unique"}, (
        "unique set differs from an uninterrupted run's: "
        f"{sorted(i for i in ref.ids if decided[i] != ref.uninterrupted[i])[:10]}"
    )
    assert uniques == {i for i, d in ref.offline.items() if d == "unique"}


def test_reference_runs_agree(reference: Reference) -> None:
    """The uninterrupted worker decides as the offline engine (the baseline of the others)."""
    assert reference.uninterrupted == reference.offline
    assert 0.2 < sum(d == "duplicate" for d in reference.offline.values()) / DOCS < 0.5


def test_sigkill_after_produce_during_commit_and_during_restore(reference: Reference) -> None:
    kill = signal.SIGKILL
    steps: list[tuple[str, int | None]] = [
        ("batch_produced=kill@3", kill),  # produced, not committed
        ("commit_inflight=kill@5", kill),  # the commit of the 5th batch in flight
        ("batch_produced=kill@12", kill),
        ("commit_inflight=kill@2", kill),
        ("batch_committed=kill@2", kill),  # committed, not yet accounted
        ("batch_produced=kill@4", kill),  # about 11,500 documents decided by now
        ("restore_batch=kill@1", kill),  # mid-restore: more than one restore batch
        ("restore_batch=kill@1", kill),
        ("commit_inflight=kill@1", kill),  # the first commit after a restore
        ("batch_produced=kill@1", kill),
    ]
    got = _run_with_failpoints(reference, "sigkill", steps)
    _assert_same_as_reference(got, reference)


def test_sigkill_at_moments_no_failpoint_names_with_snapshots(reference: Reference) -> None:
    """Kills after a drawn delay land on lines nobody chose: in start-up or a restore (from the
    changelog, and from a snapshot once one was saved), mid-batch, mid-commit, or while a
    snapshot is written."""
    draw = random.Random(17)
    kills = [(k % 2 == 1, draw.uniform(0.2, 4.0)) for k in range(8)]  # from start, from ready
    got = _run_with_kills(reference, "random-kills", kills)
    _assert_same_as_reference(got, reference)


def test_sigterm_during_restore_with_snapshots(reference: Reference) -> None:
    """A stop during restore must not leave a partial index that is decided against or saved
    as a snapshot: the next start restores everything again (so its failpoint fires again)."""
    steps: list[tuple[str, int | None]] = [
        ("batch_produced=kill@24", signal.SIGKILL),  # 11,500 decided, no snapshot yet
        ("restore_batch=term@1", None),  # stopped after the first restore batch
        ("restore_batch=term@1", None),  # so again from the start
        ("batch_produced=term@3,snapshot_saved=kill@1", None),  # stop: killed once it is saved
        ("batch_produced=kill@1", signal.SIGKILL),  # restores from that snapshot
    ]
    got = _run_with_failpoints(reference, "sigterm", steps, snapshots=True)
    _assert_same_as_reference(got, reference)
