"""Fingerprints pinned to values computed once, so a change anywhere (hashing, normalisation,
sketching, numba or numpy versions, another Python) shows up as a failure.

The determinism test in `test_fingerprinter` compares fresh interpreters of this Python; this
one crosses versions: only Python 3.11 can be installed here (Debian bookworm has no other
`python3.x` package and there is no container runtime), so the values below, made with
CPython 3.11 / Unicode 14.0, stand in for a second interpreter. The texts use characters whose
normalisation is the same in every Unicode version since 6.0.

A deliberate fingerprint change must bump `DedupConfig.fingerprint_fields()["format"]` (so
stored state is refused) and regenerate the file:

    python -m tests.unit.fingerprint.test_golden --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from neardup_stream.config import DedupConfig
from neardup_stream.fingerprint.fingerprinter import Fingerprinter

GOLDEN = Path(__file__).with_name("golden_fingerprints.json")
TEXTS = [
    "Near-duplicate detection finds documents that say the same thing in other words.",
    "Straße ÉCLAIR ﬁnance ½ ＡＢＣ — e\u0301clair, İstanbul, ΌΣΟΣ",
    "近似重复检测是搜索引擎和新闻聚合中的关键步骤。北京，上海。",
    "Привет, мир! Это проверка нормализации и шинглов.",
    "🙂 emoji and\ttabs\n\nand   spaces ",
    "",
    "abc",
]
CONFIGS = {
    "default": DedupConfig(),
    "sketch2048": DedupConfig(sketch_bits=2048),  # the default before sketches of 3,072 bits
    "word3": DedupConfig(shingle="word", shingle_size=3, sketch_bits=2048),
    "seed7_small": DedupConfig(seed=7, num_perm=64, sketch_bits=256, simhash_k=2),
}


def _digest(array: object) -> str:
    return hashlib.sha256(memoryview(array).cast("B")).hexdigest()[:16]  # type: ignore[arg-type]


def fingerprints() -> dict[str, list[dict[str, object]]]:
    out: dict[str, list[dict[str, object]]] = {}
    for name, cfg in CONFIGS.items():
        fp = Fingerprinter(cfg).batch(TEXTS)
        out[name] = [
            {
                "exact": [str(int(x)) for x in fp.exact[i]],
                "simhash": str(int(fp.simhash[i])),
                "nfeat": int(fp.nfeat[i]),
                "lsh_keys": [int(x) for x in fp.lsh_keys[i]],
                "simhash_keys": [int(x) for x in fp.simhash_keys[i]],
                "sketch": _digest(fp.sketch[i].copy()),
                "signature": _digest(fp.signature[i].copy()),
            }
            for i in range(len(TEXTS))
        ]
    return out


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_fingerprints_equal_the_pinned_values(name: str) -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert fingerprints()[name] == golden[name]


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.unit.fingerprint.test_golden --write")
    GOLDEN.write_text(json.dumps(fingerprints(), indent=1) + "\n", encoding="utf-8")
