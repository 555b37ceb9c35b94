"""Start-up times of an installed neardup-stream: what a first and a later run wait for.

For the installation whose interpreter is `--python` (default: this one), each measured in a
fresh child process, `--repeat` times (the median is reported):

* `dedup cold`: `neardup-stream dedup` of 10 documents with an empty numba cache directory
  (a fresh `NUMBA_CACHE_DIR`): what a first run, a new container or a CI job waits for. The
  package's own compiled kernels (built by `setup.py`) are all it can use.
* `dedup warm`: the same command again, with the cache that run left.
* `imports`: inside a warm process, the CLI's own imports, the engine's, and loading the
  compiled kernels (the first call of a batch of two documents: the ahead-of-time module, or
  numba and its cache when the package has none), split (`STAGES`), wall and CPU.
* `--version`: a command that decides nothing, so loads no numba.
* `worker cold`: `neardup-stream worker` against `--bootstrap-servers`, with fresh topics and an
  empty numba cache, from spawn until `/healthz` answers 200 (polled every 20 ms), and until
  the decision of one document produced then is committed (read_committed): the worker
  reports ready before its first batch loads, or compiles, the kernels.

    python -m bench.bench_startup --python .venv/bin/python --bootstrap-servers 127.0.0.1:19092

Wall-clock figures on a shared machine: read them as orders of magnitude, not to the 0.1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import NamedTuple

_TEXTS = [
    "The central bank held interest rates steady on Tuesday, citing cooling inflation.",
    "The central bank held interest rates steady on Tuesday, citing cooling inflation!",
    "The central bank kept interest rates steady on Tuesday, citing cooling inflation.",
    "A storm closed the harbour for two days and delayed the ferries to the islands.",
    "A storm closed the harbor for two days and delayed the ferries to the islands.",
    "近似重复检测是搜索引擎和新闻聚合中的关键步骤。",
    "近似重复检测是搜索引擎和新闻聚合中的关键步骤!",
    "Straße ÉTÉ ﬁnance",
    "ok",
    "The central bank held interest rates steady on Tuesday, citing cooling inflation.",
]

_IMPORTS = """
import sys, time
cpu, wall = [time.process_time()], [time.perf_counter()]
def mark():
    cpu.append(time.process_time())
    wall.append(time.perf_counter())
import neardup_stream.cli
mark()
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.models import Document
dedup = Deduplicator()
mark()
dedup.check_batch([Document(id="a", text="one text"), Document(id="b", text="one text!")])
mark()
if "numba" in sys.modules:
    print("numba was imported: the kernels ran on the JIT", file=sys.stderr)
print(" ".join(f"{w1 - w0:.4f}:{c1 - c0:.4f}" for w0, w1, c0, c1 in zip(wall, wall[1:], cpu, cpu[1:])))
"""

STAGES = (
    "import the CLI (argparse, pydantic, settings; no numba)",
    "import the engine (numpy, the kernels' modules; no numba)",
    "load the kernels (ahead of time, else numba's JIT) + a first batch",
)


def _env(numba_cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEARDUP_", "NUMBA_"))}
    env["NUMBA_CACHE_DIR"] = str(numba_cache)
    return env


class Timing(NamedTuple):
    wall: float  # seconds
    cpu: float  # user + system seconds of the child (less sensitive to a busy machine)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(cmd: list[str], env: dict[str, str], cwd: Path) -> Timing:
    start, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    timing = Timing(time.perf_counter() - start, _children_cpu() - cpu)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return timing


def dedup_times(cli: Path, work: Path) -> tuple[Timing, Timing]:
    """(cold, warm) times of `dedup` of 10 documents, one fresh cache directory."""
    docs = work / "docs.jsonl"
    docs.write_text(
        "".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(_TEXTS))
    )
    cache = Path(tempfile.mkdtemp(dir=work, prefix="numba-"))
    cmd = [str(cli), "dedup", "--input", str(docs), "--output", str(work / "out.jsonl")]
    cold = _timed(cmd, _env(cache), work)
    warm = _timed(cmd, _env(cache), work)
    shutil.rmtree(cache)
    return cold, warm


def import_times(python: Path, work: Path) -> list[Timing]:
    """Per stage of `STAGES` (wall, CPU) seconds in a warm process."""
    cache = Path(tempfile.mkdtemp(dir=work, prefix="numba-"))
    _timed([str(python), "-c", _IMPORTS], _env(cache), work)  # fills the cache
    out = subprocess.run(
        [str(python), "-c", _IMPORTS], env=_env(cache), cwd=work, capture_output=True, text=True
    )
    shutil.rmtree(cache)
    pairs = (field.split(":") for field in out.stdout.split())
    return [Timing(float(w), float(c)) for w, c in pairs]


def version_time(cli: Path, work: Path) -> Timing:
    """`neardup-stream --version`: a command that loads no kernels."""
    return _timed([str(cli), "--version"], _env(work / "numba-unused"), work)


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
            return bool(r.status == 200)
    except (OSError, urllib.error.HTTPError):
        return False


class WorkerStart(NamedTuple):
    ready: float  # seconds from spawn to /healthz 200
    first_decision: float  # seconds from spawn to the first document's decision committed


def _first_decision(bootstrap: str, tag: str, deadline: float) -> None:
    """Produce one document to the worker's input and wait for its committed decision."""
    from kafka import KafkaConsumer, KafkaProducer

    consumer = KafkaConsumer(
        f"{tag}.unique",
        bootstrap_servers=bootstrap,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
    )
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        doc = {"id": "first", "text": "The first document a new worker decides."}
        producer.send(f"{tag}.in", json.dumps(doc).encode()).get(timeout=30)
        while not any(consumer.poll(timeout_ms=200).values()):
            if time.perf_counter() > deadline:
                raise SystemExit(f"no decision on {tag}.unique in time")
    finally:
        producer.close()
        consumer.close()


