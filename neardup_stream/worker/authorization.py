"""ACL denials: the broker's authorizer refusing this worker an operation, as a
configuration error.

kafka-python raises an `AuthorizationError` (topic, group, transactional id, cluster) when
the broker denies a request. Retrying cannot grant an ACL: before, a denied transactional id
crashed the start-up with a traceback, and a denied topic or group was retried for good,
the worker looking alive while every transaction failed. `denied` finds the denial in an
exception (or the exceptions it was raised from, or a record's delivery) and words it with
what was denied and which ACL grants it; `retry` stops retrying at one, and the worker
exits with it, `EX_CONFIG`, as for wrong credentials (`security_errors`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafka.errors import (
    AuthorizationError,
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)

from neardup_stream.worker.security_errors import SecurityFailure, raised_from
from neardup_stream.worker.settings import Settings

DOCS = "docs/secured-kafka.md#acls"


class AuthorizationFailure(SecurityFailure):
    """The broker's ACLs deny this worker an operation it needs."""


def denial_in(exc: BaseException | None) -> AuthorizationError | None:
    """The ACL denial in `exc` or the exceptions it was raised from, if any."""
    return next((e for e in raised_from(exc) if isinstance(e, AuthorizationError)), None)


def denial_among(error: BaseException, futures: Iterable[Any]) -> AuthorizationError | None:
    """The denial that failed a transaction: in its error, or in a record's delivery (the
    commit itself may fail only with kafka-python's "in an error state")."""
    found = denial_in(error)
    if found is not None:
        return found
    for f in futures:
        if f.is_done and isinstance(f.exception, AuthorizationError):
            return f.exception
    return None


def denied(exc: BaseException | None, settings: Settings) -> AuthorizationFailure | None:
    """The failure to stop with if `exc` holds an ACL denial, worded for `settings`."""
    found = denial_in(exc)
    if found is None:
        return None
    who = f"the Kafka broker at {settings.kafka.bootstrap_servers} denies this worker"
    w, t = settings.worker, settings.topics
    # a replica's roles: group `<group>-<role>`, transactional id `<group>-<role>-<instance>`
    cluster = settings.topic_scope
    if isinstance(found, TransactionalIdAuthorizationFailedError):
        ids = (
            f"'{w.group_id}-<edge|shards|gather>-{w.instance_id}'"
            if cluster
            else repr(w.transactional_id)
        )
        what = (
            f"its transactional id {ids}: grant WRITE and DESCRIBE on TransactionalId"
            f" {ids}, or on the prefix '{w.group_id}-' (PREFIXED)"
        )
    elif isinstance(found, GroupAuthorizationFailedError):
        groups = f"'{w.group_id}-<edge|shards|gather>'" if cluster else repr(w.group_id)
        what = f"its consumer group {groups}: grant READ and DESCRIBE on Group {groups}" + (
            f", or on the prefix '{w.group_id}-' (PREFIXED)" if cluster else ""
        )
    elif isinstance(found, TopicAuthorizationFailedError):
        named = ", ".join(sorted(_names(found.args))) or "not named by the broker"
        what = (
            f"a topic ({named}): grant READ on the input {t.input!r}; WRITE and DESCRIBE on"
            f" {t.unique!r}, {t.duplicate!r}, {t.dlq!r}; READ, WRITE and DESCRIBE on the"
            " changelog and the worker's internal topics; CREATE, or create them first"
        )
    elif isinstance(found, ClusterAuthorizationFailedError):
        what = (
            "a cluster operation: grant IDEMPOTENT_WRITE on the Cluster (the producers are"
            " idempotent), and CREATE unless the topics exist"
        )
    else:
        what = f"an operation ({type(found).__name__}: {found})"
    return AuthorizationFailure(f"{who} {what}. See {DOCS}.")


def _names(args: Iterable[Any]) -> Iterable[str]:
    """The topic names kafka-python put in a denial (strings, or sets of them)."""
    for a in args:
        if isinstance(a, (set, frozenset, list, tuple)):
            yield from (str(x) for x in a)
        elif a:
            yield str(a)
