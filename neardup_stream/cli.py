"""The `neardup-stream` command line: offline `dedup`, `compare`, `schemas`, and plug-ins.

`dedup` reads JSONL documents and writes one decision per valid document, in input order.
A bad line is reported on stderr with its line number and skipped; the run goes on. The exit
status is non-zero only for usage errors (bad flags, unreadable files). Settings come from
`NEARDUP_*` like the worker's (`EngineSettings`), flags on top, so a worker's decisions can be
reproduced offline.

Other commands (`worker`) are plug-ins registered under the `neardup_stream.commands` entry
point group: the core never imports them.
"""

from __future__ import annotations

import os

# Before numpy is imported: its OpenBLAS starts a thread per core that spins for a while
# (about 0.1 s of CPU per run, more than deciding 10 documents), and the engine does no linear
# algebra worth threading. A user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic_settings import SettingsError

from neardup_stream import __version__
from neardup_stream.config import DedupConfig, with_stream_home_shards
from neardup_stream.mapping import DEFAULT_MAPPING, InputMapping
from neardup_stream.models import Decision, Document, json_schemas
from neardup_stream.options import (
    add_engine_flags,
    add_input_flags,
    engine_flag_parser,
    engine_overrides,
)
from neardup_stream.parsing import ParseError, parse_document
from neardup_stream.settings import EngineSettings
from neardup_stream.settings_errors import (
    format_problems,
    problems,
    unknown_variables,
    unparsable,
)
from neardup_stream.settings_fields import given_flags

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

BATCH = 512
BUILT_IN = ("dedup", "compare", "schemas")  # the other commands are plug-ins
PLUGIN_GROUP = "neardup_stream.commands"
DECISION_FIELDS = (
    "id",
    "decision",
    "duplicate_of",
    "representative",
    "similarity",
    "method",
    "update",
)


def _lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    for number, line in enumerate(stream, start=1):
        stripped = line.rstrip(b"\r\n")
        if stripped and not stripped.isspace():  # (no copy of the line, unlike strip())
            yield number, stripped


def _read(source: IO[bytes], bar: Any) -> Iterator[tuple[int, bytes]]:
    """`_lines` of `source`, each one counted on the progress bar (if any)."""
    for number, raw in _lines(source):
        if bar is not None:
            bar.update(len(raw) + 1)
        yield number, raw


def _bad_line(err: IO[str], counts: Counter[str], number: int, error: ParseError) -> None:
    counts["errors"] += 1
    err.write(f"line {number}: {error.reason}: {error.message}\n")


def _progress(total_bytes: int | None) -> Any:
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total_bytes, unit="B", unit_scale=True, file=sys.stderr, desc="dedup")


def _sharded(config: DedupConfig, mapping: InputMapping) -> bool:
    """Whether a run decides on the sharded engine: several home shards, or domains."""
    return config.home_shards > 1 or mapping.domain_field is not None


def _decider(
    config: DedupConfig, mapping: InputMapping
) -> Callable[[list[Document]], list[Decision]]:
    """What decides a batch: one engine, or (several home shards or domains) the sharded
    engine; each is imported only when used, so a run loads only its own kernels."""
    if _sharded(config, mapping):
        from neardup_stream.mapping import domain_of
        from neardup_stream.sharded.deduplicator import ShardedDeduplicator

        sharded = ShardedDeduplicator(config)
        return lambda docs: sharded.process(docs, [domain_of(mapping, doc) for doc in docs])
    from neardup_stream.deduplicator import Deduplicator

    return Deduplicator(config).check_batch


def run_dedup(
    config: DedupConfig,
    source: IO[bytes],
    sink: IO[str],
    err: IO[str],
    max_bytes: int,
    total_bytes: int | None = None,
    mapping: InputMapping = DEFAULT_MAPPING,
) -> Counter[str]:
    """Stream JSONL documents from `source` to decisions on `sink`; returns counters."""
    from neardup_stream.caches import announce_compilation

    announce_compilation(err)
    counts: Counter[str] = Counter()
    bar = _progress(total_bytes)
    started = time.perf_counter()
    lines = _read(source, bar)
    if not _sharded(config, mapping) and mapping.is_default:
        _dedup_columns(config, lines, sink, err, max_bytes, counts)
    else:
        _dedup_documents(config, lines, sink, err, max_bytes, mapping, counts)
    if bar is not None:
        bar.close()
    elapsed = time.perf_counter() - started
    docs = counts["unique"] + counts["duplicate"]
    err.write(
        f"summary: {docs} documents, {counts['unique']} unique, {counts['duplicate']} duplicate "
        f"(exact {counts['method:exact']}, simhash {counts['method:simhash']}, "
        f"minhash {counts['method:minhash']}), {counts['update']} updates, "
        f"{counts['errors']} bad lines, "
        f"{docs / elapsed if elapsed > 0 else 0:.0f} docs/s\n"
    )
    return counts


