"""Section `storm`: what malformed input costs the worker in throughput.

``--storm-docs`` valid documents (default 20,000; the same ones, in the same order, in every
mix) are written to one input topic per mix, with malformed messages interleaved at random
positions so that they make up each fraction of ``--storm-fractions`` (default 0.1 and 0.5) of
the topic; fraction 0 is the clean run. The malformed messages cycle through 13 kinds, most
of them carrying a real document's text so they weigh what documents weigh: invalid JSON
(truncated), invalid UTF-8, tombstones, JSON arrays, a missing id, a missing text, an id or a
text of the wrong type, an empty id, a 5,000-character id, an unparsable timestamp, 2,000
levels of nesting and a lone surrogate. Each mix gets a fresh worker (own group, outputs and
changelog), timed from ready to every input offset committed.

Reported per mix: all messages/s, valid documents/s, both relative to the clean run, and the
extra time per malformed message. As checks, the worker's dead-letter counts by reason
(``neardup_dlq_messages_total``) are compared with what ``neardup_stream.parsing`` says of
each malformed message, and its decision counts with the clean run's.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from collections import Counter
from collections.abc import Iterator
from typing import Any

from bench.kafka_broker import Topics, produce_bulk
from bench.kafka_docs import DocSource, log
from bench.kafka_metrics import decision_counts, labelled_counts
from bench.kafka_worker import WorkerProcess, WorkerTopics, run_until_committed
from neardup_stream.parsing import ParseError, parse_document
from neardup_stream.worker.settings import Settings

KINDS = (
    "invalid_json",
    "invalid_utf8",
    "tombstone",
    "array",
    "missing_id",
    "missing_text",
    "id_not_a_string",
    "text_not_a_string",
    "empty_id",
    "huge_id",
    "bad_timestamp",
    "deep_nesting",
    "lone_surrogate",
)


def malformed(kind: str, i: int, text: str) -> tuple[bytes | None, bytes | None]:
    """Malformed message number `i` of `kind`, as (key, value); `text` gives it its size."""
    key = f"bad{i:07d}".encode()
    doc_id = key.decode()

    def dumps(obj: Any) -> bytes:
        return json.dumps(obj, ensure_ascii=False).encode()

    if kind == "invalid_json":
        whole = dumps({"id": doc_id, "text": text})
        return key, whole[: len(whole) // 2]
    if kind == "invalid_utf8":
        return key, dumps({"id": doc_id, "text": text[:100]}) + b"\xff\xfe" + text.encode()
    if kind == "tombstone":
        return key, None
    if kind == "array":
        return key, dumps([doc_id, text])
    if kind == "missing_id":
        return key, dumps({"text": text})
    if kind == "missing_text":
        return key, dumps({"id": doc_id, "body": text})
    if kind == "id_not_a_string":
        return key, dumps({"id": i, "text": text})
    if kind == "text_not_a_string":
        return key, dumps({"id": doc_id, "text": {"value": text}})
    if kind == "empty_id":
        return key, dumps({"id": "", "text": text})
    if kind == "huge_id":
        return key, dumps({"id": "x" * 5000, "text": text})
    if kind == "bad_timestamp":
        return key, dumps({"id": doc_id, "text": text, "timestamp": "the day after tomorrow"})
    if kind == "deep_nesting":
        return key, ('{"id":"' + doc_id + '","text":' + "[" * 2000 + "]" * 2000 + "}").encode()
    if kind == "lone_surrogate":
        body = json.dumps(text[:2000])[1:-1]
        return key, ('{"id":"' + doc_id + '","text":"' + body + '\\ud800"}').encode()
    raise ValueError(f"unknown kind {kind!r}")


def mix(n_valid: int, fraction: float, seed: int = 11) -> tuple[list[int], int]:
    """Slots of a mix: -1 for a malformed message, else the valid document's number."""
    n_bad = round(n_valid * fraction / (1 - fraction))
    rng = random.Random(seed)
    bad = set(rng.sample(range(n_valid + n_bad), n_bad))
    slots, doc = [], 0
    for pos in range(n_valid + n_bad):
        if pos in bad:
            slots.append(-1)
        else:
            slots.append(doc)
            doc += 1
    return slots, n_bad


