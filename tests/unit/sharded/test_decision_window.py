"""The gather step's first decisions of one domain (`DecisionWindow`): an id finds its
latest decision, a match its representative, the oldest leave first by age then count, and
dropped rows are cut from the columns without renumbering the others."""

from __future__ import annotations

from neardup_stream.config import DedupConfig
from neardup_stream.models import Decision
from neardup_stream.sharded import decision_window as module
from neardup_stream.sharded.decision_window import DecisionWindow


def unique(doc_id: str, update: bool = False) -> Decision:
    return Decision(id=doc_id, decision="unique", update=update)


def duplicate(doc_id: str, of: str, rep: str) -> Decision:
    return Decision(
        id=doc_id,
        decision="duplicate",
        duplicate_of=of,
        representative=rep,
        similarity=0.8125,
        method="minhash",
    )


def test_a_kept_decision_comes_back_whole_and_gives_representatives() -> None:
    w, config = DecisionWindow(stream=3), DedupConfig()
    w.remember(1, unique("a"), config)
    w.remember(2, duplicate("b", "a", "a"), config)
    assert w.decision("a") == unique("a")
    assert w.decision("b") == duplicate("b", "a", "a")
    assert w.decision("c") is None
    assert w.representative("b") == "a"  # b's own representative
    assert w.representative("a") == "a"  # a unique is its own
    assert w.representative("gone") == "gone"
    assert len(w) == 2 and w.rows() == 2


def test_an_update_replaces_its_ids_decision_and_its_old_row_still_counts() -> None:
    w, config = DecisionWindow(None), DedupConfig(max_docs=2)
    w.remember(1, duplicate("a", "x", "x"), config)
    w.remember(2, unique("a", update=True), config)
    assert w.decision("a") == unique("a", update=True)
    assert len(w) == 1 and w.rows() == 2
    w.remember(3, unique("b"), config)  # the superseded row leaves first: a stays
    assert w.decision("a") == unique("a", update=True) and w.rows() == 2
    w.remember(4, unique("c"), config)
    assert w.decision("a") is None and len(w) == 2


def test_the_oldest_leave_by_age_from_the_watermark() -> None:
    w, config = DecisionWindow(None), DedupConfig(max_age_seconds=10)
    for ts, doc_id in [(100, "a"), (105, "b"), (112, "c")]:
        w.watermark = ts
        w.remember(ts, unique(doc_id), config)
    assert w.decision("a") is None and w.decision("b") is not None
    assert len(w) == 2


def test_dropped_rows_are_cut_from_the_columns_and_the_rest_keep_their_decisions() -> None:
    w, config = DecisionWindow(None), DedupConfig(max_docs=100)
    n = 3 * module._COMPACT_AT
    for i in range(n):
        w.remember(i, duplicate(f"d{i}", f"d{i - 1}", "d0") if i else unique("d0"), config)
    assert len(w) == w.rows() == 100
    assert len(w._ts) < 2 * module._COMPACT_AT  # cut, not grown with every row
    assert w.decision(f"d{n - 1}") == duplicate(f"d{n - 1}", f"d{n - 2}", "d0")
    assert w.decision(f"d{n - 100}") is not None and w.decision(f"d{n - 101}") is None
    assert w.representative(f"d{n - 1}") == "d0"
