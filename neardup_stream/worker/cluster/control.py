"""The cluster's settings record: what replicas must agree on, its format, and the comparison.

Every replica of one scale-out cluster must decide with the same settings, or the shard and
gather roles skip each other's records and documents go undecided. The cluster's settings
live in a compacted control topic (`cluster.control`, by default `<group>.control`); the
first settings record in log order is the cluster's (`winner`). A replica compares its own
`SettingsRecord` with it (`compare`) and starts its roles only when they are equal.

This module is pure (no Kafka): what goes into a record (`settings_record`), its versioned
JSON encoding and its compaction key, the winner choice, and the diff with its messages.
`neardup_stream.worker.cluster.agreement` reads and writes the control topic.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, NamedTuple

import mmh3

from neardup_stream.worker.settings import CLUSTER_TOPICS, Settings

RECORD_FORMAT = 1
KEY_PREFIX = "settings"
SETTINGS_CHANGE_DOC = "docs/operations/settings-change.md"
# Worker settings that change an outcome (decided, or dead-lettered) or the transactions.
_WORKER_FIELDS = ("exactly_once", "max_message_bytes", "dlq_payload_bytes")
# The positions topic is not among them: records written before it existed name none, and
# replicas need not agree on where each keeps its own copy of the offsets it commits.
_CLUSTER_FIELDS = (*(t for t in CLUSTER_TOPICS if t != "positions"), "log_partitions")
_OUTPUT_FIELDS = ("unique", "duplicate", "dlq")


class SettingsRecord(NamedTuple):
    """One replica's settings as written to the control topic.

    `identity` names the pipeline (input topic and group id); `settings` maps every other
    setting that changes a decision or the layout ("dedup.threshold", ...) to its JSON value.
    """

    identity: dict[str, Any]
    settings: dict[str, Any]
    instance: str
    handover: dict[str, Any] | None = None  # `handover.Handover.to_json()`, when handing over


class Difference(NamedTuple):
    """One setting on which this replica differs from its cluster."""

    name: str
    cluster: Any
    replica: Any


class Comparison(NamedTuple):
    """The outcome of comparing this replica with its cluster's record; `ok` when equal."""

    other_pipeline: bool
    differences: list[Difference]
    cluster_instance: str

    @property
    def ok(self) -> bool:
        return not self.other_pipeline and not self.differences


class Undecodable(ValueError):
    """A control-topic record that is not a settings record this version can read."""


def settings_record(settings: Settings) -> SettingsRecord:
    """Every setting that changes decisions or the layout, flattened to `section.field`."""
    s = settings
    flat: dict[str, Any] = {f"dedup.{k}": v for k, v in s.dedup.model_dump(mode="json").items()}
    flat["dedup.fingerprint_id"] = s.dedup.fingerprint_id
    # Derived, but named: a build that capped each shard's keys otherwise differs here.
    flat["dedup.shard_bucket_cap"] = s.dedup.shard_bucket_cap
    flat.update(s.input_settings)
    flat.update({f"topics.{k}": getattr(s.topics, k) for k in _OUTPUT_FIELDS})
    flat.update({f"worker.{k}": getattr(s.worker, k) for k in _WORKER_FIELDS})
    flat.update({f"cluster.{k}": getattr(s.cluster, k) for k in _CLUSTER_FIELDS})
    flat["cluster.retention_ms"] = s.internal_retention_ms
    identity = {"topics.input": s.topics.input, "worker.group_id": s.worker.group_id}
    # As it reads back from the topic (tuples become lists), so equal settings compare equal.
    return SettingsRecord(identity, json.loads(json.dumps(flat)), s.worker.instance_id)


def encode(record: SettingsRecord) -> tuple[bytes, bytes]:
    """(key, value). The key is a hash of the settings, so compaction never removes the first
    record of other settings: it only drops later copies of the same settings."""
    body = {"identity": record.identity, "settings": record.settings}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    digest = mmh3.hash128(canonical.encode(), 0, signed=False)
    key = f"{KEY_PREFIX}:v{RECORD_FORMAT}:{digest:032x}".encode()
    value = {"format": RECORD_FORMAT, **body, "instance": record.instance}
    if record.handover is not None:
        value["handover"] = record.handover
    return key, json.dumps(value, sort_keys=True).encode()


def decode(value: bytes | None) -> SettingsRecord:
    """The record in `value`; raises `Undecodable` for anything else."""
    try:
        data = json.loads(value) if value is not None else None
    except ValueError as exc:
        raise Undecodable(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise Undecodable("not a JSON object")
    if data.get("format") != RECORD_FORMAT:
        raise Undecodable(f"format {data.get('format')!r}, this version reads {RECORD_FORMAT}")
    identity, flat = data.get("identity"), data.get("settings")
    if not isinstance(identity, dict) or not isinstance(flat, dict):
        raise Undecodable("identity or settings missing")
    handover = data.get("handover")
    if handover is not None and not isinstance(handover, dict):
        raise Undecodable("handover is not a JSON object")
    return SettingsRecord(identity, flat, str(data.get("instance", "?")), handover)


def winner(values: Iterable[bytes | None]) -> SettingsRecord | None:
    """The cluster's record: the first in log order (None: no record yet).

    A first record this version cannot read (a newer format, or garbage) raises
    `Undecodable`: skipping it could make replicas of different versions follow
    different records, so the replica refuses instead.
    """
    for value in values:
        return decode(value)
    return None


def compare(cluster: SettingsRecord, mine: SettingsRecord) -> Comparison:
    """How `mine` differs from the cluster's record."""
    other = cluster.identity != mine.identity
    return Comparison(other, differences(cluster.settings, mine.settings), cluster.instance)


def differences(first: dict[str, Any], mine: dict[str, Any]) -> list[Difference]:
    """Each setting on which `mine` differs from `first`, by name ("(absent)" where one
    lacks it)."""
    names = sorted(set(first) | set(mine))
    return [
        Difference(n, first.get(n, "(absent)"), mine.get(n, "(absent)"))
        for n in names
        if first.get(n, "(absent)") != mine.get(n, "(absent)")
    ]


def explain(v: Comparison, cluster: SettingsRecord, mine: SettingsRecord, control: str) -> str:
    """The one error a refused replica logs: every differing setting, and what to do."""
    if v.other_pipeline:
        return (
            f"control topic {control!r} and the internal topics named in it belong to another "
            f"pipeline (input topic {cluster.identity.get('topics.input')!r}, group "
            f"{cluster.identity.get('worker.group_id')!r}, first written by instance "
            f"{cluster.instance!r}); this replica reads {mine.identity['topics.input']!r} "
            f"with group {mine.identity['worker.group_id']!r}. It does not start. Give this "
            "pipeline its own internal topics: a group id of its own (--group-id or "
            "NEARDUP_WORKER__GROUP_ID; the internal topic names derive from it), or explicit "
            "NEARDUP_CLUSTER__FINGERPRINTS, __PAYLOADS, __VOTES, __SHARDS, __SHARD_CHANGELOG, "
            "__GATHER_CHANGELOG and __CONTROL"
        )
    listed = "; ".join(
        f"{d.name}: cluster {json.dumps(d.cluster)}, this replica {json.dumps(d.replica)}"
        for d in v.differences
    )
    return (
        f"settings differ from the cluster's (control topic {control!r}, first written by "
        f"instance {v.cluster_instance!r}): {listed}. Start it with the cluster's settings; to "
        f"change the settings of the whole cluster, start a new generation "
        f"({SETTINGS_CHANGE_DOC})"
    )