def worker_start(cli: Path, work: Path, bootstrap: str, timeout: float = 180.0) -> WorkerStart:
    """`neardup-stream worker` with an empty numba cache and fresh topics: seconds from spawn
    to /healthz 200, and to its first decision committed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    tag = f"startup-{uuid.uuid4().hex[:8]}"
    cmd = [
        str(cli),
        "worker",
        *("--bootstrap-servers", bootstrap),
        *("--input-topic", f"{tag}.in", "--unique-topic", f"{tag}.unique"),
        *("--duplicate-topic", f"{tag}.dup", "--dlq-topic", f"{tag}.dlq"),
        *("--group-id", tag),
        *("--instance-id", tag, "--metrics-port", str(port)),
    ]
    cache = Path(tempfile.mkdtemp(dir=work, prefix="numba-"))
    log = (work / f"{tag}.log").open("wb")
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=_env(cache), cwd=work, stdout=log, stderr=log)
    try:
        while not _healthy(port):
            if proc.poll() is not None:
                raise SystemExit(f"worker exited with {proc.returncode}; log {log.name}")
            if time.perf_counter() - start > timeout:
                raise SystemExit(f"worker not ready within {timeout:.0f} s; log {log.name}")
            time.sleep(0.02)  # a polling interval, not synchronisation
        ready = time.perf_counter() - start
        _first_decision(bootstrap, tag, start + timeout)
        return WorkerStart(ready, time.perf_counter() - start)
    finally:
        proc.terminate()
        proc.wait(60)
        log.close()
        shutil.rmtree(cache)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--python", type=Path, default=Path(sys.executable))
    p.add_argument("--bootstrap-servers", default="", help="also time the worker (needs Kafka)")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    cli = args.python.parent / "neardup-stream"
    rows: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        work = Path(tmp)
        for _ in range(args.repeat):
            cold, warm = dedup_times(cli, work)
            rows.setdefault("dedup 10 docs, cold cache", []).append(cold.wall)
            rows.setdefault("dedup 10 docs, warm cache", []).append(warm.wall)
            cpu.setdefault("dedup 10 docs, cold cache", []).append(cold.cpu)
            cpu.setdefault("dedup 10 docs, warm cache", []).append(warm.cpu)
            for stage, timing in zip(STAGES, import_times(args.python, work), strict=True):
                rows.setdefault(stage, []).append(timing.wall)
                cpu.setdefault(stage, []).append(timing.cpu)
            version = version_time(cli, work)
            rows.setdefault("neardup-stream --version", []).append(version.wall)
            cpu.setdefault("neardup-stream --version", []).append(version.cpu)
            if args.bootstrap_servers:
                started = worker_start(cli, work, args.bootstrap_servers)
                rows.setdefault("worker ready, cold cache", []).append(started.ready)
                rows.setdefault("worker's first decision, cold cache", []).append(
                    started.first_decision
                )
    print(f"| measure (median of {args.repeat}) | wall s | all runs | CPU s |")
    print("|---|---|---|---|")
    for name, values in rows.items():
        runs = ", ".join(f"{v:.2f}" for v in values)
        cpu_s = f"{statistics.median(cpu[name]):.2f}" if name in cpu else ""
        print(f"| {name} | {statistics.median(values):.2f} | {runs} | {cpu_s} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
