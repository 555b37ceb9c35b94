"""The settings-error formatter: setting, source, accepted range, nearest name."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from neardup_stream.options import engine_flag_parser, engine_overrides
from neardup_stream.settings import EngineSettings
from neardup_stream.settings_errors import (
    format_problems,
    problems,
    unknown_variables,
    unparsable,
)
from neardup_stream.settings_fields import given_flags


def _fail(env: dict[str, str], argv: list[str], monkeypatch: pytest.MonkeyPatch) -> str:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    args = engine_flag_parser().parse_args(argv)
    with pytest.raises(ValidationError) as caught:
        EngineSettings().with_overrides(engine_overrides(args))
    flags = given_flags(engine_flag_parser(), engine_overrides, args)
    return format_problems(problems(caught.value, EngineSettings, flags, env))


def test_a_flag_beats_the_environment_as_the_named_source(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _fail({"NEARDUP_DEDUP__SIMHASH_K": "2"}, ["--simhash-k", "9"], monkeypatch)
    assert "dedup.simhash_k (flag --simhash-k)" in text
    assert "an integer from 0 to 7" in text and "got 9" in text


def test_an_environment_value_names_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _fail({"NEARDUP_DEDUP__NUM_PERM": "100"}, [], monkeypatch)
    assert "environment variable NEARDUP_DEDUP__NUM_PERM" in text
    assert "power of two in [16, 1024]" in text


def test_a_check_across_fields_names_the_given_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _fail({"NEARDUP_DEDUP__BANDS": "4"}, ["--threshold", "0.9"], monkeypatch)
    assert "dedup.bands (environment variable NEARDUP_DEDUP__BANDS)" in text
    assert "set both bands and rows" in text


def test_an_unknown_field_suggests_the_nearest(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _fail({"NEARDUP_INPUT__TEXT_FIELD": "body"}, [], monkeypatch)
    assert "environment variable NEARDUP_INPUT__TEXT_FIELD" in text
    assert "no such setting; did you mean NEARDUP_INPUT__TEXT_FIELDS?" in text


def test_unknown_variables() -> None:
    env = {
        "NEARDUP_DEDUP_THRESHOLD": "0.5",  # one underscore
        "NEARDUP_DEDUPE__THRESHOLD": "0.5",  # misspelt section
        "NEARDUP_DEDUP__THRESHOLD": "0.5",  # fine
        "NEARDUP_LOG_LEVEL": "INFO",  # fine
        "NEARDUP_JIT_CACHE_SEED": "/x",  # read at start-up, not a setting
        "NEARDUP_KAFKA__BOOTSTRAP_SERVERS": "h:1",  # the worker's section
        "HOME": "/root",
    }
    found = {p.setting: p.suggestion for p in unknown_variables(EngineSettings, env, True)}
    assert found == {
        "NEARDUP_DEDUP_THRESHOLD": "NEARDUP_DEDUP__THRESHOLD",
        "NEARDUP_DEDUPE__THRESHOLD": "NEARDUP_DEDUP__THRESHOLD",
    }
    strict = {p.setting for p in unknown_variables(EngineSettings, env)}
    assert "NEARDUP_KAFKA__BOOTSTRAP_SERVERS" in strict


def test_problems_read_only_what_they_are_given() -> None:
    with pytest.raises(ValidationError) as caught:
        EngineSettings.model_validate({"dedup": {"shingle_size": 0}})
    found = problems(caught.value, EngineSettings, {}, {})
    assert [(p.setting, p.source) for p in found] == [("dedup.shingle_size", "default")]


def test_an_unparsable_section_names_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic_settings import SettingsError

    monkeypatch.setenv("NEARDUP_DEDUP", "{bad")
    with pytest.raises(SettingsError) as caught:
        EngineSettings()
    problem = unparsable(caught.value, {"NEARDUP_DEDUP": "{bad", "HOME": "/"})
    assert problem.source == "environment variable NEARDUP_DEDUP"
    assert "cannot be parsed" in problem.problem and "JSON object" in str(problem)


@pytest.mark.parametrize("value", ["title,body", "title, body", '["title", "body"]'])
def test_text_fields_from_the_environment_as_documented(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEARDUP_INPUT__TEXT_FIELDS", value)
    assert EngineSettings().input.text_fields == ("title", "body")


def test_text_fields_as_broken_json_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _fail({"NEARDUP_INPUT__TEXT_FIELDS": '["title"'}, [], monkeypatch)
    assert "input.text_fields (environment variable NEARDUP_INPUT__TEXT_FIELDS)" in text
    assert "JSON list" in text
