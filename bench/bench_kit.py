"""The testing kit's speed: the driver on the demo sample, and the in-process worker's start.

* ``driver``: a fresh `neardup_stream.worker.testing.Driver` decides the demo sample (460 documents and the 2
  malformed messages the demo produces, keyed as the demo keys them) in one `send_many`;
  goal <= 1 s. A first run warms numba's cache and is not counted.
* ``ready``: what the `neardup_worker` fixture does before a test runs: an embedded worker
  on fresh topics and a fresh group (`BrokerWorker.start`) until it is ready (topics created,
  group joined, every partition's index restored); goal <= 2 s with a warm cache. Also
  reported: one whole fixture cycle (start, 4 documents decided, stop, topics deleted).

Usage::

    python -m bench.bench_kit --bootstrap-servers 127.0.0.1:19092 [--repeat 5]

Without ``--bootstrap-servers`` only the driver is measured. Results go to
``bench/results/kit.json`` (``--out``). Figures are medians; min and max are printed too.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from neardup_stream.worker.settings import Settings
from neardup_stream.worker.testing import Driver, InputMessage

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "deploy" / "local" / "demo" / "sample.jsonl"


def demo_messages() -> list[InputMessage]:
    lines = [line for line in SAMPLE.read_bytes().splitlines() if line.strip()]
    out = []
    for n, line in enumerate(lines, 1):
        try:
            key = str(json.loads(line)["id"]).encode()
        except (ValueError, KeyError, TypeError):
            key = f"line-{n}".encode()
        out.append(InputMessage(line, key))
    return out


def timed(action: Callable[[], object], repeat: int) -> dict[str, float]:
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        runs.append(time.perf_counter() - started)
    return {"median_s": statistics.median(runs), "min_s": min(runs), "max_s": max(runs)}


def bench_driver(repeat: int) -> dict[str, float]:
    messages = demo_messages()
    Driver(Settings()).send_many(messages)  # warm-up: numba compiles or loads its cache
    result = timed(lambda: Driver(Settings()).send_many(messages), repeat)
    return {**result, "messages": len(messages)}


def bench_worker(bootstrap: str, repeat: int) -> dict[str, dict[str, float]]:
    from neardup_stream.worker.testing.broker import BrokerWorker, fresh_settings

    def ready() -> None:
        settings = fresh_settings(Settings(), bootstrap, "bench-kit")
        started = time.perf_counter()
        w = BrokerWorker.start(settings)
        ready_s.append(time.perf_counter() - started)
        w.send_documents([{"id": f"d{i}", "text": f"document number {i} " * 20} for i in range(4)])
        w.wait_for(4)
        w.close()

    ready_s: list[float] = []
    BrokerWorker.start(fresh_settings(Settings(), bootstrap, "bench-kit-warm")).close()
    cycle = timed(ready, repeat)
    return {
        "ready": {
            "median_s": statistics.median(ready_s),
            "min_s": min(ready_s),
            "max_s": max(ready_s),
        },
        "fixture_cycle": cycle,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap-servers", help="a broker for the in-process worker figures")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "kit.json")
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("kafka.net.selector").setLevel(
        logging.ERROR
    )  # as neardup_stream.worker.main does
    results: dict[str, object] = {"driver_demo_sample": bench_driver(args.repeat)}
    if args.bootstrap_servers:
        results.update(bench_worker(args.bootstrap_servers, args.repeat))
    for name, figures in results.items():
        assert isinstance(figures, dict)
        if "median_s" in figures:
            print(f"{name:<20} {figures['median_s']:.3f} s", end=" ")
            print(f"(min {figures['min_s']:.3f}, max {figures['max_s']:.3f})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
