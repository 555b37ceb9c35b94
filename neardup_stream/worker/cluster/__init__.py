"""Scale-out: replicas that together act as one deduplicator over a sharded index.

A replica (`replica`) first agrees on its settings with its cluster through the control
topic (`control`, `agreement`), claims its internal topics for its pipeline (`claims`),
checks them against the settings (`internal_topics`), and takes over from a previous generation if
told to (`handover`); a replica that differs never starts its roles. Then three roles run
in threads of the replica, each a consumer-group member with its own transactional producer
(`neardup_stream.worker.runtime.publisher`); see docs/design/scale-out.md for the design and what it leaves for later:

- `edge` (group `<group>-edge`, over the input): parses and dead-letters bad input
  (`ingest`, the single worker's admission), and appends one fingerprint-log record
  (`log_record`) per batch and log partition to the fingerprints topic, partitioned by
  domain, and its documents' keys and values to the same partition of the payloads topic
  (`payloads`). The log order is the decision order.
- `shard` (group `<group>-shards`, over the shards topic: owning partition s = owning shard
  s): reads the fingerprint log, votes with `ShardVoter`, and commits its votes and its
  changes (shard changelog) together with its log position (`checkpoint`, the offset
  metadata of partition s).
- `gather` (package `gather`; group `<group>-gather`, over the votes topic): joins the S votes of each log
  record and its payloads (the only role that reads them), decides with `Gatherer`,
  publishes decisions and pass-throughs (`outcomes`) and its first decisions (gather
  changelog) with its checkpoint. Its reading is `gather.reading`, its following of the
  assignment and restores `gather.following`, its state per log partition `gather.state`, its
  batch assembly, commits and progress `gather.deciding`.

A shard or log partition a role gains is rebuilt from its role's changelog on a background
restore thread (`neardup_stream.worker.runtime.restore`, `replay`; retention bounds it), while the role's other
partitions go on, and resumes at its committed checkpoint, so a decision is a function of
the log alone: one replica or many decide identically. A record a role cannot apply stops
its partition visibly (`health`), never skipped. A stopping replica bounds every step by
`worker.shutdown_timeout_s` (`neardup_stream.worker.runtime.shutdown`).
"""
