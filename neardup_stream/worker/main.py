"""`neardup-stream worker` / `python -m neardup_stream.worker`: settings, logging, metrics, signals, run.

Settings come from the environment (`NEARDUP_...`, see `neardup_stream.worker.settings`); flags given on
the command line override them. The effective configuration is logged at start-up
with secrets masked.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry
from pydantic import ValidationError
from pydantic_settings import SettingsError

from neardup_stream import __version__
from neardup_stream.allocator import keep_freed_memory
from neardup_stream.options import add_engine_flags, add_input_flags, engine_overrides
from neardup_stream.settings_errors import (
    format_problems,
    problems,
    unknown_variables,
    unparsable,
)
from neardup_stream.settings_fields import field_info, given_flags
from neardup_stream.worker.authorization import denied
from neardup_stream.worker.loop import Worker
from neardup_stream.worker.metrics import MetricsServer, build_metrics
from neardup_stream.worker.reachability import announce_unreachable, throttle_kafka_connection_logs
from neardup_stream.worker.refusals import refused
from neardup_stream.worker.rejections import FatalError
from neardup_stream.worker.retry import EXIT_UNAVAILABLE, BrokerUnavailable
from neardup_stream.worker.runtime.membership import InstanceConflict
from neardup_stream.worker.security_errors import EXIT_CONFIG, SecurityFailure
from neardup_stream.worker.settings import Settings, given_overrides
from neardup_stream.worker.topics import TopicsUnusable

if TYPE_CHECKING:
    from neardup_stream.worker.cluster.replica import Replica

log = logging.getLogger("neardup_stream.worker")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="neardup-stream worker", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"neardup-stream {__version__}")
    p.add_argument("--bootstrap-servers", help="Kafka bootstrap servers (default localhost:9092)")
    p.add_argument("--input-topic", help="documents to deduplicate (default documents)")
    p.add_argument(
        "--create-input-topic",
        action="store_true",
        default=None,
        help="create the input topic if it is missing (default: refuse to start)",
    )
    p.add_argument("--unique-topic", help="unique documents (default documents.unique)")
    p.add_argument("--duplicate-topic", help="duplicate decisions (default documents.duplicate)")
    p.add_argument("--dlq-topic", help="dead letters (default documents.dlq)")
    p.add_argument(
        "--changelog-topic",
        help="index changelog of --scope partition (default <group id>.changelog)",
    )
    p.add_argument("--partitions", type=int, help="partitions for topics created on start")
    p.add_argument("--group-id", help="consumer group (default neardup)")
    p.add_argument(
        "--give-up-after",
        type=float,
        metavar="SECONDS",
        help="exit 69 if the broker is still unusable this long after start (default: retry)",
    )
    p.add_argument("--instance-id", help="stable id of this replica (default hostname)")
    batch = field_info(Settings, ("worker", "max_batch")).default
    p.add_argument("--max-batch", type=int, help=f"inputs per poll/transaction (default {batch})")
    p.add_argument(
        "--snapshot-dir",
        help="--scope partition: keep a local index snapshot here (faster restores)",
    )
    p.add_argument("--max-message-bytes", type=int, help="larger inputs go to the DLQ")
    p.add_argument(
        "--dlq-payload-bytes", type=int, help="bytes of a bad input kept in its dead letter"
    )
    p.add_argument(
        "--at-least-once",
        action="store_true",
        default=None,
        help="no transactions: idempotent replays instead of exactly-once",
    )
    p.add_argument(
        "--scope",
        choices=["topic", "partition"],
        help="what one index covers: the whole input topic, shared by the replicas of the "
        "group (default), or each input partition on its own",
    )
    # 0.2's scale-out switch: topic scope is the default now (a deprecation is logged)
    p.add_argument("--cluster", action="store_true", default=None, help=argparse.SUPPRESS)
    p.add_argument("--log-partitions", type=int, help="fingerprint-log partitions (topic scope)")
    p.add_argument(
        "--handover-from",
        help="group id of the stopped previous generation (scale-out settings change, "
        "docs/operations/settings-change.md)",
    )
    p.add_argument("--domain-header", help="message header naming the dedup domain")
    p.add_argument("--domain-key-separator", help="the domain is the key up to this separator")
    p.add_argument("--metrics-host", help="metrics listener address (default 127.0.0.1)")
    p.add_argument("--metrics-port", type=int, help="metrics listener port (default 9108)")
    p.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    add_engine_flags(p)
    add_input_flags(p)
    return p


def flag_overrides(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The `with_overrides` sections the flags in `args` set (None: not given)."""
    overrides: dict[str, dict[str, Any]] = {
        "kafka": {
            "bootstrap_servers": args.bootstrap_servers,
            "give_up_after_s": args.give_up_after,
        },
        "topics": {
            "input": args.input_topic,
            "create_input": args.create_input_topic,
            "unique": args.unique_topic,
            "duplicate": args.duplicate_topic,
            "dlq": args.dlq_topic,
            "changelog": args.changelog_topic,
            "partitions": args.partitions,
        },
        "worker": {
            "group_id": args.group_id,
            "scope": args.scope,
            "instance_id": args.instance_id,
            "max_batch": args.max_batch,
            "max_message_bytes": args.max_message_bytes,
            "dlq_payload_bytes": args.dlq_payload_bytes,
            "snapshot_dir": args.snapshot_dir,
            "exactly_once": False if args.at_least_once else None,
        },
        "cluster": {
            "enabled": args.cluster,
            "log_partitions": args.log_partitions,
            "handover_from": args.handover_from,
        },
        "metrics": {"host": args.metrics_host, "port": args.metrics_port},
        **engine_overrides(args),
    }
    overrides["input"].update(
        domain_header=args.domain_header, domain_key_separator=args.domain_key_separator
    )
    return overrides


