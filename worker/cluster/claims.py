"""Which pipeline owns each internal topic: first claims in one broker-wide topic.

A pipeline's replicas agree on its settings through its control topic (`agreement`), which
names the pipeline; but internal topics named explicitly (`NEARDUP_CLUSTER__FINGERPRINTS`,
...) can be given to two pipelines (another input topic or group) that each agree through a
control topic of their own, and then their records mix unseen. So before its roles start, a
replica claims each of its pipeline's internal topics in the claims topic (`cluster.claims`:
one partition, kept forever, shared by every pipeline on the broker). The first claim of a
topic in log order owns it, as the first settings record wins a control topic: a replica of
another pipeline meets that claim and is refused, naming the topic and both pipelines.

A claim names the topic's id, so a topic deleted and created again is claimed afresh. A
claims record this version cannot read is logged and ignored: the claims guard the internal
topics, they hold no decisions.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any, NamedTuple

from kafka import KafkaAdminClient

from worker import clients, topics
from worker.changelog import Pipeline, pipeline_of
from worker.cluster import agreement
from worker.settings import CLUSTER_TOPICS, Settings

log = logging.getLogger(__name__)
CLAIM_FORMAT = 1


class Claim(NamedTuple):
    """One pipeline's claim of one incarnation (`topic_id`) of a topic."""

    topic: str
    topic_id: str
    pipeline: Pipeline
    instance: str


class Owned(NamedTuple):
    """A topic incarnation: the key of the first-claim rule."""

    topic: str
    topic_id: str


def encode(pipeline: Pipeline, instance: str, ids: dict[str, str]) -> bytes:
    """One claims record: `pipeline` claims every topic of `ids` (name -> topic id)."""
    body = {
        "format": CLAIM_FORMAT,
        "pipeline": {"input": pipeline.input_topic, "group": pipeline.group_id},
        "instance": instance,
        "topics": ids,
    }
    return json.dumps(body, sort_keys=True).encode()


def decode(value: bytes | None) -> list[Claim]:
    """The claims of one record; ValueError for anything this version cannot read."""
    try:
        data: Any = json.loads(value) if value is not None else None
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != CLAIM_FORMAT:
        raise ValueError(f"not a claims record of format {CLAIM_FORMAT}")
    who, claimed = data.get("pipeline"), data.get("topics")
    if not isinstance(who, dict) or not isinstance(claimed, dict):
        raise ValueError("pipeline or topics missing")
    pipeline = Pipeline(str(who.get("input")), str(who.get("group")))
    instance = str(data.get("instance", "?"))
    return [Claim(str(t), str(i), pipeline, instance) for t, i in claimed.items()]


def owners(values: Iterable[bytes | None]) -> dict[Owned, Claim]:
    """The first claim of each topic incarnation, in log order."""
    first: dict[Owned, Claim] = {}
    for offset, value in enumerate(values):
        try:
            claims = decode(value)
        except ValueError as exc:
            log.warning("claims record at offset %d ignored: %s", offset, exc)
            continue
        for c in claims:
            first.setdefault(Owned(c.topic, c.topic_id), c)
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
        f"first claimed by instance {instance!r}); this replica is the pipeline "
        f"{mine.describe()}"
        for (pipeline, instance), names in taken.items()
    ]


HINT = (
    "give each pipeline internal topics of its own: drop the explicit names so they derive "
    "from the group id, or name others (NEARDUP_CLUSTER__FINGERPRINTS, __VOTES, __SHARDS, "
    "__SHARD_CHANGELOG, __GATHER_CHANGELOG, __CONTROL); a topic deleted and created again is "
    "claimed afresh"
)


def internal_names(settings: Settings) -> list[str]:
    return [getattr(settings.cluster, field) for field in CLUSTER_TOPICS]


def _ids(admin: KafkaAdminClient, names: list[str]) -> dict[str, str]:
    """Topic ids of those of `names` that exist (a missing one is for `layout` to report)."""
    existing = set(admin.list_topics())
    present = [n for n in names if n in existing]
    described = admin.describe_topics(present) if present else []
    return {
        m["name"]: str(m["topic_id"])
        for m in described
        if m.get("error_code", 0) == 0 and m.get("topic_id")
    }


def _ensure_claims_topic(admin: KafkaAdminClient, settings: Settings) -> None:
    if settings.cluster.claims not in set(admin.list_topics()):
        spec = {
            "num_partitions": 1,
            "replication_factor": settings.topics.replication_factor,
            "configs": {"cleanup.policy": "delete", "retention.ms": "-1"},
        }
        topics.create(admin, {settings.cluster.claims: spec})


def claim(settings: Settings) -> list[str]:
    """Claim this pipeline's internal topics; the refusal lines (empty: all are ours).

    Claims only what nobody claimed yet, then reads again: of replicas of different
    pipelines that claim at once, the first in log order owns the topic for all of them.
    A broker that is not usable raises a `KafkaError`; the caller retries.
    """
    mine, topic = pipeline_of(settings), settings.cluster.claims
    admin = KafkaAdminClient(**clients.common_config(settings.kafka))
    try:
        _ensure_claims_topic(admin, settings)
        ids = _ids(admin, internal_names(settings))
    finally:
        admin.close()
    first = owners(agreement.read_values(settings, topic))
    unclaimed = {n: i for n, i in ids.items() if Owned(n, i) not in first}
    if unclaimed:
        agreement.write(settings, topic, None, encode(mine, settings.worker.instance_id, unclaimed))
        first = owners(agreement.read_values(settings, topic))
    found = conflicts(first, mine, ids)
    return [*found, HINT] if found else []
