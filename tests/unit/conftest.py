"""Shared helpers for the unit tests of the pure core (no processes, no broker)."""

from __future__ import annotations

import random

import pytest

_RNG = random.Random(20261121)
WORDS = [
    "".join(_RNG.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(3 + i % 7))
    for i in range(5000)
]


def random_text(seed: int, words: int = 800) -> str:
    """Deterministic pseudo-English text of `words` words."""
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words))


def mutate(text: str, rate: float, seed: int) -> str:
    """Replace a fraction `rate` of the words of `text` with random words."""
    rng = random.Random(seed)
    words = text.split(" ")
    for i in range(len(words)):
        if rng.random() < rate:
            words[i] = rng.choice(WORDS)
    return " ".join(words)


@pytest.fixture
def text() -> str:
    return random_text(1)
