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
they hold no decisions.

The single worker's claim of its changelog also names the input mapping (`input.*`: which
fields are the id and the text) its index is built with. A worker of the same pipeline
restarted with another mapping would add fingerprints of other texts to the index it
restores, so it is refused, naming each difference (a cluster's control topic does the same
for its replicas). A claim written before mappings were named is not checked.

Every worker also claims its pipeline's consumer group (`group_claim`), with its mode: a
single worker or a `--cluster` replica. A worker of another pipeline with the same group id
is refused (two inputs in one consumer group: partitions of one are never assigned), and so
is a worker of the pipeline in the other mode: a single worker and a replica each decide
every input, and their groups keep separate offsets, so inputs would be decided twice.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from typing import Any, NamedTuple

from kafka import KafkaAdminClient
from kafka.errors import KafkaTimeoutError

from worker import clients, topics
from worker.changelog import Pipeline, pipeline_of
from worker.cluster import agreement, control
from worker.settings import CLUSTER_TOPICS, Settings

log = logging.getLogger(__name__)
CLAIM_FORMAT = 1
NO_TOPIC_ID = "00000000-0000-0000-0000-000000000000"  # a topic whose metadata is not complete
GROUP_ID = "consumer-group"  # the "topic id" of a group's claim (a group has no incarnations)
MODES = {"single": "single workers (no --cluster)", "cluster": "--cluster replicas"}


class Claim(NamedTuple):
    """One pipeline's claim of one incarnation (`topic_id`) of a topic."""

    topic: str
    topic_id: str
    pipeline: Pipeline
    instance: str
    mapping: dict[str, Any] | None = None  # `Settings.input_settings` of a changelog's index
    mode: str | None = None  # a group's claim: "single" or "cluster" (`MODES`)


class Owned(NamedTuple):
    """A topic incarnation: the key of the first-claim rule."""

    topic: str
    topic_id: str


def encode(
    pipeline: Pipeline,
    instance: str,
    ids: dict[str, str],
    mapping: dict[str, Any] | None = None,
    mode: str | None = None,
) -> bytes:
    """One claims record: `pipeline` claims every topic of `ids` (name -> topic id), whose
    index is built with the input `mapping` (None: not a single worker's changelog), by a
    worker of `mode` (`MODES`)."""
    body: dict[str, Any] = {
        "format": CLAIM_FORMAT,
        "pipeline": {"input": pipeline.input_topic, "group": pipeline.group_id},
        "instance": instance,
        "topics": ids,
    }
    if mapping is not None:
        body["mapping"] = mapping
    if mode is not None:
        body["mode"] = mode
    return json.dumps(body, sort_keys=True).encode()


def decode(value: bytes | None) -> list[Claim]:
    """The claims of one record; ValueError for anything this version cannot read."""
    try:
        data: Any = json.loads(value) if value is not None else None
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != CLAIM_FORMAT:
        raise ValueError(f"not a claims record of format {CLAIM_FORMAT}")
    who, claimed, mapping = data.get("pipeline"), data.get("topics"), data.get("mapping")
    if not isinstance(who, dict) or not isinstance(claimed, dict):
        raise ValueError("pipeline or topics missing")
    if mapping is not None and not isinstance(mapping, dict):
        raise ValueError("mapping is not a JSON object")
    mode = data.get("mode")
    if mode is not None and mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    pipeline = Pipeline(str(who.get("input")), str(who.get("group")))
    instance = str(data.get("instance", "?"))
    return [Claim(str(t), str(i), pipeline, instance, mapping, mode) for t, i in claimed.items()]


def owners(values: Iterable[bytes | None]) -> dict[Owned, Claim]:
    """The first claim of each topic incarnation, in log order, with the first mapping its
    owner named for it (a claim written before mappings were named gets one later)."""
    first: dict[Owned, Claim] = {}
    for offset, value in enumerate(values):
        try:
            claims = decode(value)
        except ValueError as exc:
            log.warning("claims record at offset %d ignored: %s", offset, exc)
            continue
        for c in claims:
            owner = first.setdefault(Owned(c.topic, c.topic_id), c)
            if owner.mapping is None and c.mapping is not None and c.pipeline == owner.pipeline:
                first[Owned(c.topic, c.topic_id)] = owner._replace(mapping=c.mapping)
    return first


def conflicts(first: dict[Owned, Claim], mine: Pipeline, ids: dict[str, str]) -> list[str]:
    """One line per other pipeline that claimed topics of `ids` first, naming them."""
    taken: dict[tuple[Pipeline, str], list[str]] = {}
    for name, topic_id in sorted(ids.items()):
        owner = first.get(Owned(name, topic_id))
        if owner is not None and owner.pipeline != mine:
            taken.setdefault((owner.pipeline, owner.instance), []).append(repr(name))
    return [
        f"topic(s) {', '.join(names)} belong to another pipeline ({pipeline.describe()}, "
        f"first claimed by instance {instance!r}); this worker is the pipeline "
        f"{mine.describe()}"
        for (pipeline, instance), names in taken.items()
    ]


