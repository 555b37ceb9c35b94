"""The parts of the `Deduplicator` (the facade, in `neardup_stream.deduplicator`), one each.

- `driver`: runs the index kernels over a batch against one engine's tables.
- `outcomes`: a batch's decisions and fingerprint records, made once its rows are decided.
- `per_document`: precise mode and longest sentences, decided document by document.
- `persistence`: an engine's state as named arrays (snapshots), and changelog replay.
- `vote`: one shard's vote on a batch (document-partitioned shards).

Each module works on a `Deduplicator` it is given; none holds state of its own.
"""
