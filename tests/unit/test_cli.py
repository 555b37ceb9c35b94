import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import neardup_stream
from tests.unit.conftest import mutate, random_text


def _run(
    *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    return subprocess.run(
        [sys.executable, "-m", "neardup_stream.cli", *args],
        input=stdin,
        capture_output=True,
        env={**clean, **(env or {})},
    )


def test_dedup_file_reports_bad_lines_and_keeps_order(tmp_path: Path) -> None:
    a = random_text(1)
    lines = [
        json.dumps({"id": "1", "text": a}).encode(),
        b"{broken",
        json.dumps({"id": "2", "text": mutate(a, 0.01, 2)}).encode(),
        b"\xc3\x28",
        json.dumps({"id": "3", "text": random_text(3)}).encode(),
        json.dumps({"id": 4, "text": "x"}).encode(),
    ]
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out.jsonl"
    proc = _run("dedup", "--input", str(src), "--output", str(out))
    assert proc.returncode == 0
    decisions = [json.loads(line) for line in out.read_text().splitlines()]
    assert [d["id"] for d in decisions] == ["1", "2", "3"]
    assert [d["decision"] for d in decisions] == ["unique", "duplicate", "unique"]
    assert set(decisions[1]) == {
        "id",
        "decision",
        "duplicate_of",
        "representative",
        "similarity",
        "method",
        "update",
    }
    err = proc.stderr.decode()
    assert "line 2: invalid_json" in err and "line 4: invalid_utf8" in err
    assert "line 6: invalid_field" in err and "summary: 3 documents" in err


def test_dedup_stdin_stdout_and_flags() -> None:
    text = random_text(5)
    stdin = (
        json.dumps({"id": "a", "text": text})
        + "\n"
        + json.dumps({"id": "b", "text": text[:-400]})
        + "\n"
    ).encode()
    proc = _run("dedup", "--threshold", "0.99", stdin=stdin)
    assert proc.returncode == 0
    assert [json.loads(x)["decision"] for x in proc.stdout.decode().splitlines()] == [
        "unique",
        "unique",
    ]
    assert _run("dedup", stdin=stdin).stdout.decode().count('"duplicate"') == 1


def test_usage_errors_exit_non_zero(tmp_path: Path) -> None:
    assert _run("dedup", "--input", str(tmp_path / "missing.jsonl")).returncode == 2
    assert _run("dedup", "--threshold", "0").returncode == 2
    assert _run("frobnicate").returncode == 2


def test_compare_explains_a_pair(tmp_path: Path) -> None:
    a = random_text(7)
    (tmp_path / "a.txt").write_text(a)
    (tmp_path / "b.txt").write_text(mutate(a, 0.01, 1))
    proc = _run("compare", str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "--json")
    report = json.loads(proc.stdout)
    assert report["decision"] == "duplicate" and report["exact_jaccard"] > 0.8
    assert abs(report["estimated_jaccard"] - report["exact_jaccard"]) < 0.1
    assert 0 < report["tfidf_cosine"] <= 1
    human = _run("compare", "--text", "abc def", "xyz uvw").stdout.decode()
    assert "TF-IDF cosine" in human and "unique" in human
    same = json.loads(_run("compare", "--text", a, a, "--json").stdout)
    assert same["exact_duplicate"] is True


def test_compare_refuses_a_missing_file_instead_of_comparing_its_name(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(random_text(8))
    proc = _run("compare", str(tmp_path / "a.txt"), str(tmp_path / "missing.txt"))
    assert proc.returncode == 2 and proc.stdout == b""
    err = proc.stderr.decode()
    assert "missing.txt" in err and "No such file" in err and "--text" in err


def test_dedup_refuses_a_missing_input_in_one_line(tmp_path: Path) -> None:
    proc = _run("dedup", "--input", str(tmp_path / "nope.jsonl"))
    assert proc.returncode == 2 and proc.stdout == b""
    err = proc.stderr.decode().strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("neardup-stream dedup: error: cannot read --input ")
    assert "nope.jsonl" in err[0] and "No such file or directory" in err[0]
    assert "Errno" not in err[0]


def test_dedup_refuses_an_output_it_cannot_write(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "text": "x y z"}\n')
    proc = _run("dedup", "--input", str(src), "--output", str(tmp_path / "no" / "out.jsonl"))
    assert proc.returncode == 2
    assert "cannot write --output" in proc.stderr.decode()


def test_compare_reads_one_side_from_stdin(tmp_path: Path) -> None:
    text = random_text(9)
    (tmp_path / "a.txt").write_text(text)
    proc = _run("compare", str(tmp_path / "a.txt"), "-", "--json", stdin=text.encode())
    assert json.loads(proc.stdout)["exact_duplicate"] is True


def test_version() -> None:
    from neardup_stream import __version__

    proc = _run("--version")
    assert proc.returncode == 0 and proc.stdout.decode().strip() == f"neardup-stream {__version__}"


def test_a_bad_flag_names_the_flag_and_the_accepted_range() -> None:
    proc = _run("dedup", "--shingle-size", "0", stdin=b"")
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert "dedup.shingle_size (flag --shingle-size)" in err
    assert "an integer from 1 to 32" in err and "got 0" in err


def test_a_misspelt_variable_is_refused_with_the_nearest_name() -> None:
    proc = _run("dedup", stdin=b"", env={"NEARDUP_DEDUP__TRESHOLD": "0.5"})
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert "environment variable NEARDUP_DEDUP__TRESHOLD" in err
    assert "did you mean NEARDUP_DEDUP__THRESHOLD?" in err


@pytest.mark.parametrize(
    ("variable", "meant"),
    [
        ("NEARDUP_DEDUP_THRESHOLD", "NEARDUP_DEDUP__THRESHOLD"),  # one underscore
        ("NEARDUP_DEDUPE__THRESHOLD", "NEARDUP_DEDUP__THRESHOLD"),  # a misspelt section
    ],
)
def test_a_variable_that_sets_nothing_is_refused_like_a_misspelt_field(
    variable: str, meant: str
) -> None:
    """One rule for a misspelt field, section or separator: nothing runs on the defaults."""
    doc = json.dumps({"id": "a", "text": "some text here"}).encode() + b"\n"
    env = {variable: "0.5", "NEARDUP_KAFKA__BOOTSTRAP_SERVERS": "x:1"}
    proc = _run("dedup", stdin=doc, env=env)
    assert proc.returncode == 2 and proc.stdout == b""
    err = proc.stderr.decode()
    assert f"{variable}: matches no setting" in err
    assert f"did you mean {meant}?" in err
    assert "KAFKA" not in err  # the worker's section: not this command's business


def test_the_worker_s_sections_do_not_stop_dedup() -> None:
    doc = json.dumps({"id": "a", "text": "some text here"}).encode() + b"\n"
    proc = _run("dedup", stdin=doc, env={"NEARDUP_KAFKA__BOOTSTRAP_SERVERS": "x:1"})
    assert proc.returncode == 0 and b'"unique"' in proc.stdout, proc.stderr


def test_schemas_written(tmp_path: Path) -> None:
    assert _run("schemas", "--out", str(tmp_path)).returncode == 0
    assert json.loads((tmp_path / "Decision.schema.json").read_text())["title"] == "Decision"


def test_dedup_reads_the_worker_mapping_and_retention_from_flags_and_environment(
    tmp_path: Path,
) -> None:
    a, b = random_text(11), random_text(12)
    docs = [
        {"url": "u1", "title": "T", "body": a},
        {"url": "u2", "title": "T", "body": b},
        {"url": "u3", "title": "T", "body": mutate(a, 0.01, 5)},  # near-copy of u1
        {"url": "u4", "body": "no id field here", "id": "ignored"},
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    args = ["dedup", "--input", str(src), "--id-field", "url", "--text-fields", "title,body"]
    proc = _run(*args)
    decided = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert [(d["id"], d["decision"]) for d in decided] == [
        ("u1", "unique"),
        ("u2", "unique"),
        ("u3", "duplicate"),
        ("u4", "unique"),
    ]
    # max_docs = 1 from the environment: u1 is evicted by u2, so u3 finds nothing
    env_run = subprocess.run(
        [sys.executable, "-m", "neardup_stream.cli", *args],
        capture_output=True,
        env={**os.environ, "NEARDUP_DEDUP__MAX_DOCS": "1"},
    )
    decided = [json.loads(line) for line in env_run.stdout.decode().splitlines()]
    assert decided[2]["decision"] == "unique", env_run.stderr.decode()
    # the same through the flag
    flagged = _run(*args, "--max-docs", "1")
    assert flagged.stdout == env_run.stdout


def test_dedup_refuses_key_ids_offline(tmp_path: Path) -> None:
    proc = _run("dedup", "--id-from-key", stdin=b"")
    assert proc.returncode == 2 and b"message keys" in proc.stderr


def test_dedup_max_docs_1_compares_with_the_previous_document() -> None:
    text = random_text(4)
    lines = [json.dumps({"id": f"s{i}", "text": text}) for i in range(3)]
    proc = _run("dedup", "--max-docs", "1", stdin="\n".join(lines).encode())
    decided = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert [(d["decision"], d["duplicate_of"]) for d in decided] == [
        ("unique", None),
        ("duplicate", "s0"),
        ("duplicate", "s1"),
    ], proc.stderr.decode()


def test_dedup_reports_empty_texts_as_bad_lines() -> None:
    lines = [
        json.dumps({"id": "e1", "text": ""}),
        json.dumps({"id": "t", "text": random_text(5)}),
        json.dumps({"id": "e2", "text": " \t "}),
    ]
    proc = _run("dedup", stdin="\n".join(lines).encode())
    decided = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert [(d["id"], d["decision"]) for d in decided] == [("t", "unique")]
    err = proc.stderr.decode()
    assert "line 1: empty_text:" in err and "line 3: empty_text:" in err
    assert "2 bad lines" in err


def test_a_cold_kernel_cache_is_announced_once_then_travels_with_the_package(
    tmp_path: Path,
) -> None:
    """A package built without the warm-up compiles on its first run, in its own
    `__pycache__`, and says so once; from then on it carries the compiled kernels: a later
    run, and a run with an empty NUMBA_CACHE_DIR of its own (a new container, a CI job),
    compile nothing and decide the same."""
    from neardup_stream.caches import COMPILE_NOTICE

    site = tmp_path / "site"
    shutil.copytree(
        Path(neardup_stream.__file__).parent,
        site / "neardup_stream",
        ignore=shutil.ignore_patterns("__pycache__", "_aot*"),  # no warm-up: no AOT build
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "NEARDUP_"))}
    env["PYTHONPATH"] = str(site)
    stdin = json.dumps({"id": "a", "text": random_text(6)}).encode()

    def run(**extra: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "neardup_stream.cli", "dedup"],
            input=stdin,
            capture_output=True,
            env={**env, **extra},
            cwd=site,
        )

    runs = [run(), run(), run(NUMBA_CACHE_DIR=str(tmp_path / "empty"))]
    cold, warm, adopted = (r.stderr.decode() for r in runs)
    assert cold.count(COMPILE_NOTICE) == 1 and "python -m neardup_stream.warmup" in cold
    assert list((site / "neardup_stream" / "index" / "__pycache__").glob("*.nbi"))
    for later in (warm, adopted):
        assert COMPILE_NOTICE not in later and "summary: 1 documents" in later
    assert list((tmp_path / "empty").rglob("*.nbi"))
    assert runs[0].stdout == runs[1].stdout == runs[2].stdout != b""


