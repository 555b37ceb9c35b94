"""Failpoint specs: the actions the fault tests arm, and precise errors for the rest."""

from __future__ import annotations

import pytest

from neardup_stream.worker.failpoints import parse


def test_every_action_parses_with_its_count() -> None:
    points = parse("restore_batch=stall,shard_produced=stall@2,edge_committed=kill@3")
    assert {n: (p.action, p.at) for n, p in points.items()} == {
        "restore_batch": ("stall", 1),
        "shard_produced": ("stall", 2),
        "edge_committed": ("kill", 3),
    }


def test_unknown_points_and_actions_are_named() -> None:
    with pytest.raises(ValueError, match="unknown failpoint 'nowhere'"):
        parse("nowhere=kill")
    with pytest.raises(ValueError, match="unknown failpoint action 'sleep'"):
        parse("restore_batch=sleep")
