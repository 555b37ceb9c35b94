"""Where the worker's time goes: py-spy samples of every thread, summed up.

`py_spy_wrapper(path)` is the command line that runs the worker under ``py-spy record``
(raw collapsed stacks, one root frame per thread, idle samples dropped), and
`summarize(path)` turns the samples into shares: per thread, and per function inclusive
("in this function or below") and self ("in this very function"), with the loop thread's
top-level steps (decide, publish, settle, poll) called out. py-spy is a profiling tool, not a
dependency of the project: ``pip install py-spy``; without it the profile step is skipped.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

LINE_RE = re.compile(r"^thread \((\d+)\): ([^;]*)(?:;(.*))? (\d+)$")
FRAME_RE = re.compile(r"^(.*) \((.*?)(?::\d+)?\)$")


def py_spy() -> str | None:
    """The py-spy executable next to this interpreter, or on PATH."""
    here = Path(sys.executable).parent / "py-spy"
    return str(here) if here.exists() else shutil.which("py-spy")


def py_spy_wrapper(exe: str, output: Path, rate: int = 100) -> list[str]:
    return [
        exe,
        "record",
        *("--rate", str(rate)),
        *("--format", "raw"),
        "--threads",
        "--nonblocking",  # do not pause the worker to sample it
        *("--output", str(output)),
        "--",
    ]


def _short(frame: str) -> str:
    """`func (path:line)` -> `func (module path)`, without the line and site-packages prefix."""
    m = FRAME_RE.match(frame)
    if m is None:
        return frame
    func, path = m[1], m[2]
    for marker in ("site-packages/", "/lib/python3.11/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    else:
        for top in ("/worker/", "/neardup_stream/", "/bench/"):
            if top in path:
                path = top[1:] + path.split(top, 1)[1]
                break
    return f"{func} ({path})"


def summarize(path: Path, top: int = 25) -> dict[str, Any]:
    """Shares of the samples: per thread, per function (inclusive and self)."""
    threads: Counter[str] = Counter()
    inclusive: dict[str, Counter[str]] = {}
    self_time: Counter[str] = Counter()
    total = imports = 0
    for line in path.read_text(errors="replace").splitlines():
        m = LINE_RE.match(line.strip())
        if m is None:
            continue
        name, stack, count = m[2] or f"thread {m[1]}", m[3] or "", int(m[4])
        if "importlib._bootstrap" in stack:
            imports += count  # start-up: module imports, not the worker's steady state
            continue
        name = re.sub(r"-\d+$", "", name)  # Thread-12 -> Thread
        total += count
        threads[name] += count
        frames = [_short(f) for f in stack.split(";") if f]
        per = inclusive.setdefault(name, Counter())
        for f in set(frames):
            per[f] += count
        if frames:
            self_time[f"{frames[-1]} [{name}]"] += count
    if not total:
        return {"samples": 0}

    def share(n: float) -> float:
        return round(100 * n / total, 1)

    return {
        "samples": total,
        "import_samples_excluded": imports,
        "note": "percent of all non-idle samples of all threads, module imports excluded",
        "threads_pct": {k: share(v) for k, v in threads.most_common()},
        "inclusive_pct": {
            t: {f: share(v) for f, v in c.most_common(top)}
            for t, c in sorted(inclusive.items(), key=lambda kv: -threads[kv[0]])
        },
        "self_pct": {f: share(v) for f, v in self_time.most_common(top)},
    }
