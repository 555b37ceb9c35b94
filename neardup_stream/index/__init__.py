"""Layer 2, the index: where fingerprints are kept, found again and retired.

* `bucket_table`: compact chained multimaps from 32-bit keys to 32-bit document refs;
* `shards`: the candidate index, one bucket-table row per shard (key mod S);
* `registry`: document id -> ref of the stored document (idempotent replays);
* `doc_store`: the ring of per-document columns (hashes, sketch, time, original decision);
* `lsh`: the LSH S-curve and the choice of bands and rows for a threshold;
* `columns`: the named arrays (NamedTuples) the compiled kernels take and return;
* `kernels`: the compiled batch kernels that evict, probe, verify, decide, store and index.
"""
