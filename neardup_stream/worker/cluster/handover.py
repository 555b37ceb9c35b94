"""Handover between generations of a cluster: which inputs the old generation decided.

A settings change starts a new generation (a new group id, so new internal topics and
groups; docs/operations/settings-change.md). Its edge starts at the oldest retained input,
so the new index holds the retained window; the `Handover` says which of those inputs the
old generation already published an outcome for (a decision or a dead letter), and the new
generation indexes them without publishing anything for them again.

Per input partition: every input below the old edge group's committed offset (`frontier`)
was taken in; those still in the old fingerprint log past the old gather checkpoint
(`pending`) were not decided. `compute` reads this from a stopped old generation; the
first replica of the new generation stores it in its settings record, so all agree.

The old generation may also be of partition scope (0.2's worker without `--cluster`): it
has no control record, and commits its input offsets in group `<old>` in the transaction
that publishes their outcomes, so its frontier is that group's committed offset and nothing
is pending (docs/operations/upgrading.md).
"""

from __future__ import annotations

import logging
import time
from typing import Any, NamedTuple

from kafka import KafkaAdminClient, TopicPartition

from neardup_stream.worker import clients
from neardup_stream.worker.cluster import checkpoint, control
from neardup_stream.worker.cluster.log_record import sources_of
from neardup_stream.worker.records import Source
from neardup_stream.worker.settings import Settings

log = logging.getLogger(__name__)
ROLES = ("edge", "shards", "gather")
INACTIVE = {"Empty", "Dead"}
STOPPED_WAIT_S = 90.0  # static members stay in their group for a session timeout
# The settings record carrying a handover is one record of the control topic: below the
# producer's 1 MB request and the topic's default max.message.bytes, with room for the rest.
MAX_RECORD_BYTES = 900_000


class HandoverRefused(RuntimeError):
    """`cluster.handover_from` cannot be honoured as set (no such generation, another
    pipeline's, still running, or more undecided inputs than a record holds): the replica
    refuses to start, saying why in one line."""


class PartitionHandover(NamedTuple):
    """Inputs below `frontier` were decided by the old generation, except `pending`."""

    frontier: int
    pending: frozenset[int]


