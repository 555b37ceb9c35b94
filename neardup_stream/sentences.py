"""The n-longest-sentences signature (Baidu's method, seed 001) and the index of signatures.

Optional (`DedupConfig.longest_sentences` = n, 0 = off). A text's signature is a 64-bit
MurmurHash3 of its n longest distinct sentences, each normalised as every feature is (NFKC,
case folding, collapsed white space), longest first (ties by text), so the order of the
sentences and anything shorter around them (a site's header and footer, a short added line)
do not change it. A text with fewer than n sentences has none (it is covered by the exact
hash). A document that no candidate matches by Jaccard, but whose signature a live, not
superseded earlier document has, is that document's duplicate with method `sentences` (its
reported similarity is the Jaccard estimate of the pair, so usually below the threshold).
Measured cost and benefit: docs/benchmarks.md, "The n longest sentences".
"""

from __future__ import annotations

import re
from collections.abc import Callable

import mmh3
import numpy as np

from neardup_stream.fingerprint.normalize import normalize, strip_html

# a sentence ends at ., !, ? (before white space or the end), at CJK full stops, or a line break
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|[\u3002\uff01\uff1f]+|\n")
_SEED = 0x73656E74  # "sent"


def signature(text: str, n: int, html_input: bool = False) -> int | None:
    """The signature of `text`'s `n` longest sentences, or None when it has fewer."""
    if html_input:
        text = strip_html(text)
    sentences = {normalize(s) for s in _SENTENCE_END.split(text)}
    sentences.discard("")
    if n < 1 or len(sentences) < n:
        return None
    chosen = sorted(sentences, key=lambda s: (-len(s), s))[:n]
    data = "\n".join(chosen).encode("utf-8", "surrogatepass")
    return int(mmh3.hash64(data, _SEED, signed=False)[0])


class SentenceIndex:
    """Signatures of stored documents: signature -> refs holding it, ref -> signature."""

    def __init__(self) -> None:
        self.holders: dict[int, list[int]] = {}
        self.of: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.of)

    def find(self, sig: int, usable: Callable[[int], bool]) -> int | None:
        """The most recent `usable` document with signature `sig` (None if there is none)."""
        for ref in reversed(self.holders.get(sig, ())):
            if usable(ref):
                return ref
        return None

    def add(self, ref: int, sig: int) -> None:
        self.of[ref] = sig
        self.holders.setdefault(sig, []).append(ref)

    def forget(self, alive: Callable[[int], bool]) -> None:
        """Drop the signatures of documents that are no longer `alive`."""
        for ref in [r for r in self.of if not alive(r)]:
            sig = self.of.pop(ref)
            refs = self.holders[sig]
            refs.remove(ref)
            if not refs:
                del self.holders[sig]

    @property
    def nbytes(self) -> int:
        return 12 * len(self.of)  # the stored pairs; dictionary overhead not counted

    def state(self) -> dict[str, np.ndarray]:
        """The pairs in the order they were added (so each signature's holders keep theirs)."""
        return {
            "sentence_refs": np.array(list(self.of), dtype=np.uint32),
            "sentence_sigs": np.array(list(self.of.values()), dtype=np.uint64),
        }

    @classmethod
    def from_state(cls, state: dict[str, np.ndarray]) -> SentenceIndex:
        """The index held in `state` (empty for state made without signatures)."""
        out = cls()
        refs = state.get("sentence_refs", np.empty(0, dtype=np.uint32))
        sigs = state.get("sentence_sigs", np.empty(0, dtype=np.uint64))
        for ref, sig in zip(refs.tolist(), sigs.tolist(), strict=True):
            out.add(int(ref), int(sig))
        return out
