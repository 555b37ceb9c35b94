"""The changelog's packed message format."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker import changelog


@given(st.lists(st.binary(min_size=0, max_size=300), max_size=60), st.integers(64, 4096))
def test_packs_round_trip_in_order_and_respect_the_size(records: list[bytes], limit: int) -> None:
    messages = list(changelog.pack(records, max_bytes=limit))
    assert [r for m in messages for r in changelog.unpack(m)] == records
    for m in messages:
        assert len(m) <= limit or len(changelog.unpack(m)) == 1  # one oversized record alone


def test_a_bare_record_of_earlier_versions_is_read_as_is() -> None:
    assert changelog.unpack(b"ND\x01rest") == [b"ND\x01rest"]


@pytest.mark.parametrize(
    "damage",
    [
        lambda m: m[:-1],  # truncated inside a record
        lambda m: m[:9],  # truncated inside a length
        lambda m: m + b"x",  # trailing bytes
        lambda m: b"XX" + m[2:],  # wrong magic
        lambda m: m[:2] + b"\x09" + m[3:],  # unknown version
        lambda m: b"",
    ],
)
def test_malformed_packs_raise_value_error(damage: object) -> None:
    (message,) = changelog.pack([b"abc", b"defg"])
    with pytest.raises(ValueError):
        changelog.unpack(damage(message))  # type: ignore[operator]
