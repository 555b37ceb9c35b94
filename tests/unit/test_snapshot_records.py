from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup_stream import DedupConfig, Deduplicator, Document, FingerprintRecord
from neardup_stream.snapshot import load_snapshot, read_meta, save_snapshot
from tests.unit.conftest import mutate, random_text


def _stream(n: int, seed: int) -> list[Document]:
    docs = []
    for i in range(n):
        if i and i % 3 == 0:
            docs.append(Document(id=f"s{seed}-{i}", text=mutate(docs[i - 1].text, 0.01, seed + i)))
        else:
            docs.append(Document(id=f"s{seed}-{i}", text=random_text(seed * 1000 + i, 200)))
    return docs


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.integers(1, 60), st.integers(0, 99), st.booleans())
def test_snapshot_round_trip_gives_identical_future_decisions(
    tmp_path: Path, n: int, seed: int, precise: bool
) -> None:
    docs = _stream(n + 20, seed)
    cfg = DedupConfig(precise=precise, max_docs=max(5, n // 2))
    live = Deduplicator(cfg)
    live.check_batch(docs[:n])
    path = save_snapshot(live, tmp_path / f"snap-{n}-{seed}-{precise}")
    restored = load_snapshot(path)
    assert len(restored) == len(live)
    assert restored.check_batch(docs[n:]) == live.check_batch(docs[n:])


def test_snapshot_replaces_atomically_and_checks_fingerprint_settings(tmp_path: Path) -> None:
    dedup = Deduplicator()
    dedup.check_batch(_stream(10, 1))
    save_snapshot(dedup, tmp_path / "s")
    dedup.check_batch(_stream(20, 2))
    save_snapshot(dedup, tmp_path / "s")
    assert read_meta(tmp_path / "s")["documents"] == 30
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]
    with pytest.raises(ValueError, match="fingerprint settings differ"):
        load_snapshot(tmp_path / "s", DedupConfig(seed=1))
    assert len(load_snapshot(tmp_path / "s", DedupConfig(shards=7, max_docs=100))) == 30


def test_rebuild_from_records_equals_live_index() -> None:
    docs = _stream(80, 3)
    live = Deduplicator()
    records = [o.record for o in live.process(docs[:60], records=True)]
    rebuilt = Deduplicator()
    assert rebuilt.apply_records(FingerprintRecord.decode(r.encode()) for r in records if r) == 60
    assert rebuilt.apply_records(r for r in records if r) == 0
    assert rebuilt.check_batch(docs[:60]) == live.check_batch(docs[:60])
    assert rebuilt.check_batch(docs[60:]) == live.check_batch(docs[60:])


def test_records_reject_other_configs_and_garbage() -> None:
    record = Deduplicator().process([Document(id="x", text="hello")], records=True)[0].record
    assert record is not None
    with pytest.raises(ValueError, match="fingerprint config"):
        Deduplicator(DedupConfig(shingle_size=4)).apply_record(record)
    with pytest.raises(ValueError):
        FingerprintRecord.decode(b"garbage")
    with pytest.raises(ValueError):
        FingerprintRecord.decode(record.encode() + b"x")
    again = FingerprintRecord.decode(record.encode())
    assert again.doc_id == "x" and np.array_equal(again.sketch, record.sketch)
