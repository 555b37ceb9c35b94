"""Command-line flags shared by `dedup`, `compare` and the worker, mapped onto the settings.

Every flag defaults to None ("not given"), so the environment (`NEARDUP_*`) decides unless a
flag says otherwise; `engine_overrides` turns the given flags into `with_overrides` sections.
"""

from __future__ import annotations

import argparse
from typing import Any

_ENGINE = (
    "threshold",
    "shingle",
    "shingle_size",
    "num_perm",
    "simhash_k",
    "strip_html",
    "precise",
    "max_docs",
    "max_age_seconds",
    "home_shards",
)


def add_engine_flags(p: argparse.ArgumentParser, retention: bool = True) -> None:
    """The engine's flags (`NEARDUP_DEDUP__*`)."""
    g = p.add_argument_group("engine")
    g.add_argument("--threshold", type=float, help="Jaccard threshold (default 0.8)")
    g.add_argument("--shingle", choices=["char", "word"], help="feature kind (default char)")
    g.add_argument("--shingle-size", type=int, help="k of the k-grams (default 5)")
    g.add_argument("--num-perm", type=int, help="MinHash signature length (default 128)")
    g.add_argument("--simhash-k", type=int, help="SimHash Hamming distance (default 3)")
    g.add_argument("--strip-html", action="store_true", default=None, help="strip HTML first")
    g.add_argument(
        "--home-shards",
        type=int,
        help="document-partitioned shards (default 24 in the worker and dedup, 1 with "
        "--precise or dedup.longest_sentences); decisions depend on it",
    )
    g.add_argument(
        "--precise",
        action="store_true",
        default=None,
        help="exact Jaccard near the threshold (more memory)",
    )
    if retention:
        g.add_argument(
            "--max-docs", type=int, help="keep at most this many documents per domain or partition"
        )
        g.add_argument(
            "--max-age",
            type=float,
            dest="max_age_seconds",
            help="forget documents older than this many seconds (event time)",
        )


def add_input_flags(p: argparse.ArgumentParser) -> None:
    """Where ids, texts and timestamps come from (`NEARDUP_INPUT__*`)."""
    g = p.add_argument_group("input mapping")
    g.add_argument("--value-format", choices=["json", "text"], help="json objects or plain text")
    g.add_argument("--id-field", help="JSON field with the document id (default id)")
    g.add_argument(
        "--id-from-key",
        action="store_true",
        default=None,
        help="take the id from the message key (always so for text values)",
    )
    g.add_argument(
        "--text-fields", help="comma-separated fields joined into the text (default text)"
    )
    g.add_argument("--timestamp-field", help="JSON field with the event time (default timestamp)")
    g.add_argument(
        "--domain-field", help="JSON field naming the dedup domain (default: one domain)"
    )


def engine_overrides(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """`with_overrides` sections for the engine and input flags present in `args`."""
    dedup = {name: getattr(args, name, None) for name in _ENGINE}
    mapping = {
        name: getattr(args, name, None)
        for name in (
            "value_format",
            "id_field",
            "id_from_key",
            "text_fields",
            "timestamp_field",
            "domain_field",
        )
    }
    return {"dedup": dedup, "input": mapping}


def engine_flag_parser() -> argparse.ArgumentParser:
    """A parser with just the engine and input flags: what `settings_errors.flag_names` reads
    to name the flag behind a setting."""
    p = argparse.ArgumentParser(add_help=False)
    add_engine_flags(p)
    add_input_flags(p)
    return p
