"""Event time: far-future clocks are clamped, far-past ones disturb nobody (see `event_time`)."""

from datetime import datetime, timezone

import pytest

from neardup_stream import DedupConfig, Deduplicator, Document
from neardup_stream.event_time import event_times
from tests.unit.conftest import mutate, random_text

T0 = 1_800_000_000.0  # 2027-01-15
HOUR = 3600.0


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def doc(i: str, text: str, ts: float | None = None) -> Document:
    return Document(id=i, text=text, timestamp=None if ts is None else at(ts))


def test_reference_is_the_record_time_or_real_time_clamped_by_the_skew() -> None:
    docs = [doc("a", "x"), doc("b", "x"), doc("c", "x"), doc("d", "x"), doc("e", "x", T0 - 50)]
    times = [T0 - 100, -1, None, T0 + 10 * HOUR, T0 - 100]
    assert event_times([d.timestamp for d in docs], T0, HOUR, times).tolist() == [
        T0 - 100,
        T0,
        T0,
        T0 + HOUR,
        T0 - 50,
    ]
    assert event_times([d.timestamp for d in docs], T0, HOUR).tolist() == [T0] * 4 + [T0 - 50]


def test_own_timestamp_is_clamped_to_the_reference_plus_skew_and_real_time_plus_skew() -> None:
    far = doc("f", "x", datetime(2100, 1, 1, tzinfo=timezone.utc).timestamp())
    assert event_times([far.timestamp], T0, HOUR, [T0 - 5 * HOUR]).tolist() == [T0 - 4 * HOUR]
    assert event_times([far.timestamp], T0, HOUR, [T0 + 0.5 * HOUR]).tolist() == [T0 + HOUR]
    assert event_times([far.timestamp], T0, 0.0).tolist() == [T0]
    with pytest.raises(ValueError, match="2 record times for 1 documents"):
        event_times([far.timestamp], T0, HOUR, [T0, T0])


def test_a_document_from_2100_does_not_empty_the_age_window() -> None:
    dedup = Deduplicator(DedupConfig(max_age_seconds=2 * HOUR))
    a = random_text(1)
    dedup.check(doc("a", a, T0), now=T0)
    future = dedup.process([doc("f", random_text(2), at_2100 := 4_102_444_800.0)], now=T0 + 60)
    assert future[0].decision.decision == "unique"
    assert at_2100 > dedup.watermark and dedup.watermark <= T0 + 60 + HOUR
    out = dedup.check(doc("b", mutate(a, 0.02, 3), T0 + 120), now=T0 + 120)
    assert out.duplicate_of == "a"


def test_changelog_records_carry_the_clamped_time() -> None:
    dedup = Deduplicator(DedupConfig(max_age_seconds=HOUR))
    out = dedup.process([doc("f", "hello there", 4_102_444_800.0)], now=T0, records=True)
    assert out[0].record is not None and out[0].record.ts == T0 + HOUR


def _stream() -> list[tuple[Document, float]]:
    """Documents over 72 h, with near-copies of earlier ones, and their arrival times."""
    docs: list[tuple[Document, float]] = []
    for i in range(60):
        t = T0 + i * 72 * HOUR / 60
        text = mutate(docs[i - 2][0].text, 0.02, i) if i % 3 == 2 else random_text(100 + i, 200)
        docs.append((doc(f"d{i}", text, t), t))
    return docs


@pytest.mark.parametrize("stamp", [0.0, T0 - 400 * 24 * HOUR])
def test_a_far_past_document_evicts_nothing_and_changes_no_decision(stamp: float) -> None:
    cfg = DedupConfig(max_age_seconds=24 * HOUR)
    stream = _stream()
    plain, disturbed = Deduplicator(cfg), Deduplicator(cfg)
    expected, got = [], []
    for i, (d, t) in enumerate(stream):
        expected.append(plain.check(d, now=t))
        if i in (10, 30):  # a copy of the next document, stamped long ago
            old = doc(f"old{i}", stream[i + 1][0].text, stamp)
            before = (disturbed.watermark, len(disturbed))
            disturbed.check(old, now=t)
            assert (disturbed.watermark, len(disturbed)) == (before[0], before[1] + 1)
        got.append(disturbed.check(d, now=t))
    assert got == expected
    assert any(d.is_duplicate for d in expected) and len(plain) < len(stream)


@pytest.mark.parametrize("zone", ["UTC", "Asia/Tokyo", "America/Los_Angeles"])
@pytest.mark.parametrize(
    ("given", "seconds"),
    [
        ("2026-01-01T00:00:00", 1_767_225_600),
        ("0001-01-01T00:00:00", 0),  # far past: clipped to 0, never an error
        ("0001-01-01", 0),
        ("9999-12-31T23:59:59", T0 + HOUR),  # far future: clamped to real + skew
    ],
)
def test_a_time_without_an_offset_is_utc_on_every_host(
    monkeypatch: pytest.MonkeyPatch, zone: str, given: str, seconds: float
) -> None:
    """Read in the host's own zone, a naive time was filed under another second on each
    machine, and near year 1 or 9999 `datetime.timestamp` raised (the engine with it)."""
    import time

    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        stamp = Document(id="a", text="x", timestamp=given).timestamp
        assert event_times([stamp], T0 + 0.0, HOUR, [T0 + HOUR]).tolist() == [seconds]
    finally:
        monkeypatch.undo()
        time.tzset()
