"""What each entry point imports: commands that decide nothing never load numba, and an
unsharded `dedup` runs on the ahead-of-time kernels without it.

Importing numba takes about 0.25-0.4 s and loading the compiled kernels about as much again,
so `--help`, `--version`, `schemas` and the settings must not pay it; an unsharded `dedup`
must not import the sharded engine, nor numba once the install built the kernels ahead of
time (`native.build`, run by the warm-up). Each case runs in a fresh interpreter and reads
its `sys.modules` (never a wall-clock time).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

_REPORT = (
    "import json, sys\n"
    "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} | "
    "{m for m in sys.modules if m.startswith('neardup_stream.')})))\n"
)


def _modules_after(code: str, tmp_path: Path) -> set[str]:
    """The modules a fresh interpreter holds after running `code` (stdout is free for it)."""
    quiet = "import contextlib, io\nwith contextlib.redirect_stdout(io.StringIO()):\n"
    quiet += "".join(f"    {line}\n" for line in code.splitlines())
    return set(_run_fresh(quiet + _REPORT, tmp_path))


def _run_fresh(script: str, tmp_path: Path) -> Any:
    """What `script`, run by a fresh interpreter (without NEARDUP_ settings), printed as
    JSON on its last line."""
    path = tmp_path / "probe.py"
    path.write_text(script)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    proc = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(proc.stdout.splitlines()[-1])


def _cli(*args: str) -> str:
    return (
        "from neardup_stream.cli import main\n"
        f"try:\n    main({list(args)!r})\n"
        "except SystemExit:\n    pass"
    )


@pytest.mark.parametrize(
    "code",
    [
        "import neardup_stream",
        "import neardup_stream.settings",
        "from neardup_stream import DedupConfig, Document",
        _cli("--help"),
        _cli("--version"),
        _cli("dedup", "--help"),
        _cli("schemas"),
    ],
    ids=["package", "settings", "config-and-models", "help", "version", "dedup-help", "schemas"],
)
def test_commands_that_decide_nothing_do_not_load_numba(code: str, tmp_path: Path) -> None:
    modules = _modules_after(code, tmp_path)
    assert "neardup_stream" in modules  # the probe ran what it was given
    assert not {"numba", "llvmlite"} & modules
    assert "neardup_stream.deduplicator" not in modules


def test_an_unsharded_dedup_loads_one_engine_not_the_sharded_one(tmp_path: Path) -> None:
    """One home shard (`--home-shards 1`; the default is the stream's 24, to decide as the
    worker does)."""
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "a", "text": "one text"}\n{"id": "b", "text": "one text!"}\n')
    out = tmp_path / "out.jsonl"
    args = ("dedup", "--home-shards", "1", "--input", str(docs), "--output", str(out))
    modules = _modules_after(_cli(*args), tmp_path)
    assert [json.loads(line)["decision"] for line in out.read_text().splitlines()] == [
        "unique",
        "duplicate",
    ]
    assert "neardup_stream.deduplicator" in modules
    assert not {"numba", "llvmlite"} & modules
    assert not {m for m in modules if m.startswith("neardup_stream.sharded")}


def test_a_dedup_with_home_shards_loads_the_sharded_engine(tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "a", "text": "one text"}\n{"id": "b", "text": "one text!"}\n')
    out = tmp_path / "out.jsonl"
    args = ("dedup", "--home-shards", "2", "--input", str(docs), "--output", str(out))
    modules = _modules_after(_cli(*args), tmp_path)
    assert [json.loads(line)["decision"] for line in out.read_text().splitlines()] == [
        "unique",
        "duplicate",
    ]
    assert "neardup_stream.sharded.deduplicator" in modules


def test_the_worker_entry_point_does_not_load_the_scale_out_runtime(tmp_path: Path) -> None:
    """The entry point imports no replica: the scale-out roles (and with them the merged
    tables and numba) are imported only when topic scope (the default) asks for one."""
    modules = _modules_after(
        "import neardup_stream.worker.main\nimport neardup_stream.worker.loop", tmp_path
    )
    assert "neardup_stream.worker.loop" in modules
    assert not {"numba", "llvmlite"} & modules
    assert "neardup_stream.sharded.replica" not in modules
    replica = _modules_after("import neardup_stream.worker.cluster.replica", tmp_path)
    assert "neardup_stream.sharded.replica" in replica


def test_the_build_s_warm_up_imports_with_the_build_requirements_only(tmp_path: Path) -> None:
    """`setup.py` runs the warm-up in pip's isolated build environment, which holds only
    `[build-system] requires`: a runtime dependency it imported (orjson, say) would make
    every install come without its kernels. Every other project dependency is blocked here."""
    tomllib = pytest.importorskip("tomllib")  # (Python 3.11+; CI runs 3.11)
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())

    def names(reqs: list[str]) -> set[str]:
        return {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower().replace("-", "_") for r in reqs}

    runtime = names(project["project"]["dependencies"])
    runtime |= names(project["project"]["optional-dependencies"]["worker"])
    blocked = sorted(runtime - names(project["build-system"]["requires"]))
    assert "orjson" in blocked and "numba" not in blocked
    block = "".join(f"sys.modules[{m!r}] = None\n" for m in blocked)  # import raises then
    modules = _modules_after(f"import sys\n{block}import neardup_stream.warmup", tmp_path)
    assert "neardup_stream.warmup" in modules


def test_a_replica_s_warm_up_loads_the_kernels_its_first_vote_runs(tmp_path: Path) -> None:
    """`warm_replica` (run before a replica says ready) leaves its first real vote nothing to
    load: numba's dispatchers of the kernels that take its typed list of stores (the others
    are built ahead of time) hold the vote's signatures."""
    script = (
        "import json\n"
        "from neardup_stream.config import DedupConfig\n"
        "from neardup_stream.sharded import merged_kernels as mk\n"
        "kernels = (mk.new_store_list, mk.append_store, mk.vote_batch)\n"
        "before = sum(len(k.dispatcher.signatures) for k in kernels)\n"
        "from neardup_stream.warmup import warm_replica\n"
        "warm_replica(DedupConfig(home_shards=4, max_age_seconds=60))\n"
        "print(json.dumps([before] + [len(k.dispatcher.signatures) for k in kernels]))\n"
    )
    before, *signatures = _run_fresh(script, tmp_path)
    assert before == 0
    assert all(n >= 1 for n in signatures)


