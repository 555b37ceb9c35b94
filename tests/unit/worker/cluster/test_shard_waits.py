"""The shard role says what it waits for (`runtime.stall.Waits`): fingerprint-log records
behind the end of the partitions its reader read this round, nothing on a round that read
no log (parked in single stage, rebalancing, owning no shard)."""

from __future__ import annotations

from neardup_stream.worker.cluster.shard import ShardRole
from neardup_stream.worker.runtime.stall import Waits
from neardup_stream.worker.settings import Settings


def _role(lags: dict[int, int]) -> ShardRole:
    role = object.__new__(ShardRole)
    role.settings = Settings.model_validate({"cluster": {"fingerprints": "g.fingerprints"}})
    role._lags = lags
    return role


def test_records_behind_the_end_are_what_the_shard_waits_for() -> None:
    assert isinstance(_role({}), Waits)
    said = _role({0: 0, 1: 7, 2: 3}).waiting_for()
    assert said == "input behind the end of g.fingerprints partitions [1, 2] (10 records)"


def test_a_caught_up_shard_or_a_round_without_reading_waits_for_nothing() -> None:
    assert _role({0: 0, 1: 0}).waiting_for() is None
    assert _role({}).waiting_for() is None
