"""Worker settings refused at construction when the topology cannot honour them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from neardup_stream.config import STREAM_HOME_SHARDS
from neardup_stream.settings_errors import problems
from neardup_stream.worker.settings import Settings


@pytest.mark.parametrize(
    ("name", "flag"),
    [
        ("domain_field", "--domain-field"),
        ("domain_header", "--domain-header"),
        ("domain_key_separator", "--domain-key-separator"),
    ],
)
def test_a_domain_setting_in_partition_scope_is_refused_naming_it(name: str, flag: str) -> None:
    with pytest.raises(ValidationError, match=rf"input.{name} \({flag}\) needs worker.scope=topic"):
        Settings.model_validate({"input": {name: "site"}, "worker": {"scope": "partition"}})


def test_a_domain_setting_in_topic_scope_the_default_is_kept() -> None:
    s = Settings.model_validate({"input": {"domain_field": "site"}})
    assert s.topic_scope and s.input.domain_field == "site"


def test_without_domains_partition_scope_is_accepted() -> None:
    s = Settings.model_validate({"worker": {"scope": "partition"}})
    assert not s.topic_scope and s.input.domain_field is None


def test_topic_scope_is_the_default_with_the_stream_home_shards() -> None:
    s = Settings.model_validate({})
    assert s.worker.scope == "topic" and s.topic_scope
    assert s.dedup.home_shards == STREAM_HOME_SHARDS and s.is_derived("dedup.home_shards")
    partition = s.with_overrides({"worker": {"scope": "partition"}})
    assert partition.dedup.home_shards == 1 and not partition.is_derived("dedup.home_shards")
    assert Settings.model_validate({"dedup": {"home_shards": 6}}).dedup.home_shards == 6


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"worker": {"exactly_once": False}}, "worker.exactly_once"),
        ({"dedup": {"precise": True}}, "dedup.precise"),
        ({"dedup": {"longest_sentences": 3}}, "dedup.longest_sentences"),
        ({"worker": {"snapshot_dir": "/tmp/s"}}, "worker.snapshot_dir"),
    ],
)
def test_what_partition_scope_alone_offers_is_refused_in_topic_scope(
    given: dict[str, dict[str, object]], named: str
) -> None:
    with pytest.raises(ValidationError, match=rf"{named}.* --scope partition") as caught:
        Settings.model_validate(given)
    assert "works with worker.scope=partition only" in str(caught.value)
    scoped = {**given, "worker": {**given.get("worker", {}), "scope": "partition"}}
    assert not Settings.model_validate(scoped).topic_scope  # accepted where it works


def test_the_0_2_cluster_switch_is_the_default_now_and_noted_as_deprecated() -> None:
    s = Settings.model_validate({"cluster": {"enabled": "true"}})
    assert s.topic_scope and len(s.deprecated) == 1 and "cluster.enabled" in s.deprecated[0]
    assert s.with_overrides({"worker": {"group_id": "g"}}).deprecated == s.deprecated
    assert Settings.model_validate({}).deprecated == ()


@pytest.mark.parametrize(
    "given",
    [
        {"cluster": {"enabled": False}},
        {"cluster": {"enabled": "no"}},
        {"cluster": {"enabled": True}, "worker": {"scope": "partition"}},
    ],
)
def test_the_0_2_per_partition_worker_switch_is_refused_naming_the_scope(
    given: dict[str, dict[str, object]],
) -> None:
    with pytest.raises(ValidationError, match=r"worker\.scope=partition") as caught:
        Settings.model_validate(given)
    assert "docs/operations/upgrading.md" in str(caught.value)


def test_every_derived_topic_follows_the_group_and_a_given_name_wins() -> None:
    s = Settings.model_validate({"worker": {"group_id": "g"}, "topics": {"changelog": "mine"}})
    assert s.topics.changelog == "mine" and not s.is_derived("topics.changelog")
    assert s.cluster.votes == "g.votes" and s.is_derived("cluster.votes")
    moved = s.with_overrides({"worker": {"group_id": "h"}})
    assert moved.topics.changelog == "mine" and moved.cluster.votes == "h.votes"
    derived = Settings.model_validate({"worker": {"group_id": "g"}})
    assert derived.topics.changelog == "g.changelog" and derived.is_derived("topics.changelog")
    assert derived.with_overrides({"worker": {"group_id": "h"}}).topics.changelog == "h.changelog"


@pytest.mark.parametrize(
    "topics",
    [{"changelog": "mine"}, {"changelog_retention_ms": 86_400_000}],
)
def test_the_partition_changelog_given_in_topic_scope_is_said_to_be_unused(
    topics: dict[str, object],
) -> None:
    s = Settings.model_validate({"worker": {"group_id": "g"}, "topics": topics})
    assert s.topic_scope and len(s.unused) == 1
    note = s.unused[0]
    assert next(iter(topics)) in note and "not read in topic scope" in note
    assert "'g.shard-changelog'" in note and "drop the setting" in note
    assert s.with_overrides({"worker": {"instance_id": "w2"}}).unused == s.unused
    scoped = {"worker": {"group_id": "g", "scope": "partition"}, "topics": topics}
    assert Settings.model_validate(scoped).unused == ()  # read there


def test_a_derived_changelog_name_is_not_said_to_be_unused() -> None:
    assert Settings.model_validate({"worker": {"group_id": "g"}}).unused == ()
    assert Settings.model_validate({}).with_overrides({"worker": {"group_id": "h"}}).unused == ()


@pytest.mark.parametrize("given", [0, 10_001])
def test_a_producer_retry_backoff_out_of_range_is_refused(given: int) -> None:
    with pytest.raises(ValidationError, match="producer_retry_backoff_ms"):
        Settings.model_validate({"kafka": {"producer_retry_backoff_ms": given}})


def test_the_producer_retry_backoff_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NEARDUP_KAFKA__PRODUCER_RETRY_BACKOFF_MS", "35")
    assert Settings().kafka.producer_retry_backoff_ms == 35


@pytest.mark.parametrize("name", ["group_id", "instance_id"])
def test_an_empty_group_or_instance_id_is_refused(name: str) -> None:
    """An empty group id derived the default group's topic names while the worker joined
    the empty group: two pipelines' names mixed."""
    with pytest.raises(ValidationError, match=name):
        Settings.model_validate({"worker": {name: ""}})


