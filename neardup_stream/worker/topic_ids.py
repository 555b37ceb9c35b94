"""Which incarnation of an input topic the committed offsets refer to.

A topic deleted and created again under the same name has a new topic id (KIP-516) and
offsets that start over. A committed offset of the old topic read as a position in the new
one would skip the new topic's first records without a word (the new log may already be
longer than the old offset). So the input offsets a worker or an edge commits carry, in the
offset commit's metadata, the id of the topic they were read from (`topic-id=<uuid>`), and
`Incarnations` tells when the topic a position refers to is not the one the broker has now:
reading that topic starts again at its log start, with one error naming both ids.

Offsets committed without an id (by an earlier version, or a broker without topic ids) and a
topic whose id the client does not know yet are taken as they are; the next commit adds it.
"""

from __future__ import annotations

import uuid
from typing import Any, NamedTuple

from kafka import KafkaConsumer

PREFIX = "topic-id="
NULL_ID = "00000000-0000-0000-0000-000000000000"  # a topic whose metadata is not complete


def named(found: object) -> str | None:
    """A topic id as the client or the admin gives it (uuid or text), None when it names none."""
    if found is None or str(found) in ("", NULL_ID):
        return None
    return str(found)


def metadata(topic_id: str | None) -> str:
    """The offset commit metadata naming `topic_id` ("" when it is unknown)."""
    return "" if topic_id is None else f"{PREFIX}{topic_id}"


def from_metadata(text: str | None) -> str | None:
    """The topic id an offset commit's metadata names (None: none, or another format)."""
    if not text or not text.startswith(PREFIX):
        return None
    try:
        return str(uuid.UUID(text[len(PREFIX) :]))
    except ValueError:
        return None


def current(consumer: KafkaConsumer, topic: str) -> str | None:
    """The id of `topic` in the consumer's metadata (None: not known to it, or a broker that
    gives none): tells a topic from one deleted and created again under its name. Read from
    kafka-python's cluster metadata (no public API gives it), after the consumer looked the
    topic up (offsets, an assignment)."""
    cluster: Any = getattr(getattr(consumer, "_client", None), "cluster", None)
    return None if cluster is None else named(cluster.topic_id(topic))


class Recreated(NamedTuple):
    """A topic read under one id that the broker now has under another."""

    topic: str
    was: str
    now: str


class Incarnations:
    """The id of each input topic that the positions read refer to (see the module
    docstring): learnt from the committed offsets' metadata after a rebalance, else from the
    metadata at the first read."""

    def __init__(self) -> None:
        self._read: dict[str, str] = {}  # topic -> the id its positions refer to

    def committed(self, topic: str, text: str | None) -> None:
        """A committed offset of `topic` with metadata `text`: positions taken from it refer
        to the topic it names (unless positions of this process already refer to one)."""
        named = from_metadata(text)
        if named is not None:
            self._read.setdefault(topic, named)

    def check(self, topic: str, now: str | None) -> Recreated | None:
        """Compare what the positions of `topic` refer to with its id `now`; a change is
        returned once, and positions refer to `now` from then on."""
        if now is None:
            return None
        was = self._read.setdefault(topic, now)
        if was == now:
            return None
        self._read[topic] = now
        return Recreated(topic, was, now)

    def metadata(self, topic: str) -> str:
        """The metadata of an offset commit of `topic`: the id its positions refer to."""
        return metadata(self._read.get(topic))