def test_dedup_marks_a_changed_document_as_an_update() -> None:
    a, b = random_text(8), random_text(9)
    lines = [json.dumps({"id": i, "text": t}) for i, t in [("p", a), ("p", a), ("p", b)]]
    proc = _run("dedup", stdin="\n".join(lines).encode())
    decided = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert [d["update"] for d in decided] == [False, False, True]
    assert "1 updates" in proc.stderr.decode()


def test_dedup_into_a_reader_that_stops_early_exits_quietly(tmp_path: Path) -> None:
    """`neardup-stream dedup ... | head -1`: no traceback, the shell's SIGPIPE status."""
    src = tmp_path / "in.jsonl"
    src.write_text(
        "".join(json.dumps({"id": str(i), "text": random_text(i)}) + "\n" for i in range(3000))
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "neardup_stream.cli", "dedup", "--input", str(src)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # the reader goes away, as `head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141, err
    assert json.loads(first)["id"] == "0"
    assert "Traceback" not in err and "BrokenPipe" not in err, err


@pytest.mark.parametrize("given, expected", [(None, "1"), ("3", "3")])
def test_the_command_runs_numpy_on_one_blas_thread_unless_told(
    given: str | None, expected: str
) -> None:
    """OpenBLAS's threads spin at start-up for nothing the engine needs; a user's value wins."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    code = "import os, neardup_stream.cli, numpy; print(os.environ['OPENBLAS_NUM_THREADS'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True)
    assert out.stdout.decode().strip() == expected
