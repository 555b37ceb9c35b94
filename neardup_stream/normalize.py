"""Text normalisation applied before any hashing: NFKC, case folding, whitespace collapsing.

Every fingerprint, exact hash and ground-truth shingle set is computed from `normalize(text)`,
so this function is part of the on-disk format: change it and stored indexes become stale.
"""

from __future__ import annotations

import html
import re
import unicodedata

_TAG = re.compile(r"<(script|style)\b.*?</\1\s*>|<!--.*?-->|<[^>]{0,2000}>", re.S | re.I)


def strip_html(text: str) -> str:
    """Remove tags, comments, scripts and styles, and decode character entities."""
    return html.unescape(_TAG.sub(" ", text))


def fold(text: str, *, html_input: bool = False) -> str:
    """The first half of `normalize`: HTML stripping, NFKC and case folding.

    Pure-ASCII text is returned as it is: NFKC leaves it unchanged and the compiled kernel
    lowers A-Z itself, which is all case folding does to ASCII. The kernel then collapses
    whitespace, completing `normalize`.
    """
    if html_input:
        text = strip_html(text)
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", text).casefold()


def normalize(text: str, *, html_input: bool = False) -> str:
    """Return the canonical form of `text` that all features are computed from.

    Args:
        text: Raw document text.
        html_input: Strip HTML markup first.

    Returns:
        NFKC-normalised, case-folded text with every whitespace run collapsed to one space
        and no leading or trailing space.
    """
    if html_input:
        text = strip_html(text)
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(text.split())
