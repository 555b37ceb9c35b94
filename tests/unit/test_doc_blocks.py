"""Every code block of README.md and docs/**.md, as written (`doc_blocks` says how each kind
is checked): Python runs and prints what the block shows; the README's offline example runs
in a shell and writes exactly the JSON shown after it; JSON output lines are real records of
their format; every shell command names a make target, script, subcommand, flag and
`NEARDUP_*` variable that exists; an excerpt matches its source. Blocks that need a broker
run in `tests/integration/test_doc_blocks.py`."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.doc_blocks import LANGUAGES, ROOT, Block, all_blocks, commands, environment_prefix

BLOCKS = all_blocks()


def _of(lang: str, mark: str = "") -> list[Block]:
    return [b for b in BLOCKS if b.lang == lang and b.mark == mark]


def _ids(b: Block) -> str:
    return b.name


def test_every_block_says_what_it_is() -> None:
    unknown = [f"{b.name}: ```{b.lang}" for b in BLOCKS if b.lang not in LANGUAGES]
    assert not unknown, unknown
    marks = {b.mark.split()[0] for b in BLOCKS if b.mark}
    assert marks <= {"broker", "pytest", "excerpt"}, marks


@pytest.mark.parametrize("block", _of("python"), ids=_ids)
def test_python_runs_as_written_and_prints_what_it_shows(block: Block) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.body, block.name, "exec"), {"__name__": "doc_block"})
    lines = block.body.rstrip("\n").splitlines()
    shown: list[str] = []
    while lines and lines[-1].startswith("# "):
        shown.insert(0, lines.pop()[2:])
    if shown:
        assert out.getvalue().splitlines() == shown


@pytest.mark.parametrize("block", _of("python", "pytest"), ids=_ids)
def test_a_test_file_example_at_least_compiles_here(block: Block) -> None:
    compile(block.body, block.name, "exec")  # tests/integration/test_kit_plugin.py runs it


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.mark.startswith("excerpt")], ids=_ids)
def test_an_excerpt_matches_its_source(block: Block) -> None:
    source = ROOT / block.mark.split(maxsplit=1)[1]

    def bare(line: str) -> str:
        return re.sub(r"\s+#.*$", "", line).strip()

    lines = {bare(line) for line in source.read_text().splitlines()}
    stale = [line for line in block.body.splitlines() if bare(line) and bare(line) not in lines]
    assert not stale, f"{block.name} no longer matches {source.name}: {stale}"


def test_the_readme_offline_example_writes_what_it_shows(tmp_path: Path) -> None:
    readme = [b for b in BLOCKS if b.page.name == "README.md"]
    at = next(i for i, b in enumerate(readme) if b.lang == "bash" and "dedup" in b.body)
    run, shown = readme[at], readme[at + 1]
    assert shown.lang == "json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    subprocess.run(["bash", "-euo", "pipefail", "-c", run.body], env=env, check=True, cwd=tmp_path)
    written = re.search(r"--output (\S+)", run.body)
    assert written is not None
    assert Path(written[1]).read_text().splitlines() == shown.body.splitlines()


def _record_fields(line: dict[str, object]) -> set[str]:
    from neardup_stream.models import Decision, ErrorRecord

    model = Decision if "decision" in line else ErrorRecord
    model.model_validate(line)
    return set(model.model_fields)


@pytest.mark.parametrize("block", _of("json"), ids=_ids)
def test_json_output_lines_are_whole_records_of_their_format(block: Block) -> None:
    for text in block.body.splitlines():
        line = json.loads(text.replace("…", ""))
        assert set(line) == _record_fields(line), text


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][\w-]*):", text, re.M))


def _script_commands(script: Path) -> set[str]:
    return set(re.findall(r"^\s+([a-z][\w-]*)\)", script.read_text(), re.M))


def _parses(parser: object, args: list[str]) -> str | None:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parser.parse_args(args)  # type: ignore[attr-defined]
    except SystemExit as exc:
        return err.getvalue() if exc.code else None
    return None


def _check_command(words: list[str]) -> str | None:
    """What is wrong with one shell command of the docs, or None."""
    from neardup_stream.cli import build_parser
    from neardup_stream.settings_fields import OTHER_VARIABLES, known_variables
    from neardup_stream.worker.main import build_parser as worker_parser
    from neardup_stream.worker.settings import Settings

    env, words = environment_prefix(words)
    if words[:1] == ["export"]:
        env, words = environment_prefix(words[1:])
    known = set(known_variables(Settings)) | OTHER_VARIABLES
    bad = [k for k in env if k.startswith("NEARDUP_") and k not in known]
    if bad:
        return f"no such setting: {bad}"
    if not words:
        return None
    program, args = words[0], words[1:]
    if program == "make":
        targets = [a for a in args if "=" not in a]
        missing = set(targets) - _make_targets()
        return f"no make target {sorted(missing)}" if missing else None
    if program == "neardup-stream":
        if args[:1] == ["worker"]:
            return _parses(worker_parser(), args[1:])
        return _parses(build_parser(plugins=False), args)
    if "/" in program:
        script = ROOT / program
        if not script.is_file():
            return f"{program} does not exist"
        if args and args[0] not in _script_commands(script):
            return f"{program} has no command {args[0]!r}"
        return None
    if program in {"python", "python3"} and args[:1] == ["-m"]:
        import importlib.util

        return None if importlib.util.find_spec(args[1]) else f"no module {args[1]}"
    external = {"pip", "kubectl", "docker", "cat", "set", ".", "curl", "promtool", "cd"}
    return None if program in external else f"unknown program {program!r}"


@pytest.mark.parametrize("block", _of("bash"), ids=_ids)
def test_every_shell_command_names_what_exists(block: Block) -> None:
    found = [(c, _check_command(c)) for c in commands(block.body)]
    wrong = [f"{' '.join(c)}: {why}" for c, why in found if why]
    assert not wrong, wrong


def test_the_shell_check_catches_what_it_should() -> None:
    assert _check_command(["make", "no-such-target"])
    assert _check_command(["neardup-stream", "worker", "--no-such-flag"])
    assert _check_command(["NEARDUP_DEDUPE__THRESHOLD=0.9", "neardup-stream", "dedup"])
    assert _check_command(["deploy/local/kafka.sh", "explode"])
    assert _check_command(["make", "demo"]) is None
    assert (
        _check_command(["neardup-stream", "worker", "--scope", "partition", "--instance-id", "r0"])
        is None
    )
