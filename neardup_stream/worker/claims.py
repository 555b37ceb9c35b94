"""Which pipeline owns a topic of its own: first claims in one broker-wide topic.

A pipeline (input topic and group id, `changelog.Pipeline`) keeps state in topics of its
own: the single worker's changelog, a cluster's internal topics. Their names default to
`<group id>.<suffix>`, but names given explicitly (`--changelog-topic`,
`NEARDUP_CLUSTER__FINGERPRINTS`, ...) can be given to two pipelines, and then their records
mix: for a cluster unseen (each pipeline agrees through a control topic of its own), for a
single worker only at its next restore. So before it consumes, a worker claims those topics
for its pipeline in the claims topic (`cluster.claims`, default `neardup.claims`: one
partition, kept forever, shared by every pipeline on the broker). The first claim of a topic
in log order owns it, as the first settings record wins a control topic: a worker of
another pipeline meets that claim and is refused, naming the topic and both pipelines; of
two pipelines starting at once, the same one wins for both.

A claim names the topic's id, so a topic deleted and created again is claimed afresh. A
claims record this version cannot read is logged and ignored: the claims guard the topics,
they hold no decisions. The records and the rule are `neardup_stream.worker.claim_records`; this module
reads and writes the topic.

The single worker's claim of its changelog also names the input mapping (`input.*`: which
fields are the id and the text) its index is built with. A worker of the same pipeline
restarted with another mapping would add fingerprints of other texts to the index it
restores, so it is refused, naming each difference (a cluster's control topic does the same
for its replicas). A claim written before mappings were named is not checked.

The output topics are claimed too: a worker of another pipeline writing to them is refused,
naming them (its decisions would mix with this pipeline's, each against another index; of
the same input and another group, every input would be decided twice), unless it is a new
generation the first one hands over to (`cluster.handover_from`).

Every worker also claims its pipeline's consumer group (`group_claim`), with its mode: a
single worker or a `--cluster` replica. A worker of another pipeline with the same group id
is refused (two inputs in one consumer group: partitions of one are never assigned), and so
is a worker of the pipeline in the other mode: a single worker and a replica each decide
every input, and their groups keep separate offsets, so inputs would be decided twice.
"""

from __future__ import annotations

import time
from typing import Any

from kafka import KafkaAdminClient
from kafka.errors import KafkaTimeoutError

from neardup_stream.worker import clients, topic_ids, topics
from neardup_stream.worker.changelog import pipeline_of
from neardup_stream.worker.claim_records import (
    OUTPUTS_TAKEN,
    Owned,
    conflicts,
    encode,
    group_claim,
    group_conflicts,
    mode_of,
    output_conflicts,
    owners,
    remapped,
    unclaimed_by,
)
from neardup_stream.worker.cluster import agreement
from neardup_stream.worker.settings import CLUSTER_TOPICS, Settings

CLUSTER_HINT = (
    "give each pipeline internal topics of its own: drop the explicit names so they derive "
    "from the group id, or name others (NEARDUP_CLUSTER__FINGERPRINTS, __VOTES, __SHARDS, "
    "__SHARD_CHANGELOG, __GATHER_CHANGELOG, __CONTROL); a topic deleted and created again is "
    "claimed afresh"
)
CHANGELOG_HINT = (
    "give each pipeline, or a pipeline's new input mapping, a changelog of its own with "
    "--changelog-topic / NEARDUP_TOPICS__CHANGELOG (the default, <group id>.changelog, is "
    "one per group; a new changelog starts with an empty index and keeps the group's "
    "committed input offsets)"
)


def internal_names(settings: Settings) -> list[str]:
    """The internal topics of a cluster replica."""
    return [getattr(settings.cluster, field) for field in CLUSTER_TOPICS]


def _existing_ids(
    admin: KafkaAdminClient, names: list[str], existing: set[str] | None = None
) -> dict[str, str]:
    """Topic ids of those of `names` the broker's metadata shows complete (`existing`: the
    broker's topics, if the caller listed them already)."""
    if existing is None:
        existing = set(admin.list_topics())
    present = [n for n in names if n in existing]
    described = admin.describe_topics(present) if present else []
    return {
        m["name"]: found
        for m in described
        if m.get("error_code", 0) == 0 and (found := topic_ids.named(m.get("topic_id")))
    }


