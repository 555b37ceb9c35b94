import pytest

from neardup_stream.index.doc_store import DocStore


class _HugeBlob(bytearray):
    """A blob that reports 4 GiB more bytes than it holds (allocating them is not an option)."""

    def __len__(self) -> int:
        return super().__len__() + (1 << 32)


def test_record_refuses_ids_past_the_32_bit_offset_range() -> None:
    store = DocStore(sketch_words=1, keep_time=False)
    store.reserve(1)
    store.window["count"][0] = 1  # one stored document, ref 0
    store.blob = _HugeBlob()
    with pytest.raises(OverflowError, match="4 GiB"):
        store.record(0, "doc", None, None)


@pytest.mark.parametrize("keep_time", [False, True])
@pytest.mark.parametrize(("start", "count"), [(0, 16), (2, 5), (10, 12), (15, 16), (9, 0)])
def test_growing_keeps_every_live_row_at_its_ref(keep_time: bool, start: int, count: int) -> None:
    """Growth copies the ring oldest first, however far it wrapped: each live ref still
    reads its own columns afterwards, and the ring starts at row 0."""
    store = DocStore(sketch_words=2, keep_time=keep_time)
    store.window["start"][0], store.window["base"][0] = start, 4_294_967_290  # refs wrap too
    store.window["count"][0] = count
    refs = [(4_294_967_290 + k) & 0xFFFFFFFF for k in range(count)]
    for k, ref in enumerate(refs):
        row = store.slot(ref)
        store.simhash[row], store.sketch[row] = 1000 + k, (2000 + k, 3000 + k)
        store.exact[row], store.nfeat[row], store.offset[row] = (k, 99 - k), k + 1, 7 * k
        store.superseded[row] = k % 3 == 0
        if keep_time:
            store.ts[row] = 500 + k
    before = store.capacity
    store.reserve(before - count + 1)  # one more than fits
    assert store.capacity > before and int(store.window["start"][0]) == 0
    for k, ref in enumerate(refs):
        row = store.slot(ref)
        assert row == k
        assert store.simhash[row] == 1000 + k and list(store.sketch[row]) == [2000 + k, 3000 + k]
        assert list(store.exact[row]) == [k, 99 - k]
        assert store.nfeat[row] == k + 1 and store.offset[row] == 7 * k
        assert bool(store.superseded[row]) == (k % 3 == 0)
        if keep_time:
            assert store.ts[row] == 500 + k
