"""The Kafka worker against a real broker: throughput, latency, restore, malformed storm, soak.

One run measures the selected sections and prints a table; the numbers also go to
``bench/results/kafka.json`` (``--out``). Each section is its own module:

* ``throughput`` (`bench.kafka_throughput`): the worker with exactly-once against the bare
  transactional pipe (and the plain one) on the same pre-loaded topic, as a ratio (goal
  >= 0.7); ``--profile`` adds a py-spy profile of one more worker run;
* ``latency`` (`bench.kafka_latency`): produce -> visible at half the worker's maximum rate;
* ``restore`` (`bench.kafka_restore`): a ``--restore-docs`` changelog (default 1M; goal
  < 60 s) replayed by the worker process and by ``restore_partitions`` in-process;
* ``storm`` (`bench.kafka_storm`): valid documents mixed with malformed messages
  (``--storm-fractions``), docs/s against a clean run;
* ``soak`` (`bench.kafka_soak`): the worker's RSS over ``--soak-docs`` documents with
  ``--max-docs``; it must stay flat once the window is full.

Documents are the evaluation corpus's texts, reused in passes (`bench.kafka_docs`); setup
work (pre-loading, fingerprinting) is reported but not part of any figure. kafka-python's
throughput is bounded by CRC-32C: without the optional C extension ``crc32c`` it checksums
every record batch in pure Python, which the table header states.

Usage::

    KAFKA_PORT=29092 KAFKA_DATA_DIR=/tmp/bench-kafka python -m bench.bench_kafka \\
        --sections throughput,restore,storm,soak [--docs 50000] [--repeat 3] [--profile]
    python -m bench.bench_kafka --bootstrap-servers 127.0.0.1:29092 --sections soak

Without ``--bootstrap-servers`` the local broker is started with ``deploy/local/kafka.sh
start`` (port from ``KAFKA_PORT``) and stopped at the end if this run started it. Topics
created by the run are deleted at the end unless ``--keep-topics``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.kafka_broker import REPO_ROOT, Broker, Topics, start_local_broker
from bench.kafka_docs import BenchError, DocSource, load_texts, log
from bench.kafka_latency import section_latency
from bench.kafka_report import environment, table
from bench.kafka_restore import section_restore
from bench.kafka_soak import section_soak
from bench.kafka_storm import section_storm
from bench.kafka_throughput import section_throughput

RESULTS_PATH = REPO_ROOT / "bench" / "results" / "kafka.json"
SECTIONS = ("throughput", "latency", "restore", "storm", "soak")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.bench_kafka", description=__doc__.splitlines()[0]
    )
    p.add_argument(
        "--sections",
        default=",".join(SECTIONS),
        help=f"comma-separated subset of {','.join(SECTIONS)}",
    )
    p.add_argument("--bootstrap-servers", help="use this broker (default: start the local one)")
    p.add_argument("--max-batch", type=int, default=500, help="records per batch/transaction")
    p.add_argument(
        "--repeat", type=int, default=1, help="rounds of throughput and storm; medians reported"
    )
    g = p.add_argument_group("throughput")
    g.add_argument("--docs", type=int, default=50_000, help="documents for throughput")
    g.add_argument("--profile", action="store_true", help="one more worker run under py-spy")
    g.add_argument(
        "--variant",
        action="append",
        metavar="NAME=PATH",
        help="also run the worker of the checkout PATH each round (repeatable)",
    )
    g.add_argument("--profile-rate", type=int, default=100, help="py-spy samples per second")
    g = p.add_argument_group("latency")
    g.add_argument("--latency-seconds", type=float, default=25.0)
    g.add_argument("--latency-rate", type=float, help="docs/s (default: 0.5 x worker max)")
    g = p.add_argument_group("restore")
    g.add_argument("--restore-docs", type=int, default=1_000_000, help="changelog records")
    g.add_argument("--pool-size", type=int, default=20_000, help="texts fingerprinted")
    g.add_argument("--skip-inprocess", action="store_true", help="no in-process restore timing")
    g = p.add_argument_group("storm")
    g.add_argument("--storm-docs", type=int, default=20_000, help="valid documents per mix")
    g.add_argument(
        "--storm-fractions", default="0.1,0.5", help="malformed share of each mix (clean added)"
    )
    g = p.add_argument_group("soak")
    g.add_argument("--soak-docs", type=int, default=1_000_000, help="documents streamed")
    g.add_argument("--soak-max-docs", type=int, default=100_000, help="the worker's --max-docs")
    g.add_argument("--soak-sample-s", type=float, default=2.0, help="RSS sampling period")
    g.add_argument(
        "--soak-flat-after", type=int, help="fit the RSS slope from here (default 2 x max-docs)"
    )
    g.add_argument("--soak-timeout", type=float, default=3600.0, help="seconds for the soak")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per waiting step")
    p.add_argument("--out", type=Path, default=RESULTS_PATH, help="JSON results file")
    p.add_argument("--log-dir", type=Path, help="worker logs (default: a new temp dir)")
    p.add_argument("--keep-topics", action="store_true", help="do not delete this run's topics")
    return p


Section = Callable[[str, Topics, DocSource, argparse.Namespace], dict]


def run(args: argparse.Namespace, bootstrap: str) -> dict[str, Any]:
    """The selected sections against `bootstrap`; this run's topics are deleted afterwards."""
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    tag = f"bk{time.strftime('%m%d%H%M%S')}{random.randrange(1000):03d}"
    texts, source = load_texts(max(args.docs, args.pool_size, args.storm_docs))
    env = environment()
    if env["crc32c_bench"] != env["crc32c_worker"]:
        log(f"warning: CRC-32C is {env['crc32c_bench']} here, {env['crc32c_worker']} in workers")
    src = DocSource(texts)
    results: dict[str, Any] = {
        "config": {
            **{k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "bootstrap_servers": bootstrap,
            "sections": sections,
            "run_tag": tag,
            "texts": f"{source} ({len(texts):,} texts, reused in passes)",
        },
        "environment": env,
        "load_average": {},
    }
    runners: dict[str, Section] = {
        "throughput": section_throughput,
        "restore": section_restore,
        "storm": section_storm,
        "soak": section_soak,
    }
    topics = Topics(bootstrap, tag)
    try:
        for name in sections:
            started = time.monotonic()
            load_before = os.getloadavg()[0]
            if name == "latency":
                rate = args.latency_rate
                if rate is None:
                    if "throughput" not in results:
                        raise BenchError("--latency-rate is needed without the throughput section")
                    rate = 0.5 * results["throughput"]["worker"]["docs_per_s"]
                results[name] = section_latency(bootstrap, topics, src, rate, args)
            else:
                results[name] = runners[name](bootstrap, topics, src, args)
            results[name]["section_seconds"] = round(time.monotonic() - started, 1)
            results["load_average"][name] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
            _write(args.out, results)  # partial results survive a later failure
    finally:
        if not args.keep_topics:
            topics.delete_all()
        topics.close()
    after = environment()
    changed = [
        f"{k}: {v} -> {after.get(k)}"
        for k, v in results["environment"].items()
        if after.get(k) != v
    ]
    if changed:
        results["warnings"] = [f"the environment changed during the run ({'; '.join(changed)})"]
    return results


def _write(path: Path, results: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    unknown = {s.strip() for s in args.sections.split(",")} - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}")
    args.log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="bench-kafka-"))
    args.log_dir.mkdir(parents=True, exist_ok=True)
    # SIGTERM -> KeyboardInterrupt, so the finally blocks stop workers and the broker.
    signal.signal(signal.SIGTERM, _interrupt)
    started = time.monotonic()
    try:
        broker = Broker(args.bootstrap_servers) if args.bootstrap_servers else start_local_broker()
    except (BenchError, subprocess.TimeoutExpired) as exc:
        print(f"bench_kafka: {exc}", file=sys.stderr)
        return 1
    log(f"broker {broker.bootstrap}; worker logs in {args.log_dir}")
    try:
        results = run(args, broker.bootstrap)
    except BenchError as exc:
        print(f"bench_kafka: {exc}", file=sys.stderr)
        return 1
    finally:
        broker.stop_if_started()
    results["total_seconds"] = round(time.monotonic() - started, 1)
    _write(args.out, results)
    env = results["environment"]
    print(
        f"\nneardup-stream on Kafka: {', '.join(results['config']['sections'])}; "
        f"broker {broker.bootstrap}; kafka-python {env['kafka-python']} (CRC-32C: "
        f"{env['crc32c_bench']} here, {env['crc32c_worker']} in the worker); {env['cpus']} CPUs; "
        f"load average per section {results['load_average']}; "
        f"code {env['git_commit']}{' + local changes' if env['code_diff_sha1'] else ''}; "
        f"texts: {results['config']['texts']}"
    )
    print(table(results))
    for warning in results.get("warnings", []):
        print(f"WARNING: {warning}")
    print(f"total {results['total_seconds']:.0f} s; results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
