"""Numbers out of the worker's `/metrics` text (Prometheus exposition format)."""

from __future__ import annotations

import re
from collections.abc import Sequence


def metric_values(metrics: str, name: str) -> dict[str, float]:
    """`{labels text: value}` of every sample of metric `name` (labels text "" if none)."""
    pattern = re.compile(rf"^{re.escape(name)}(?:\{{([^}}]*)\}})? ([-\d.e+naNIinf]+)$")
    out: dict[str, float] = {}
    for line in metrics.splitlines():
        m = pattern.match(line)
        if m:
            out[m[1] or ""] = float(m[2])
    return out


def labelled_counts(metrics: str, name: str, *labels: str) -> dict[str, float]:
    """Samples of a counter keyed by its label values joined with '/'."""
    out: dict[str, float] = {}
    for text, value in metric_values(metrics, name).items():
        found = dict(re.findall(r'(\w+)="([^"]*)"', text))
        out["/".join(found.get(label, "") for label in labels)] = value
    return out


def decision_counts(metrics: str) -> dict[str, float]:
    return labelled_counts(metrics, "neardup_documents_total", "decision", "method")


def histogram_buckets(metrics: str, name: str) -> dict[float, float]:
    """Cumulative bucket counts (upper bound -> count) of a histogram in /metrics text."""
    pattern = re.compile(rf'^{name}_bucket\{{le="([^"]+)"\}} ([\d.e+]+)$')
    return {
        float(m[1]): float(m[2]) for m in map(pattern.match, metrics.splitlines()) if m is not None
    }


def histogram_quantiles(
    metrics: str, name: str, qs: Sequence[float], before: str = ""
) -> list[float | None]:
    """Quantiles of a Prometheus histogram, as histogram_quantile(); minus a `before` scrape."""
    old = histogram_buckets(before, name)
    buckets = sorted(
        (le, count - old.get(le, 0.0)) for le, count in histogram_buckets(metrics, name).items()
    )
    if not buckets or buckets[-1][1] == 0:
        return [None for _ in qs]
    total = buckets[-1][1]
    out: list[float | None] = []
    for q in qs:
        rank = q * total
        prev_le, prev_count = 0.0, 0.0
        value: float | None = None
        for le, count in buckets:
            if count >= rank:
                if le == float("inf"):
                    value = prev_le  # beyond the last finite bucket: report its bound
                else:
                    width = count - prev_count
                    frac = (rank - prev_count) / width if width else 1.0
                    value = prev_le + (le - prev_le) * frac
                break
            prev_le, prev_count = le, count
        out.append(None if value is None else round(value, 4))
    return out
