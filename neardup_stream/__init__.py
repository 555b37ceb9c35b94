"""neardup-stream: streaming near-duplicate detection (SimHash + MinHash/LSH).

The core is pure Python + numpy (+ numba kernels) and knows nothing about Kafka:

    from neardup_stream import Deduplicator, Document
    dedup = Deduplicator()
    dedup.check(Document(id="a", text="The quick brown fox jumps over the lazy dog."))
"""

from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator, Outcome
from neardup_stream.models import Decision, Document, ErrorRecord
from neardup_stream.records import FingerprintRecord

__all__ = [
    "Decision",
    "DedupConfig",
    "Deduplicator",
    "Document",
    "ErrorRecord",
    "FingerprintRecord",
    "Outcome",
]
__version__ = "0.1.0"
