"""The role loop: one loop runs every cluster role (edge, shard, gather) on a `Role`.

Per round (`docs/design/runtime.md`, "The role interface"):

1. `Limits` from the failure policy: the role's batch in records and bytes, halved per
   consecutive failure (a batch that keeps failing is bisected to the input causing it);
2. `role.poll(limits)`: poll its consumer, follow the assignment (release what left, cancel
   and start background restores through the role's restore code, take on finished ones,
   rewind records of partitions not restored yet) and read its inputs;
3. `role.step(polled, limits)`: the transaction to publish, from what was read; an
   exception there fails the batch like a failed transaction;
4. publish it (`runtime.publisher`: messages + offsets with metadata, one transaction, one
   deadline, fenced by the role consumer's group metadata);
5. committed: `role.committed`, the policy and the role's health reset; failed: the
   producer is replaced, an input the broker refused for good is dead-lettered on the
   replay (no backoff), a record refused for good that answers for the whole batch (a
   changelog record too large for its topic) halves the replay at once (no backoff),
   anything else counts a failure and backs off; either way
   `role.rebuild()` drops the state that ran ahead of the commit and rewinds. A failure
   (or a poll) that says the group fenced the role's static membership makes its consumer
   rejoin (`runtime.membership`). A group poll the broker cannot serve
   (`runtime.broker_gone`: nothing was read) backs off and polls again, for a while; a
   retriable Kafka error later in the poll (following the assignment, reading the log:
   records read went with it) rebuilds and rewinds as a failed transaction does, after the
   commit in flight is settled, also for a while.

The role owns its state and what it reads; the runner owns the publisher, the policy and
the order of these steps, so each fix to them is written once.

In flight (`InFlight`: the single worker; the shard and gather roles through
`runtime.overlap`): the commit of a batch runs while the next one is polled and stepped; the
runner settles it before publishing the next batch, when a round has nothing to publish, and
before it closes the role's producer, and (through `bind`) the role settles it from its
rebalance listener before a revoke, a failure the runner then handles after the poll. A step
that raises is judged by the role (`Verdict`): bisected (`policy.bisect()`, no backoff),
dead-lettered or retried. Failures are counted by the role, committed batches on the commit
thread; between rounds the role snapshots and exports its gauges (`between`, which may
settle).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Generic

from kafka.errors import FencedInstanceIdError, KafkaError

from neardup_stream.worker import retry
from neardup_stream.worker.metrics import Metrics
from neardup_stream.worker.runtime import shutdown
from neardup_stream.worker.runtime.broker_gone import GIVE_UP_S, BrokerGone, Streak
from neardup_stream.worker.runtime.coverage import Coverage
from neardup_stream.worker.runtime.membership import Membership, rebalanced
from neardup_stream.worker.runtime.policy import FailurePolicy
from neardup_stream.worker.runtime.publisher import Publisher, PublishFailure
from neardup_stream.worker.runtime.role import (
    Carried,
    InFlight,
    Judging,
    Limits,
    Polled,
    Role,
    Verdict,
    Warming,
)
from neardup_stream.worker.runtime.stall import Stall, Waits

log = logging.getLogger(__name__)
MIN_TXN_BYTES = 1 << 20  # the byte cap never shrinks below this


def count_commit(role: Role[Any, Carried], metrics: Metrics, carried: Carried, at: float) -> None:
    """A role's transaction committed at `at` (wall time): count it, end the role's failure
    streak, and let the role count what it carried (in flight: `runtime.overlap`)."""
    metrics.role_transactions.labels(role.name).inc()
    if role.health is not None:
        role.health.succeeded()
    role.committed(carried, at)


class RoleRunner(Generic[Polled, Carried]):
    """Runs one role until `stop` is set; `close` closes its publisher and the role."""

    def __init__(
        self,
        role: Role[Polled, Carried],
        metrics: Metrics,
        stop: threading.Event,
        in_flight: InFlight[Polled, Carried] | None = None,
    ) -> None:
        self.role, self.metrics, self._stop = role, metrics, stop
        self.in_flight = in_flight
        self.policy = FailurePolicy(role.role.worker.retry_backoff_max_s)
        self._gone = Streak()  # group polls the broker could not serve; ends at one served
        self._unread = Streak()  # polls failed after reading; ends at a commit (a rebuilt
        # role's polls succeed until it holds state again and meets the error again)
        self.publisher: Publisher[Carried] = Publisher(
            role.role,
            role.consumer,
            role.name,
            in_flight=in_flight is not None,
            on_committed=None if in_flight is None else self._committed_in_flight,
        )
        if in_flight is not None:
            in_flight.bind(self.publisher.settle)
        w = role.role.worker
        instance = w.instance_id if w.static_membership else None
        self.membership = Membership(role.consumer, role.name, w.group_id, instance, metrics)
        self.coverage = Coverage(role.consumer, role.role, role.name, metrics)
        self.stall = Stall(role.name, metrics, w.stall_timeout_s)

    def unready(self) -> str | None:
        """Why the role cannot decide now, for /healthz (None: it can): it is restoring
        its first assignment, a partition of it stopped or its transactions keep failing,
        a partition of its topics has no reader, or it is stalled."""
        role, name = self.role, self.role.name
        if isinstance(role, Warming) and not role.warmed():
            return f"{name}: restoring its partitions"
        if role.health is not None and not role.health.healthy():
            return f"{name}: a partition stopped or its transactions keep failing (see its log)"
        if not self.coverage.covered():
            return f"{name}: partitions of its topics have no reader"
        waiting = self.stall.stalled()
        if waiting is not None:
            return f"{name}: stalled, waiting for {waiting}"
        return None

    def run(self) -> None:
        role, policy = self.role, self.policy
        role.start()
        while not self._stop.is_set():
            limits = Limits(
                policy.shrunk(role.max_records),
                policy.shrunk(role.max_bytes, floor=min(role.max_bytes, MIN_TXN_BYTES)),
            )
            try:
                self.membership.check_heartbeat()
                self.coverage.check()
                polled = role.poll(limits)
            except FencedInstanceIdError as exc:  # its join or heartbeat was fenced: rejoin
                self.membership.fenced(exc)
                continue
            except BrokerGone as exc:  # nothing was read: poll again, for a while
                self._poll_failed(exc)
                continue
            except KafkaError as exc:  # after the group poll: what it read went with it
                if not exc.retriable:
                    raise
                self._read_failed(exc)
                continue
            self._gone.ended()
            self._holding_nothing()
            if isinstance(role, Waits):
                self.stall.observe(role.waiting_for())
            if self.in_flight is not None:
                self._round_in_flight(self.in_flight, polled, limits)
                continue
            try:
                output = role.step(polled, limits)
            except Exception as exc:  # the step failed: as if its transaction had
                judged = role.step_failed(polled, exc) if isinstance(role, Judging) else None
                if judged is Verdict.BISECT:
                    policy.bisect()
                self._failed(PublishFailure(exc, None), backoff=judged in (None, Verdict.RETRY))
                continue
            if output is None:
                continue
            failure = self.publisher.publish(output.transaction, output.carried)
            if failure is not None:
                self._failed(failure, published=True)
                continue
            policy.succeeded()
            self._unread.ended()
            self.stall.progressed()
            count_commit(role, self.metrics, output.carried, time.time())

    def _round_in_flight(
        self, hooks: InFlight[Polled, Carried], polled: Polled, limits: Limits
    ) -> None:
        """One round with the previous batch's commit in flight: step this batch, settle
        the previous one, publish this one (its commit goes on while the next is polled)."""
        revoked = hooks.revoke_failure()
        if revoked is not None:  # the commit settled before a revoke failed
            self._failed(revoked, published=True)
            return
        try:
            output = self.role.step(polled, limits)
        except Exception as exc:  # the engine failed on this batch
            settled = self.publisher.settle()
            verdict = hooks.step_failed(polled, exc)
            if verdict is Verdict.BISECT:
                self.policy.bisect()
            failure: PublishFailure[Carried] | PublishFailure[None] | None = settled
            if failure is None:
                failure = PublishFailure(exc, None)
            backoff = verdict is Verdict.RETRY
            self._failed(failure, polled, backoff=backoff, published=settled is not None)
        else:
            previous = self.publisher.settle()  # the previous batch's commit
            if previous is not None:
                self._failed(previous, polled, published=True)
            elif output is not None:
                failed = self.publisher.publish(output.transaction, output.carried)
                if failed is not None:
                    self._failed(failed, published=True)
        hooks.between(lambda: self._settled(hooks))

    def _settled(self, hooks: InFlight[Polled, Carried]) -> bool:
        """Settle the commit in flight; recover if it failed. True: nothing is in flight."""
        failure = self.publisher.settle()
        if failure is not None:
            self._failed(failure, published=True)
            return False
        return True

    def _committed_in_flight(self, carried: Carried, committed_at: float) -> None:
        """A batch committed (on the commit thread): count it; failures are over."""
        assert self.in_flight is not None
        self.in_flight.counted(carried, committed_at)
        self.policy.succeeded()
        self._unread.ended()
        self.stall.progressed()

    def _failed(
        self,
        failure: PublishFailure[Carried] | PublishFailure[None],
        polled: Polled | None = None,
        backoff: bool = True,
        published: bool = False,
        dropped: bool = True,
    ) -> None:
        """The one failure path of every role, synchronous or in flight: what was not
        committed is dropped and replayed.

        A denial (an ACL) fails the role at once: no replay can succeed
        (`neardup_stream.worker.authorization`). Every failure is counted once: a dropped
        batch of a role in flight by the role (`InFlight.aborted`, which counts the commits
        settled before it first, so they do not end its streak), anything else in
        `neardup_role_failures_total`. Then a fenced static membership rejoins, and then: an input the
        broker refused for good is dead-lettered on the replay (no backoff, health
        unchanged); a record refused for good that answers for the whole batch halves it
        (`_bisected`, no backoff); anything else fails the role's health and backs off,
        unless the role judged its failed step (bisected or dead-lettered: `backoff`
        False). A producer whose transaction failed (`published`) is replaced, and the role
        rebuilds what ran ahead of the commit and rewinds (in flight: what the failed
        batches and `polled` touched). `dropped` False: nothing of the role's was aborted
        (a read failed), so its own abort count stays."""
        role, hooks = self.role, self.in_flight
        if hooks is not None and dropped:
            hooks.aborted()  # in its own metric (the partition-scope worker's aborts)
        else:
            self.metrics.role_failures.labels(role.name).inc()
        if failure.denied is not None:
            raise failure.denied
        self.membership.fenced(failure.error)
        rejected, delay = failure.rejected, 0.0
        if rejected is not None and role.rejections is not None:
            # the replay dead-letters it (smaller each time): no backoff
            role.rejections.unpublishable(rejected.source, rejected.why)
        else:
            if role.health is not None:
                role.health.failed()
            if backoff and not self._bisected(failure):
                delay = self.policy.failed()
                what = "" if failure.blamed is None else f" (refused: {failure.blamed.why})"
                _log_failure(
                    f"{role.name}: a batch failed{what}",
                    "rebuilding and replaying from the committed offsets",
                    delay,
                    failure.error,
                )
        if delay:
            shutdown.pause(self._stop, delay)
        if published:  # a new producer fences and settles the old one
            retry.until_done(self._stop, role.role.worker.retry_backoff_max_s, self.publisher.reset)
        if hooks is None:
            self._rebuild(role.rebuild)
        else:
            self._rebuild(lambda: hooks.recover(failure.carried, polled))

    def _bisected(self, failure: PublishFailure[Carried] | PublishFailure[None]) -> bool:
        """A refusal for good of a message that answers for no single input (a changelog or
        log record too large for its topic: its size is the batch's): sending the same batch
        again fails the same way, so the replay is half the size at once, without backoff,
        while halving still shrinks it. Once the batch is one input the refusal is blamed on
        that input (the role's `sources`), or, if not, backs off as any other failure. The
        halving outlives the commit, undone one commit at a time (`FailurePolicy.too_large`)."""
        if failure.blamed is None or self.policy.shrunk(self.role.max_records) <= 1:
            return False
        self.policy.too_large()
        log.warning(
            "%s: the broker refused a record of the batch for good (%s); retrying with half "
            "the batch (%d records at most)",
            self.role.name,
            failure.blamed.why,
            self.policy.shrunk(self.role.max_records),
        )
        return True

    def _holding_nothing(self) -> None:
        """A role that holds no partition has nothing left that fails: its failure streak
        ends (it ended only at a commit, which such a role never makes: a replica whose
        partitions moved away after failed transactions stayed unready for good)."""
        health, consumer = self.role.health, self.role.consumer
        if health is not None and consumer is not None and not consumer.assignment():
            health.succeeded()

    def _poll_failed(self, error: BrokerGone) -> None:
        """A group poll the broker could not serve (`runtime.broker_gone`): nothing was read,
        so nothing is rebuilt; count it, back off and poll again, as during a broker pause
        (health unchanged). After `GIVE_UP_S` of such polls in a row the role fails."""
        self._gone.failed(error, GIVE_UP_S)
        self.metrics.role_failures.labels(self.role.name).inc()
        delay = self.policy.failed()
        log.warning("%s: %s; polling again in %.1f s", self.role.name, error, delay)
        shutdown.pause(self._stop, delay)

    def _read_failed(self, error: KafkaError) -> None:
        """A retriable Kafka error after the group poll: records it read may be gone with
        it, and the consumers' positions are past them. A commit in flight is settled first
        (one that fails, or failed before a revoke, is the failure to recover); either way
        the role rebuilds and rewinds to the committed offsets, as after a failed
        transaction. After `GIVE_UP_S` of such failures with no commit between them the
        role fails."""
        self._unread.failed(error, GIVE_UP_S)
        hooks, settled = self.in_flight, None
        if hooks is not None:
            settled = hooks.revoke_failure() or self.publisher.settle()
        if settled is not None:  # the batch in flight failed: its recovery rewinds too
            self._failed(settled, published=True)
        else:
            self._failed(PublishFailure(error, None), dropped=False)

    def _rebuild(self, rebuild: Callable[[], None]) -> None:
        """Run a role's rebuild (drop state, rewind, restore what it holds) until it ends: a
        retriable Kafka error inside it (a committed-offset look-up during a broker pause or
        a rebalance) is retried with backoff, not a failed role and a stopped replica."""
        attempt = 0
        while not self._stop.is_set():
            try:
                rebuild()
                return
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                attempt += 1
                delay = retry.backoff_s(self.role.role.worker.retry_backoff_max_s, attempt)
                log.warning(
                    "%s: rebuilding failed (%r); trying again in %.1f s", self.role.name, exc, delay
                )
                shutdown.pause(self._stop, delay)

    def close(self) -> None:
        try:
            if self.in_flight is not None:  # the last commit ends before its producer closes
                self.publisher.settle()
            self.publisher.close()
        finally:
            self.coverage.close()
            self.role.close()


def _log_failure(what: str, then: str, delay: float, error: BaseException) -> None:
    """A failed batch: an error with its traceback, or a warning when the group only
    rebalanced under it (`membership.rebalanced`: a replica joined or left)."""
    if rebalanced(error):
        log.warning("%s (the group rebalanced: %s); %s in %.1f s", what, error, then, delay)
    else:
        log.error("%s; %s in %.1f s", what, then, delay, exc_info=error)
