"""The run's environment (versions, code state) and the side-by-side table of the results."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
from typing import Any

from bench.kafka_broker import REPO_ROOT

_CRC_PROBE = "from kafka.record import util; print('C' if getattr(util, 'crc32c_c', None) else 'pure Python')"


def _crc_impl(child: bool) -> str:
    """kafka-python's CRC-32C: in this process, or in a fresh one (as the worker gets it)."""
    if not child:
        from kafka.record import util

        return "C" if getattr(util, "crc32c_c", None) else "pure Python"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    probe = subprocess.run(
        [sys.executable, "-c", _CRC_PROBE],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return probe.stdout.strip() or f"unknown ({probe.stderr.strip()[-200:]})"


def _git(*cmd: str) -> str:
    try:
        done = subprocess.run(
            ["git", *cmd], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return ""
    return done.stdout.strip()


def environment() -> dict[str, Any]:
    """Versions and the state of the code under test (checked again at the end of the run)."""
    from importlib.metadata import PackageNotFoundError, version

    diff = _git("diff", "HEAD", "--", "neardup_stream", "worker")
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "crc32c_bench": _crc_impl(child=False),
        "crc32c_worker": _crc_impl(child=True),
        "git_commit": _git("rev-parse", "--short", "HEAD"),
        "code_diff_sha1": hashlib.sha1(diff.encode()).hexdigest()[:12] if diff else None,
    }
    for pkg in ("kafka-python", "crc32c", "numpy", "numba"):
        try:
            env[pkg] = version(pkg)
        except PackageNotFoundError:
            env[pkg] = "not installed"
    return env


def _fmt(value: float | None, spec: str = ",.0f", unit: str = "") -> str:
    return "n/a" if value is None else f"{value:{spec}}{unit}"


Row = tuple[str, str, str]


def _throughput_rows(t: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for key, label in (
        ("pipe_plain", "bare pipe, plain (idempotent, commit per batch)"),
        ("pipe_transactional", "bare pipe, transactional (1 txn per batch)"),
        ("worker", "worker (python -m neardup_stream.worker, exactly-once)"),
    ):
        r = t[key]
        detail = ", ".join(f"{x['docs_per_s']:,.0f} in {x['seconds']:.1f} s" for x in r["runs"])
        if len(r["runs"]) > 1:
            detail = f"median of {detail}"
        per_cpu = f"; {r['docs_per_cpu_s']:,.0f} per CPU-s" if r.get("docs_per_cpu_s") else ""
        rows.append(("throughput", label, f"{r['docs_per_s']:,.0f} docs/s  ({detail}{per_cpu})"))
    ratio = t["ratio_worker_vs_transactional_pipe"]
    verdict = "ok" if ratio >= 0.7 else "BELOW GOAL"
    per_round = ", ".join(f"{x:.2f}" for x in t.get("ratio_per_round", []))
    rows.append(
        (
            "throughput",
            "worker / transactional pipe",
            f"{ratio:.2f}  (goal >= 0.7: {verdict}; per round {per_round})",
        )
    )
    rows.append(("throughput", "worker / plain pipe", f"{t['ratio_worker_vs_plain_pipe']:.2f}"))
    for name, v in t.get("variants", {}).items():
        r = t[f"variant_{name}"]
        per_round = ", ".join(f"{x:.2f}" for x in v["ratio_per_round"])
        rows.append(
            (
                "throughput",
                f"variant {name}: docs/s, / transactional pipe",
                f"{v['docs_per_s']:,.0f} docs/s; {v['ratio_vs_transactional_pipe']:.2f}  "
                f"(per round {per_round}; {_fmt(r.get('docs_per_cpu_s'))} per CPU-s)",
            )
        )
    if t.get("cpu_ratio_worker_vs_transactional_pipe"):
        rows.append(
            (
                "throughput",
                "worker / transactional pipe, docs per CPU-second",
                f"{t['cpu_ratio_worker_vs_transactional_pipe']:.2f}  (load-independent)",
            )
        )
    prof = t.get("profile")
    if prof and prof.get("samples"):
        threads = ", ".join(f"{k} {v:.0f}%" for k, v in list(prof["threads_pct"].items())[:4])
        rows.append(("throughput", "profile: busy samples by thread", threads))
    return rows


def _latency_rows(lat: dict[str, Any]) -> list[Row]:
    return [
        (
            "latency",
            "rate (0.5 x worker max), target / achieved",
            f"{lat['target_docs_per_s']:,.0f} / {_fmt(lat['achieved_docs_per_s'])} docs/s",
        ),
        (
            "latency",
            "produce -> visible (read_committed) p50 / p99",
            f"{lat['p50_s']:.3f} / {lat['p99_s']:.3f} s  "
            f"({lat['docs_visible']:,}/{lat['docs_sent']:,} docs)",
        ),
        (
            "latency",
            "worker histogram p50 / p99 (cross-check)",
            f"{_fmt(lat['worker_histogram_p50_s'], '.3f')} / "
            f"{_fmt(lat['worker_histogram_p99_s'], '.3f')} s",
        ),
    ]


def _restore_rows(res: dict[str, Any]) -> list[Row]:
    w = res["worker"]
    verdict = "ok" if w["restore_seconds"] < 60 else "ABOVE GOAL"
    if w["records_restored"] < 1_000_000:
        verdict = "n/a, the goal is for 1M"
    rows: list[Row] = [
        (
            "restore",
            f"worker restore of {w['records_restored']:,} records (log)",
            f"{w['restore_seconds']:.1f} s  ({_fmt(w['records_per_s'])} rec/s; "
            f"goal < 60 s: {verdict})",
        ),
        (
            "restore",
            "worker spawn -> /healthz 200 (wall / worker CPU)",
            f"{w['spawn_to_ready_seconds']:.1f} s / "
            f"{_fmt(w.get('cpu_seconds_spawn_to_ready'), '.1f')} CPU-s",
        ),
    ]
    if w["rss_bytes_after_restore"]:
        rss = w["rss_bytes_after_restore"] / 2**20
        rows.append(("restore", "worker RSS after restore", f"{rss:,.0f} MiB"))
    for name, v in res.get("variants", {}).items():
        rows.append(
            (
                "restore",
                f"variant {name}: worker restore (log)",
                f"{v['restore_seconds']:.1f} s  ({_fmt(v['records_per_s'])} rec/s; "
                f"{_fmt(v.get('cpu_seconds_spawn_to_ready'), '.1f')} CPU-s spawn -> ready)",
            )
        )
    ip = res.get("in_process")
    if ip:
        rows.append(
            (
                "restore",
                "in-process restore_partitions",
                f"{ip['restore_partitions_seconds']:.1f} s  ({ip['records_per_s']:,.0f} rec/s; "
                f"{_fmt(ip.get('restore_partitions_cpu_seconds'), '.1f')} CPU-s)",
            )
        )
        rows.append(
            (
                "restore",
                "  parts: fetch only / decode / insert",
                f"{ip['fetch_only_seconds']:.1f} / {ip['decode_seconds']:.1f} / "
                f"{ip['insert_seconds']:.1f} s",
            )
        )
    return rows


def _storm_rows(storm: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for m in storm["mixes"]:
        label = f"{m['fraction']:.0%} malformed ({m['messages']:,} msgs, {m['malformed']:,} bad)"
        value = (
            f"{m['valid_docs_per_s']:,.0f} valid docs/s ({m['valid_docs_per_s_vs_clean']:.2f} x "
            f"clean), {m['messages_per_s']:,.0f} msgs/s ({m['messages_per_s_vs_clean']:.2f} x)"
        )
        if m["malformed"]:
            rounds = ", ".join(f"{x:.2f}" for x in m.get("valid_docs_per_s_vs_clean_per_round", []))
            value += f" [per round {rounds}]; +{m['extra_ms_per_malformed']:.2f} ms per bad msg"
            checks = "ok" if m["dlq_matches_parser"] and m["decisions_match_clean"] else "MISMATCH"
            value += f"; DLQ/decisions check {checks}"
        rows.append(("storm", label, value))
    return rows


def _soak_rows(soak: dict[str, Any]) -> list[Row]:
    a = soak["analysis"]
    return [
        (
            "soak",
            f"{soak['docs']:,} docs, --max-docs {soak['max_docs']:,}",
            f"{soak['docs_per_s']:,.0f} docs/s over {soak['seconds']:,.0f} s",
        ),
        (
            "soak",
            f"RSS at fill ({a['flat_after_docs']:,} docs) / max after / end",
            f"{_fmt(a['rss_mib_at_fill'], ',.0f')} / {_fmt(a['rss_mib_max_after_fill'], ',.0f')}"
            f" / {_fmt(a['rss_mib_end'], ',.0f')} MiB",
        ),
        (
            "soak",
            "RSS slope after fill (least squares)",
            f"{_fmt(a['slope_mib_per_100k_docs'], '.2f')} MiB per 100k docs "
            f"({a['samples_in_fit']} samples)",
        ),
    ]


def table(results: dict[str, Any]) -> str:
    rows: list[Row] = []
    for key, make in (
        ("throughput", _throughput_rows),
        ("latency", _latency_rows),
        ("restore", _restore_rows),
        ("storm", _storm_rows),
        ("soak", _soak_rows),
    ):
        if results.get(key):
            rows += make(results[key])
    header = ("section", "measurement", "value")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(2)]
    lines = [f"{header[0]:<{widths[0]}}  {header[1]:<{widths[1]}}  {header[2]}"]
    lines.append("-" * (widths[0] + widths[1] + 40))
    lines += [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c}" for a, b, c in rows]
    return "\n".join(lines)