def _count(counts: Counter[str], method: str | None, update: bool) -> None:
    counts["duplicate" if method else "unique"] += 1
    if method:
        counts[f"method:{method}"] += 1
    if update:
        counts["update"] += 1


def _dedup_columns(
    config: DedupConfig,
    lines: Iterator[tuple[int, bytes]],
    sink: IO[str],
    err: IO[str],
    max_bytes: int,
    counts: Counter[str],
) -> None:
    """`run_dedup` on one engine, batches as columns (`line_batch`): no object per line."""
    from neardup_stream.deduplicator import Deduplicator  # the compiled kernels load here
    from neardup_stream.line_batch import decision_lines, parse_lines

    engine = Deduplicator(config)
    pending: list[tuple[int, bytes]] = []

    def flush() -> None:
        parsed = parse_lines(pending, max_bytes)
        pending.clear()
        for number, error in parsed.errors:
            _bad_line(err, counts, number, error)
        counts["chars"] += sum(map(len, parsed.texts))
        cols = engine.decide_columns(parsed.ids, parsed.texts, parsed.stamps)
        for i, update in enumerate(cols.update):
            _count(counts, cols.method_name(i), update)
        sink.write(decision_lines(cols))

    for line in lines:
        pending.append(line)
        if len(pending) >= BATCH:
            flush()
    flush()


def _dedup_documents(
    config: DedupConfig,
    lines: Iterator[tuple[int, bytes]],
    sink: IO[str],
    err: IO[str],
    max_bytes: int,
    mapping: InputMapping,
    counts: Counter[str],
) -> None:
    """`run_dedup` through `Document`s: a mapping of other fields, or the sharded engine."""
    decide = _decider(config, mapping)  # the compiled kernels load here
    batch: list[Document] = []

    def flush() -> None:
        for d in decide(batch):
            _count(counts, d.method, d.update)
            sink.write(json.dumps(d.model_dump(include=set(DECISION_FIELDS))) + "\n")
        batch.clear()

    for number, raw in lines:
        parsed = parse_document(raw, max_bytes, mapping)
        if isinstance(parsed, ParseError):
            _bad_line(err, counts, number, parsed)
            continue
        counts["chars"] += len(parsed.text)
        batch.append(parsed)
        if len(batch) >= BATCH:
            flush()
    flush()


class UsageError(Exception):
    """A problem with how the command was called: reported on stderr, exit status 2."""


def engine_settings(args: argparse.Namespace) -> EngineSettings:
    """`NEARDUP_*` with the flags in `args` on top; invalid settings raise a `UsageError`
    naming each setting, its source and what it accepts, as do `NEARDUP_*` variables that set
    nothing (the worker's sections are left to the worker)."""
    found = unknown_variables(EngineSettings, os.environ, other_sections=True)
    try:
        settings = EngineSettings().with_overrides(engine_overrides(args))
    except ValidationError as exc:
        flags = given_flags(engine_flag_parser(), engine_overrides, args)
        found += problems(exc, EngineSettings, flags, os.environ)
    except SettingsError as exc:  # e.g. a section given as invalid JSON
        found = [unparsable(exc, os.environ)]
    if found:
        raise UsageError(format_problems(found))
    return settings


def _read_text(arg: str, literal: bool) -> str:
    if literal:
        return arg
    if arg == "-":
        return sys.stdin.read()
    try:
        return Path(arg).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(
            f"cannot read {arg!r}: {exc.strerror or exc}"
            " (A and B are files; give --text to compare them as literal strings)"
        ) from None


