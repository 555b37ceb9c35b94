"""One scale-out replica: the edge, shard and gather roles in threads of one process.

Before any role joins a group, the replica agrees with its cluster on the settings
(`agreement`), claims the internal topics for its pipeline (`claims`: none of them may
belong to another pipeline) and checks them against the settings (`layout`). A replica that
differs never starts its roles: it logs one error naming every difference, sets
`neardup_settings_mismatch` to 1 and stays unready (`/healthz` 503) until stopped.
Stopping is bounded (`runtime.shutdown`): the roles' current steps, then each close, within
`worker.shutdown_timeout_s`.
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any, NamedTuple

from kafka import KafkaAdminClient

from neardup_stream.collector import freeze_start_up
from neardup_stream.warmup import warm_replica
from neardup_stream.worker import claims, clients, retry, security_errors, topics
from neardup_stream.worker.cluster import agreement as agreement_
from neardup_stream.worker.cluster import control
from neardup_stream.worker.cluster import internal_topics as layout_
from neardup_stream.worker.cluster.edge import EdgeRole
from neardup_stream.worker.cluster.gather.role import GatherRole
from neardup_stream.worker.cluster.handover import Handover, HandoverRefused
from neardup_stream.worker.cluster.shard import ShardRole
from neardup_stream.worker.cluster.single_stage import SingleStage
from neardup_stream.worker.metrics import Metrics
from neardup_stream.worker.refusals import retrying_cannot_fix
from neardup_stream.worker.rejections import FatalError
from neardup_stream.worker.runtime import positions, shutdown
from neardup_stream.worker.runtime.membership import InstanceConflict
from neardup_stream.worker.runtime.overlap import Overlapped
from neardup_stream.worker.runtime.role import role_settings
from neardup_stream.worker.runtime.runner import RoleRunner
from neardup_stream.worker.settings import Settings

log = logging.getLogger(__name__)


class StartRefused(NamedTuple):
    """Why this replica does not start its roles: one line per problem."""

    problems: list[str]


class Prepared(NamedTuple):
    """What the roles start with: the topics' layout and the previous generation's outcomes."""

    layout: topics.TopicLayout
    handover: Handover


def _prepare(settings: Settings) -> Prepared | StartRefused:
    """The pipeline's topics, the cluster's settings, then the internal topics: created,
    claimed for this pipeline (`claims`) and checked against the settings.

    Nothing internal is created unless this replica agrees with its cluster, and nothing
    existing is changed (a retention raised) unless the claims say the topics are its own.
    """
    layout = topics.ensure_topics(settings)
    try:
        agreement = agreement_.agree(settings)
    except HandoverRefused as exc:
        return StartRefused([str(exc)])
    except control.Undecodable as exc:
        return StartRefused(
            [
                f"control topic {settings.cluster.control!r}: its first record is not a "
                f"settings record this version reads ({exc}); run the version that wrote it, "
                f"or start a new generation ({control.SETTINGS_CHANGE_DOC})"
            ]
        )
    if not agreement.comparison.ok:
        return StartRefused([agreement.explain(settings.cluster.control)])
    names = claims.internal_names(settings)
    taken = claims.taken(settings, names)  # another pipeline's: refused before creating any
    if not taken:
        layout_.create_internal_topics(settings)
        successor = bool(agreement.handover.old_group)  # a new generation: the old one's outputs
        taken = claims.claim(settings, names, successor=successor)  # one starting at once may win
    if taken:
        return StartRefused(claims.hinted(taken, claims.CLUSTER_HINT))
    problems = layout_.check_internal_topics(settings)  # ours: a retention may be raised
    if problems:
        hint = (
            "the internal topics do not fit these settings: change the topic as named, run "
            "with the settings the topics were made for, or start a new generation "
            f"({control.SETTINGS_CHANGE_DOC})"
        )
        return StartRefused([*problems, hint])
    restore_positions(settings)  # before any role joins: offsets that expired come back
    return Prepared(layout, agreement.handover)


def restore_positions(settings: Settings) -> None:
    """Commit back the positions the roles' groups lost (`runtime.positions`)."""
    kept = agreement_.read_values(settings, settings.cluster.positions)
    groups = [role_settings(settings, r).worker.group_id for r in positions.ROLES]
    admin = KafkaAdminClient(**clients.common_config(settings.kafka))
    try:
        positions.restore_expired(admin, kept, groups)
    finally:
        admin.close()


def unbounded_domains(settings: Settings) -> str | None:
    """The start-up warning for dedup domains that are never forgotten (None: they are)."""
    if not settings.input.has_domains or settings.dedup.max_age_seconds is not None:
        return None
    return (
        "dedup domains without dedup.max_age_seconds: every domain ever seen keeps up to "
        f"max_docs ({settings.dedup.max_docs}) documents on the shards and its first "
        "decisions on a gather, for good; set NEARDUP_DEDUP__MAX_AGE_SECONDS so that domains "
        "gone quiet are forgotten (docs/engine-semantics.md, quiet domains)"
    )