def settings_from_args(args: argparse.Namespace, base: Settings | None = None) -> Settings:
    """Environment settings with the given flags applied on top (or `base`'s).

    Without `base`, the flags and the environment are validated together, once: a check
    across settings (`--scope partition` beside `NEARDUP_WORKER__SNAPSHOT_DIR`) sees the
    flag, not the environment alone first (which refused what the flag allows)."""
    overrides = flag_overrides(args)
    if base is None:
        given: dict[str, Any] = given_overrides(overrides)
        settings = Settings(**given)
    else:
        settings = base.with_overrides(overrides)
    if args.log_level:
        settings = settings.model_copy(update={"log_level": args.log_level})
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    found = unknown_variables(Settings, os.environ)  # refused like a misspelt field
    try:
        settings = settings_from_args(args)
    except ValidationError as exc:
        found += problems(exc, Settings, given_flags(parser, flag_overrides, args), os.environ)
    except SettingsError as exc:  # e.g. a section given as invalid JSON
        found = [unparsable(exc, os.environ)]
    if found:
        sys.stderr.write(f"{parser.prog}: error: {format_problems(found)}\n")
        return 2
    logging.basicConfig(
        level=settings.log_level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("kafka").setLevel(
        max(logging.WARNING, logging.getLevelName(settings.log_level))
    )
    # kafka-python 3 warns whenever one of its I/O tasks runs > 100 ms, which a busy machine
    # does all the time; the worker's own metrics report slowness instead.
    logging.getLogger("kafka.net.selector").setLevel(logging.ERROR)
    throttle_kafka_connection_logs()
    log.info("effective settings: %s", json.dumps(settings.redacted(), sort_keys=True))
    for note in (*settings.deprecated, *settings.unused):
        log.warning("%s", note)
    keep_freed_memory()
    registry = CollectorRegistry()
    metrics = build_metrics(registry)
    worker: Worker | Replica
    if settings.topic_scope:
        # imports numba: only a replica needs it
        from neardup_stream.worker.cluster.replica import Replica

        worker = Replica(settings, metrics)
        unready = worker.unready
    else:
        worker = Worker(settings, metrics)
        unready = worker.unready
    server = None
    if settings.metrics.enabled:
        m = settings.metrics
        try:
            server = MetricsServer(registry, unready, m.host, m.port).start()
        except OSError as exc:  # most often a second worker on this host, with the defaults
            log.error(
                "metrics.port=%d: cannot listen on %s (%s). If another worker runs on this "
                "host, give this one its own --metrics-port (NEARDUP_METRICS__PORT; 0 picks "
                "a free port) and its own --instance-id (NEARDUP_WORKER__INSTANCE_ID)",
                m.port,
                m.host,
                exc.strerror or exc,
            )
            return EXIT_CONFIG
        log.info("metrics on http://%s:%d/metrics", m.host, server.port)

    def on_signal(signum: int, _frame: object) -> None:
        if not worker.consuming:  # still connecting: nothing to finish
            with contextlib.suppress(Exception):  # a write it interrupted may refuse another
                log.info(
                    "%s while starting: nothing to finish, exiting", signal.Signals(signum).name
                )
                sys.stderr.flush()
            # Not `raise SystemExit`: a handler runs wherever the main thread is, and an
            # exception raised inside a C callback (numba's compiler, during the warm-up) is
            # printed and dropped, so the start-up went on and the SIGTERM was lost (CI).
            os._exit(128 + signum)
        worker.request_stop()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    # `kill -USR1 <pid>`: every thread's stack on stderr (a stuck role shows where it waits)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    announce_unreachable(settings.kafka.bootstrap_servers)
    try:
        worker.run()
    except (SecurityFailure, InstanceConflict, TopicsUnusable, FatalError) as exc:
        log.error("%s", exc)  # configuration: said once, no traceback
        return EXIT_CONFIG
    except BrokerUnavailable as exc:
        log.error("%s", exc)
        return EXIT_UNAVAILABLE
    except Exception as exc:
        # an ACL the broker enforces, a setting it refuses: configuration too
        failure = denied(exc, settings) or refused(exc, settings)
        if failure is None:
            raise
        log.error("%s", failure)
        return EXIT_CONFIG
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
