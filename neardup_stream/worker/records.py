"""What a step reads and publishes, free of any Kafka client type: the inputs (`Source`,
`InputRecord`), a rejected input's reason to dead-letter it (`Rejection`) and one batch's
outputs (`BatchOutput`, with the changelog records it writes). Shared by the single worker
and the cluster roles.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from neardup_stream.worker import codec


class Source(NamedTuple):
    """Where an input record came from."""

    topic: str
    partition: int
    offset: int


class InputRecord(NamedTuple):
    """One polled input message, free of any Kafka client type (a NamedTuple: one is made
    per message, a frozen dataclass took three times as long)."""

    source: Source
    key: bytes | None
    value: bytes | None
    timestamp_ms: int  # Kafka's record time; -1 when the producer set none
    headers: tuple[tuple[str, bytes | None], ...] = ()


class Rejection(NamedTuple):
    """An input the worker could not publish (`unpublishable`) or decide (`internal_error`):
    on the replay it becomes a dead letter with this reason."""

    reason: str
    message: str
    keep_payload: bool = True  # False once even its dead letter was rejected


@dataclass(frozen=True)
class ChangelogRecord:
    """A changelog message (packed index records of one pipeline) for changelog partition =
    input partition; its key names the pipeline (`changelog.key`)."""

    partition: int
    key: bytes
    value: bytes


@dataclass
class BatchOutput:
    """What one batch publishes, in input order, and what it counts once committed."""

    messages: list[codec.OutMessage] = field(default_factory=list)
    message_sources: list[Source] = field(default_factory=list)
    changelog: list[ChangelogRecord] = field(default_factory=list)
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)  # next offset to read
    decided: list[tuple[str, str]] = field(default_factory=list)  # (decision, method)
    dead: list[str] = field(default_factory=list)  # dead-letter reasons
    timestamps_ms: list[int] = field(default_factory=list)  # record times of decisions
    started: float = 0.0  # perf_counter when the batch was polled, for the batch histogram

    @property
    def partitions(self) -> set[int]:
        """Input partitions this batch touched."""
        return {partition for _, partition in self.offsets}

    def add(self, message: codec.OutMessage, source: Source) -> None:
        self.messages.append(message)
        self.message_sources.append(source)