def messages(
    src: DocSource, slots: list[int], expected: Counter[str]
) -> Iterator[tuple[bytes | None, bytes | None]]:
    """The mix's messages; counts the parser's reason of each malformed one in `expected`."""
    max_bytes = Settings().worker.max_message_bytes
    bad = 0
    for slot in slots:
        if slot >= 0:
            yield src.doc(slot, "s")
            continue
        kind = KINDS[bad % len(KINDS)]
        key, value = malformed(kind, bad, src.text(bad).text)
        parsed = parse_document(value, max_bytes, key=key)
        expected[parsed.reason if isinstance(parsed, ParseError) else "VALID"] += 1
        bad += 1
        yield key, value


def run_mix(
    bootstrap: str,
    topics: Topics,
    src: DocSource,
    fraction: float,
    tag: str,
    args: argparse.Namespace,
) -> dict[str, Any]:
    n_valid = args.storm_docs
    slots, n_bad = mix(n_valid, fraction)
    input_topic = topics.create(f"storm-{tag}.input")
    expected: Counter[str] = Counter()
    preload = produce_bulk(bootstrap, input_topic, messages(src, slots, expected))
    wt = WorkerTopics.fresh(topics, f"storm-{tag}", input_topic)
    group = f"{topics.tag}-storm-{tag}"
    w = WorkerProcess(bootstrap, wt, group, args.log_dir / f"{group}.log", args.max_batch)
    run = run_until_committed(w, len(slots), args.timeout)
    topics.delete([input_topic, *wt.outputs])  # keep the broker's disk small
    counted = labelled_counts(run.metrics, "neardup_dlq_messages_total", "reason")
    dlq = {reason: int(v) for reason, v in counted.items() if v}
    return {
        "fraction": fraction,
        "messages": len(slots),
        "valid": n_valid,
        "malformed": n_bad,
        "input_bytes": preload["bytes"],
        "seconds": round(run.seconds, 2),
        "messages_per_s": round(len(slots) / run.seconds, 1),
        "valid_docs_per_s": round(n_valid / run.seconds, 1),
        "dlq_by_reason": dlq,
        "expected_dlq_by_reason": dict(expected),
        "dlq_matches_parser": dlq == dict(expected),
        "decisions": decision_counts(run.metrics),
    }


def section_storm(
    bootstrap: str, topics: Topics, src: DocSource, args: argparse.Namespace
) -> dict[str, Any]:
    fractions = [0.0, *sorted(float(f) for f in args.storm_fractions.split(",") if f.strip())]
    if any(not 0 <= f < 1 for f in fractions):
        raise ValueError(f"--storm-fractions must be in [0, 1): {args.storm_fractions}")
    rounds: dict[float, list[dict[str, Any]]] = {f: [] for f in fractions}
    for r in range(args.repeat):
        for f in fractions:
            tag = f"{round(f * 100)}pct-r{r + 1}"
            log(f"storm: {f:.0%} malformed (round {r + 1}), {args.storm_docs:,} valid documents")
            rounds[f].append(run_mix(bootstrap, topics, src, f, tag, args))
            last = rounds[f][-1]
            log(
                f"  -> {last['messages_per_s']:,.0f} msgs/s, "
                f"{last['valid_docs_per_s']:,.0f} valid docs/s"
            )
    out: dict[str, Any] = {"valid_docs": args.storm_docs, "kinds": list(KINDS), "mixes": []}
    clean = rounds[0.0]
    clean_docs_s = statistics.median(r["valid_docs_per_s"] for r in clean)
    clean_seconds = statistics.median(r["seconds"] for r in clean)
    for f in fractions:
        runs = rounds[f]
        docs_s = statistics.median(r["valid_docs_per_s"] for r in runs)
        msgs_s = statistics.median(r["messages_per_s"] for r in runs)
        seconds = statistics.median(r["seconds"] for r in runs)
        n_bad = runs[0]["malformed"]
        out["mixes"].append(
            {
                "fraction": f,
                "messages": runs[0]["messages"],
                "malformed": n_bad,
                "messages_per_s": msgs_s,
                "valid_docs_per_s": docs_s,
                "valid_docs_per_s_vs_clean": round(docs_s / clean_docs_s, 3),
                "messages_per_s_vs_clean": round(msgs_s / clean_docs_s, 3),
                "valid_docs_per_s_vs_clean_per_round": [
                    round(r["valid_docs_per_s"] / c["valid_docs_per_s"], 3)
                    for r, c in zip(runs, clean, strict=True)
                ],
                "extra_ms_per_malformed": (
                    round(1000 * (seconds - clean_seconds) / n_bad, 3) if n_bad else None
                ),
                "dlq_matches_parser": all(r["dlq_matches_parser"] for r in runs),
                "decisions_match_clean": all(r["decisions"] == clean[0]["decisions"] for r in runs),
                "runs": runs,
            }
        )
    return out
