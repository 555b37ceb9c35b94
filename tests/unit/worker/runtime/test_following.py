"""Following an assignment (`neardup_stream.worker.runtime.following`): one rule for the shard and the gather."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from neardup_stream.worker.runtime.following import leaving, to_restore

parts = st.frozensets(st.integers(0, 11), max_size=12)


def test_unassigned_and_lost_state_is_released_and_their_restores_cancelled() -> None:
    gone = leaving(held={0, 1, 2}, restoring={3, 4}, assigned={0, 1, 3}, dropped={1})
    assert gone.release == {1, 2} and gone.cancel == {1, 4}


def test_a_stop_is_released_with_its_partition_and_kept_while_assigned() -> None:
    assert leaving(set(), set(), assigned={5}, dropped=set(), stopped={5, 6}).release == {6}
    assert to_restore(assigned={5, 7, 8}, held={8}, restoring=set(), stopped={5}) == [7]


@given(held=parts, restoring=parts, assigned=parts, dropped=parts, stopped=parts)
def test_after_following_only_assigned_partitions_remain_and_each_is_covered_once(
    held: frozenset[int],
    restoring: frozenset[int],
    assigned: frozenset[int],
    dropped: frozenset[int],
    stopped: frozenset[int],
) -> None:
    restoring = restoring - held  # a partition is held or restoring, never both
    gone = leaving(held, restoring, assigned, dropped, stopped)
    kept = held - gone.release
    still = restoring - gone.cancel
    left_stopped = stopped - gone.release
    assert kept <= assigned and still <= assigned and left_stopped <= assigned
    assert not (kept | still) & dropped  # lost state is never kept
    started = to_restore(assigned, kept, still, left_stopped)
    assert started == sorted(started) and len(set(started)) == len(started)
    covered = kept | still | set(started) | left_stopped
    assert covered == set(assigned)  # every assigned partition held, restoring, or stopped
    assert not set(started) & (kept | still | left_stopped)