def remapped(
    first: dict[Owned, Claim], mine: Pipeline, ids: dict[str, str], mapping: dict[str, Any]
) -> list[str]:
    """One line per topic of `ids` this pipeline claimed first with another input mapping,
    naming every difference."""
    lines = []
    for name, topic_id in sorted(ids.items()):
        owner = first.get(Owned(name, topic_id))
        if owner is None or owner.pipeline != mine or owner.mapping is None:
            continue
        differ = control.differences(owner.mapping, mapping)
        if differ:
            listed = "; ".join(
                f"{d.name}: index {json.dumps(d.cluster)}, this worker {json.dumps(d.replica)}"
                for d in differ
            )
            lines.append(
                f"topic {name!r} holds this pipeline's index built with another input "
                f"mapping ({listed}; first claimed by instance {owner.instance!r}): its "
                "documents' ids, texts or times were read otherwise. Restart with the "
                "index's mapping"
            )
    return lines


def group_claim(settings: Settings) -> str:
    """The name under which a pipeline's consumer group is claimed (with a space: no topic
    has it)."""
    return f"group {settings.worker.group_id}"


def mode_of(settings: Settings) -> str:
    return "cluster" if settings.cluster.enabled else "single"


def group_conflicts(first: dict[Owned, Claim], mine: Pipeline, mode: str) -> list[str]:
    """The line refusing this worker if its group is another pipeline's, or is run in the
    other mode (`mode`); none when the group is its own in its mode, or unclaimed."""
    owner = first.get(Owned(f"group {mine.group_id}", GROUP_ID))
    if owner is None:
        return []
    if owner.pipeline != mine:
        return [
            f"consumer group {mine.group_id!r} belongs to another pipeline "
            f"({owner.pipeline.describe()}, first claimed by instance {owner.instance!r}); "
            f"this worker is the pipeline {mine.describe()}: give each pipeline a group id of "
            "its own (--group-id / NEARDUP_WORKER__GROUP_ID)"
        ]
    if owner.mode is not None and owner.mode != mode:
        return [
            f"the pipeline {mine.describe()} is run by {MODES[owner.mode]} (first claimed by "
            f"instance {owner.instance!r}); this worker is one of {MODES[mode]}. Both would "
            f"decide every input (each input twice): run it as one of {MODES[owner.mode]}, "
            f"or run {MODES[mode]} with a group id of their own (a new pipeline: it decides "
            "the retained input again)"
        ]
    return []


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
        m["name"]: str(m["topic_id"])
        for m in described
        if m.get("error_code", 0) == 0 and m.get("topic_id") not in (None, "", NO_TOPIC_ID)
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


def _unclaimed(owner: Claim | None, mine: Pipeline, mapping: dict[str, Any] | None) -> bool:
    """Whether to claim a topic: nobody did, or this pipeline did before mappings were named
    (its mapping is then the first one named)."""
    if owner is None:
        return True
    return mapping is not None and owner.pipeline == mine and owner.mapping is None


def claim(settings: Settings, names: list[str], mapping: dict[str, Any] | None = None) -> list[str]:
    """Claim `names` for this pipeline, with the input `mapping` of their index if given;
    one line per other pipeline owning some of them, and per topic claimed with another
    mapping (`remapped`).

    Claims only what nobody claimed yet, then reads again: of workers of different
    pipelines that claim at once, the first in log order owns the topic for all of them.
    A broker that is not usable raises a `KafkaError`; the caller retries.
    """
    mine, topic = pipeline_of(settings), settings.cluster.claims
    admin = KafkaAdminClient(**clients.common_config(settings.kafka))
    try:
        _ensure_claims_topic(admin, settings)
        ids = _ids(admin, names, settings.kafka.request_timeout_ms / 1000)
    finally:
        admin.close()
    first = owners(agreement.read_values(settings, topic))
    unclaimed = {n: i for n, i in ids.items() if _unclaimed(first.get(Owned(n, i)), mine, mapping)}
    group, mode = group_claim(settings), mode_of(settings)
    if Owned(group, GROUP_ID) not in first:
        unclaimed[group] = GROUP_ID
    if unclaimed:
        record = encode(mine, settings.worker.instance_id, unclaimed, mapping, mode)
        agreement.write(settings, topic, None, record)
        first = owners(agreement.read_values(settings, topic))
    changed = remapped(first, mine, ids, mapping) if mapping is not None else []
    return conflicts(first, mine, ids) + changed + group_conflicts(first, mine, mode)
