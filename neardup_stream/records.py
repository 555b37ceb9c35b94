"""Fingerprint records: one document's index state as compact bytes.

The Kafka worker writes a record per indexed document to a compacted changelog topic, and a
restarting worker rebuilds its index by replaying them (`Deduplicator.apply_record`). The
record carries exactly what the index keeps, plus the config id that produced it, so replay
needs no re-fingerprinting and refuses records made under other settings. In precise mode it
also carries the document's sorted shingle-hash set, which exact verification needs; with
`longest_sentences` on, a document with a sentence signature carries it (format 5: a trailer
after the ids; a record without one is still written as format 4).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

_MAGIC = b"ND"
_VERSION = 4  # 4: the update flag; 3: sketches of small documents are compact sets
_SENTENCES_VERSION = 5  # 5: 4 plus the sentence signature after the ids
_READS = (3, 4, 5)  # version 3 records are read as no updates (there were none)
_SIGNATURE = struct.Struct("<Q")
_INDEXED, _UPDATE, _METHOD = 0x80, 0x40, 0x3F  # bits of the method byte
_HEAD = struct.Struct("<2sBIIBfqQQQHBHI")
_NONE = 0xFFFF
_NO_FEATURES = 0xFFFFFFFF


class FingerprintRecord(NamedTuple):
    """What the index stores for one document (a NamedTuple: one is made per document the
    index stores, where a frozen dataclass of these fields took ~3.6 µs)."""

    config_id: int
    doc_id: str
    duplicate_of: str | None
    representative: str | None
    ts: int
    method: int
    similarity: float
    nfeat: int
    exact: tuple[int, int]
    simhash: int
    lsh_keys: np.ndarray  # uint32[bands]
    simhash_keys: np.ndarray  # uint32[k + 1]
    sketch: np.ndarray  # uint64[words]
    indexed: bool = True
    features: np.ndarray | None = None  # uint64[nfeat], sorted: precise mode only
    update: bool = False  # its decision was an update (a new version of a stored id)
    sentences: int | None = None  # its n-longest-sentences signature (`sentences` module)

    def encode(self) -> bytes:
        """Serialise to the versioned binary format."""
        head = _HEAD.pack(
            _MAGIC,
            _VERSION if self.sentences is None else _SENTENCES_VERSION,
            self.config_id,
            self.ts,
            self.method | (_INDEXED if self.indexed else 0) | (_UPDATE if self.update else 0),
            self.similarity,
            self.nfeat,
            self.exact[0],
            self.exact[1],
            self.simhash,
            self.lsh_keys.size,
            self.simhash_keys.size,
            self.sketch.size,
            _NO_FEATURES if self.features is None else self.features.size,
        )
        parts = [  # (no copy of an array already of the type written)
            head,
            np.asarray(self.lsh_keys, dtype="<u4").tobytes(),
            np.asarray(self.simhash_keys, dtype="<u4").tobytes(),
            np.asarray(self.sketch, dtype="<u8").tobytes(),
        ]
        if self.features is not None:
            parts.append(np.asarray(self.features, dtype="<u8").tobytes())
        for s in (self.doc_id, self.duplicate_of, self.representative):
            if s is None:
                parts.append(struct.pack("<H", _NONE))
            else:
                b = s.encode("utf-8", "surrogatepass")
                if len(b) >= _NONE:
                    raise ValueError("id is too long to encode")
                parts.append(struct.pack("<H", len(b)) + b)
        if self.sentences is not None:
            parts.append(_SIGNATURE.pack(self.sentences))
        return b"".join(parts)

    @classmethod
    def decode(cls, data: bytes) -> FingerprintRecord:
        """Parse bytes written by `encode`; raises ValueError on anything else."""
        if len(data) < 3 or data[:2] != _MAGIC:
            raise ValueError("not a fingerprint record")
        if data[2] not in _READS:
            raise ValueError(
                f"fingerprint record format {data[2]} is not one this engine reads "
                f"({', '.join(map(str, _READS))}); rebuild the changelog with this version"
            )
        if len(data) < _HEAD.size:
            raise ValueError("truncated fingerprint record")
        (_, _, config_id, ts, method, sim, nfeat, e0, e1, sh, nb, nk, nw, nf) = _HEAD.unpack_from(
            data
        )
        pos = _HEAD.size
        lsh = np.frombuffer(data, "<u4", nb, pos).astype(np.uint32)
        pos += 4 * nb
        sim_keys = np.frombuffer(data, "<u4", nk, pos).astype(np.uint32)
        pos += 4 * nk
        sketch = np.frombuffer(data, "<u8", nw, pos).astype(np.uint64)
        pos += 8 * nw
        features = None
        if nf != _NO_FEATURES:
            features = np.frombuffer(data, "<u8", nf, pos).astype(np.uint64)
            pos += 8 * nf
        strings: list[str | None] = []
        for _ in range(3):
            if pos + 2 > len(data):
                raise ValueError("truncated fingerprint record")
            (n,) = struct.unpack_from("<H", data, pos)
            pos += 2
            if n == _NONE:
                strings.append(None)
            else:
                strings.append(data[pos : pos + n].decode("utf-8", "surrogatepass"))
                pos += n
        sentences = None
        if data[2] == _SENTENCES_VERSION:
            if pos + _SIGNATURE.size > len(data):
                raise ValueError("truncated fingerprint record")
            (sentences,) = _SIGNATURE.unpack_from(data, pos)
            pos += _SIGNATURE.size
        if pos != len(data) or strings[0] is None:
            raise ValueError("malformed fingerprint record")
        return cls(
            config_id=config_id,
            doc_id=strings[0],
            duplicate_of=strings[1],
            representative=strings[2],
            ts=ts,
            method=method & _METHOD,
            similarity=sim,
            nfeat=nfeat,
            exact=(e0, e1),
            simhash=sh,
            lsh_keys=lsh,
            simhash_keys=sim_keys,
            sketch=sketch,
            indexed=bool(method & _INDEXED),
            features=features,
            update=bool(method & _UPDATE),
            sentences=sentences,
        )
