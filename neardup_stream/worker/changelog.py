"""The changelog's message format: fingerprint records packed many to a message, each
message naming the pipeline it belongs to.

kafka-python's cost per produced record is about as large as deciding a document, so the
worker packs the `FingerprintRecord`s of one batch and partition into few messages of at
most `MAX_PACK_BYTES`. Format version 2 (this one):

    b"NP", version 2 (u8), pipeline id (u32), input topic and group id (u16 length + UTF-8
    each), record count (u32), then each record as a u32 length and its bytes.

A `Pipeline` is the input topic and consumer group a worker decides for; its id is mmh3 of
both, so it is the same in every process. The message carries the names, not only the id,
so a worker that meets another pipeline's records can say whose they are. Keys are
`<pipeline id hex>:<partition>:<first offset>:<n>`: two pipelines writing one compacted
changelog never compact each other's records away.

`unpack` also reads what earlier versions wrote (version 1 packs and bare `b"ND..."`
records, one per message); those carry no pipeline (`Pack.pipeline` is None) and restore
treats them as the reading worker's own (the upgrade path). It raises ValueError on
anything malformed, which restore counts and skips.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

import mmh3

if TYPE_CHECKING:
    from neardup_stream.worker.settings import Settings

MAGIC = b"NP"
VERSION = 2
LEGACY_VERSION = 1  # no pipeline identity
MAX_PACK_BYTES = 512 * 1024
_PIPELINE_SEED = 0x6E645049  # "ndPI"
_HEAD = struct.Struct("<2sB")
_ID = struct.Struct("<I")
_NAME = struct.Struct("<H")
_COUNT = struct.Struct("<I")
_LEN = struct.Struct("<I")
_RECORD_MAGIC = b"ND"


class Pipeline(NamedTuple):
    """The input topic and consumer group a worker's index belongs to."""

    input_topic: str
    group_id: str

    @property
    def id(self) -> int:
        """mmh3 of both length-framed names: deterministic across processes and machines."""
        return int(mmh3.hash(self._names(), _PIPELINE_SEED, signed=False))

    def describe(self) -> str:
        """How logs and errors name the pipeline."""
        return f"input topic {self.input_topic!r}, group {self.group_id!r} (id {self.id:08x})"

    def header(self) -> bytes:
        """The pack header up to (not including) the record count."""
        return _HEAD.pack(MAGIC, VERSION) + _ID.pack(self.id) + self._names()

    def _names(self) -> bytes:
        parts = []
        for name in (self.input_topic, self.group_id):
            raw = name.encode("utf-8", "surrogatepass")
            if len(raw) > 0xFFFF:
                raise ValueError("a pipeline name is too long to encode")
            parts += [_NAME.pack(len(raw)), raw]
        return b"".join(parts)


def pipeline_of(settings: Settings) -> Pipeline:
    """The pipeline a worker with `settings` decides for."""
    return Pipeline(settings.topics.input, settings.worker.group_id)


TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")


def topic_of(settings: Settings) -> str:
    """The changelog topic: named (`topics.changelog`) or `<group id>.changelog`; raises
    ValueError when the name derived from the group id is no valid topic name."""
    name = settings.topics.changelog
    if name is None:  # only a `TopicSettings` built alone leaves it unset
        raise ValueError("topics.changelog is not set")
    if settings.is_derived("topics.changelog") and not TOPIC_NAME.fullmatch(name):
        raise ValueError(
            f"the default changelog topic {name!r}, derived from group id "
            f"{settings.worker.group_id!r}, is not a valid Kafka topic name; name one with "
            "--changelog-topic / NEARDUP_TOPICS__CHANGELOG"
        )
    return name


class Pack(NamedTuple):
    """One changelog message: whose records it holds (None: written before pipeline ids)."""

    pipeline: Pipeline | None
    records: list[bytes]


def key(pipeline: Pipeline, partition: int, first_offset: int, n: int) -> bytes:
    """The key of the `n`th pack of the batch starting at input `first_offset`."""
    return f"{pipeline.id:08x}:{partition}:{first_offset}:{n}".encode()


def pack(
    records: list[bytes], pipeline: Pipeline, max_bytes: int = MAX_PACK_BYTES
) -> Iterator[bytes]:
    """Messages holding `records` in order, each at most about `max_bytes`."""
    head = pipeline.header()
    start = 0
    while start < len(records):
        size, end = len(head) + _COUNT.size, start
        while end < len(records) and (end == start or size + 4 + len(records[end]) <= max_bytes):
            size += 4 + len(records[end])
            end += 1
        chunk = records[start:end]
        parts = [head, _COUNT.pack(len(chunk))]
        for r in chunk:
            parts += [_LEN.pack(len(r)), r]
        yield b"".join(parts)
        start = end


def unpack(message: bytes) -> Pack:
    """The pipeline and records of one changelog message; ValueError if it is malformed."""
    if message[:2] == _RECORD_MAGIC:
        return Pack(None, [message])
    if len(message) < _HEAD.size or message[:2] != MAGIC:
        raise ValueError("not a changelog message")
    _, version = _HEAD.unpack_from(message)
    pos = _HEAD.size
    pipeline: Pipeline | None = None
    if version == VERSION:
        pipeline, pos = _read_pipeline(message, pos)
    elif version != LEGACY_VERSION:
        raise ValueError(f"unsupported changelog pack version {version}")
    if pos + _COUNT.size > len(message):
        raise ValueError("truncated changelog pack")
    (count,) = _COUNT.unpack_from(message, pos)
    pos += _COUNT.size
    out = []
    for _ in range(count):
        if pos + 4 > len(message):
            raise ValueError("truncated changelog pack")
        (n,) = _LEN.unpack_from(message, pos)
        pos += 4
        if pos + n > len(message):
            raise ValueError("truncated changelog pack")
        out.append(message[pos : pos + n])
        pos += n
    if pos != len(message):
        raise ValueError("trailing bytes in changelog pack")
    return Pack(pipeline, out)


def _read_pipeline(message: bytes, pos: int) -> tuple[Pipeline, int]:
    if pos + _ID.size > len(message):
        raise ValueError("truncated changelog pack")
    (pipeline_id,) = _ID.unpack_from(message, pos)
    pos += _ID.size
    names = []
    for _ in range(2):
        if pos + _NAME.size > len(message):
            raise ValueError("truncated changelog pack")
        (n,) = _NAME.unpack_from(message, pos)
        pos += _NAME.size
        if pos + n > len(message):
            raise ValueError("truncated changelog pack")
        try:
            names.append(message[pos : pos + n].decode("utf-8", "surrogatepass"))
        except UnicodeDecodeError as exc:
            raise ValueError(f"changelog pack names no valid pipeline: {exc}") from None
        pos += n
    pipeline = Pipeline(names[0], names[1])
    if pipeline.id != pipeline_id:
        raise ValueError("changelog pack's pipeline id does not match its names")
    return pipeline, pos
