"""CPU seconds by role: `neardup_role_cpu_seconds_total{role}`, from the threads' CPU times.

A `--cluster` replica runs its roles as threads of one process, and each role's Kafka
clients run I/O threads of their own; process CPU alone cannot say which role a replica
spends its core on, so which one saturates first (docs/benchmarks.md). Every
thread is attributed by its name:

* a role's loop is `<role>-role`, its restores and commits `<role>-restore`,
  `<role>-commit`;
* its Kafka clients identify as `<client_id>-<role>` (`runtime.role.role_settings`), and
  kafka-python names their threads after the client id (`kafka-io-<client id>`,
  `<client id>-network-thread`).

So the role is the last of `edge`, `shard(s)`, `gather` among the name's `-`-separated words
(the role comes after whatever the client id holds); everything else (the main thread, the
metrics listener, the single worker's threads) is `other`. Times are read from
`/proc/self/task/<tid>/stat` at each scrape; on a system without it the metric is empty.
A thread that ended keeps the CPU it had at the last scrape that saw it, so the counters
never go back (its last moments are not counted).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

ROLES = {"edge": "edge", "shard": "shard", "shards": "shard", "gather": "gather"}
OTHER = "other"
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def role_of(thread_name: str) -> str:
    """The role a thread works for, by its name (see the module docstring)."""
    for word in reversed(thread_name.replace("_", "-").split("-")):
        if word in ROLES:
            return ROLES[word]
    return OTHER


def thread_cpu_seconds(native_id: int) -> float | None:
    """User + system CPU seconds of this process's thread `native_id` (None: not readable)."""
    try:
        with open(f"/proc/self/task/{native_id}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # the name field may hold spaces and parentheses: the fields follow its last ')'
    fields = stat[stat.rindex(b")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime: fields 14 and 15


class RoleCpu(Collector):
    """The `neardup_role_cpu_seconds_total` collector of one process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[int, tuple[str, float]] = {}  # native id: (role, seconds last seen)
        self._ended: dict[str, float] = {}  # role: seconds of its threads that ended

    def totals(self) -> dict[str, float]:
        """CPU seconds so far by role (only roles with a thread seen)."""
        with self._lock:
            seen: dict[int, tuple[str, float]] = {}
            for t in threading.enumerate():
                if t.native_id is None:
                    continue
                seconds = thread_cpu_seconds(t.native_id)
                if seconds is not None:
                    seen[t.native_id] = (role_of(t.name), seconds)
            for tid, (role, seconds) in self._live.items():
                now = seen.get(tid)
                if now is None or now[0] != role or now[1] < seconds:  # ended (id reused)
                    self._ended[role] = self._ended.get(role, 0.0) + seconds
            self._live = seen
            totals = dict(self._ended)
            for role, seconds in seen.values():
                totals[role] = totals.get(role, 0.0) + seconds
            return totals

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "neardup_role_cpu_seconds",
            "CPU seconds (user + system) of the threads of each role, its Kafka clients' "
            "included; other: every thread of no role",
            labels=["role"],
        )
        for role, seconds in sorted(self.totals().items()):
            family.add_metric([role], seconds)
        yield family
