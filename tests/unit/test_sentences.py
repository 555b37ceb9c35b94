"""The optional n-longest-sentences method: off by default, its own `method`, kept across
records and snapshots, and deciding everything else exactly as the default engine does."""

from __future__ import annotations

import numpy as np
import pytest

from neardup_stream import DedupConfig, Deduplicator, Document
from neardup_stream.fingerprint.shingles import char_shingles, jaccard
from neardup_stream.records import FingerprintRecord
from neardup_stream.sentences import SentenceIndex, signature

BODY = (
    "The council approved the new budget after a long debate on Tuesday evening. "
    "Spending on schools rises by four percent while road repairs get less than planned. "
    "The mayor said the vote showed that the city can still agree on its priorities."
)
HEADER = (  # many short lines: none as long as the body's sentences
    "Home. News. Sport. Weather. Opinion. Culture.\nBreaking news from around the region.\n"
    "Updated every hour by the local desk.\nSubscribe to the morning newsletter.\n"
)
FOOTER = (
    "\nComments are moderated before they appear.\nShare this story with a friend.\n"
    "All rights reserved by the publisher.\nContact. Privacy. Terms. Cookies. Archive.\n"
)
WRAPPED = HEADER + BODY + FOOTER
ON = DedupConfig(longest_sentences=3)


def doc(i: str, text: str) -> Document:
    return Document(id=i, text=text)


def test_the_wrapped_copy_is_below_the_threshold_by_jaccard() -> None:
    assert jaccard(char_shingles(BODY, 5), char_shingles(WRAPPED, 5)) < 0.6
    assert signature(WRAPPED, 3) == signature(BODY, 3) is not None


def test_off_by_default_and_its_own_method_when_on() -> None:
    off = Deduplicator().check_batch([doc("a", BODY), doc("b", WRAPPED)])
    assert off[1].decision == "unique"
    on = Deduplicator(ON).check_batch([doc("a", BODY), doc("b", WRAPPED)])
    assert on[1].decision == "duplicate" and on[1].method == "sentences"
    assert on[1].duplicate_of == "a" and on[1].representative == "a"
    assert on[1].similarity is not None and 0.3 < on[1].similarity < 0.6  # the estimate


def test_a_jaccard_match_wins_and_other_sentences_do_not_match() -> None:
    near = BODY.replace("Tuesday", "Wednesday")
    other = "One sentence here. Another one there. And a third, longer than both of them."
    out = Deduplicator(ON).check_batch([doc("a", BODY), doc("b", near), doc("c", other)])
    assert out[1].method in ("minhash", "simhash")
    assert out[2].decision == "unique"


def _texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(300)]
    base = [" ".join(rng.choice(words, 60)) for _ in range(n // 2)]
    copies = [t.replace(t.split()[int(rng.integers(60))], "edit", 1) for t in base]
    return [*base, *copies]


def test_without_sentence_signatures_decisions_equal_the_default_engines() -> None:
    texts = _texts(60, 3)  # no sentence ends: no signatures
    docs = [doc(str(i), t) for i, t in enumerate(texts)]
    for config in (DedupConfig(max_docs=25), DedupConfig(index_duplicates=False)):
        on = config.model_copy(update={"longest_sentences": 3})
        assert Deduplicator(on).check_batch(docs) == Deduplicator(config).check_batch(docs)


def test_records_and_snapshots_keep_the_signatures() -> None:
    live = Deduplicator(ON)
    made = live.process([doc("a", BODY), doc("x", "Unrelated. Short. Text.")], records=True)
    records = [o.record for o in made if o.record is not None]
    assert records[0].sentences == signature(BODY, 3)
    decoded = [FingerprintRecord.decode(r.encode()) for r in records]
    assert [(r.doc_id, r.sentences) for r in decoded] == [(r.doc_id, r.sentences) for r in records]
    replayed = Deduplicator(ON)
    replayed.apply_records(FingerprintRecord.decode(r.encode()) for r in records)
    restored = Deduplicator.from_state(ON, live.state())
    for engine in (live, replayed, restored):
        assert engine.check(doc("b", WRAPPED)).method == "sentences"


def test_a_record_without_a_signature_keeps_format_4() -> None:
    out = Deduplicator(ON).process([doc("a", "no sentence ends here")], records=True)
    record = out[0].record
    assert record is not None and record.sentences is None
    assert record.encode()[2] == 4
    with pytest.raises(ValueError, match="truncated"):
        FingerprintRecord.decode(
            Deduplicator(ON).process([doc("a", BODY)], records=True)[0].record.encode()[:-1]  # type: ignore[union-attr]
        )


def test_evicted_and_superseded_documents_are_nobodys_match() -> None:
    evicting = Deduplicator(ON.model_copy(update={"max_docs": 1}))
    out = evicting.check_batch([doc("a", BODY), doc("z", "Other. Text. Here."), doc("b", WRAPPED)])
    assert out[2].decision == "unique"
    updating = Deduplicator(ON)
    out = updating.check_batch(
        [doc("a", BODY), doc("a", "Rewritten. Page. Now."), doc("b", WRAPPED)]
    )
    assert out[1].update and out[2].decision == "unique"


def test_settings_name_what_they_cannot_be_combined_with() -> None:
    assert ON.fingerprint_id != DedupConfig().fingerprint_id
    assert DedupConfig(longest_sentences=0).fingerprint_id == DedupConfig().fingerprint_id
    with pytest.raises(ValueError, match="longest_sentences needs home_shards = 1"):
        DedupConfig(longest_sentences=3, home_shards=2)
    with pytest.raises(ValueError, match="longest_sentences cannot be combined with precise"):
        DedupConfig(longest_sentences=3, precise=True)


def test_the_index_forgets_dead_documents_and_finds_the_latest_usable_holder() -> None:
    index = SentenceIndex()
    for ref, sig in ((1, 7), (2, 7), (3, 8)):
        index.add(ref, sig)
    assert index.find(7, lambda r: True) == 2
    assert index.find(7, lambda r: r != 2) == 1
    index.forget(lambda r: r == 3)
    assert index.find(7, lambda r: True) is None and index.find(8, lambda r: True) == 3
    again = SentenceIndex.from_state(index.state())
    assert again.holders == index.holders and again.of == index.of
