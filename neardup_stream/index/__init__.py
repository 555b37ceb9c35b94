"""Layer 2, the index: where fingerprints are kept, found again and retired.

* `bucket_table`: a compact chained multimap from 32-bit keys to 32-bit document refs;
* `shards`: bucket tables sharded by key (key mod S), probed and filled per document;
* `doc_store`: the ring of per-document columns (hashes, sketch, time, original decision);
* `lsh`: the LSH S-curve and the choice of bands and rows for a threshold;
* `kernels`: the compiled batch kernels that evict, probe, verify, decide, store and index.

The id registry (doc id -> ref, for idempotency) is a `BucketTable` keyed by `hashing.id_key`.
"""
