"""One transaction of a cluster role: its messages and its group offsets, all or nothing.

Each role commits synchronously; the offsets go through `send_offsets_to_transaction` with
the role consumer's group metadata, so a member that lost its partitions in a rebalance is
fenced (KIP-447) and its transaction aborts. A failure replaces the producer; the role then
rebuilds its state from its committed checkpoint.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition

from worker import clients, failpoints
from worker.codec import OutMessage
from worker.runtime.policy import Blame, blame
from worker.settings import Settings

log = logging.getLogger(__name__)


class Rejected(RuntimeError):
    """The broker rejected message `index` of a transaction for a deterministic reason
    (too large, invalid): sending it again fails again."""

    def __init__(self, found: Blame) -> None:
        super().__init__(found.why)
        self.index, self.why = found.position, found.why


def role_settings(settings: Settings, role: str) -> Settings:
    """The role's group is `<group>-<role>`: its members, offsets and transactional ids are
    its own (transactional id `<group>-<role>-<instance>`)."""
    worker = settings.worker.model_copy(update={"group_id": f"{settings.worker.group_id}-{role}"})
    return settings.model_copy(update={"worker": worker})


class RoleTransactions:
    """The transactional producer of one role of one replica."""

    def __init__(self, settings: Settings, consumer: KafkaConsumer, role: str) -> None:
        self.settings = settings  # a role's settings (`role_settings`): its own transactional id
        self.consumer, self.role = consumer, role
        self.producer: KafkaProducer = clients.make_producer(self.settings)

    def commit(
        self, messages: list[OutMessage], offsets: dict[TopicPartition, OffsetAndMetadata]
    ) -> None:
        """Publish `messages` and commit `offsets` in one transaction; raises on failure.

        Everything after the sends runs under one deadline: kafka-python's
        `send_offsets_to_transaction` and `commit_transaction` can wait forever (e.g. while
        the group rebalances, which only this thread's next poll would complete), and a role
        must not stall; `reset` then fences and settles what was left open.
        """
        p = self.producer
        timeout_s = self.settings.kafka.request_timeout_ms / 1000
        futures: list = []
        try:
            p.begin_transaction()
            for m in messages:
                futures.append(
                    p.send(
                        m.topic, value=m.value, key=m.key, partition=m.partition, headers=m.headers
                    )
                )
            metadata = self.consumer.group_metadata()

            def finish() -> None:
                p.send_offsets_to_transaction(offsets, metadata)
                failpoints.hit(f"{self.role}_produced")
                p.flush(timeout=timeout_s)
                for f in futures:
                    f.get(timeout=0)
                p.commit_transaction()

            self._with_deadline(finish, timeout_s)
            failpoints.hit(f"{self.role}_committed")
        except BaseException as exc:
            self.reset()  # a new producer with the same id fences and settles the old one
            found = blame(exc, futures, messages)
            if found is not None:
                raise Rejected(found) from exc
            raise

    def _with_deadline(self, action: Callable[[], None], timeout_s: float) -> None:
        done = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            try:
                action()
            except BaseException as exc:
                failure.append(exc)
            finally:
                done.set()

        threading.Thread(target=run, daemon=True, name=f"{self.role}-commit").start()
        if not done.wait(timeout_s):
            raise TimeoutError(f"{self.role} transaction did not finish in {timeout_s:.0f} s")
        if failure:
            raise failure[0]

    def reset(self) -> None:
        try:
            self.producer.close(timeout=5)
        except Exception:
            log.debug("closing the %s producer failed", self.role, exc_info=True)
        self.producer = clients.make_producer(self.settings)

    def close(self) -> None:
        self.producer.close(timeout=5)
