"""The compiled full NFKC + case folding (`nfkc.fold_full`) against Python's, and the kernel's
whole normalisation against `normalize` on multi-script text that needs it."""

import unicodedata

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_stream.config import DedupConfig
from neardup_stream.fingerprint.fingerprinter import Fingerprinter
from neardup_stream.fingerprint.hashing import exact_hash
from neardup_stream.fingerprint.nfkc import fold_full, nfkc_tables
from neardup_stream.fingerprint.normalize import (
    DIRECT_NONE,
    DIRECT_POOL,
    DIRECT_SPACE,
    direct_table,
    fold_table,
    normalize,
)
from neardup_stream.fingerprint.shingles import char_shingles

# pieces of several scripts, with what makes the per-character table give up: combining marks
# (in and out of canonical order), Hangul syllables and conjoining jamo, starters that
# compose backwards, compatibility characters that expand a lot, code points past the table
_PIECES = [
    "Привет, мир! ЁЖИК",
    "Ёё й Ї ї",
    "北京是中华人民共和国的首都。",
    "ｶﾞｷﾞ ﾊﾟﾝ ﾞ",
    "한국어 텍스트를 처리합니다",
    "\u1100\u1161\u11a8\u1100\u1161 \u11a8",
    "Crème brûlée ÉTÉ Straße İstanbul ΌΣΟΣ",
    "e\u0301\u0323 a\u0323\u0301 o\u0308\u0304 \u0301leading",
    "\u0b47\u0b3e \u0dd9\u0dcf \u09c7\u09be",
    "\ufdfa\ufdfa ㎏ ℡ ½ ﬁ",
    "\U00030000\U000e0100\U0001d400",
    "  \t\n\u3000\u00a0 ",
]
_MULTI_SCRIPT = st.lists(
    st.one_of(
        st.sampled_from(_PIECES),
        st.text(st.characters(codec="utf-8"), max_size=8),
        st.sampled_from(list("\u0300\u0301\u0308\u0323\u0327\u3099\u309a\u1161\u11a8")),
    ),
    max_size=30,
).map("".join)


def _fold_full(text: str) -> str:
    data = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    cps = fold_full(data, 0, data.size, nfkc_tables())
    return cps.astype("<u4").tobytes().decode("utf-32-le", "surrogatepass")


def _assert_normalized_like_the_reference(texts: list[str]) -> None:
    """The kernel's exact hash of each text is that of `normalize(text)`."""
    cfg = DedupConfig()
    fp = Fingerprinter(cfg).batch(texts)
    for d, text in enumerate(texts):
        assert tuple(int(x) for x in fp.exact[d]) == exact_hash(normalize(text), cfg.seed), text


@settings(max_examples=400, deadline=None)
@given(_MULTI_SCRIPT)
def test_full_path_is_nfkc_then_casefold(text: str) -> None:
    assert _fold_full(text) == unicodedata.normalize("NFKC", text).casefold()


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=40))
def test_full_path_on_arbitrary_unicode(text: str) -> None:
    assert _fold_full(text) == unicodedata.normalize("NFKC", text).casefold()


@settings(max_examples=200, deadline=None)
@given(st.lists(_MULTI_SCRIPT, min_size=1, max_size=6))
def test_kernel_equals_the_python_reference_on_multi_script_batches(texts: list[str]) -> None:
    cfg = DedupConfig()
    fp = Fingerprinter(cfg).batch(texts)
    for d, text in enumerate(texts):
        expected = normalize(text)
        assert tuple(int(x) for x in fp.exact[d]) == exact_hash(expected, cfg.seed)
        assert fp.nfeat[d] == len(set(char_shingles(expected, 5)))


def test_a_text_that_expands_past_the_kernels_buffer() -> None:
    texts = ["\ufdfa" * 50 + "\u0301", "short", "\ufdfa" * 200]  # 18 code points each
    _assert_normalized_like_the_reference(texts)


def test_every_hangul_syllable_round_trips() -> None:
    syllables = "".join(chr(c) for c in range(0xAC00, 0xD7A4))
    decomposed = unicodedata.normalize("NFD", syllables)
    assert _fold_full(decomposed) == syllables
    assert _fold_full(syllables) == syllables


def test_a_short_text_folding_to_more_features_than_it_has_bytes() -> None:
    # U+FDFA folds to 18 code points: more shingles than UTF-8 bytes (this crashed the batch)
    cfg = DedupConfig()
    texts = ["\ufdfa\ufdfa \u338f \u2121 \u00bd \ufb01", "\ufdfa" * 3]
    fp = Fingerprinter(cfg).batch(texts)
    for d, text in enumerate(texts):
        expected = normalize(text)
        assert tuple(int(x) for x in fp.exact[d]) == exact_hash(expected, cfg.seed)
        assert fp.nfeat[d] == len(set(char_shingles(expected, 5)))
        assert fp.feat_offsets[d + 1] - fp.feat_offsets[d] == fp.nfeat[d]


_SPACES = [chr(c) for c in range(0x110000) if chr(c).isspace()]


def test_every_whitespace_code_point_collapses_to_one_space_in_the_kernel() -> None:
    # the kernel writes each character, then counts a space only after a non-space: every
    # kind of whitespace, alone, in runs, leading and trailing, must come out as `normalize`
    texts = [f"{w}a{w}{w}b{w}" for w in _SPACES] + ["".join(_SPACES) + "x" + "".join(_SPACES)]
    texts += ["".join(_SPACES), "a" + "".join(reversed(_SPACES)) + "\u2160"]  # Ⅰ folds to i
    _assert_normalized_like_the_reference(texts)


def test_the_direct_table_is_the_fold_table_read_one_code_point_at_a_time() -> None:
    index, pool = fold_table()
    direct = direct_table(index, pool)
    for c in range(index.size):
        entry = int(direct[c])
        if index[c] < 0:
            assert entry == DIRECT_NONE
            continue
        folded = [int(x) for x in pool[index[c] + 1 : index[c] + 1 + pool[index[c]]]]
        if len(folded) != 1:
            assert entry == DIRECT_POOL
        elif chr(folded[0]).isspace():
            assert entry == DIRECT_SPACE
        else:
            assert entry == folded[0]


def test_a_lone_surrogate_is_fingerprinted_like_the_reference() -> None:
    # JSON can carry one ("\ud800"); strict UTF-8 cannot encode it, so the batch falls back
    texts = ["a\ud800b and more text", "\udfff", "plain"]
    _assert_normalized_like_the_reference(texts)


def test_hangul_syllables_fold_by_the_table_and_still_compose_with_a_trailing_jamo() -> None:
    index, pool = fold_table()
    assert all(index[c] >= 0 and pool[index[c] + 1] == c for c in (0xAC00, 0xB098, 0xD7A3))
    # what a syllable composes with stays out of the table: those texts take the full path
    for after in ("\u11a8", "\uffa3", "\u3133", "\u11c2 "):
        assert index[ord(after[0])] < 0
    texts = ["가\u11a8 나", "가\uffa3", "가\u3133", "한국어 텍스트", "\u1100\u1161각", "가\u11c2 "]
    _assert_normalized_like_the_reference(texts)
