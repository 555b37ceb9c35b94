"""A batch of fingerprinted documents in log order: what every shard votes on.

`FingerprintBatch` holds the column arrays the index kernels read (`BatchColumns`), each
document's id, domain and *position* (its place in the decision order: strictly increasing
along the log), the *stream* it was read from (a log partition: not packed, the reader
knows it), and the fingerprint config id. `pack`/`unpack` give the bytes of one
fingerprint-log record (format "NF", version 2: version 1 had no `other` sketches, and was
made under fingerprint format 3); a batch made under another fingerprint config, or another
format, is refused with a clear message, never misread. The `other` sketches (documents
near `odd_limit` only) travel as the rows that have one, with their row numbers.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from neardup_stream.batch import Batch
from neardup_stream.index.columns import BatchColumns, no_prior
from neardup_stream.sharded.home import home_shard

MAGIC = b"NF"
VERSION = 2
_HEADER = struct.Struct("<2sBIIiii")  # magic, version, config_id, n, blocks, width, words


@dataclass(frozen=True)
class FingerprintBatch:
    """Fingerprints of documents in log order (see the module docstring)."""

    config_id: int
    ids: list[str]
    domains: list[str]
    positions: np.ndarray  # int64[n], strictly increasing
    docs: BatchColumns
    blocks: int  # SimHash block keys at the start of each row of `docs.keys`
    stream: int = 0  # the log partition it was read from (its clock: `sharded.quiet`)
    _homes: dict[int, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def of(
        cls, config_id: int, batch: Batch, domains: Sequence[str], positions: np.ndarray
    ) -> FingerprintBatch:
        """The fingerprints of a freshly fingerprinted `Batch` (`Batch.from_fingerprints`)."""
        if len(domains) != len(batch) or len(positions) != len(batch):
            raise ValueError("one domain and one position per document")
        pos = np.asarray(positions, dtype=np.int64)
        if pos.size > 1 and not (np.diff(pos) > 0).all():
            raise ValueError("positions must increase strictly")
        return cls(config_id, list(batch.ids), list(domains), pos, batch.docs, batch.blocks)

    def homes(self, shards: int) -> np.ndarray:
        """Home shard of every document (computed once per batch and shard count)."""
        cached = self._homes.get(shards)
        if cached is None:
            cached = np.array(
                [home_shard(dom, i, shards) for dom, i in zip(self.domains, self.ids, strict=True)],
                dtype=np.int64,
            )
            self._homes[shards] = cached
        return cached

    def rows(self, rows: np.ndarray, home: np.ndarray) -> Batch:
        """A `Batch` of the given rows (in order); rows not `home` are probe-only."""
        d = self.docs
        if rows.size == len(self):  # every row (one domain): share the columns, no copies
            columns = d._replace(
                skip=np.zeros(rows.size, dtype=np.bool_),
                probe_only=~np.asarray(home, dtype=np.bool_),
                prior=no_prior(rows.size),
                prior_row=no_prior(rows.size),
            )
            return Batch(list(self.ids), columns, self.blocks)
        starts, ends = d.feat_offsets[rows], d.feat_offsets[rows + 1]
        feats = (
            np.concatenate([d.feats[a:b] for a, b in zip(starts, ends, strict=True)])
            if rows.size
            else np.empty(0, dtype=np.uint64)
        )
        offsets = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(ends - starts, out=offsets[1:])
        docs = BatchColumns(
            skip=np.zeros(rows.size, dtype=np.bool_),
            probe_only=~np.asarray(home, dtype=np.bool_),
            keys=d.keys[rows],
            nkeys=d.nkeys[rows],
            exact=d.exact[rows],
            simhash=d.simhash[rows],
            sketch=d.sketch[rows],
            nfeat=d.nfeat[rows],
            ts=d.ts[rows],
            feats=feats.astype(np.uint64, copy=False),
            feat_offsets=offsets,
            other=d.other[rows],
            prior=no_prior(rows.size),
            prior_row=no_prior(rows.size),
        )
        return Batch([self.ids[int(r)] for r in rows], docs, self.blocks)

    def pack(self) -> bytes:
        d, n = self.docs, len(self)
        base = d.feat_offsets[0]
        with_other = np.flatnonzero(d.other.any(axis=1)) if n else np.empty(0, np.int64)
        parts = [
            _HEADER.pack(
                MAGIC, VERSION, self.config_id, n, self.blocks, d.keys.shape[1], d.sketch.shape[1]
            ),
            self.positions.astype("<i8").tobytes(),
            d.ts.astype("<i8").tobytes(),
            d.nfeat.astype("<i8").tobytes(),
            d.nkeys.astype("<i8").tobytes(),
            d.exact.astype("<u8").tobytes(),
            d.simhash.astype("<u8").tobytes(),
            d.sketch.astype("<u8").tobytes(),
            d.keys.astype("<u4").tobytes(),
            (d.feat_offsets - base).astype("<i8").tobytes(),
            d.feats[base : d.feat_offsets[-1]].astype("<u8").tobytes(),
            np.array([with_other.size], dtype="<i8").tobytes(),
            with_other.astype("<i8").tobytes(),
            d.other[with_other].astype("<u8").tobytes(),
            _pack_strings(self.ids),
            _pack_strings(self.domains),
        ]
        return b"".join(parts)

    @classmethod
    def unpack(cls, data: bytes, config_id: int) -> FingerprintBatch:
        """Parse `pack` output made under fingerprint config `config_id`.

        Raises:
            ValueError: not a fingerprint batch, another format version or config, or cut short.
        """
        if len(data) < _HEADER.size or data[:2] != MAGIC:
            raise ValueError("not a fingerprint batch (no 'NF' header)")
        _, version, cid, n, blocks, width, words = _HEADER.unpack_from(data)
        if version != VERSION:
            raise ValueError(f"fingerprint batch format {version}, this build reads {VERSION}")
        if cid != config_id:
            raise ValueError(
                f"fingerprint batch made under fingerprint config {cid:#010x}, "
                f"this index uses {config_id:#010x}"
            )
        reader = _Reader(data, _HEADER.size)
        positions, ts = reader.array("<i8", n), reader.array("<i8", n)
        nfeat, nkeys = reader.array("<i8", n), reader.array("<i8", n)
        exact = reader.array("<u8", n * 2).reshape(n, 2)
        simhash = reader.array("<u8", n)
        sketch = reader.array("<u8", n * words).reshape(n, words)
        keys = reader.array("<u4", n * width).reshape(n, width)
        offsets = reader.array("<i8", n + 1)
        feats = reader.array("<u8", int(offsets[-1]) if n else 0)
        with_other = reader.array("<i8", int(reader.array("<i8", 1)[0]))
        if with_other.size and (with_other.min() < 0 or with_other.max() >= n):
            raise ValueError("fingerprint batch: an `other` sketch of a row it does not have")
        if with_other.size > 1 and not (np.diff(with_other) > 0).all():
            raise ValueError("fingerprint batch: `other` sketch rows not in increasing order")
        other = np.zeros((n, words), dtype=np.uint64)
        other[with_other] = reader.array("<u8", with_other.size * words).reshape(-1, words)
        ids, domains = reader.strings(n), reader.strings(n)
        docs = BatchColumns(
            np.zeros(n, np.bool_), np.zeros(n, np.bool_), keys, nkeys, exact, simhash, sketch,
            nfeat, ts, feats, offsets, other, no_prior(n), no_prior(n),
        )  # fmt: skip
        return cls(cid, ids, domains, positions, docs, blocks)


def _pack_strings(values: Sequence[str]) -> bytes:
    encoded = [v.encode("utf-8", "surrogatepass") for v in values]
    lengths = np.array([len(e) for e in encoded], dtype="<u4")
    return lengths.tobytes() + b"".join(encoded)


class _Reader:
    """Reads consecutive arrays out of a packed batch, failing clearly when it is cut short."""

    def __init__(self, data: bytes, at: int) -> None:
        self.data, self.at = data, at

    def _take(self, size: int) -> bytes:
        if size < 0 or self.at + size > len(self.data):
            raise ValueError("fingerprint batch is truncated")
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk

    def array(self, dtype: str, count: int) -> np.ndarray:
        dt = np.dtype(dtype)
        out = np.frombuffer(self._take(count * dt.itemsize), dtype=dt)
        return out.astype(dt.newbyteorder("="), copy=True)

    def strings(self, count: int) -> list[str]:
        lengths = self.array("<u4", count)
        blob = self._take(int(lengths.sum()))
        out, at = [], 0
        for length in lengths.tolist():
            out.append(blob[at : at + length].decode("utf-8", "surrogatepass"))
            at += length
        return out
