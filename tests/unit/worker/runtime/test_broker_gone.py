"""`runtime.broker_gone.Streak`: failures in a row, in time, until the runner gives up."""

from __future__ import annotations

import pytest

from neardup_stream.worker.runtime import broker_gone
from neardup_stream.worker.runtime.broker_gone import Streak
from tests.unit.clock import Clock, frozen


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return frozen(monkeypatch, broker_gone, now=100.0)


def test_a_streak_older_than_the_limit_raises_its_error(clock: Clock) -> None:
    streak, error = Streak(), TimeoutError("still failing")
    for _ in range(12):  # a failure every 5 s: 55 s old, within 60
        streak.failed(error, 60.0)
        clock.now += 5
    streak.failed(error, 60.0)  # 60 s
    clock.now += 5
    with pytest.raises(TimeoutError):
        streak.failed(error, 60.0)  # 65 s


def test_a_streak_ends_when_told_or_after_a_quiet_spell(clock: Clock) -> None:
    streak, error = Streak(), TimeoutError("x")
    streak.failed(error, 60.0)
    clock.now += 50
    streak.ended()  # e.g. a transaction committed
    streak.failed(error, 60.0)
    clock.now += 50
    streak.failed(error, 60.0)  # 50 s into the new streak
    clock.now += 61  # no failure for longer than the limit: a new streak
    streak.failed(error, 60.0)
    clock.now += 59
    streak.failed(error, 60.0)
    assert streak.since == 100.0 + 50 + 50 + 61
