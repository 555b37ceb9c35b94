"""Generate `docs/settings.md`: every setting, its environment variable, flags and default.

    python -m tools.settings_reference            # rewrite docs/settings.md
    python -m tools.settings_reference --check    # exit 1 if docs/settings.md is not current

One table per settings section, read from the models themselves (`neardup_stream.worker.settings.Settings`,
which extends the engine's `EngineSettings`), the flags from the real parsers of `dedup`,
`compare` and `worker` (through `settings_errors.flag_names`), and what each field accepts
from its type and constraints. A meaning comes from the field's description, else its flag's
help, else `MEANINGS` below; a setting with none fails `--check` (and the docs test).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from neardup_stream.cli import build_parser as cli_parser
from neardup_stream.options import engine_overrides
from neardup_stream.settings_fields import OTHER_VARIABLES, accepted, env_name, flag_names
from neardup_stream.worker.main import build_parser as worker_parser
from neardup_stream.worker.main import flag_overrides
from neardup_stream.worker.settings import Settings

OUT = Path(__file__).resolve().parents[1] / "docs" / "settings.md"

# Meanings of fields that have neither a description nor a flag with help text.
MEANINGS = {
    "log_level": "log level",
    "kafka.client_id": "client id the Kafka clients send",
    "kafka.security_protocol": "how to talk to the brokers",
    "kafka.sasl_mechanism": "SASL mechanism (required with a SASL protocol)",
    "kafka.sasl_username": "SASL user name",
    "kafka.sasl_password": "SASL password (secret: masked in logs)",
    "kafka.ssl_cafile": "CA certificate file for TLS",
    "kafka.ssl_certfile": "client certificate file for TLS",
    "kafka.ssl_keyfile": "client key file for TLS",
    "kafka.ssl_password": "password of the client key (secret: masked in logs)",
    "kafka.request_timeout_ms": "request timeout of the Kafka clients; also how long one "
    "start-up attempt waits for an unreachable broker",
    "topics.create": "create missing output, changelog and internal topics at start-up",
    "topics.replication_factor": "replication of topics created at start-up",
    "worker.exactly_once": "transactional exactly-once (`--at-least-once` turns it off)",
    "worker.session_timeout_ms": "consumer session timeout",
    "worker.poll_timeout_ms": "longest wait of one poll",
    "worker.transaction_timeout_ms": "transaction timeout",
    "worker.snapshot_every_s": "seconds between local snapshots (with `snapshot_dir`)",
    "cluster.fingerprints": "scale-out topic: the fingerprint log",
    "cluster.payloads": "scale-out topic: the documents' keys and values, read by the gather only",
    "cluster.votes": "scale-out topic: the shards' votes",
    "cluster.shards": "scale-out topic: one partition per home shard (ownership)",
    "cluster.shard_changelog": "scale-out topic: what each shard stored",
    "cluster.gather_changelog": "scale-out topic: first decisions (replays, representatives)",
    "metrics.enabled": "serve /metrics and /healthz",
}
# Extra words for settings whose meaning depends on the mode.
NOTES = {
    "dedup.max_docs": "Counted per comparison scope: per dedup domain across the whole "
    "cluster with `--cluster` (each home shard keeps ceil(max_docs / home_shards) of a "
    "domain's documents), per input partition in the plain worker (it compares within "
    "partitions). The index holds at most max_docs times the scopes with documents "
    "(docs/engine-semantics.md).",
    "dedup.home_shards": "Fixed for a deployment; decisions depend on it.",
    "worker.instance_id": "Default: the host name.",
    "cluster.log_partitions": "Scale-out only.",
}
# What a field accepts where a check across fields (a model validator) says it.
ACCEPTS = {
    "dedup.threshold": "a number in (0, 1]",
    "dedup.num_perm": "a power of two from 16 to 1024",
    "dedup.sketch_bits": "a multiple of 64 and of `num_perm` from 64 to 65536",
    "dedup.bands": "an integer >= 1 (or unset); with `rows`, bands * rows <= `num_perm`",
    "dedup.precise": "true or false; true needs `home_shards` = 1",
    "input.text_fields": "comma-separated names (`title,body`) or a JSON list of them",
    "kafka.sasl_mechanism": "one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (or unset); "
    "required with a SASL protocol, and needs `sasl_username` and `sasl_password`",
}
OTHER = {
    "NEARDUP_FAILPOINTS": "fault injection for tests, e.g. `batch_produced=kill@3` "
    "(`neardup_stream/worker/failpoints.py`)",
    "NEARDUP_JIT_CACHE_SEED": "a read-only, pre-filled compiled-kernel cache copied into "
    "`NUMBA_CACHE_DIR` when that is empty (the worker image sets it)",
    "NEARDUP_CACHE_DIR": "first place to look for (and write) derived tables such as the "
    "Unicode fold table (`neardup_stream/caches.py`)",
    "NEARDUP_KERNELS": "`jit` runs every kernel on numba's JIT instead of the ahead-of-time "
    "build (`neardup_stream/native/aot.py`)",
    "NEARDUP_BUILD_WARMUP": "`0` skips compiling the kernels while the package is built "
    "(`setup.py`; the worker image compiles them for a generic CPU instead)",
}


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = cli_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            sub: argparse.ArgumentParser = action.choices[name]
            return sub
    raise LookupError(name)


def _helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Flag -> its help, without a "(default ...)" the table has a column for."""
    return {
        s: re.sub(r"\s*\(default [^)]*\)$", "", a.help or "")
        for a in parser._actions
        for s in a.option_strings
    }


