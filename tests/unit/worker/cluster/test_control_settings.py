"""Cluster settings derived and refused at construction (`neardup_stream.worker.settings`)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from neardup_stream.config import STREAM_HOME_SHARDS
from neardup_stream.worker.main import build_parser, settings_from_args
from neardup_stream.worker.settings import Settings


def from_flags(*argv: str, base: Settings | None = None) -> Settings:
    return settings_from_args(build_parser().parse_args(list(argv)), base or Settings())


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("NEARDUP_"):
            monkeypatch.delenv(name)


def test_internal_topic_names_follow_the_group_and_stay_as_today_by_default() -> None:
    default = from_flags().cluster
    assert (default.fingerprints, default.votes, default.shards) == (
        "neardup.fingerprints",
        "neardup.votes",
        "neardup.shards",
    )
    assert default.shard_changelog == "neardup.shard-changelog"
    assert default.gather_changelog == "neardup.gather-changelog"
    assert default.payloads == "neardup.payloads"
    assert default.control == "neardup.control"
    other = from_flags("--group-id", "news").cluster
    assert other.fingerprints == "news.fingerprints" and other.control == "news.control"


def test_explicit_internal_topic_names_win_over_the_group(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEARDUP_CLUSTER__FINGERPRINTS", "mine.fp")
    monkeypatch.setenv("NEARDUP_WORKER__GROUP_ID", "a")
    s = from_flags("--group-id", "b")
    assert s.cluster.fingerprints == "mine.fp"
    assert s.cluster.votes == "b.votes"


def test_topic_scope_spreads_the_index_over_24_home_shards_unless_set() -> None:
    assert from_flags().dedup.home_shards == STREAM_HOME_SHARDS == 24
    assert from_flags("--scope", "partition").dedup.home_shards == 1
    assert from_flags("--home-shards", "6").dedup.home_shards == 6
    with pytest.raises(ValidationError, match="precise"):  # no shingle sets in the roles
        from_flags("--precise")
    assert from_flags("--scope", "partition", "--precise").dedup.precise


def test_the_0_2_cluster_flag_is_the_default_and_deprecated() -> None:
    s = from_flags("--cluster")
    assert s.topic_scope and s.dedup.home_shards == STREAM_HOME_SHARDS
    assert any("--cluster" in note for note in s.deprecated)
    assert from_flags().deprecated == ()
    with pytest.raises(ValidationError, match=r"removed in 0\.3"):
        from_flags("--cluster", "--scope", "partition")


def test_home_shards_from_the_environment_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEARDUP_DEDUP__HOME_SHARDS", "1")
    assert Settings().dedup.home_shards == 1


def test_topic_scope_with_at_least_once_is_refused_naming_both_settings() -> None:
    with pytest.raises(ValidationError, match=r"worker.exactly_once .* worker.scope=partition"):
        from_flags("--at-least-once")
    assert not from_flags("--scope", "partition", "--at-least-once").worker.exactly_once


def test_topic_scope_with_longest_sentences_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NEARDUP_DEDUP__LONGEST_SENTENCES", "3")
    with pytest.raises(ValidationError, match=r"dedup.longest_sentences works with worker.scope"):
        Settings()  # topic scope, the default
    monkeypatch.setenv("NEARDUP_WORKER__SCOPE", "partition")
    partition = Settings()
    assert from_flags(base=partition).dedup.longest_sentences == 3
    with pytest.raises(ValidationError, match=r"dedup.longest_sentences works with worker.scope"):
        from_flags("--scope", "topic", base=partition)
    with pytest.raises(ValidationError, match=r"dedup.longest_sentences works with worker.scope"):
        from_flags("--scope", "topic", "--home-shards", "1", base=partition)


def test_default_retention_keeps_a_margin_over_window_and_skew() -> None:
    s = from_flags("--max-age", "3600")
    assert s.internal_retention_ms == (3600 + 3600) * 1000 + 3_600_000
    assert from_flags().internal_retention_ms == -1  # no age window: keep all


def test_an_explicit_retention_below_window_skew_and_margin_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NEARDUP_CLUSTER__RETENTION_MS", str(2 * 3_600_000))
    with pytest.raises(ValidationError, match=r"cluster.retention_ms = 7200000 is below 10800000"):
        from_flags("--max-age", "3600")
    monkeypatch.setenv("NEARDUP_CLUSTER__RETENTION_MS", str(3 * 3_600_000))
    assert from_flags("--max-age", "3600").internal_retention_ms == 10_800_000


def test_handover_from_is_a_flag() -> None:
    assert from_flags("--handover-from", "old").cluster.handover_from == "old"
    assert from_flags().cluster.handover_from is None


def test_domains_that_are_never_forgotten_are_warned_about_at_start() -> None:
    from neardup_stream.worker.cluster.replica import unbounded_domains

    warning = unbounded_domains(from_flags("--domain-field", "site"))
    assert warning is not None and "NEARDUP_DEDUP__MAX_AGE_SECONDS" in warning
    aged = Settings(dedup={"max_age_seconds": 86400})
    assert unbounded_domains(from_flags("--domain-field", "site", base=aged)) is None
    assert unbounded_domains(from_flags()) is None  # one domain: nothing to forget
