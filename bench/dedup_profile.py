"""Where the offline `neardup-stream dedup` process spends its CPU, stage by stage.

Runs the stages `cli.run_dedup` runs, one after the other on the whole corpus, and reports
each one's CPU time (user + system of this process; steadier than wall time on a shared
machine), best of `--repeat`, after a warm-up:

* imports: a fresh interpreter importing the CLI and the engine (kernels loaded from cache);
* reading and parsing: JSON lines to columns of ids and texts (`line_batch.parse_lines`);
* fingerprinting: `Fingerprinter.batch` over the run's batches (the share of the engine's
  work that is the compiled fingerprint kernel, with the Python around it);
* the rest of the engine: `Deduplicator.decide_columns` on the same batches, minus the above;
* output: one JSON line per decision (`line_batch.decision_lines`), as `run_dedup` writes it.

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
    from neardup_stream.cli import _lines
    from neardup_stream.config import DedupConfig
    from neardup_stream.deduplicator import Deduplicator
    from neardup_stream.engine.outcomes import DecisionColumns
    from neardup_stream.fingerprint.fingerprinter import Fingerprinter
    from neardup_stream.line_batch import decision_lines, parse_lines

    raw = corpus.read_bytes()
    lines = list(_lines(io.BytesIO(raw)))

    def parse() -> list:
        return [parse_lines(lines[b : b + BATCH], 1 << 30) for b in range(0, len(lines), BATCH)]

    batches = parse()
    texts = [t for b in batches for t in b.texts]
    config = DedupConfig()
    fingerprinter = Fingerprinter(config)
    decided: list[DecisionColumns] = []

    def engine() -> None:
        dedup = Deduplicator(config)
        decided.clear()
        for b in batches:
            decided.append(dedup.decide_columns(b.ids, b.texts, b.stamps))

    def output() -> None:
        for cols in decided:
            decision_lines(cols)

    parse_s = _best(parse, repeat)
    fingerprint = _best(
        lambda: [fingerprinter.batch(b.texts) for b in batches],
        repeat,
    )
    whole = _best(engine, repeat)
    return {
        "docs": len(texts),
        "mchars": sum(len(t) for t in texts) / 1e6,
        "imports_s": min(import_cpu() for _ in range(repeat)),
        "parse_s": parse_s,
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
