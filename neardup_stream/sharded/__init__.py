"""Document-partitioned shards: S engines that together decide like one (scale-out).

Every document has one *home* shard (a hash of its domain and id), which stores it. Every
shard *votes* on every document: its best earlier match among the documents it stores. The
*gather* step combines the S votes of a document into its decision. A decision depends only
on the order of the documents (their *positions*), never on which process holds which shard,
so one process holding all S shards, or W processes holding S/W each, decide identically.

- `fingerprints`: a batch of fingerprinted documents with positions, packed for a log.
- `votes`: one shard's votes on one such batch, packed.
- `voter`: a shard: per-domain engines that store home documents and vote.
- `gather`: combines votes into decisions; holds first decisions for replays.
- `deduplicator`: all S shards and the gather step in one process (offline and W = 1).
"""
