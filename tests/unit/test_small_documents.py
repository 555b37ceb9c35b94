"""Short documents (compact-set sketches) survive changelog replay and snapshots; state of
the previous fingerprint format is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neardup_stream import DedupConfig, Deduplicator, Document, FingerprintRecord
from neardup_stream.config import FINGERPRINT_FORMAT
from neardup_stream.snapshot import load_snapshot, save_snapshot
from tests.unit.conftest import mutate, random_text


def _short_stream(n: int, seed: int) -> list[Document]:
    """Texts of 6-40 words (20-300 characters), every third a light edit of an earlier one."""
    docs: list[Document] = []
    for i in range(n):
        if i >= 3 and i % 3 == 0:
            text = mutate(docs[i - 3].text, 0.08, seed + i)
        else:
            text = random_text(seed * 1000 + i, 6 + (i * 7) % 35)
        docs.append(Document(id=f"s{seed}-{i}", text=text))
    return docs


def test_short_documents_are_compact_and_found_again() -> None:
    docs = _short_stream(90, 5)
    dedup = Deduplicator()
    prints = dedup.fingerprinter.batch([d.text for d in docs])
    assert (prints.nfeat <= dedup.fingerprinter.compact_max).all()
    decisions = dedup.check_batch(docs)
    assert sum(d.decision == "duplicate" for d in decisions) >= 10


def test_replayed_records_give_identical_decisions_on_short_documents() -> None:
    docs = _short_stream(120, 6)
    live = Deduplicator()
    records = [o.record for o in live.process(docs[:80], records=True)]
    rebuilt = Deduplicator()
    encoded = [FingerprintRecord.decode(r.encode()) for r in records if r]
    assert rebuilt.apply_records(encoded) == 80
    assert rebuilt.check_batch(docs[80:]) == live.check_batch(docs[80:])


def test_snapshot_round_trip_keeps_short_documents(tmp_path: Path) -> None:
    docs = _short_stream(120, 7)
    live = Deduplicator()
    live.check_batch(docs[:80])
    restored = load_snapshot(save_snapshot(live, tmp_path / "snap"))
    assert restored.check_batch(docs[80:]) == live.check_batch(docs[80:])


def test_records_of_the_previous_format_are_refused_clearly() -> None:
    record = Deduplicator().process([Document(id="x", text="hello")], records=True)[0].record
    assert record is not None
    data = bytearray(record.encode())
    data[2] = 1  # the version byte follows the magic
    with pytest.raises(ValueError, match="record format 1 is not one this engine reads"):
        FingerprintRecord.decode(bytes(data))


def test_snapshots_of_the_previous_format_are_refused_clearly(tmp_path: Path) -> None:
    dedup = Deduplicator(DedupConfig())
    dedup.check_batch(_short_stream(10, 8))
    path = save_snapshot(dedup, tmp_path / "snap")
    meta_file = Path(path) / "meta.json"
    meta = json.loads(meta_file.read_text())
    del meta["fingerprint_format"]  # written before format 2
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="fingerprints of format 1"):
        load_snapshot(path)


def test_snapshots_of_earlier_sketch_forms_are_refused_clearly(tmp_path: Path) -> None:
    # format 3 stored 1-bit sketches and format 4 samples of the smallest hashes where format
    # 5 stores odd sketches (documents of 513 to 9,295 shingles at the defaults): read
    # as odd sketches they would be garbage
    dedup, text = Deduplicator(DedupConfig()), random_text(9, 90)
    fp = dedup.fingerprinter
    assert fp.compact_max < fp.batch([text]).nfeat[0] <= 1024 and FINGERPRINT_FORMAT == 5
    dedup.check_batch([Document(id="m", text=text)])
    path = save_snapshot(dedup, tmp_path / "snap")
    meta_file = Path(path) / "meta.json"
    meta = json.loads(meta_file.read_text())
    for earlier in (3, 4):
        meta["fingerprint_format"] = earlier
        meta_file.write_text(json.dumps(meta))
        with pytest.raises(ValueError, match=f"format {earlier}, this release uses format 5"):
            load_snapshot(path)
