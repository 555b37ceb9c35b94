"""Worker settings refused at construction when the topology cannot honour them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from worker.settings import Settings


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
