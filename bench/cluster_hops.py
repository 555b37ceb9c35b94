"""Where a paced document's latency goes, hop by hop, from the records' own timestamps.

The worker's latency histogram (`neardup_decision_latency_seconds`) has coarse buckets
(0.1, 0.25, 0.5 s), too coarse to compare runs within them. Every record the pipeline writes
carries the time its producer sent it (CreateTime), so once the paced documents are decided
their path can be read back from the topics (read_committed: only what committed):

* ``output``: input record -> its output record (unique or duplicate topic), for any run;
* for a cluster (one edge, one log partition, so the k-th payloads record and the k-th
  fingerprint-log record are one edge transaction's):
  ``edge``: input -> the log record holding it (poll, fingerprint, and a commit in flight);
  ``shard``: log record -> the last shard's votes on it (the edge's commit, the marker
  reaching the readers, the vote);
  ``gather``: last votes -> the output (the shards' commit, the reader, the decision).

A single-stage replica (`worker.cluster.single_stage`) writes no payload or votes records:
its documents have one hop, ``output``, as the plain worker's.

Send times, not commit times: each figure leaves out the final commit (a few ms to tens).
"""

from __future__ import annotations

from collections.abc import Iterable

from bench.kafka_broker import read_committed
from bench.kafka_latency import percentile
from worker.cluster.payloads import PayloadRecord

QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "max": 1.0}


def quantiles_ms(values: Iterable[float]) -> dict[str, float]:
    """p50, p90, p99 and max of `values` (seconds), in ms; empty when there are none."""
    xs = list(values)
    if not xs:
        return {}
    q = {name: round(percentile(xs, at) * 1000, 1) for name, at in QUANTILES.items()}
    return {"n": len(xs), **q}


def hops(
    bootstrap: str,
    input_topic: str,
    paced: int,
    outputs: list[str],
    cluster: tuple[str, str, str] | None = None,
) -> dict[str, dict[str, float]]:
    """Per hop, latency quantiles of the `paced` input records sent last (keyed by document
    id). `cluster`: the run's payloads, fingerprint-log and votes topics (one edge, one log
    partition), for the edge / shard / gather split."""
    inputs = sorted(read_committed(bootstrap, input_topic), key=lambda r: r.timestamp)
    sent = {r.key: r.timestamp / 1000 for r in inputs[len(inputs) - paced :]}
    out: dict[bytes, float] = {}
    for topic in outputs:
        out.update(
            {r.key: r.timestamp / 1000 for r in read_committed(bootstrap, topic) if r.key in sent}
        )
    result = {"output": quantiles_ms(out[k] - sent[k] for k in out)}
    if cluster is None:
        return result
    payloads_topic, log_topic, votes_topic = cluster
    last_vote: dict[int, float] = {}
    for v in read_committed(bootstrap, votes_topic):
        at = int(v.key)
        last_vote[at] = max(last_vote.get(at, 0.0), v.timestamp / 1000)
    edge, shard, gather = [], [], []
    logs = read_committed(bootstrap, log_topic)
    payloads = read_committed(bootstrap, payloads_topic)
    if len(payloads) != len(logs):  # a single-stage replica wrote no payloads: one hop
        return result
    for payload, record in zip(payloads, logs, strict=True):
        appended, voted = record.timestamp / 1000, last_vote[record.offset]
        for passage in PayloadRecord.unpack(payload.value, input_topic).passages:
            if passage.key in sent and passage.key in out:
                edge.append(appended - sent[passage.key])
                shard.append(voted - appended)
                gather.append(out[passage.key] - voted)
    result.update(edge=quantiles_ms(edge), shard=quantiles_ms(shard), gather=quantiles_ms(gather))
    return result