def _ids(admin: KafkaAdminClient, names: list[str], timeout_s: float) -> dict[str, str]:
    """Topic ids of `names`, which the caller has just created if missing: waits until the
    broker's metadata shows every one (a topic created a moment ago by this or another
    worker may not show yet; claiming without it would let a second pipeline in). Raises
    `KafkaTimeoutError` (the caller retries) for one that does not show in `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        ids = _existing_ids(admin, names)
        missing = sorted(set(names) - set(ids))
        if not missing:
            return ids
        if time.monotonic() > deadline:
            raise KafkaTimeoutError(f"topics {missing} do not show in the broker's metadata")
        time.sleep(0.2)


def _ensure_claims_topic(admin: KafkaAdminClient, settings: Settings) -> None:
    if settings.cluster.claims not in set(admin.list_topics()):
        spec = {
            "num_partitions": 1,
            "replication_factor": settings.topics.replication_factor,
            "configs": {"cleanup.policy": "delete", "retention.ms": "-1"},
        }
        topics.create(admin, {settings.cluster.claims: spec})


def taken(settings: Settings, names: list[str]) -> list[str]:
    """Like `claim`, for those of `names` that exist, without claiming anything: so a worker
    of another pipeline is refused before it creates a topic (a missing topic is nobody's)."""
    admin = KafkaAdminClient(**clients.common_config(settings.kafka))
    try:
        existing = set(admin.list_topics())
        if settings.cluster.claims not in existing:
            return []  # no claims yet: nothing is anybody's
        ids = _existing_ids(admin, names, existing)
    finally:
        admin.close()
    first = owners(agreement.read_values(settings, settings.cluster.claims))
    mine = pipeline_of(settings)
    return conflicts(first, mine, ids) + group_conflicts(first, mine, mode_of(settings))


def hinted(lines: list[str], hint: str) -> list[str]:
    """`lines` and `hint`, unless every line is an output conflict (each names its fix)."""
    if all(line.startswith(OUTPUTS_TAKEN) for line in lines):
        return lines
    return [*lines, hint]


def output_names(settings: Settings) -> list[str]:
    """The output topics a worker writes its decisions and dead letters to."""
    t = settings.topics
    return list(dict.fromkeys((t.unique, t.duplicate, t.dlq)))


def claim(
    settings: Settings,
    names: list[str],
    mapping: dict[str, Any] | None = None,
    successor: bool = False,
) -> list[str]:
    """Claim `names` and the output topics for this pipeline, with the input `mapping` of
    their index if given; one line per other pipeline owning some of them
    (`output_conflicts`: `successor`, a new generation handed over to), and per topic
    claimed with another mapping (`remapped`).

    Claims only what nobody claimed yet, then reads again: of workers of different
    pipelines that claim at once, the first in log order owns the topic for all of them.
    A broker that is not usable raises a `KafkaError`; the caller retries.
    """
    mine, topic = pipeline_of(settings), settings.cluster.claims
    admin = KafkaAdminClient(**clients.common_config(settings.kafka))
    try:
        _ensure_claims_topic(admin, settings)
        outputs = [n for n in output_names(settings) if n not in names]
        every = _ids(admin, names + outputs, settings.kafka.request_timeout_ms / 1000)
        ids = {n: every[n] for n in names}
        output_ids = {n: every[n] for n in outputs}
    finally:
        admin.close()
    first = owners(agreement.read_values(settings, topic))
    unclaimed = {
        n: i for n, i in ids.items() if unclaimed_by(first.get(Owned(n, i)), mine, mapping)
    }
    unclaimed.update((n, i) for n, i in output_ids.items() if first.get(Owned(n, i)) is None)
    group, mode = group_claim(mine.group_id), mode_of(settings)
    if group not in first:
        unclaimed[group.topic] = group.topic_id
    if unclaimed:
        record = encode(mine, settings.worker.instance_id, unclaimed, mapping, mode)
        agreement.write(settings, topic, None, record)
        first = owners(agreement.read_values(settings, topic))
    changed = remapped(first, mine, ids, mapping) if mapping is not None else []
    found = conflicts(first, mine, ids) + changed + group_conflicts(first, mine, mode)
    return found + output_conflicts(first, mine, output_ids, successor)