class Handover(NamedTuple):
    """The old generation's outcomes, per input partition (none: publish everything)."""

    old_group: str
    partitions: dict[int, PartitionHandover]

    def publishes(self, source: Source) -> bool:
        """Whether the new generation publishes the outcome of input `source`."""
        h = self.partitions.get(source.partition)
        return h is None or source.offset >= h.frontier or source.offset in h.pending

    def to_json(self) -> dict[str, Any]:
        """Pending inputs as [first, last] runs: an edge that ran ahead of its gather leaves
        long runs, and one number each did not fit a record past ~130k inputs."""
        return {
            "old_group": self.old_group,
            "partitions": {
                str(p): {"frontier": h.frontier, "pending_runs": runs(h.pending)}
                for p, h in sorted(self.partitions.items())
            },
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Handover:
        if not data:
            return cls("", {})
        return cls(
            str(data["old_group"]),
            {int(p): _partition(h) for p, h in data["partitions"].items()},
        )

    def summary(self) -> str:
        """Per partition its frontier and how many inputs are pending, in how many runs."""
        return (
            ", ".join(
                f"partition {p}: frontier {h.frontier}, {len(h.pending)} pending in "
                f"{len(runs(h.pending))} runs"
                for p, h in sorted(self.partitions.items())
            )
            or "no input partition"
        )


def runs(offsets: frozenset[int]) -> list[list[int]]:
    """`offsets` as sorted [first, last] runs of consecutive offsets."""
    out: list[list[int]] = []
    for offset in sorted(offsets):
        if out and offset == out[-1][1] + 1:
            out[-1][1] = offset
        else:
            out.append([offset, offset])
    return out


def _partition(data: dict[str, Any]) -> PartitionHandover:
    """One partition's handover: runs, or (records before runs) one number per input."""
    if "pending_runs" in data:
        pending = {o for first, last in data["pending_runs"] for o in range(first, last + 1)}
    else:
        pending = set(map(int, data["pending"]))
    return PartitionHandover(int(data["frontier"]), frozenset(pending))


def pending_sources(
    records: list[list[Source]], frontiers: dict[int, int]
) -> dict[int, frozenset[int]]:
    """Input offsets below their frontier that sit in not yet decided log records (each
    given by the inputs of its documents)."""
    pending: dict[int, set[int]] = {}
    for sources in records:
        for src in sources:
            if src.offset < frontiers.get(src.partition, 0):
                pending.setdefault(src.partition, set()).add(src.offset)
    return {p: frozenset(o) for p, o in pending.items()}


def compute(settings: Settings) -> Handover:
    """The handover from the stopped generation `cluster.handover_from` (Kafka)."""
    old = settings.cluster.handover_from
    if old is None:
        return Handover("", {})
    record = _old_record(settings, old)
    admin = KafkaAdminClient(**clients.common_config(settings.kafka))
    try:
        if record is None or _of_partition_scope(admin, settings, old):
            return _from_partition_scope(admin, settings, old)
        if record.identity.get("topics.input") != settings.topics.input:
            raise HandoverRefused(
                f"cluster.handover_from = {old!r} read input topic "
                f"{record.identity.get('topics.input')!r}, this pipeline reads "
                f"{settings.topics.input!r}: a handover is between generations of one pipeline"
            )
        _wait_stopped(admin, old, [f"{old}-{role}" for role in ROLES])
        edge = _offsets(admin, f"{old}-edge")
        gather = _offsets(admin, f"{old}-gather")
    finally:
        admin.close()
    frontiers = {
        tp.partition: o.offset for tp, o in edge.items() if tp.topic == settings.topics.input
    }
    decided: dict[int, int] = {}
    for committed in gather.values():
        decided.update(checkpoint.decode(committed.metadata))
    pending = pending_sources(_undecided(settings, record, decided), frontiers)
    handover = Handover(
        old,
        {p: PartitionHandover(f, pending.get(p, frozenset())) for p, f in frontiers.items()},
    )
    log.info("handover from generation %s: %s", old, handover.summary())
    return handover


def _old_record(settings: Settings, old: str) -> control.SettingsRecord | None:
    """The old generation's settings record; None when `<old>.control` holds none."""
    from neardup_stream.worker.cluster import agreement  # agreement imports this module

    cluster = settings.cluster.model_copy(update={"control": f"{old}.control"})
    values = agreement.read_values(settings.model_copy(update={"cluster": cluster}))
    return control.winner(values)


def _from_partition_scope(admin: KafkaAdminClient, settings: Settings, old: str) -> Handover:
    """The handover from a stopped generation of partition scope: the committed input
    offsets of group `old` are its frontiers, with nothing pending (it commits them with
    the outcomes they publish). Refused when group `old` read none of this input."""
    if not _input_offsets(admin, old, settings.topics.input):
        raise HandoverRefused(
            f"cluster.handover_from = {old!r}: control topic {old}.control holds no "
            f"settings and group {old!r} committed no offsets on input "
            f"{settings.topics.input!r} (no generation of that group id read this "
            "input on this broker)"
        )
    _wait_stopped(admin, old, [old])
    frontiers = _input_offsets(admin, old, settings.topics.input)  # final once stopped
    handover = Handover(old, {p: PartitionHandover(f, frozenset()) for p, f in frontiers.items()})
    log.info(
        "handover from generation %s of partition scope (its committed input offsets): %s",
        old,
        handover.summary(),
    )
    return handover


def _of_partition_scope(admin: KafkaAdminClient, settings: Settings, old: str) -> bool:
    """Whether generation `old` decided in partition scope although `<old>.control` holds a
    record: a topic-scope replica started under that group was refused by its claims (the
    group is run in partition scope) after writing it. Its edge then committed nothing on the
    input, and group `old` did."""
    edge = _input_offsets(admin, f"{old}-edge", settings.topics.input)
    return not edge and bool(_input_offsets(admin, old, settings.topics.input))


def _input_offsets(admin: KafkaAdminClient, group: str, topic: str) -> dict[int, int]:
    return {
        tp.partition: o.offset
        for tp, o in _offsets(admin, group).items()
        if tp.topic == topic and o.offset >= 0
    }


def _wait_stopped(admin: KafkaAdminClient, old: str, groups: list[str]) -> None:
    deadline = time.monotonic() + STOPPED_WAIT_S
    while True:
        states = {g: d.get("group_state") for g, d in admin.describe_groups(groups).items()}
        active = sorted(g for g, s in states.items() if s not in INACTIVE)
        if not active:
            return
        if time.monotonic() > deadline:
            raise HandoverRefused(
                f"cluster.handover_from = {old!r}: the old generation still runs (groups "
                f"{active} have members); stop all of its replicas first"
            )
        time.sleep(2.0)


def _offsets(admin: KafkaAdminClient, group: str) -> dict[TopicPartition, Any]:
    return dict(admin.list_group_offsets(group).get(group, {}))


def _undecided(
    settings: Settings, record: control.SettingsRecord, decided: dict[int, int]
) -> list[list[Source]]:
    """The inputs of the old fingerprint-log records at or past each partition's gather
    checkpoint (records of either format: the old generation may be an older release)."""
    fingerprints = str(record.settings["cluster.fingerprints"])
    reader = clients.make_reader(settings)
    try:
        partitions = reader.partitions_for_topic(fingerprints) or set()
        tps = [TopicPartition(fingerprints, p) for p in sorted(partitions)]
        if not tps:
            return []
        reader.assign(tps)
        ends = reader.end_offsets(tps)
        for tp in tps:
            reader.seek(tp, decided.get(tp.partition, 0))
        out: list[list[Source]] = []
        deadline = time.monotonic() + 120.0
        while any(reader.position(tp) < ends[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise RuntimeError(f"handover: could not read {fingerprints} to its end")
            for tp, batch in reader.poll(timeout_ms=500).items():
                for m in batch:
                    if m.offset >= ends[tp]:
                        continue
                    try:
                        out.append(sources_of(m.value, settings.topics.input))
                    except ValueError as exc:
                        log.error("handover: skipping old log record %s@%d: %s", tp, m.offset, exc)
        return out
    finally:
        reader.close()
