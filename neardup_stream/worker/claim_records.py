"""The claims topic's records and its first-claim rule (pure: records in, owners and
refusals out; `neardup_stream.worker.claims` reads and writes the topic).

A record names a pipeline (input topic and group id), the instance that wrote it, and the
topic incarnations it claims (name -> topic id); a single worker's record also names the
input mapping of its changelog's index, and every worker's record the mode it runs in (its
pipeline's consumer group is claimed under `group <group id>`). The first claim of an
incarnation in log order owns it (`owners`); `conflicts`, `remapped` and `group_conflicts`
word the refusals.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any, NamedTuple

from neardup_stream.worker.changelog import Pipeline
from neardup_stream.worker.cluster import control
from neardup_stream.worker.settings import Settings

log = logging.getLogger(__name__)
CLAIM_FORMAT = 1
GROUP_ID = "consumer-group"  # the "topic id" of a group's claim (a group has no incarnations)
# The stored names of 0.2 ("single": its worker without --cluster), and what they are now.
MODES = {
    "single": "partition scope (--scope partition; 0.2's worker without --cluster)",
    "cluster": "topic scope (the default; 0.2's --cluster)",
}
UPGRADE_DOC = "docs/operations/upgrading.md"


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
            if c.mapping is not None and c.pipeline == owner.pipeline:
                # settings a claim names first (a version that names more): the first value
                # of each one stays
                merged = {**c.mapping, **(owner.mapping or {})}
                if merged != owner.mapping:
                    first[Owned(c.topic, c.topic_id)] = owner._replace(mapping=merged)
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
                f"topic {name!r} holds this pipeline's index built with other settings "
                f"({listed}; first claimed by instance {owner.instance!r}): its documents' "
                "ids, texts or times were read otherwise, or other documents were indexed. "
                "Restart with the index's settings"
            )
    return lines


OUTPUTS_TAKEN = "output topic(s)"  # how an `output_conflicts` line starts (it has its hint)


def output_conflicts(
    first: dict[Owned, Claim], mine: Pipeline, ids: dict[str, str], successor: bool
) -> list[str]:
    """One line per other pipeline that claimed output topics of `ids` first. A pipeline of
    another input mixes its decisions with this one's, each against its own index; one of
    the same input and another group decides every input a second time into them, unless
    this worker is the new generation it hands over to (`successor`: its decisions go on
    where the old generation's stopped, `cluster.handover_from`)."""
    taken: dict[tuple[Pipeline, str], list[str]] = {}
    for name, topic_id in sorted(ids.items()):
        owner = first.get(Owned(name, topic_id))
        if owner is None or owner.pipeline == mine:
            continue
        if owner.pipeline.input_topic == mine.input_topic and successor:
            continue
        taken.setdefault((owner.pipeline, owner.instance), []).append(repr(name))
    lines = []
    for (pipeline, instance), names in taken.items():
        same_input = pipeline.input_topic == mine.input_topic
        why = (
            "it would decide every input a second time into them: to move the pipeline to a "
            "new group, start a new generation with NEARDUP_CLUSTER__HANDOVER_FROM "
            f"({control.SETTINGS_CHANGE_DOC})"
            if same_input
            else "their decisions would mix, each against another index"
        )
        lines.append(
            f"{OUTPUTS_TAKEN} {', '.join(names)} are written by another pipeline "
            f"({pipeline.describe()}, first claimed by instance {instance!r}); this worker is "
            f"the pipeline {mine.describe()} and {why}; or give it output topics of its own "
            "(--unique-topic, --duplicate-topic, --dlq-topic)"
        )
    return lines


def group_claim(group_id: str) -> Owned:
    """What a pipeline's consumer group is claimed as: a name with a space (no topic has
    it) and `GROUP_ID`."""
    return Owned(f"group {group_id}", GROUP_ID)


def mode_of(settings: Settings) -> str:
    return "cluster" if settings.topic_scope else "single"


def group_conflicts(first: dict[Owned, Claim], mine: Pipeline, mode: str) -> list[str]:
    """The line refusing this worker if its group is another pipeline's, or is run in the
    other mode (`mode`); none when the group is its own in its mode, or unclaimed."""
    owner = first.get(group_claim(mine.group_id))
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
            f"the pipeline {mine.describe()} is run in {MODES[owner.mode]} (first claimed by "
            f"instance {owner.instance!r}); this worker runs in {MODES[mode]}. Both would "
            f"decide every input (each input twice): run it in {MODES[owner.mode]}, or run "
            f"{MODES[mode]} under a group id of its own (a new pipeline: it decides the "
            "retained input again)"
            + (
                f"; a 0.2 deployment keeps its index with --scope partition, or moves to "
                f"topic scope with --handover-from as {UPGRADE_DOC} says"
                if owner.mode == "single"
                else ""
            )
        ]
    return []


def unclaimed_by(owner: Claim | None, mine: Pipeline, mapping: dict[str, Any] | None) -> bool:
    """Whether to claim a topic `owner` holds (None: nobody): yes if nobody does, or this
    pipeline did without naming some of the settings in `mapping` (a claim written before
    they were named: their values are then the first ones named)."""
    if owner is None:
        return True
    if mapping is None or owner.pipeline != mine:
        return False
    return owner.mapping is None or not set(mapping) <= set(owner.mapping)
