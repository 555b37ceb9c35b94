"""An in-memory changelog behind the reader interface `neardup_stream.worker.runtime.replay` uses: real
`ConsumerRecord`s, a last stable offset per partition, and records appended after it. No
broker and no process: the replay's own loop runs against it unchanged."""

from __future__ import annotations

from kafka import TopicPartition
from kafka.consumer.fetcher import ConsumerRecord


class MemoryLog:
    """Partitions of one topic; `stable` per partition is the end a reader sees at start."""

    def __init__(self, partitions: dict[TopicPartition, list[bytes | None]], per_poll: int = 3):
        self.values = partitions
        self.stable = {tp: len(v) for tp, v in partitions.items()}
        self.start = dict.fromkeys(partitions, 0)
        self.per_poll = per_poll
        self.positions: dict[TopicPartition, int] = {}
        self.paused: set[TopicPartition] = set()
        self.closed = False

    def append(self, tp: TopicPartition, value: bytes) -> None:
        """A record written after the replay read its end offsets."""
        self.values[tp].append(value)

    def assign(self, tps: list[TopicPartition]) -> None:
        """Like kafka-python: a partition kept across assignments keeps its position and its
        pause."""
        self.positions = {tp: self.positions.get(tp, 0) for tp in tps}
        self.paused &= set(tps)

    def beginning_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.start[tp] for tp in tps}

    def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.stable[tp] for tp in tps}

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.positions[tp] = offset

    def seek_to_beginning(self, tp: TopicPartition) -> None:
        self.positions[tp] = self.start[tp]

    def position(self, tp: TopicPartition) -> int:
        return self.positions[tp]

    def pause(self, tp: TopicPartition) -> None:
        self.paused.add(tp)

    def resume(self, *tps: TopicPartition) -> None:
        self.paused -= set(tps)

    def poll(self, timeout_ms: int = 0) -> dict[TopicPartition, list[ConsumerRecord]]:
        out = {}
        for tp, at in self.positions.items():
            values = self.values[tp][at : at + self.per_poll]
            if tp in self.paused or not values:
                continue
            out[tp] = [
                ConsumerRecord(
                    tp.topic, tp.partition, -1, at + i, 0, 0, b"k", v, [], None, 1, 0, -1
                )
                for i, v in enumerate(values)
            ]
            self.positions[tp] = at + len(values)
        return out

    def close(self) -> None:
        self.closed = True
