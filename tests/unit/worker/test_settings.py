"""Worker settings refused at construction when the topology cannot honour them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

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
def test_a_domain_setting_without_cluster_is_refused_naming_it(name: str, flag: str) -> None:
    with pytest.raises(ValidationError, match=rf"input.{name} \({flag}\) needs cluster.enabled"):
        Settings.model_validate({"input": {name: "site"}})


def test_a_domain_setting_with_cluster_is_kept() -> None:
    s = Settings.model_validate({"input": {"domain_field": "site"}, "cluster": {"enabled": True}})
    assert s.input.domain_field == "site"


def test_without_domains_the_single_worker_is_accepted() -> None:
    assert Settings.model_validate({}).input.domain_field is None


def test_every_derived_topic_follows_the_group_and_a_given_name_wins() -> None:
    s = Settings.model_validate({"worker": {"group_id": "g"}, "topics": {"changelog": "mine"}})
    assert s.topics.changelog == "mine" and not s.is_derived("topics.changelog")
    assert s.cluster.votes == "g.votes" and s.is_derived("cluster.votes")
    moved = s.with_overrides({"worker": {"group_id": "h"}})
    assert moved.topics.changelog == "mine" and moved.cluster.votes == "h.votes"
    derived = Settings.model_validate({"worker": {"group_id": "g"}})
    assert derived.topics.changelog == "g.changelog" and derived.is_derived("topics.changelog")
    assert derived.with_overrides({"worker": {"group_id": "h"}}).topics.changelog == "h.changelog"


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


def test_precise_mode_with_cluster_is_refused_naming_it() -> None:
    """Accepted with the home shards it implies (1), a replica crashed in its warm-up."""
    with pytest.raises(ValidationError, match="precise"):
        Settings.model_validate({"cluster": {"enabled": True}, "dedup": {"precise": True}})


def test_a_check_across_sections_names_each_setting_and_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = {"NEARDUP_CLUSTER__ENABLED": "true", "NEARDUP_WORKER__EXACTLY_ONCE": "false"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ValidationError) as caught:
        Settings()
    [problem] = problems(caught.value, Settings, {}, env)
    assert problem.setting == "worker.exactly_once, cluster.enabled"
    assert problem.source == (
        "environment variable NEARDUP_WORKER__EXACTLY_ONCE, "
        "environment variable NEARDUP_CLUSTER__ENABLED"
    )
    [flagged] = problems(caught.value, Settings, {"cluster.enabled": "--cluster"}, {})
    assert flagged.setting == "cluster.enabled" and flagged.source == "flag --cluster"


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