class Replica:
    """Same interface as `loop.Worker`: `run()` blocks until `request_stop()`."""

    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self.settings, self.metrics = settings, metrics
        self.ready = threading.Event()
        self.consuming = False
        self._stop = shutdown.Stop()
        self._failed: list[str] = []
        self._conflict: Exception | None = None  # an instance id in use, or an ACL denial
        self._roles: list[Any] = []  # (roles: unready() hook for /healthz)
        self._refused = False

    def unready(self) -> str | None:
        """Why /healthz answers 503 (None: ready, every role can decide): refused, starting,
        or the first role's reason (`RoleRunner.unready`)."""
        if self._refused:
            return "settings mismatch (see its log)"
        if not self.ready.is_set():
            return "starting: connecting to the broker, agreeing on its settings"
        return next((why for r in self._roles if (why := r.unready()) is not None), None)

    def healthy(self) -> bool:
        return self.unready() is None

    def request_stop(self) -> None:
        """Safe in a signal handler (`shutdown.Stop.request` takes no lock)."""
        self._stop.request()

    def run(self) -> None:
        s = self.settings
        delay = functools.partial(retry.backoff_s, s.worker.retry_backoff_max_s)
        prepare = security_errors.checked(s.kafka, lambda: _prepare(s))
        prepared = retry.until_stopped(self._stop, delay, prepare, s.kafka.give_up_after_s)
        if prepared is None:
            return
        if isinstance(prepared, StartRefused):
            self._refuse(prepared)
            return
        warning = unbounded_domains(s)
        if warning is not None:
            log.warning("%s", warning)
        warm_replica(s.dedup)  # the shards' kernels load before ready, not on the first vote
        freeze_start_up()  # numba's compiler among it: collections skip what start-up built
        rules = prepared.layout.decide_rules(s)
        m, stop = self.metrics, self._stop  # each role runs on the one role loop
        edge_role = EdgeRole(s, m, stop, rules, prepared.handover)
        shard_role = ShardRole(s, m, stop)
        gather_role = GatherRole(s, m, stop, prepared.handover)
        if s.cluster.single_stage:
            edge_role.single_stage(SingleStage(s, m, shard_role, gather_role))
        edge = RoleRunner(edge_role, m, stop)

        def overlapped(role: ShardRole | GatherRole) -> Overlapped[Any, Any] | None:
            """The role's commits in flight, unless `cluster.overlap_commits` is off."""
            return Overlapped(role, role.pending, m) if s.cluster.overlap_commits else None

        shard = RoleRunner(shard_role, m, stop, overlapped(shard_role))
        gather = RoleRunner(gather_role, m, stop, overlapped(gather_role))
        runners: list[Any] = [edge, shard, gather]
        self._roles = runners  # (roles: unready() hook for /healthz)
        threads = {  # named by role: a stack dump (py-spy dump) says which role is which
            r.role.name: threading.Thread(
                target=self._guard, args=(r,), name=f"{r.role.name}-role", daemon=True
            )
            for r in runners
        }
        self.consuming = True
        self.ready.set()
        self.metrics.ready.set(1)
        for t in threads.values():
            t.start()
        shutdown.wait_for_stop(self._stop)  # a signal, or a role that failed
        deadline = shutdown.Deadline(s.worker.shutdown_timeout_s)
        shutdown.join(threads, deadline)
        for r in runners:
            shutdown.within(f"closing the {r.role.name} role", r.close, deadline)
        log.info("replica stopped, %.1f s after the stop request", deadline.elapsed())
        if self._conflict is not None:
            raise self._conflict
        if self._failed:
            raise RuntimeError(f"scale-out role(s) failed: {', '.join(self._failed)}")

    def _refuse(self, refusal: StartRefused) -> None:
        """Log the refusal once, export it, stay unready until stopped (a rollout halts)."""
        log.error(
            "settings mismatch, this replica does not start its roles: %s",
            " | ".join(refusal.problems),
        )
        self.metrics.settings_mismatch.set(1)
        self._refused = True
        self.consuming = True  # a signal now stops it the ordinary way
        shutdown.wait_for_stop(self._stop)

    def _guard(self, runner: Any) -> None:
        """A role that dies takes the replica down (the orchestrator restarts it)."""
        try:
            runner.run()
        except BaseException as exc:
            name = type(runner.role).__name__
            if isinstance(exc, InstanceConflict):  # a configuration error: said once, no trace
                log.error("%s", exc)
                self._conflict = exc
            elif isinstance(exc, FatalError) or (
                isinstance(exc, Exception) and retrying_cannot_fix(exc)
            ):
                self._conflict = exc  # an ACL, a setting the broker refuses, a dead letter
                # nothing can publish: `main` says it, without a traceback
            else:
                log.exception("%s failed; stopping the replica", name)
            self._failed.append(name)
            self._stop.set()