def test_precise_mode_in_topic_scope_is_refused_naming_it() -> None:
    """Accepted with the home shards it implies (1), a replica crashed in its warm-up."""
    with pytest.raises(ValidationError, match="precise"):
        Settings.model_validate({"dedup": {"precise": True}})


def test_a_check_across_sections_names_each_setting_and_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = {"NEARDUP_WORKER__SCOPE": "topic", "NEARDUP_WORKER__EXACTLY_ONCE": "false"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ValidationError) as caught:
        Settings()
    [problem] = problems(caught.value, Settings, {}, env)
    assert set(problem.setting.split(", ")) == {"worker.exactly_once", "worker.scope"}
    assert set(problem.source.split(", ")) == {
        "environment variable NEARDUP_WORKER__EXACTLY_ONCE",
        "environment variable NEARDUP_WORKER__SCOPE",
    }
    [flagged] = problems(caught.value, Settings, {"worker.scope": "--scope"}, {})
    assert flagged.setting == "worker.scope" and flagged.source == "flag --scope"


@pytest.mark.parametrize("output", ["unique", "duplicate", "dlq"])
def test_an_output_topic_that_is_the_input_topic_is_refused(output: str) -> None:
    # the worker would read each output back as input and write it again, without end
    with pytest.raises(ValidationError, match=rf"{output} topic 'docs' is also the input topic"):
        Settings.model_validate({"topics": {"input": "docs", output: "docs"}})
    Settings.model_validate({"topics": {"input": "docs", output: "docs.out"}})  # apart: kept


@pytest.mark.parametrize("other", ["input", "unique", "duplicate", "dlq"])
def test_a_changelog_that_is_another_topic_is_refused(other: str) -> None:
    with pytest.raises(ValidationError, match=rf"is also the {other} topic"):
        Settings.model_validate({"topics": {other: "t", "changelog": "t"}})
