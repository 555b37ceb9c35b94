"""Other checkouts of the project whose worker runs beside this one's (``--variant NAME=PATH``).

A variant is a proposed change measured in the same run, on the same input, against the same
pipes: its worker is started with the variant's directory as working directory, so
``python -m neardup_stream.worker`` imports that checkout's ``neardup_stream/worker/`` and ``neardup_stream/``. Its caches
are warmed first (`warm`: fold table, numba machine code), as this checkout's are.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from bench.kafka_docs import BenchError, log

WARM = (
    "from neardup_stream.deduplicator import Deduplicator; "
    "from neardup_stream.models import Document; "
    "out = Deduplicator().process([Document(id='w', text='warm up this checkout')], records=True); "
    "Deduplicator().apply_records([out[0].record])"
)


def variants(args: argparse.Namespace) -> dict[str, Path]:
    """`--variant NAME=PATH` as {name: checkout}, each warmed; raises on a bad spec."""
    out: dict[str, Path] = {}
    for spec in args.variant or []:
        name, sep, path = spec.partition("=")
        if not sep or not name or not (Path(path) / "worker" / "__main__.py").exists():
            raise BenchError(
                f"--variant {spec!r}: expected NAME=PATH of a checkout with neardup_stream/worker/"
            )
        out[name] = Path(path).resolve()
        log(f"warming the caches of variant {name}")
        warm(out[name])
    return out


def warm(checkout: Path) -> None:
    """Fill a checkout's start-up caches (fold table, numba machine code), as `make install`
    does: ``python -m neardup_stream.warmup`` where it exists, else a few documents."""
    has_module = (checkout / "neardup_stream" / "warmup.py").exists()
    cmd = ["-m", "neardup_stream.warmup"] if has_module else ["-c", WARM]
    subprocess.run([sys.executable, *cmd], cwd=checkout, check=True, timeout=900)
