"""Where a paced document's latency goes, hop by hop, from the records' own timestamps.

The worker's latency histogram (`neardup_decision_latency_seconds`) has coarse buckets
(0.1, 0.25, 0.5 s), too coarse to compare runs within them. Every record the pipeline writes
carries the time its producer sent it (CreateTime), so once the paced documents are decided
their path can be read back from the topics (read_committed: only what committed):

* ``output``: input record -> its output record (unique or duplicate topic), for any run;
* for a cluster, any number of edges and log partitions (each fingerprint-log record
  names the inputs it holds, `log_record.sources_of`, and votes record keys name the log
  offset they vote on, in the votes partition of the same number):
  ``edge``: input -> the log record holding it (poll, fingerprint, and a commit in flight);
  ``shard``: log record -> the last shard's votes on it (the edge's commit, the marker
  reaching the readers, the vote);
  ``gather``: last votes -> the output (the shards' commit, the reader, the decision).

A single-stage replica (`neardup_stream.worker.cluster.single_stage`) writes no payload or votes records:
its documents have one hop, ``output``, as the plain worker's.

Send times, not commit times: each figure leaves out the final commit (a few ms to tens).
"""

from __future__ import annotations

from collections.abc import Iterable

from bench.kafka_broker import read_committed
from bench.kafka_latency import percentile
from neardup_stream.worker.cluster.log_record import is_decided, sources_of

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
    cluster: tuple[str, str] | None = None,
) -> dict[str, dict[str, float]]:
    """Per hop, latency quantiles of the `paced` input records sent last (keyed by document
    id). `cluster`: the run's fingerprint-log and votes topics, for the edge / shard /
    gather split."""
    inputs = sorted(read_committed(bootstrap, input_topic), key=lambda r: r.timestamp)
    last = inputs[len(inputs) - paced :]
    sent = {r.key: r.timestamp / 1000 for r in last}
    key_of = {(r.partition, r.offset): r.key for r in last}
    out: dict[bytes, float] = {}
    for topic in outputs:
        out.update(
            {r.key: r.timestamp / 1000 for r in read_committed(bootstrap, topic) if r.key in sent}
        )
    result = {"output": quantiles_ms(out[k] - sent[k] for k in out)}
    if cluster is None:
        return result
    log_topic, votes_topic = cluster
    last_vote: dict[tuple[int, int], float] = {}
    for v in read_committed(bootstrap, votes_topic):
        at = (v.partition, int(v.key))
        last_vote[at] = max(last_vote.get(at, 0.0), v.timestamp / 1000)
    edge, shard, gather = [], [], []
    for record in read_committed(bootstrap, log_topic):
        if is_decided(record.value):  # a single-stage replica's: no votes, one hop
            continue
        appended = record.timestamp / 1000
        voted = last_vote.get((record.partition, record.offset))
        for source in sources_of(record.value, input_topic):
            key = key_of.get((source.partition, source.offset))
            if key is None or key not in out or voted is None:
                continue
            edge.append(appended - sent[key])
            shard.append(voted - appended)
            gather.append(out[key] - voted)
    if edge:
        result.update(
            edge=quantiles_ms(edge), shard=quantiles_ms(shard), gather=quantiles_ms(gather)
        )
    return result
