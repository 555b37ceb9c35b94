"""neardup-stream: streaming near-duplicate detection (SimHash + MinHash/LSH).

The core is pure Python + numpy (+ numba kernels) and knows nothing about Kafka:

    from neardup_stream import Deduplicator, Document
    dedup = Deduplicator()
    dedup.check(Document(id="a", text="The quick brown fox jumps over the lazy dog."))

Layers: `fingerprint/` (text -> fingerprints), `index/` (where fingerprints are kept and
found), then `deduplicator` (decisions; its parts in `engine/`), `snapshot` and `records` (state on disk and in the
changelog). The names below are imported on first use, so `import neardup_stream.config` or
`neardup-stream --help` does not load the compiled kernels.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from neardup_stream.config import DedupConfig
    from neardup_stream.deduplicator import Deduplicator, Outcome
    from neardup_stream.models import Decision, Document, ErrorRecord
    from neardup_stream.records import FingerprintRecord

_EXPORTS = {
    "Decision": "neardup_stream.models",
    "DedupConfig": "neardup_stream.config",
    "Deduplicator": "neardup_stream.deduplicator",
    "Document": "neardup_stream.models",
    "ErrorRecord": "neardup_stream.models",
    "FingerprintRecord": "neardup_stream.records",
    "Outcome": "neardup_stream.deduplicator",
}
__all__ = [
    "Decision",
    "DedupConfig",
    "Deduplicator",
    "Document",
    "ErrorRecord",
    "FingerprintRecord",
    "Outcome",
]
__version__ = "0.3.0"


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'neardup_stream' has no attribute {name!r}")
