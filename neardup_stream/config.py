"""The engine's configuration: one frozen, validated object that every core module reads.

Fingerprint-affecting fields (shingling, seeds, sketch sizes, banding, precise mode) are part of
`fingerprint_id`, which is stored with every snapshot and changelog record so an index is
never restored under settings that would hash documents differently.
"""

from __future__ import annotations

from functools import cached_property
from typing import Literal

import mmh3
from pydantic import BaseModel, ConfigDict, Field, model_validator

DEFAULT_SEED = 0x6E656172  # "near"
# Version of what a fingerprint holds; 2: sketches of small documents are compact sets;
# 3: those of documents up to twice as large are samples of their smallest hashes;
# 4 (never released): odd sketches up to twice `sketch_bits` features; 5: odd sketches from
# just above the compact sets' size (no samples) up to `odd_limit`.
FINGERPRINT_FORMAT = 5


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


class DedupConfig(BaseModel):
    """Settings of the Deduplicator. Immutable; validated at construction."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    threshold: float = Field(
        0.8, description="Jaccard similarity at or above which a pair is a near-duplicate"
    )
    shingle: Literal["char", "word"] = Field(
        "char", description="character k-grams or word n-grams"
    )
    shingle_size: int = Field(5, ge=1, le=32, description="k of the k-grams (characters or words)")
    strip_html: bool = Field(
        False, description="remove HTML tags and decode entities before shingling"
    )
    num_perm: int = Field(128, description="MinHash values used for LSH banding (power of two)")
    sketch_bits: int = Field(
        3072,
        description="size of the sketch kept per document for verification (an odd sketch up "
        "to a size that follows the threshold, 9,295 shingles at the defaults, a 1-bit MinHash "
        "sketch beyond): more bits, less estimator noise near the threshold, 1 byte per "
        "document per 8 bits (docs/benchmarks.md, sketch size)",
    )
    bands: int | None = Field(
        None, ge=1, description="LSH bands; chosen from the threshold if unset"
    )
    rows: int | None = Field(None, ge=1, description="rows per LSH band; chosen if unset")
    max_bands: int = Field(12, ge=1, le=128, description="memory cap on bands when they are chosen")
    fp_weight: float = Field(
        0.005, ge=0, le=1, description="weight of false-positive area in banding"
    )
    simhash_k: int = Field(
        3, ge=0, le=7, description="SimHash Hamming distance for the pigeonhole index"
    )
    seed: int = Field(
        DEFAULT_SEED, ge=0, lt=2**32, description="hash seed; part of every fingerprint"
    )
    shards: int = Field(4, ge=1, le=1024, description="index shards (shard = key mod shards)")
    bucket_cap: int = Field(
        64,
        ge=1,
        description="max documents per LSH/SimHash bucket key (each of S home shards keeps "
        "ceil(bucket_cap / S))",
    )
    home_shards: int = Field(
        1,
        ge=1,
        le=4096,
        description="document-partitioned shards (scale-out): each stores the documents whose "
        "home (a hash of domain and id) it is, and every one votes on every document",
    )
    index_duplicates: bool = Field(True, description="index near-duplicates too (catches chains)")
    max_docs: int | None = Field(None, ge=1, lt=2**31, description="evict the oldest beyond this")
    max_age_seconds: float | None = Field(None, gt=0, description="evict documents older than this")
    max_future_skew_seconds: float = Field(
        3600,
        ge=0,
        description="document times are clamped to at most this far ahead of their record "
        "time and of the wall clock (see `event_time`)",
    )
    precise: bool = Field(
        False, description="keep shingle sets; report and decide on exact Jaccard"
    )
    longest_sentences: int = Field(
        0,
        ge=0,
        le=16,
        description="also a duplicate: a document with the same n longest sentences as an "
        "earlier one (Baidu's method, method `sentences`; 3 is the usual n); 0 turns it off",
    )
    precise_margin: float = Field(
        0.12,
        ge=0,
        le=1,
        description="candidates estimated within this of the threshold are verified exactly",
    )

    @model_validator(mode="after")
    def _check(self) -> DedupConfig:
        if not 0 < self.threshold <= 1:
            raise ValueError("threshold must be in (0, 1]")
        if not _is_power_of_two(self.num_perm) or not 16 <= self.num_perm <= 1024:
            raise ValueError("num_perm must be a power of two in [16, 1024]")
        if self.sketch_bits % 64 or not 64 <= self.sketch_bits <= 65536:
            raise ValueError("sketch_bits must be a multiple of 64 in [64, 65536]")
        if self.sketch_bits < self.num_perm:
            raise ValueError("sketch_bits must be >= num_perm")
        if self.sketch_bits % self.num_perm:
            raise ValueError(
                f"sketch_bits ({self.sketch_bits}) must be a multiple of num_perm "
                f"({self.num_perm}): each MinHash value is the minimum of an equal group of bins"
            )
        if self.precise and self.home_shards > 1:
            raise ValueError(
                "precise mode needs home_shards = 1 (its shingle sets are not sharded)"
            )
        if self.longest_sentences and self.home_shards > 1:
            raise ValueError(
                "longest_sentences needs home_shards = 1 (its signatures are not sharded)"
            )
        if self.longest_sentences and self.precise:
            raise ValueError("longest_sentences cannot be combined with precise mode")
        if (self.bands is None) != (self.rows is None):
            raise ValueError("set both bands and rows, or neither")
        if (
            self.bands is not None
            and self.rows is not None
            and self.bands * self.rows > self.num_perm
        ):
            raise ValueError("bands * rows must be <= num_perm")
        return self

    @property
    def shard_bucket_cap(self) -> int:
        """Live entries one home shard keeps under a bucket key: `bucket_cap` split over the
        home shards (rounded up), so S shards together keep ~`bucket_cap` per key, as one
        engine does, and a crowded key costs a probe ~`bucket_cap` candidates at any S."""
        return -(-self.bucket_cap // self.home_shards)

    @cached_property
    def banding(self) -> tuple[int, int]:
        """(bands, rows) used by the LSH index."""
        if self.bands is not None and self.rows is not None:
            return self.bands, self.rows
        from neardup_stream.index.lsh import optimal_banding

        return optimal_banding(self.threshold, self.num_perm, self.fp_weight, self.max_bands)

    @cached_property
    def lowest_similarity(self) -> float:
        """The lowest estimate verified: the threshold, less `precise_margin` in precise mode."""
        return self.threshold - (self.precise_margin if self.precise else 0.0)

    @cached_property
    def odd_limit(self) -> int:
        """Largest set size whose verification sketch is an odd sketch (it depends on the
        sketch size and the lowest similarity verified: `fingerprint.sketch_forms`)."""
        from neardup_stream.fingerprint.sketch_forms import odd_limit

        return odd_limit(self.sketch_bits, self.lowest_similarity)

    def fingerprint_fields(self) -> dict[str, object]:
        """The settings a stored fingerprint depends on."""
        bands, rows = self.banding
        fields: dict[str, object] = {
            "shingle": self.shingle,
            "shingle_size": self.shingle_size,
            "strip_html": self.strip_html,
            "num_perm": self.num_perm,
            "sketch_bits": self.sketch_bits,
            "bands": bands,
            "rows": rows,
            "simhash_k": self.simhash_k,
            "seed": self.seed,
            "precise": self.precise,  # precise state carries shingle sets
            "odd_limit": self.odd_limit,  # which stored sizes hold odd sketches
            "format": FINGERPRINT_FORMAT,
        }
        if self.longest_sentences:  # (absent when off: ids of earlier state stay valid)
            fields["longest_sentences"] = self.longest_sentences
        return fields

    @cached_property
    def fingerprint_id(self) -> int:
        """A 32-bit id of `fingerprint_fields`, stamped on snapshots and records."""
        text = repr(sorted(self.fingerprint_fields().items()))
        return mmh3.hash(text.encode(), 0, signed=False)


# `home_shards` of the stream (the worker in topic scope, and offline `dedup` that decides as
# it does) when it is not set: divisible by 1, 2, 3, 4, 6, 8, 12 and 24 replicas, so the index
# spreads evenly over any of them. Each home shard keeps `shard_bucket_cap` per bucket key, so
# the decisions depend on it: the worker and `dedup` must agree on it.
STREAM_HOME_SHARDS = 24


def with_stream_home_shards(config: DedupConfig) -> DedupConfig:
    """`config` with `home_shards` = `STREAM_HOME_SHARDS` when it was not set, and neither
    precise mode nor `longest_sentences` (which need one home shard) is on; else `config`."""
    if "home_shards" in config.model_fields_set or config.precise or config.longest_sentences:
        return config
    values = {**config.model_dump(exclude_unset=True), "home_shards": STREAM_HOME_SHARDS}
    return DedupConfig.model_validate(values)
