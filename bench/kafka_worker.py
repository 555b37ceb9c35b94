"""The worker under test: `python -m neardup_stream.worker` as a child process, and what it exports.

`WorkerProcess` starts it with its own topics, group and metrics port (log to a file),
waits for `/healthz`, reads `/metrics` and its RSS, and stops it with SIGTERM.
`run_until_committed` times it from ready to all input offsets committed, optionally
sampling its RSS on the way. `bench.kafka_metrics` turns its metrics into numbers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.kafka_broker import REPO_ROOT, CommittedOffset, Topics
from bench.kafka_docs import BenchError, log


@dataclass(frozen=True)
class WorkerTopics:
    """The topics of one worker; outputs are fresh, named after a prefix."""

    input: str
    unique: str
    duplicate: str
    dlq: str
    changelog: str

    @classmethod
    def fresh(
        cls, topics: Topics, prefix: str, input_topic: str, changelog: str = ""
    ) -> WorkerTopics:
        """Outputs (and the changelog, unless given) are left to the worker to create."""
        wt = cls(
            input_topic,
            topics.name(f"{prefix}.unique"),
            topics.name(f"{prefix}.duplicate"),
            topics.name(f"{prefix}.dlq"),
            changelog or topics.name(f"{prefix}.changelog"),
        )
        topics.track(wt.unique, wt.duplicate, wt.dlq, wt.changelog)
        return wt

    @property
    def outputs(self) -> list[str]:
        return [self.unique, self.duplicate, self.dlq, self.changelog]

    def args(self, changelog: bool = True) -> list[str]:
        """The topic flags; `changelog`: with partition scope's `--changelog-topic`."""
        return [
            *("--input-topic", self.input),
            *("--unique-topic", self.unique),
            *("--duplicate-topic", self.duplicate),
            *("--dlq-topic", self.dlq),
            *(("--changelog-topic", self.changelog) if changelog else ()),
        ]


def read_rss(pid: int) -> int | None:
    """VmRSS of a process in bytes (None once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def read_cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process, all threads (None once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class WorkerProcess:
    """`python -m neardup_stream.worker` as a child process with its log in a file."""

    bootstrap: str
    topics: WorkerTopics
    group: str
    log_path: Path
    max_batch: int
    extra_args: Sequence[str] = ()
    wrapper: Sequence[str] = ()  # e.g. a profiler's command line, ending in "--"
    cwd: Path = REPO_ROOT  # the checkout whose neardup_stream/worker/ and neardup_stream/ run
    instance: str = "bench"
    metrics_port: int = 0
    settings_env: Mapping[str, str] = field(default_factory=dict)  # NEARDUP_* for the worker
    proc: subprocess.Popen[bytes] | None = None
    spawned_at: float = 0.0
    _log_file: Any = field(default=None, repr=False)

    @property
    def partition_scope(self) -> bool:
        """Whether the worker runs `--scope partition` (else topic scope, the default)."""
        args = list(self.extra_args)
        given = args[args.index("--scope") + 1] if "--scope" in args else None
        return (given or self.settings_env.get("NEARDUP_WORKER__SCOPE")) == "partition"

    def start(self) -> WorkerProcess:
        if not self.metrics_port:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.metrics_port = int(s.getsockname()[1])
        cmd = [
            *self.wrapper,
            sys.executable,
            "-m",
            "neardup_stream.worker",
            "--bootstrap-servers",
            self.bootstrap,
            *self.topics.args(changelog=self.partition_scope),
            *("--group-id", self.group),
            *("--instance-id", self.instance),
            *("--max-batch", str(self.max_batch)),
            *("--metrics-port", str(self.metrics_port)),
            "--create-input-topic",
            *self.extra_args,
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
        env.update(self.settings_env)  # only the settings the caller chose
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 (kept open for the child)
        self.spawned_at = time.monotonic()
        self.proc = subprocess.Popen(
            cmd, cwd=self.cwd, stdout=self._log_file, stderr=self._log_file, env=env
        )
        return self

    @property
    def pid(self) -> int:
        """The worker's pid (the wrapper's child when there is a wrapper)."""
        assert self.proc is not None
        if not self.wrapper:
            return self.proc.pid
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for stat in Path("/proc").glob("[0-9]*/stat"):
                with contextlib.suppress(OSError, IndexError, ValueError):
                    fields = stat.read_text().rsplit(")", 1)[1].split()
                    if int(fields[1]) == self.proc.pid:
                        return int(stat.parent.name)
            time.sleep(0.1)
        raise BenchError(f"no child of the wrapper {self.wrapper[0]} (pid {self.proc.pid})")

    def http(self, path: str) -> tuple[int, str]:
        url = f"http://127.0.0.1:{self.metrics_port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def check_alive(self) -> None:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise BenchError(f"worker exited with {self.proc.returncode}:\n{self.log_tail()}")

    def wait_ready(self, timeout: float) -> float:
        """Poll /healthz every 50 ms; returns the monotonic time it first answered 200."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            with contextlib.suppress(OSError):
                if self.http("/healthz")[0] == 200:
                    return time.monotonic()
            time.sleep(0.05)
        raise BenchError(f"worker not ready after {timeout:.0f}s:\n{self.log_tail()}")

    def rss_bytes(self) -> int | None:
        return read_rss(self.pid)

    def stop(self, timeout: float = 60) -> None:
        if self.proc is not None and self.proc.poll() is None:
            if self.wrapper:  # the wrapper ends when the worker does
                with contextlib.suppress(OSError, BenchError):
                    os.kill(self.pid, signal.SIGTERM)
            else:
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                log(f"worker ignored SIGTERM for {timeout:.0f}s; killing it")
                self.proc.kill()
                self.proc.wait(10)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def log_tail(self, chars: int = 4000) -> str:
        return f"(log {self.log_path})\n" + self.log_text()[-chars:]