def test_a_replica_s_votes_compile_nothing_after_its_warm_up(tmp_path: Path) -> None:
    """Votes that grow the shards' stores (a grown store is replaced alone in the typed list:
    `set_store`) and evict from their windows find every signature of the merged-table
    kernels loaded by `warm_replica`, in a fresh process: nothing compiles on a live vote."""
    script = (
        "import json\n"
        "import numpy as np\n"
        "from neardup_stream.config import DedupConfig\n"
        "from neardup_stream.models import Document\n"
        "from neardup_stream.sharded import merged_kernels as mk\n"
        "from neardup_stream.sharded.deduplicator import DocumentFingerprinter\n"
        "from neardup_stream.sharded.replica import ReplicaVoter\n"
        "from neardup_stream.warmup import warm_replica\n"
        "kernels = [k for k in vars(mk).values() if hasattr(k, 'dispatcher')]\n"
        "config = DedupConfig(home_shards=4, max_docs=400)\n"
        "warm_replica(config)\n"
        "def counts():\n"
        "    return {k.dispatcher.py_func.__name__: len(k.dispatcher.signatures) for k in kernels}\n"
        "warm = counts()\n"
        "replica = ReplicaVoter(config, range(4))\n"
        "fingerprinter = DocumentFingerprinter(config)\n"
        "for b in range(6):\n"
        "    docs = [Document(id=f'{b}-{i}', text=f'document {b} {i} ' * 9) for i in range(100)]\n"
        "    at = np.arange(b * 100, b * 100 + 100)\n"
        "    replica.vote_and_record(fingerprinter.batch(docs, [''] * 100, at, 0.0))\n"
        "print(json.dumps([warm, counts()]))\n"
    )
    warm, voted = _run_fresh(script, tmp_path)
    assert "set_store" in warm and warm["vote_batch"] >= 1
    assert voted == warm
