"""Quality of a system's streaming decisions against the exact ground truth.

A document is a true duplicate when some earlier document has exact 5-gram Jaccard >=
threshold (:mod:`bench.ground_truth`).  For the predictions we report precision, recall and
F1, the correctness of ``duplicate_of`` (fraction of predicted duplicates whose named
original has exact Jaccard >= threshold with the document, computed directly from the two
texts), and breakdowns by mutation kind/level, by language and by the document's true
maximum Jaccard against earlier documents (which shows the detector's S-curve).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import lru_cache

from bench.textnorm import jaccard, shingle_set

Decision = tuple[str, bool, str | None]

JACCARD_BUCKETS: tuple[tuple[float, float, str], ...] = (
    (0.0, 0.5, "<0.5"),
    (0.5, 0.6, "0.5-0.6"),
    (0.6, 0.7, "0.6-0.7"),
    (0.7, 0.75, "0.7-0.75"),
    (0.75, 0.8, "0.75-0.8"),
    (0.8, 0.85, "0.8-0.85"),
    (0.85, 0.9, "0.85-0.9"),
    (0.9, 0.95, "0.9-0.95"),
    (0.95, 1.0, "0.95-1"),
    (1.0, 2.0, "1.0"),
)


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def prf(tp: int, fp: int, fn: int) -> dict[str, float | None]:
    """Precision, recall and F1 (None where undefined)."""
    p = _ratio(tp, tp + fp)
    r = _ratio(tp, tp + fn)
    f1 = round(2 * p * r / (p + r), 4) if p is not None and r is not None and p + r else None
    return {"precision": p, "recall": r, "f1": f1}


def _bucket(max_j: float | None) -> str:
    value = 0.0 if max_j is None else max_j
    for lo, hi, label in JACCARD_BUCKETS:
        if lo <= value < hi:
            return label
    return JACCARD_BUCKETS[-1][2]


def _group_stats(rows: Iterable[tuple[bool, bool]]) -> dict[str, float | int | None]:
    """rows of (truth, predicted) -> counts, recall and flagged rate."""
    n = tp = fp = fn = flagged = true = 0
    for truth, pred in rows:
        n += 1
        true += truth
        flagged += pred
        tp += truth and pred
        fp += pred and not truth
        fn += truth and not pred
    return {
        "n": n,
        "true_dups": true,
        "flagged": flagged,
        "flagged_rate": _ratio(flagged, n),
        **prf(tp, fp, fn),
    }


def evaluate(
    decisions: Sequence[Decision], truth: dict, records: Sequence[dict]
) -> dict[str, object]:
    """Score ``decisions`` (stream order, one per record) against ``truth``."""
    threshold = float(truth["threshold"])
    truth_docs = truth["docs"]
    if len(decisions) != len(records) or len(truth_docs) != len(records):
        raise ValueError("decisions, truth and records must cover the same documents")
    pos = {r["id"]: i for i, r in enumerate(records)}
    texts = [r["text"] for r in records]

    @lru_cache(maxsize=4096)
    def features(i: int) -> frozenset[str]:
        return frozenset(shingle_set(texts[i]))

    tp = fp = fn = 0
    dup_of_ok = dup_of_total = dup_of_ok_tp = not_earlier = disagreements = order_errors = 0
    rows: list[tuple[dict, bool, bool]] = []
    for i, ((doc_id, is_dup, dup_of), rec, t) in enumerate(
        zip(decisions, records, truth_docs, strict=True)
    ):
        if doc_id != rec["id"] or t["id"] != rec["id"]:
            order_errors += 1
        is_true = bool(t["matches"])
        tp += is_true and is_dup
        fp += is_dup and not is_true
        fn += is_true and not is_dup
        rows.append((rec, is_true, is_dup))
        if not is_dup:
            continue
        dup_of_total += 1
        j = pos.get(dup_of) if dup_of is not None else None
        if j is None or j >= i:
            not_earlier += 1
            continue
        ok = jaccard(features(i), features(j)) >= threshold
        in_truth = any(m[0] == dup_of for m in t["matches"])
        disagreements += ok != in_truth
        dup_of_ok += ok
        dup_of_ok_tp += ok and is_true

    by_mutation: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    by_kind: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    by_lang: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    by_family: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    by_bucket: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for (rec, is_true, is_dup), t in zip(rows, truth_docs, strict=True):
        mutation = rec.get("mutation") or "none"
        by_mutation[mutation].append((is_true, is_dup))
        by_kind[mutation.split(":")[0]].append((is_true, is_dup))
        by_lang[rec.get("lang", "?")].append((is_true, is_dup))
        by_family[rec.get("source", "?").split(":")[0]].append((is_true, is_dup))
        by_bucket[_bucket(t["max_jaccard"])].append((is_true, is_dup))

    def table(groups: dict[str, list[tuple[bool, bool]]]) -> dict[str, dict]:
        return {key: _group_stats(groups[key]) for key in sorted(groups, key=_mutation_key)}

    return {
        "n_docs": len(records),
        "threshold": threshold,
        "true_dups": tp + fn,
        "predicted_dups": tp + fp,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        **prf(tp, fp, fn),
        "dup_of_correct": _ratio(dup_of_ok, dup_of_total),
        "dup_of_correct_among_tp": _ratio(dup_of_ok_tp, tp),
        "dup_of_not_earlier": not_earlier,
        "dup_of_truth_disagreements": disagreements,
        "id_order_errors": order_errors,
        "by_mutation": table(by_mutation),
        "by_mutation_kind": table(by_kind),
        "by_lang": table(by_lang),
        "by_family": table(by_family),
        "by_max_jaccard": {
            label: _group_stats(by_bucket[label])
            for _, _, label in JACCARD_BUCKETS
            if label in by_bucket
        },
    }


def _mutation_key(key: str) -> tuple[str, int]:
    kind, _, level = key.partition(":")
    return (kind, int(level) if level.isdigit() else -1)


def format_breakdown(result: dict, section: str, title: str) -> str:
    """Render one breakdown table as text."""
    lines = [
        f"{title}:",
        f"  {'group':<18} {'n':>6} {'true':>6} {'flag':>6} {'recall':>7} {'prec':>7}",
    ]
    for key, row in result[section].items():
        rec = "-" if row["recall"] is None else f"{row['recall']:.3f}"
        prec = "-" if row["precision"] is None else f"{row['precision']:.3f}"
        lines.append(
            f"  {key:<18} {row['n']:>6} {row['true_dups']:>6} {row['flagged']:>6} "
            f"{rec:>7} {prec:>7}"
        )
    return "\n".join(lines)