@dataclass
class CommitRun:
    """A worker timed from ready to `n` input offsets committed."""

    docs: int
    seconds: float
    startup_seconds: float
    metrics: str
    samples: list[dict[str, float]]
    cpu_seconds: float | None = None  # the worker's CPU time from ready to done

    @property
    def docs_per_cpu_s(self) -> float | None:
        return self.docs / self.cpu_seconds if self.cpu_seconds else None

    @property
    def docs_per_s(self) -> float:
        return self.docs / self.seconds if self.seconds > 0 else 0.0


def run_until_committed(
    w: WorkerProcess,
    n: int,
    timeout: float,
    sample_every: float = 0.0,
    on_ready: Callable[[WorkerProcess], None] | None = None,
) -> CommitRun:
    """Start `w`, wait for ready, then poll its committed offset every 0.2 s until `n`.

    With `sample_every` > 0, records {t, committed, rss} that often (t from ready). The
    worker is stopped at the end, also on failure. `on_ready` runs right after ready.
    """
    offset = CommittedOffset(w.bootstrap, w.group, w.topics.input)
    samples: list[dict[str, float]] = []
    try:
        w.start()
        ready = w.wait_ready(timeout)
        cpu_ready = read_cpu_seconds(w.pid)
        if on_ready is not None:
            on_ready(w)
        log(f"  worker ready after {ready - w.spawned_at:.1f}s; waiting for {n:,} commits")
        deadline = ready + timeout
        last_log = last_sample = time.monotonic()
        done = offset()
        while done < n:
            now = time.monotonic()
            if now > deadline:
                raise BenchError(f"worker committed {done:,}/{n:,} in {timeout:.0f}s")
            w.check_alive()
            if sample_every and now - last_sample >= sample_every:
                last_sample = now
                rss = w.rss_bytes() or 0
                samples.append({"t": round(now - ready, 2), "committed": done, "rss": rss})
            time.sleep(0.2)
            done = offset()
            if time.monotonic() - last_log > 10:
                last_log = time.monotonic()
                rate = done / (last_log - ready)
                rss_note = f", RSS {samples[-1]['rss'] / 2**20:,.0f} MiB" if samples else ""
                log(f"  worker: {done:,}/{n:,} committed ({rate:,.0f}/s{rss_note})")
        finished = time.monotonic()
        cpu_done = read_cpu_seconds(w.pid)
        if sample_every:
            samples.append(
                {"t": round(finished - ready, 2), "committed": done, "rss": w.rss_bytes() or 0}
            )
        _, metrics = w.http("/metrics")
    finally:
        offset.close()
        w.stop()
    cpu = None if cpu_ready is None or cpu_done is None else cpu_done - cpu_ready
    return CommitRun(done, finished - ready, ready - w.spawned_at, metrics, samples, cpu)
