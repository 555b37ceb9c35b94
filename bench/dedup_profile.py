"""Where the offline `neardup-stream dedup` process spends its CPU, stage by stage.

Runs the stages `cli.run_dedup` runs, one after the other on the whole corpus, and reports
each one's CPU time (user + system of this process; steadier than wall time on a shared
machine), best of `--repeat`, after a warm-up:

* imports: a fresh interpreter importing the CLI and the engine (kernels loaded from cache);
* reading and parsing: JSON lines to `Document`s (`parse_document`);
* fingerprinting: `Fingerprinter.batch` over the run's batches (the share of the engine's
  work that is the compiled fingerprint kernel, with the Python around it);
* the rest of the engine: `Deduplicator.check_batch` on the same batches, minus the above;
* output: one JSON line per decision, as `run_dedup` writes it.

    python -m bench.dedup_profile bench/data/hard-20000-s21.jsonl [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

BATCH = 512


def _best(fn: Callable[[], object], repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def import_cpu() -> float:
    """CPU seconds of a fresh interpreter importing the CLI and the engine."""
    code = "import neardup_stream.cli, neardup_stream.deduplicator"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def profile(corpus: Path, repeat: int) -> dict[str, float]:
    """CPU seconds per stage (see the module docstring) and the corpus' size."""
    from neardup_stream.cli import DECISION_FIELDS, _lines
    from neardup_stream.config import DedupConfig
    from neardup_stream.deduplicator import Deduplicator
    from neardup_stream.fingerprint.fingerprinter import Fingerprinter
    from neardup_stream.parsing import parse_document

    raw = corpus.read_bytes()
    docs = [parse_document(line) for _, line in _lines(io.BytesIO(raw))]
    texts = [d.text for d in docs]  # type: ignore[union-attr]
    config = DedupConfig()
    fingerprinter = Fingerprinter(config)
    decisions: list = []

    def engine() -> None:
        dedup = Deduplicator(config)
        decisions.clear()
        for b in range(0, len(docs), BATCH):
            decisions.extend(dedup.check_batch(docs[b : b + BATCH]))  # type: ignore[arg-type]

    def output() -> None:
        fields = set(DECISION_FIELDS)
        for d in decisions:
            json.dumps(d.model_dump(include=fields))

    parse = _best(lambda: [parse_document(line) for _, line in _lines(io.BytesIO(raw))], repeat)
    fingerprint = _best(
        lambda: [fingerprinter.batch(texts[b : b + BATCH]) for b in range(0, len(texts), BATCH)],
        repeat,
    )
    whole = _best(engine, repeat)
    return {
        "docs": len(docs),
        "mchars": sum(len(t) for t in texts) / 1e6,
        "imports_s": min(import_cpu() for _ in range(repeat)),
        "parse_s": parse,
        "fingerprint_s": fingerprint,
        "engine_rest_s": whole - fingerprint,
        "output_s": _best(output, repeat),
    }


def main(argv: list[str] | None = None) -> None:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    res = profile(args.corpus, args.repeat)
    total = sum(v for k, v in res.items() if k.endswith("_s"))
    print(f"{args.corpus.name}: {res['docs']} documents, {res['mchars']:.1f} M characters")
    for key, value in res.items():
        if key.endswith("_s"):
            print(f"  {key[:-2]:<16} {value:6.3f} s  {100 * value / total:4.1f}%")
    print(f"  {'total':<16} {total:6.3f} s  ({res['docs'] / total:,.0f} docs per CPU second)")
    print(f"  fingerprinting {res['mchars'] / res['fingerprint_s']:.0f} Mchar per CPU second")
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
