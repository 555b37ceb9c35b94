"""Names and accepted values of settings: flags found from the parsers, bounds in words."""

from __future__ import annotations

from neardup_stream.options import engine_flag_parser, engine_overrides
from neardup_stream.settings import EngineSettings
from neardup_stream.settings_fields import accepted, env_name, flag_names, given_flags


def test_flag_names_cover_every_engine_flag() -> None:
    names = flag_names(engine_flag_parser(), engine_overrides)
    assert names["dedup.shingle_size"] == "--shingle-size"
    assert names["dedup.max_age_seconds"] == "--max-age"
    assert names["input.domain_field"] == "--domain-field"
    flags = {
        s for a in engine_flag_parser()._actions for s in a.option_strings if s.startswith("--")
    }
    assert set(names.values()) == flags


def test_given_flags_only_lists_what_was_given() -> None:
    args = engine_flag_parser().parse_args(["--threshold", "0.7"])
    assert given_flags(engine_flag_parser(), engine_overrides, args) == {
        "dedup.threshold": "--threshold"
    }


def test_accepted_ranges_in_words() -> None:
    assert accepted(EngineSettings, ("dedup", "shingle_size")) == "an integer from 1 to 32"
    assert accepted(EngineSettings, ("dedup", "shingle")) == "one of char, word"
    assert accepted(EngineSettings, ("dedup", "max_age_seconds")) == "a number > 0 (or unset)"
    assert accepted(EngineSettings, ("input", "id_field")) == "non-empty text"


def test_env_names() -> None:
    assert env_name(("dedup", "threshold")) == "NEARDUP_DEDUP__THRESHOLD"
    assert env_name(("log_level",)) == "NEARDUP_LOG_LEVEL"