def _cmd_dedup(args: argparse.Namespace) -> int:
    from neardup_stream.allocator import keep_freed_memory

    keep_freed_memory()
    settings = engine_settings(args)
    if settings.input.id_source == "key":
        raise UsageError("offline input has no message keys: give ids with --id-field")
    try:
        source = open(args.input, "rb") if args.input != "-" else sys.stdin.buffer  # noqa: SIM115
    except OSError as exc:
        raise UsageError(f"cannot read --input {args.input!r}: {exc.strerror or exc}") from None
    try:
        sink = open(args.output, "w", encoding="utf-8") if args.output != "-" else sys.stdout  # noqa: SIM115
    except OSError as exc:
        source.close()
        raise UsageError(f"cannot write --output {args.output!r}: {exc.strerror or exc}") from None
    total = Path(args.input).stat().st_size if args.input != "-" else None
    try:
        # the stream's home shards unless set: each keeps its share of a bucket key, so
        # `dedup` at its defaults decides exactly as the default worker does
        config = with_stream_home_shards(settings.dedup)
        run_dedup(config, source, sink, sys.stderr, args.max_bytes, total, settings.input)
    finally:
        if sink is not sys.stdout:
            sink.close()
        if source is not sys.stdin.buffer:
            source.close()
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from neardup_stream.caches import announce_compilation
    from neardup_stream.compare import compare  # the compiled kernels load here

    config = engine_settings(args).dedup
    if args.a == "-" and args.b == "-" and not args.text:
        raise UsageError("only one of A and B can be standard input (-)")
    announce_compilation(sys.stderr)
    report = compare(_read_text(args.a, args.text), _read_text(args.b, args.text), config)
    if args.json:
        print(json.dumps(report.as_dict()))
        return 0
    labels = {
        "exact_jaccard": "exact Jaccard (shingle sets)",
        "estimated_jaccard": "estimated Jaccard (MinHash sketch)",
        "simhash_hamming": "SimHash Hamming distance (of 64)",
        "tfidf_cosine": "TF-IDF cosine",
        "exact_duplicate": "exact duplicate (normalised text)",
        "lsh_candidate": "LSH candidate (shares a band)",
        "decision": "decision for B after A",
        "method": "method",
        "similarity": "similarity",
    }
    for key, value in report.as_dict().items():
        print(f"{labels[key]:<38} {value}")
    return 0


def _cmd_schemas(args: argparse.Namespace) -> int:
    schemas = json_schemas()
    if args.out is None:
        print(json.dumps(schemas, indent=2))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, schema in schemas.items():
        (out / f"{name}.schema.json").write_text(json.dumps(schema, indent=2) + "\n")
    return 0


def build_parser(plugins: bool = True) -> argparse.ArgumentParser:
    """The command line; `plugins=False` leaves the plug-in commands out (not looked up)."""
    parser = argparse.ArgumentParser(prog="neardup-stream", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("dedup", help="deduplicate a JSONL file of documents")
    p.add_argument("--input", "-i", default="-", help="JSONL input (default stdin)")
    p.add_argument("--output", "-o", default="-", help="decisions JSONL (default stdout)")
    p.add_argument("--max-bytes", type=int, default=8 * 1024 * 1024, help="largest line accepted")
    add_engine_flags(p)
    add_input_flags(p)
    p = sub.add_parser(
        "compare", help="explain the similarity of two files (or, with --text, strings)"
    )
    p.add_argument("a", help="a file (- for stdin), or with --text the text itself")
    p.add_argument("b", help="a file (- for stdin), or with --text the text itself")
    p.add_argument("--text", action="store_true", help="A and B are literal texts, not file names")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_engine_flags(p, retention=False)
    p = sub.add_parser("schemas", help="print or write the JSON Schemas of the message formats")
    p.add_argument("--out", help="directory to write <Model>.schema.json files into")
    for name in sorted(_plugins()) if plugins else ():
        sub.add_parser(name, help=f"see `neardup-stream {name} --help`", add_help=False)
    return parser


def _plugins() -> dict[str, EntryPoint]:
    """Commands registered by other packages (e.g. the Kafka worker)."""
    from importlib.metadata import entry_points  # (17 ms: only when a plug-in may be asked)

    return {ep.name: ep for ep in entry_points(group=PLUGIN_GROUP)}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    built_in = bool(argv) and argv[0] in BUILT_IN
    plugin = _plugins().get(argv[0]) if argv and not built_in else None
    if plugin is not None:
        try:
            command = plugin.load()
        except ImportError as exc:
            sys.stderr.write(
                f"neardup-stream {argv[0]}: {exc}; install it with "
                f"`pip install 'neardup-stream[{argv[0]}]'`\n"
            )
            return 2
        return int(command(argv[1:]))
    parser = build_parser(plugins=not built_in)
    args = parser.parse_args(argv)
    try:
        if args.command == "dedup":
            return _cmd_dedup(args)
        if args.command == "compare":
            return _cmd_compare(args)
        return _cmd_schemas(args)
    except UsageError as exc:
        sys.stderr.write(f"neardup-stream {args.command}: error: {exc}\n")
    except BrokenPipeError:
        # The reader went away (`dedup ... | head`): stop quietly, like other Unix tools, and
        # point stdout at /dev/null so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a tool killed by the pipe
    return 2


if __name__ == "__main__":
    sys.exit(main())