def flags_by_setting() -> dict[str, dict[str, str]]:
    """Setting path -> {command: flag}."""
    found: dict[str, dict[str, str]] = {}
    parsers = {
        "dedup": (_subparser("dedup"), engine_overrides),
        "compare": (_subparser("compare"), engine_overrides),
        "worker": (worker_parser(), flag_overrides),
    }
    for command, (parser, overrides) in parsers.items():
        for path, flag in flag_names(parser, overrides).items():
            found.setdefault(path, {})[command] = flag
        for action in parser._actions:  # top-level fields set directly (--log-level)
            if action.dest in Settings.model_fields and action.option_strings:
                found.setdefault(action.dest, {})[command] = action.option_strings[0]
    return found


def _default(info: Any) -> str:
    if info.default_factory is not None:
        return "computed"
    value = info.default
    if value is None or value is PydanticUndefined:
        return "unset"
    if isinstance(value, tuple):
        value = ",".join(value)
    return f"`{value!s}`".replace("\n", "\\n")


def _rows(
    section: str | None, model: type[BaseModel], flags: dict[str, dict[str, str]]
) -> list[str]:
    helps = {**_helps(worker_parser()), **_helps(_subparser("dedup"))}
    rows = []
    for name, info in model.model_fields.items():
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            continue
        path = (section, name) if section else (name,)
        dotted = ".".join(path)
        given = flags.get(dotted, {})
        flag_text = "<br>".join(
            f"`{flag}` ({', '.join(c for c, f in given.items() if f == flag)})"
            for flag in dict.fromkeys(given.values())
        )
        meaning = (
            info.description
            or MEANINGS.get(dotted)
            or next((helps[f] for f in given.values() if helps.get(f)), "")
        )
        if not meaning:
            raise SystemExit(f"{dotted}: no description, flag help or MEANINGS entry")
        what = ACCEPTS.get(dotted) or accepted(Settings, path) or ""
        note = NOTES.get(dotted, "")
        rows.append(
            f"| `{env_name(path)}` | {flag_text} | {_default(info)} | {what} | "
            f"{meaning}{'. ' + note if note else ''} |"
        )
    return rows


def render() -> str:
    """The whole of docs/settings.md."""
    flags = flags_by_setting()
    out = [
        "# Settings reference",
        "",
        "<!-- Generated by `python -m tools.settings_reference`; do not edit by hand. -->",
        "",
        "Every setting is an environment variable: the prefix `NEARDUP_`, then the section and",
        "the field joined by a double underscore (`NEARDUP_DEDUP__THRESHOLD`); names are not",
        "case-sensitive. A flag, where there is one, overrides the variable. `dedup` and",
        "`compare` read the `dedup` and `input` sections (and ignore the worker's); the worker",
        "reads all of them. An invalid value is refused naming the setting, where it came from",
        "and what it accepts; a `NEARDUP_` variable that matches no setting is warned about,",
        "with the nearest name.",
        "",
    ]
    out += ["## General", "", *_header(), *_rows(None, Settings, flags), ""]
    for section, info in Settings.model_fields.items():
        model = info.annotation
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            continue
        doc = (model.__doc__ or "").strip().splitlines()[0]
        out += [f"## `{section}`: {doc}", "", *_header(), *_rows(section, model, flags), ""]
    out += [
        "## Other variables",
        "",
        "Read outside the settings models; never reported as unknown.",
        "",
        "| variable | meaning |",
        "|---|---|",
        *(f"| `{name}` | {OTHER[name]} |" for name in sorted(OTHER_VARIABLES)),
        "",
    ]
    return "\n".join(out)


def _header() -> list[str]:
    return [
        "| environment variable | flag (commands) | default | accepts | meaning |",
        "|---|---|---|---|---|",
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.settings_reference", description=__doc__)
    p.add_argument("--check", action="store_true", help="fail if docs/settings.md is stale")
    args = p.parse_args(argv)
    text = render()
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            sys.stderr.write(f"{OUT} is not current: run python -m tools.settings_reference\n")
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
