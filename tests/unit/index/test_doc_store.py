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
