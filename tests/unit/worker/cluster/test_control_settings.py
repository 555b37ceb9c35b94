"""Cluster settings derived and refused at construction (`neardup_stream.worker.settings`)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from neardup_stream.worker.main import build_parser, settings_from_args
from neardup_stream.worker.settings import CLUSTER_HOME_SHARDS, Settings


def from_flags(*argv: str, base: Settings | None = None) -> Settings:
    return settings_from_args(build_parser().parse_args(list(argv)), base or Settings())


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("NEARDUP_"):
            monkeypatch.delenv(name)


def test_internal_topic_names_follow_the_group_and_stay_as_today_by_default() -> None:
    default = from_flags("--cluster").cluster
    assert (default.fingerprints, default.votes, default.shards) == (
        "neardup.fingerprints",
        "neardup.votes",
        "neardup.shards",
    )
    assert default.shard_changelog == "neardup.shard-changelog"
    assert default.gather_changelog == "neardup.gather-changelog"
    assert default.payloads == "neardup.payloads"
    assert default.control == "neardup.control"
    other = from_flags("--cluster", "--group-id", "news").cluster
    assert other.fingerprints == "news.fingerprints" and other.control == "news.control"


def test_explicit_internal_topic_names_win_over_the_group(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEARDUP_CLUSTER__FINGERPRINTS", "mine.fp")
    monkeypatch.setenv("NEARDUP_WORKER__GROUP_ID", "a")
    s = from_flags("--cluster", "--group-id", "b")
    assert s.cluster.fingerprints == "mine.fp"
    assert s.cluster.votes == "b.votes"


def test_cluster_mode_spreads_the_index_over_24_home_shards_unless_set() -> None:
    assert from_flags("--cluster").dedup.home_shards == CLUSTER_HOME_SHARDS == 24
    assert from_flags().dedup.home_shards == 1  # the single worker is unchanged
    assert from_flags("--cluster", "--home-shards", "6").dedup.home_shards == 6
    with pytest.raises(ValidationError, match="precise"):  # no shingle sets in the roles
        from_flags("--cluster", "--precise")


def test_home_shards_from_the_environment_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEARDUP_DEDUP__HOME_SHARDS", "1")
    monkeypatch.setenv("NEARDUP_CLUSTER__ENABLED", "true")
    assert Settings().dedup.home_shards == 1


def test_cluster_with_at_least_once_is_refused_naming_both_settings() -> None:
    with pytest.raises(ValidationError, match=r"cluster.enabled .* worker.exactly_once"):
        from_flags("--cluster", "--at-least-once")


def test_cluster_with_longest_sentences_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NEARDUP_DEDUP__LONGEST_SENTENCES", "3")
    assert from_flags().dedup.longest_sentences == 3  # the single worker takes it
    with pytest.raises(ValidationError, match=r"dedup.longest_sentences works in the single"):
        from_flags("--cluster")
    with pytest.raises(ValidationError, match=r"dedup.longest_sentences works in the single"):
        from_flags("--cluster", "--home-shards", "1")


def test_default_retention_keeps_a_margin_over_window_and_skew() -> None:
    s = from_flags("--cluster", "--max-age", "3600")
    assert s.internal_retention_ms == (3600 + 3600) * 1000 + 3_600_000
    assert from_flags("--cluster").internal_retention_ms == -1  # no age window: keep all


def test_an_explicit_retention_below_window_skew_and_margin_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NEARDUP_CLUSTER__RETENTION_MS", str(2 * 3_600_000))
    with pytest.raises(ValidationError, match=r"cluster.retention_ms = 7200000 is below 10800000"):
        from_flags("--cluster", "--max-age", "3600")
    monkeypatch.setenv("NEARDUP_CLUSTER__RETENTION_MS", str(3 * 3_600_000))
    assert from_flags("--cluster", "--max-age", "3600").internal_retention_ms == 10_800_000


def test_handover_from_is_a_flag() -> None:
    assert from_flags("--cluster", "--handover-from", "old").cluster.handover_from == "old"
    assert from_flags("--cluster").cluster.handover_from is None


def test_domains_that_are_never_forgotten_are_warned_about_at_start() -> None:
    from neardup_stream.worker.cluster.replica import unbounded_domains

    warning = unbounded_domains(from_flags("--cluster", "--domain-field", "site"))
    assert warning is not None and "NEARDUP_DEDUP__MAX_AGE_SECONDS" in warning
    aged = Settings(dedup={"max_age_seconds": 86400})
    assert unbounded_domains(from_flags("--cluster", "--domain-field", "site", base=aged)) is None
    assert unbounded_domains(from_flags("--cluster")) is None  # one domain: nothing to forget
