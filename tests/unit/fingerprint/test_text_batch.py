"""The kernel's two ways in (`text_batch`: ASCII texts as UTF-8 bytes, the others as code
points) give the fingerprints the UTF-8 way gives every text."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_stream.config import DedupConfig
from neardup_stream.fingerprint import kernels
from neardup_stream.fingerprint.fingerprinter import Fingerprinter, fold_tables, text_batch

_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(),  # every code point, lone surrogates (which JSON allows) included
        st.sampled_from(list(" \t\n\x85\xa0\u3000ＡﬁẞΣİ北京，。한\u1100\u1161\u0301\u0b47\u0b3e")),
    ),
    max_size=120,
)


def _all_utf8(texts: list[str]) -> kernels.TextBatch:
    """Every text as UTF-8 (lone surrogates as their three bytes), none as code points."""
    parts = [t.encode("utf-8", "surrogatepass") for t in texts]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    data = np.frombuffer(b"".join(parts), dtype=np.uint8)
    no_code_points = np.zeros(len(texts) + 1, dtype=np.int64)
    return kernels.TextBatch(data, offsets, np.empty(0, dtype=np.uint32), no_code_points)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(_TEXT, st.text(alphabet="ab cd\n", max_size=80)), max_size=12))
def test_code_points_and_utf8_give_the_same_fingerprints(texts: list[str]) -> None:
    for config in (DedupConfig(), DedupConfig(shingle="word", shingle_size=2)):
        spec = Fingerprinter(config).shingling
        mixed = kernels.fingerprint_batch(text_batch(texts), fold_tables(), spec)
        utf8 = kernels.fingerprint_batch(_all_utf8(texts), fold_tables(), spec)
        for field, want in zip(kernels.RawFingerprints._fields, utf8, strict=True):
            assert np.array_equal(getattr(mixed, field), want), field


def test_text_batch_puts_ascii_in_bytes_and_the_rest_in_code_points() -> None:
    batch = text_batch(["ab", "déjà", "", "\ud800x", "北京"])
    assert batch.data.tobytes() == b"ab"
    assert batch.offsets.tolist() == [0, 2, 2, 2, 2, 2]
    assert batch.wide.tolist() == [ord(c) for c in "déjà\ud800x北京"]
    assert batch.wide_offsets.tolist() == [0, 0, 4, 4, 6, 8]


def test_offsets_of_another_length_are_refused() -> None:
    good = text_batch(["a", "é"])
    bad = good._replace(wide_offsets=good.wide_offsets[:2])
    spec = Fingerprinter(DedupConfig()).shingling
    with pytest.raises(ValueError, match="one per text"):
        kernels.fingerprint_batch(bad, fold_tables(), spec)
